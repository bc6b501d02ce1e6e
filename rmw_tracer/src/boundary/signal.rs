//! SIGPIPE: a write into a Unix-socket link whose peer just died must be an error, not the end
//! of the process.
//!
//! libtracer-core's Unix-socket link writes with plain `write`/`writev`, which raise SIGPIPE when
//! the peer is gone; CPython ignores SIGPIPE, but a C or C++ node (rcl, rclcpp) keeps the
//! default action and dies (`ros_tests/test_pubsub.py`, subscribers killed mid-stream). Until the
//! link sends with `MSG_NOSIGNAL`, `rmw_init` sets SIGPIPE to ignored when, and only when, the
//! program left it at the default: a program that installed its own handler keeps it.

/// Ignore SIGPIPE if its disposition is the default one; returns whether it changed it.
pub fn ignore_sigpipe_if_default() -> bool {
    // SAFETY: an all-zero sigaction is a valid value to be overwritten by the query below.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: a null new action only queries; `old` is a valid out-pointer.
    if unsafe { libc::sigaction(libc::SIGPIPE, std::ptr::null(), &mut old) } != 0 {
        return false;
    }
    if old.sa_sigaction != libc::SIG_DFL {
        return false;
    }
    // SAFETY: SIG_IGN is a valid disposition for SIGPIPE; changing it is process-wide, which
    // is the point.
    let previous = unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
    previous != libc::SIG_ERR
}
