//! The socket file of a graph in the rendezvous directory: claiming `<name>.sock` (taking over
//! a stale one, refusing a live one), binding so that a published socket always listens, telling
//! a live listener from a stale one, connecting without hanging on a stopped graph, and the
//! kernel-attested identity of the process at the other end.
//!
//! Any directory works, however long its path: a Unix socket address holds at most 107 bytes of
//! path (`sun_path`), so a longer path is reached through a descriptor instead: the directory's
//! (`/proc/self/fd/<dir>/<file>`) to bind, the socket file's (`/proc/self/fd/<file>`, opened
//! `O_PATH`) to connect. The directory's checks (`rendezvous.rs`) still hold: the descriptor
//! bound through is checked again (a real directory, ours, mode 0700), and a socket file is
//! opened without following a symlink.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use nix::sys::socket::{getsockopt, sockopt::PeerCredentials};
use nix::sys::time::{TimeVal, TimeValLike};

use crate::link::rendezvous::check_private_metadata;
use crate::link::{LinkError, PeerIdentity};

/// The most bytes of path a Unix socket address holds (`sun_path` is 108 with its NUL).
const SUN_PATH_MAX: usize = 107;

/// A path short enough for a socket address, and the descriptor it goes through (if any), which
/// must stay open while the path is used.
struct Reach {
    path: PathBuf,
    _anchor: Option<File>,
}

fn fits(path: &Path) -> bool {
    path.as_os_str().len() <= SUN_PATH_MAX
}

/// `O_PATH` open of `path` (no read or write, works on directories and sockets alike), with
/// `extra` flags; close-on-exec, as std opens every file.
fn open_path(path: &Path, extra: i32) -> io::Result<File> {
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_PATH | extra)
        .open(path)
}

/// Where to bind `file` in `dir`: `dir/file` when that fits, else through a descriptor of `dir`
/// (not followed if a symlink, and checked private again on the descriptor itself).
fn reach_in(dir: &Path, file: &str) -> Result<Reach, LinkError> {
    let direct = dir.join(file);
    if fits(&direct) {
        return Ok(Reach {
            path: direct,
            _anchor: None,
        });
    }
    let d = open_path(dir, nix::libc::O_DIRECTORY | nix::libc::O_NOFOLLOW).map_err(|e| {
        LinkError::InsecureDir {
            path: dir.to_owned(),
            reason: format!("cannot open: {e}"),
        }
    })?;
    check_private_metadata(dir, &d.metadata()?)?;
    let path = PathBuf::from(format!("/proc/self/fd/{}/{file}", d.as_raw_fd()));
    if !fits(&path) {
        return Err(
            io::Error::new(io::ErrorKind::InvalidInput, "socket file name too long").into(),
        );
    }
    Ok(Reach {
        path,
        _anchor: Some(d),
    })
}

/// Where to connect to the socket file `path`: itself when it fits, else through an `O_PATH`
/// descriptor of the file (not followed if a symlink). What is not a socket refuses, as a
/// connect to it would.
fn reach_file(path: &Path) -> io::Result<Reach> {
    if fits(path) {
        return Ok(Reach {
            path: path.to_owned(),
            _anchor: None,
        });
    }
    let f = open_path(path, nix::libc::O_NOFOLLOW)?;
    if !f.metadata()?.file_type().is_socket() {
        return Err(io::ErrorKind::ConnectionRefused.into());
    }
    Ok(Reach {
        path: PathBuf::from(format!("/proc/self/fd/{}", f.as_raw_fd())),
        _anchor: Some(f),
    })
}

/// Make sure `<name>.sock` is ours to bind: absent, or stale (refuses connections).
pub(super) fn claim_name(sock_path: &Path, name: &str, timeout: Duration) -> Result<(), LinkError> {
    match std::fs::symlink_metadata(sock_path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e.into()),
        Ok(_) => {}
    }
    if probe_live(sock_path, timeout)? {
        return Err(LinkError::NameTaken(name.to_owned()));
    }
    match std::fs::remove_file(sock_path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e.into()),
        _ => Ok(()),
    }
}

/// Bind and listen under a name of our own in `dir`, then hard-link the socket to
/// `<name>.sock` and drop the first name. A socket found under `<name>.sock` is therefore always
/// listening: one caught between `bind` and `listen` (which refuses connections) would look
/// stale to a graph starting at the same moment, and be removed under us. The link fails if the
/// name was taken meanwhile, as a bind would.
pub(super) fn bind_listening(
    dir: &Path,
    sock_path: &Path,
    name: &str,
) -> Result<UnixListener, LinkError> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    // Not `*.sock`, so never scanned; short, whatever the node name's length (sun_path is
    // 108 bytes), and reached through the directory's descriptor when the directory's path is
    // long.
    let file = format!(
        ".{}-{}.bind",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    );
    let tmp = dir.join(&file);
    // Only a dead process of our pid can have left this name.
    let _ = std::fs::remove_file(&tmp);
    let reach = reach_in(dir, &file)?;
    let listener = UnixListener::bind(&reach.path)?;
    drop(reach);
    let linked = std::fs::hard_link(&tmp, sock_path);
    let _ = std::fs::remove_file(&tmp);
    match linked {
        Ok(()) => Ok(listener),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            Err(LinkError::NameTaken(name.to_owned()))
        }
        Err(e) => Err(e.into()),
    }
}

/// Whether a live listener is behind `path`. Refused means dead: a graph publishes its socket
/// only once it listens (`bind_listening`). A listener whose queue stays full is alive
/// (stopped or busy), not stale.
pub(super) fn probe_live(path: &Path, timeout: Duration) -> Result<bool, LinkError> {
    match connect_bounded(path, timeout) {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => Ok(false),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// `connect` bounded by `timeout`. A Unix-socket connect waits (without limit, by default) while
/// the listener's queue is full, which is where a graph that stopped accepting (SIGSTOP, a
/// debugger, a deadlock) ends up once others have kept connecting to it; the socket's send
/// timeout bounds that wait, and it then fails with `WouldBlock`.
pub(super) fn connect_bounded(path: &Path, timeout: Duration) -> io::Result<UnixStream> {
    use nix::sys::socket::{connect, setsockopt, socket, sockopt, AddressFamily, SockFlag};
    use nix::sys::socket::{SockType, UnixAddr};
    let fd = socket(
        AddressFamily::Unix,
        SockType::Stream,
        SockFlag::SOCK_CLOEXEC,
        None,
    )?;
    // A zero timeval would mean no timeout at all.
    let us = timeout.as_micros().clamp(1, i64::MAX as u128) as i64;
    setsockopt(&fd, sockopt::SendTimeout, &TimeVal::microseconds(us))?;
    let reach = reach_file(path)?;
    connect(fd.as_raw_fd(), &UnixAddr::new(&reach.path)?)?;
    Ok(UnixStream::from(fd))
}

pub(super) fn peer_identity(stream: &UnixStream, name: String) -> io::Result<PeerIdentity> {
    let c = getsockopt(stream, PeerCredentials).map_err(io::Error::from)?;
    Ok(PeerIdentity {
        name,
        uid: c.uid(),
        gid: c.gid(),
        pid: c.pid() as u32,
        remote: None,
    })
}
