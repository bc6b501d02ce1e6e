//! The host directory: who the members of a host are and on which UDP port each has its link
//! endpoint. Each member registers `<dir>/<name>.quic` (`<port> <pid>`), and with a host scope
//! also holds `<scope>/quic/<port>/<name>` in the abstract namespace (`abstract_names.rs`),
//! which reaches members of other mount namespaces (containers); the holder of the host role
//! (with a scope: the one bound to `<scope>/role/`, else an exclusive `flock` on
//! `<dir>/net-role.lock`) answers queries on the domain's well-known port; each peer host has
//! a loop that asks its directory and connects (`peer_host.rs`). The server is `dir_exchange.rs`.
//!
//! A query is one bidirectional stream (ALPN `libtracer-dir/1`): the client writes `members\n`
//! and finishes; the holder answers one line `<name> <port>\n` per live member and finishes.
//! This is the QUIC adapter's own exchange, not a libtracer frame (docs/network.md).
//! A client keeps its connection and asks again at every poll (`peer_host.rs`).

use std::fs::{File, OpenOptions};
use std::net::{IpAddr, SocketAddr};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};

use super::Inner;
use crate::link::abstract_names::{self, HostScope};
use crate::link::{valid_node_name, LinkError};

pub(super) const REQUEST: &[u8] = b"members\n";
/// Bound on a directory answer (a host of thousands of members fits).
pub(super) const MAX_ANSWER: usize = 256 * 1024;
/// Directory connections served at once (each client keeps one per host it asks); more are
/// refused.
const MAX_CLIENTS: usize = 1024;

/// What makes the role ours while we hold it; released by the kernel when we exit.
enum RoleLock {
    /// `<dir>/net-role.lock`, locked.
    File(#[allow(dead_code)] Flock<File>),
    /// `<scope>/role/`, bound.
    Name(#[allow(dead_code)] OwnedFd),
}

/// The host role, while held: the lock and the directory's server, an engine of its own
/// (`dir_exchange.rs`).
pub(crate) struct Holder {
    _lock: RoleLock,
    server: super::engine::Engine,
}

impl Holder {
    pub(crate) fn close(self) {
        // Dropping the engine closes its connections.
        drop(self.server);
    }
}

/// This member's entries, removed by `unregister` (the abstract one goes with the process
/// whatever happens).
pub(crate) struct Entry {
    file: PathBuf,
    _name: Option<OwnedFd>,
}

/// Register this member: `<dir>/<name>.quic` holding `<port> <pid>`, written whole (rename), and
/// its name in `scope` (when it fits).
pub(crate) fn register(
    dir: &Path,
    scope: Option<&HostScope>,
    name: &str,
    port: u16,
) -> Result<Entry, LinkError> {
    let path = dir.join(format!("{name}.quic"));
    let tmp = dir.join(format!(".{name}.quic.tmp"));
    std::fs::write(&tmp, format!("{port} {}\n", std::process::id()))?;
    std::fs::rename(&tmp, &path)?;
    let held = match scope.and_then(|s| s.member(name, port)) {
        Some(n) => Some(abstract_names::hold(&n)?),
        None => None,
    };
    Ok(Entry {
        file: path,
        _name: held,
    })
}

/// Remove our entries (the file only if it is still ours: a newer process may have taken the
/// name).
pub(crate) fn unregister(entry: Entry) {
    let path = &entry.file;
    if let Ok(s) = std::fs::read_to_string(path) {
        if parse_entry(&s).is_some_and(|(_, pid)| pid == std::process::id()) {
            let _ = std::fs::remove_file(path);
        }
    }
}

fn parse_entry(s: &str) -> Option<(u16, u32)> {
    let mut it = s.split_ascii_whitespace();
    let port = it.next()?.parse().ok()?;
    let pid = it.next()?.parse().ok()?;
    Some((port, pid))
}

fn alive(pid: u32) -> bool {
    let Ok(pid) = i32::try_from(pid) else {
        return false;
    };
    !matches!(
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None),
        Err(Errno::ESRCH)
    )
}

/// The live members registered in `dir` or held in `scope`, each once; file entries of dead
/// processes are removed.
pub(crate) fn members(dir: &Path, scope: Option<&HostScope>) -> Vec<(String, u16)> {
    let mut out = members_in_dir(dir);
    if let Some(s) = scope {
        out.extend(s.members());
    }
    out.sort();
    out.dedup_by(|a, b| a.0 == b.0);
    out
}

fn members_in_dir(dir: &Path) -> Vec<(String, u16)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in entries.filter_map(|e| e.ok()) {
        let file = e.file_name();
        let Some(name) = file.to_str().and_then(|n| n.strip_suffix(".quic")) else {
            continue;
        };
        if !valid_node_name(name) {
            continue;
        }
        let Some((port, pid)) = std::fs::read_to_string(e.path())
            .ok()
            .and_then(|s| parse_entry(&s))
        else {
            continue;
        };
        if alive(pid) {
            out.push((name.to_owned(), port));
        } else {
            let _ = std::fs::remove_file(e.path());
        }
    }
    out.sort();
    out
}

/// The role's lock if nobody holds it.
fn try_lock_role(inner: &Inner) -> Result<Option<RoleLock>, String> {
    if let Some(scope) = &inner.cfg.host_scope {
        let name = scope.role();
        return match abstract_names::hold(&name) {
            Ok(fd) => Ok(Some(RoleLock::Name(fd))),
            Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => Ok(None),
            Err(e) => Err(format!("@{name}: {e}")),
        };
    }
    let path = inner.dir.join("net-role.lock");
    let f = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    match Flock::lock(f, FlockArg::LockExclusiveNonblock) {
        Ok(l) => Ok(Some(RoleLock::File(l))),
        Err((_, Errno::EWOULDBLOCK)) => Ok(None),
        Err((_, e)) => Err(format!("{}: {e}", path.display())),
    }
}

/// Why the role could not be taken although its lock was free.
enum RoleRefused {
    /// Another process holds the directory port: a group of graphs with another scope (another
    /// `RMW_TRACER_RENDEZVOUS_DIR`), or a program that is not ours.
    PortHeld,
    Failed(String),
}

impl From<String> for RoleRefused {
    fn from(s: String) -> Self {
        RoleRefused::Failed(s)
    }
}

/// Take the host role if nobody holds it: the lock, then the directory port.
fn try_take_role(inner: &Arc<Inner>) -> Result<Option<Holder>, RoleRefused> {
    let Some(lock) = try_lock_role(inner)? else {
        return Ok(None);
    };
    let port = inner.cfg.directory_port;
    let sock = match super::bind_udp(SocketAddr::new(inner.cfg.bind, port)) {
        Ok(s) => s,
        Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => return Err(RoleRefused::PortHeld),
        Err(e) => {
            return Err(RoleRefused::Failed(format!(
                "cannot bind the host directory port {port}: {e}"
            )))
        }
    };
    let server = super::dir_exchange::serve(inner, sock, MAX_CLIENTS)?;
    Ok(Some(Holder {
        _lock: lock,
        server,
    }))
}

/// One attempt at the role; `Err` says why it could not be taken although it was free.
fn take_role(inner: &Arc<Inner>) -> Result<(), RoleRefused> {
    if inner.role.lock().is_some() {
        return Ok(());
    }
    if let Some(h) = try_take_role(inner)? {
        if inner.cfg.subnet.is_some() {
            match super::subnet::send_sockets(inner.cfg.bind) {
                Ok((socks, failed)) => {
                    for e in failed {
                        inner.log(&format!("network: SUBNET announcements over {e}"));
                    }
                    super::chores::detach(super::subnet::announce_loop(inner.clone(), socks));
                }
                Err(e) => inner.log(&format!(
                    "network: SUBNET announcements: {e}; not announced"
                )),
            }
        }
        *inner.role.lock() = Some(h);
    }
    Ok(())
}

/// At start: take the role if it is free (errors are the role loop's to report).
pub(crate) fn take_role_now(inner: &Arc<Inner>) {
    let _ = take_role(inner);
}

/// Try the role every `role_retry` while someone else holds it; serve it while we do.
pub(crate) async fn role_loop(inner: Arc<Inner>) {
    let mut stop = inner.stop.clone();
    let mut reported = false;
    let mut joined_holder = false;
    loop {
        if inner.stopped() {
            break;
        }
        match take_role(&inner) {
            Ok(()) => reported = false,
            Err(RoleRefused::PortHeld) if !joined_holder => {
                // Not an error to repeat: another group of graphs on this host serves the
                // port. Its members are ours to link to, through its directory on loopback,
                // as a static peer's; it learns of us from the links.
                joined_holder = true;
                let port = inner.cfg.directory_port;
                let here = if inner.cfg.bind.is_unspecified() {
                    IpAddr::from([127, 0, 0, 1])
                } else {
                    inner.cfg.bind
                };
                let at = SocketAddr::new(here, port);
                inner.log(&format!(
                    "network: the host directory port {port} is held by another group of graphs \
                     on this host (another RMW_TRACER_RENDEZVOUS_DIR?); linking to its members \
                     through it at {at}. Give every process the same setting to share one \
                     directory."
                ));
                super::chores::detach(super::peer_host::peer_loop(
                    inner.clone(),
                    super::peer_host::PeerHost::Static(at.to_string()),
                    None,
                    None,
                    None,
                ));
            }
            Err(RoleRefused::PortHeld) => {}
            Err(RoleRefused::Failed(why)) => {
                if !reported {
                    inner.log(&format!("network: host role: {why}; retrying quietly"));
                    reported = true;
                }
            }
        }
        tokio::select! {
            _ = super::chores::sleep(inner.cfg.role_retry) => {}
            _ = stop.wait_for(|s| *s) => break,
        }
    }
}

/// A host directory's answer: one `<name> <port>\n` line per member (the last newline may be
/// missing). Every line must be exactly that, with a valid node name and a port other than 0,
/// or the whole answer is refused (a peer that sends one bad line is not trusted for the
/// rest). At most [`MAX_ANSWER`] bytes, so at most that many members come of one answer.
pub(crate) fn parse_answer(bytes: &[u8]) -> Result<Vec<(String, u16)>, String> {
    if bytes.len() > MAX_ANSWER {
        return Err(format!(
            "directory answer of {} bytes (at most {MAX_ANSWER})",
            bytes.len()
        ));
    }
    let text = std::str::from_utf8(bytes).map_err(|_| "directory answer is not UTF-8")?;
    let mut members = Vec::new();
    for line in text.lines() {
        let mut it = line.split(' ');
        match (it.next(), it.next().and_then(parse_port), it.next()) {
            (Some(name), Some(port), None) if valid_node_name(name) => {
                members.push((name.to_owned(), port))
            }
            _ => {
                let shown: String = line.chars().take(80).collect();
                return Err(format!("malformed directory line {shown:?}"));
            }
        }
    }
    Ok(members)
}

/// A port in plain decimal digits (no sign, as `u16::from_str` would take `+80`), not 0.
fn parse_port(s: &str) -> Option<u16> {
    if s.is_empty() || s.len() > 5 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse::<u16>().ok().filter(|p| *p != 0)
}

/// `host`, `host:port`, `[v6]` or `[v6]:port`; a bare IPv6 address takes the default port.
pub(crate) fn parse_peer(entry: &str, default_port: u16) -> Option<(String, u16)> {
    let entry = entry.trim();
    if entry.is_empty() {
        return None;
    }
    if let Some(rest) = entry.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        let port = match after.strip_prefix(':') {
            Some(p) => p.parse().ok()?,
            None if after.is_empty() => default_port,
            None => return None,
        };
        return Some((host.to_owned(), port));
    }
    match entry.matches(':').count() {
        0 => Some((entry.to_owned(), default_port)),
        1 => {
            let (host, port) = entry.split_once(':')?;
            Some((host.to_owned(), port.parse().ok()?))
        }
        _ => Some((entry.to_owned(), default_port)),
    }
}

/// Whether an endpoint bound at `bind` can send to `to`: from the dual-stack `[::]`, any
/// address; otherwise one of the same family.
pub(super) fn reachable_from(bind: IpAddr, to: IpAddr) -> bool {
    bind == IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED) || bind.is_ipv4() == to.is_ipv4()
}

#[cfg(test)]
mod tests {
    use super::{parse_answer, parse_peer, reachable_from};
    use std::net::IpAddr;

    #[test]
    fn families_reached_from_a_bind_address() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        assert!(reachable_from(ip("::"), ip("192.0.2.2")));
        assert!(reachable_from(ip("::"), ip("fd00:db8::2")));
        assert!(reachable_from(ip("0.0.0.0"), ip("192.0.2.2")));
        assert!(!reachable_from(ip("0.0.0.0"), ip("fd00:db8::2")));
        assert!(reachable_from(ip("fd00:db8::1"), ip("fd00:db8::2")));
        assert!(!reachable_from(ip("fd00:db8::1"), ip("192.0.2.2")));
    }

    #[test]
    fn directory_answers() {
        assert_eq!(
            parse_answer(b"a 1\nb-2 65535\n").unwrap(),
            vec![("a".into(), 1), ("b-2".into(), 65535)]
        );
        assert_eq!(parse_answer(b"a 7").unwrap(), vec![("a".into(), 7)]);
        assert!(parse_answer(b"").unwrap().is_empty());
        for bad in [
            &b"a 0\n"[..],
            b"a 65536\n",
            b"a +80\n",
            b"a  80\n",
            b"a 80 x\n",
            b"../x 80\n",
            b"a\n",
            b"\n",
            b"a 80\n\xff 1\n",
        ] {
            assert!(parse_answer(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn static_peer_entries() {
        assert_eq!(parse_peer("192.0.2.2", 7), Some(("192.0.2.2".into(), 7)));
        assert_eq!(
            parse_peer(" robot.local ", 7),
            Some(("robot.local".into(), 7))
        );
        assert_eq!(parse_peer("h:900", 7), Some(("h".into(), 900)));
        assert_eq!(parse_peer("[::1]:900", 7), Some(("::1".into(), 900)));
        assert_eq!(parse_peer("[::1]", 7), Some(("::1".into(), 7)));
        assert_eq!(parse_peer("fe80::1", 7), Some(("fe80::1".into(), 7)));
        assert_eq!(
            parse_peer("fd00:db8::2", 7),
            Some(("fd00:db8::2".into(), 7))
        );
        assert_eq!(
            parse_peer("[fd00:db8::1]:24651", 7),
            Some(("fd00:db8::1".into(), 24651))
        );
        assert_eq!(parse_peer("[fd00:db8::1]x", 7), None);
        assert_eq!(parse_peer("[fd00:db8::1", 7), None);
        assert_eq!(parse_peer("h:x", 7), None);
        assert_eq!(parse_peer("", 7), None);
    }
}
