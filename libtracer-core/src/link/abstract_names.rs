//! Names in the abstract namespace of Unix sockets (unix(7)), where the graphs of one network
//! namespace find each other whatever filesystem each sees: containers sharing the host's
//! network (`docker run --network host`) have their own `/tmp`, `/dev/shm` and
//! `XDG_RUNTIME_DIR`, so the rendezvous directory alone never brings them together
//! (docs/host.md).
//!
//! An abstract name belongs to the network namespace, not to a directory: it is bound and
//! connected to like a path, it vanishes when its last descriptor closes (a killed process leaves
//! nothing stale behind), and every name bound in the namespace is listed in `/proc/net/unix`
//! (`@` then the name). No permission guards it, so who may link is decided on the kernel's
//! credentials of the peer (SO_PEERCRED), never on the name (docs/host.md, "Who may link").
//!
//! The names of one scope (a domain, or an explicit rendezvous directory):
//! - `<scope>/<node>`: a graph's listening socket, the abstract twin of `<dir>/<node>.sock`;
//! - `<scope>/quic/<port>/<node>`: a bound socket that never listens, the QUIC member entry of
//!   `<node>` (its link port), the twin of `<dir>/<node>.quic`;
//! - `<scope>/role/`: bound by the holder of the host role while it holds it.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::time::Duration;

use nix::sys::socket::{
    bind, connect, listen, setsockopt, socket, sockopt, AddressFamily, Backlog, SockFlag, SockType,
    UnixAddr,
};
use nix::sys::time::{TimeVal, TimeValLike};

use super::{valid_node_name, LinkError};

/// The most bytes of an abstract name (`sun_path` less its leading NUL).
const MAX_NAME: usize = 107;
/// `__SO_ACCEPTCON` in `/proc/net/unix`'s flags: the socket listens.
const ACCEPTCON: u32 = 0x0001_0000;

/// The abstract names of one group of graphs that find each other on this network namespace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostScope {
    /// `libtracer/<key>/`, ending with the separator.
    prefix: String,
}

impl HostScope {
    /// The scope of the default rendezvous directories of `domain_id`: every graph of the
    /// domain on this network namespace, whatever its user, `/tmp` or `XDG_RUNTIME_DIR`.
    pub fn for_domain(domain_id: u32) -> HostScope {
        HostScope {
            prefix: format!("libtracer/d{domain_id}/"),
        }
    }

    /// The scope of an explicit rendezvous directory (`RMW_TRACER_RENDEZVOUS_DIR`): the graphs
    /// given the same path, in whatever mount namespace, and no others (tests isolate
    /// themselves by a directory of their own, and stay isolated).
    pub fn for_dir(dir: &Path) -> HostScope {
        // FNV-1a: short, stable across processes and builds (std's hasher is neither).
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in dir.as_os_str().as_encoded_bytes() {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        HostScope {
            prefix: format!("libtracer/{h:016x}/"),
        }
    }

    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The listening name of `node`, if it fits in a socket address (a node name longer than
    /// about 80 bytes is reached through the directory only).
    pub(crate) fn listener(&self, node: &str) -> Option<String> {
        fitting(format!("{}{node}", self.prefix))
    }

    /// The QUIC member entry of `node`, whose link endpoint is on `port`.
    #[cfg(feature = "quic")]
    pub(crate) fn member(&self, node: &str, port: u16) -> Option<String> {
        fitting(format!("{}quic/{port}/{node}", self.prefix))
    }

    /// Held by the holder of the host role.
    #[cfg(feature = "quic")]
    pub(crate) fn role(&self) -> String {
        format!("{}role/", self.prefix)
    }

    /// Graphs listening in this scope now, sorted (empty when `/proc/net/unix` cannot be read).
    pub fn listeners(&self) -> Vec<String> {
        let mut v: Vec<String> = bound_names()
            .into_iter()
            .filter(|(listening, _)| *listening)
            .filter_map(|(_, n)| n.strip_prefix(&self.prefix).map(str::to_owned))
            .filter(|n| valid_node_name(n))
            .collect();
        v.sort();
        v.dedup();
        v
    }

    /// The QUIC members of this scope now: name and link port, sorted.
    #[cfg(feature = "quic")]
    pub(crate) fn members(&self) -> Vec<(String, u16)> {
        let quic = format!("{}quic/", self.prefix);
        let mut v: Vec<(String, u16)> = bound_names()
            .into_iter()
            .filter_map(|(_, n)| {
                let rest = n.strip_prefix(&quic)?;
                let (port, node) = rest.split_once('/')?;
                let port = port.parse::<u16>().ok().filter(|p| *p != 0)?;
                valid_node_name(node).then(|| (node.to_owned(), port))
            })
            .collect();
        v.sort();
        v.dedup();
        v
    }
}

fn fitting(name: String) -> Option<String> {
    (name.len() <= MAX_NAME).then_some(name)
}

fn addr(name: &str) -> io::Result<UnixAddr> {
    Ok(UnixAddr::new_abstract(name.as_bytes())?)
}

fn new_socket() -> io::Result<OwnedFd> {
    Ok(socket(
        AddressFamily::Unix,
        SockType::Stream,
        SockFlag::SOCK_CLOEXEC,
        None,
    )?)
}

/// Bind `name` (not listening): held until the descriptor closes, by the kernel's rule that an
/// abstract name has one socket; `AddrInUse` when someone holds it.
pub(crate) fn hold(name: &str) -> io::Result<OwnedFd> {
    let fd = new_socket()?;
    bind(fd.as_raw_fd(), &addr(name)?)?;
    Ok(fd)
}

/// Bind and listen under `name`: the abstract listener of a graph. A name in use is
/// `NameTaken(node)`: another graph of the scope runs under that node name.
pub(crate) fn bind_listener(name: &str, node: &str) -> Result<UnixListener, LinkError> {
    let fd = match hold(name) {
        Ok(fd) => fd,
        Err(e) if e.kind() == io::ErrorKind::AddrInUse => {
            return Err(LinkError::NameTaken(node.to_owned()))
        }
        Err(e) => return Err(e.into()),
    };
    let backlog = Backlog::new(128).map_err(io::Error::from)?;
    listen(&fd, backlog).map_err(io::Error::from)?;
    Ok(UnixListener::from(fd))
}

/// `connect` to the abstract `name`, bounded by `timeout` as `socket::connect_bounded` is (a
/// stopped listener's full queue otherwise holds the caller without limit). A name nobody
/// holds refuses at once, which is how a gone graph shows.
pub(crate) fn connect_bounded(name: &str, timeout: Duration) -> io::Result<UnixStream> {
    let fd = new_socket()?;
    let us = timeout.as_micros().clamp(1, i64::MAX as u128) as i64;
    setsockopt(&fd, sockopt::SendTimeout, &TimeVal::microseconds(us))?;
    connect(fd.as_raw_fd(), &addr(name)?)?;
    Ok(UnixStream::from(fd))
}

/// Every abstract name bound in this network namespace, with whether its socket listens.
fn bound_names() -> Vec<(bool, String)> {
    match std::fs::read_to_string("/proc/net/unix") {
        Ok(text) => parse_proc_net_unix(&text),
        Err(_) => Vec::new(),
    }
}

/// `/proc/net/unix`: a header, then `Num RefCount Protocol Flags Type St Inode [Path]` per
/// socket, an abstract name shown as `@` and its bytes (a NUL inside as `@` too). Lines that do
/// not parse are skipped.
pub(crate) fn parse_proc_net_unix(text: &str) -> Vec<(bool, String)> {
    text.lines()
        .skip(1)
        .filter_map(|line| {
            let mut f = line.split_ascii_whitespace();
            let flags = u32::from_str_radix(f.nth(3)?, 16).ok()?;
            let path = f.nth(3)?;
            let name = path.strip_prefix('@')?;
            Some((flags & ACCEPTCON != 0, name.to_owned()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "Num       RefCount Protocol Flags    Type St Inode Path
0000000000000000: 00000002 00000000 00010000 0001 01 31 @libtracer/d0/host-12-0
0000000000000000: 00000002 00000000 00000000 0001 01 32 @libtracer/d0/quic/40123/host-12-0
0000000000000000: 00000003 00000000 00000000 0001 03 33
0000000000000000: 00000002 00000000 00010000 0001 01 34 /run/user/0/libtracer/domain-0/a.sock
garbage
0000000000000000: 00000002 00000000 00010000 0001 01 35 @libtracer/d1/other
";

    #[test]
    fn reads_abstract_names_and_whether_they_listen() {
        let v = parse_proc_net_unix(SAMPLE);
        assert_eq!(
            v,
            vec![
                (true, "libtracer/d0/host-12-0".to_owned()),
                (false, "libtracer/d0/quic/40123/host-12-0".to_owned()),
                (true, "libtracer/d1/other".to_owned()),
            ]
        );
    }

    #[test]
    fn scopes_keep_apart() {
        assert_ne!(
            HostScope::for_dir(Path::new("/tmp/a")),
            HostScope::for_dir(Path::new("/tmp/b"))
        );
        assert_eq!(HostScope::for_domain(3).prefix(), "libtracer/d3/");
        assert!(HostScope::for_domain(0)
            .listener(&"n".repeat(200))
            .is_none());
    }

    #[test]
    fn a_bound_listener_is_found_and_gone_with_its_socket() {
        let scope = HostScope::for_dir(Path::new(&format!(
            "/test/abstract-{}-{:?}",
            std::process::id(),
            std::time::Instant::now()
        )));
        let name = scope.listener("node-a").unwrap();
        let l = bind_listener(&name, "node-a").unwrap();
        assert_eq!(scope.listeners(), vec!["node-a".to_owned()]);
        assert!(matches!(
            bind_listener(&name, "node-a"),
            Err(LinkError::NameTaken(_))
        ));
        #[cfg(feature = "quic")]
        let m = hold(&scope.member("node-a", 4242).unwrap()).unwrap();
        #[cfg(feature = "quic")]
        assert_eq!(scope.members(), vec![("node-a".to_owned(), 4242)]);
        assert!(connect_bounded(&name, Duration::from_secs(1)).is_ok());
        drop(l);
        assert!(scope.listeners().is_empty());
        #[cfg(feature = "quic")]
        {
            drop(m);
            assert!(scope.members().is_empty());
        }
        assert!(connect_bounded(&name, Duration::from_secs(1)).is_err());
    }
}
