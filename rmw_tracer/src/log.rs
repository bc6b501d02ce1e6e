//! rmw_tracer's own diagnostics, filtered by the severity set with `rmw_set_log_severity`.
//!
//! They go to stderr rather than through rcutils logging: rmw_tracer's messages (a peer link that
//! dropped, an endpoint announcement that could not be parsed) come from background threads that
//! must never call back into a logging handler owned by rcl/rclpy.

use std::sync::atomic::{AtomicU32, Ordering};

use crate::boundary::{RmwError, RmwResult};

static SEVERITY: AtomicU32 = AtomicU32::new(ffi::RMW_LOG_SEVERITY_WARN);

/// Set the threshold; anything but the five rmw severities is an invalid argument.
pub fn set_severity(severity: ffi::rmw_log_severity_t) -> RmwResult<()> {
    match severity {
        ffi::RMW_LOG_SEVERITY_DEBUG
        | ffi::RMW_LOG_SEVERITY_INFO
        | ffi::RMW_LOG_SEVERITY_WARN
        | ffi::RMW_LOG_SEVERITY_ERROR
        | ffi::RMW_LOG_SEVERITY_FATAL => {
            SEVERITY.store(severity, Ordering::Relaxed);
            Ok(())
        }
        other => Err(RmwError::invalid(format!("unknown log severity {other}"))),
    }
}

/// Whether a message of `severity` is printed.
pub fn enabled(severity: ffi::rmw_log_severity_t) -> bool {
    severity >= SEVERITY.load(Ordering::Relaxed)
}

/// Print a diagnostic if its severity passes the threshold.
macro_rules! log {
    ($sev:ident, $($arg:tt)*) => {
        if $crate::log::enabled(::ffi::$sev) {
            eprintln!("[rmw_tracer] {}", format_args!($($arg)*));
        }
    };
}
pub(crate) use log;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn severities() {
        assert!(set_severity(12345).is_err());
        set_severity(ffi::RMW_LOG_SEVERITY_ERROR).unwrap();
        assert!(!enabled(ffi::RMW_LOG_SEVERITY_WARN));
        assert!(enabled(ffi::RMW_LOG_SEVERITY_FATAL));
        set_severity(ffi::RMW_LOG_SEVERITY_WARN).unwrap();
    }
}
