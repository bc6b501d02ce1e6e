//! The host directory: who the members of a host are and on which UDP port each has its link
//! endpoint. Each member registers `<dir>/<name>.quic` (`<port> <pid>`); the holder of the host
//! role (an exclusive `flock` on `<dir>/net-role.lock`) answers queries on the domain's
//! well-known port; each static peer has a task that asks its directory and connects.
//!
//! A query is one bidirectional stream (ALPN `libtracer-dir/1`): the client writes `members\n`
//! and finishes; the holder answers one line `<name> <port>\n` per live member and finishes.
//! This is the QUIC adapter's own exchange, not a libtracer frame (docs/network.md).

use std::fs::{File, OpenOptions};
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};
use tokio::sync::{watch, Semaphore};

use super::{new_endpoint, tls, Inner};
use crate::link::{valid_node_name, LinkError};

const REQUEST: &[u8] = b"members\n";
/// Bound on a directory answer (a host of thousands of members fits).
const MAX_ANSWER: usize = 256 * 1024;
/// Directory queries answered at once; more are refused.
const MAX_QUERIES: usize = 64;
/// Backoff of a static peer that cannot be reached: from the first value, doubling, to the last.
const BACKOFF: (Duration, Duration) = (Duration::from_millis(250), Duration::from_secs(2));

/// The host role, while held: the lock and the directory's endpoint.
pub(crate) struct Holder {
    _lock: Flock<File>,
    endpoint: quinn::Endpoint,
}

impl Holder {
    pub(crate) fn close(self) {
        self.endpoint.close(0u32.into(), b"role given up");
    }
}

/// Register this member: `<dir>/<name>.quic` holding `<port> <pid>`, written whole (rename).
pub(crate) fn register(dir: &Path, name: &str, port: u16) -> Result<PathBuf, LinkError> {
    let path = dir.join(format!("{name}.quic"));
    let tmp = dir.join(format!(".{name}.quic.tmp"));
    std::fs::write(&tmp, format!("{port} {}\n", std::process::id()))?;
    std::fs::rename(&tmp, &path)?;
    Ok(path)
}

/// Remove our entry (only if it is still ours: a newer process may have taken the name).
pub(crate) fn unregister(path: &Path) {
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

/// The live members registered in `dir`; entries of dead processes are removed.
pub(crate) fn members(dir: &Path) -> Vec<(String, u16)> {
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

/// Take the host role if nobody holds it: the lock, then the directory port.
fn try_take_role(inner: &Inner) -> Result<Option<Holder>, String> {
    let path = inner.dir.join("net-role.lock");
    let f = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let lock = match Flock::lock(f, FlockArg::LockExclusiveNonblock) {
        Ok(l) => l,
        Err((_, Errno::EWOULDBLOCK)) => return Ok(None),
        Err((_, e)) => return Err(format!("{}: {e}", path.display())),
    };
    let port = inner.cfg.directory_port;
    let sock = super::bind_udp(SocketAddr::new(inner.cfg.bind, port))
        .map_err(|e| format!("cannot bind the host directory port {port}: {e}"))?;
    let sc = tls::server_config(&inner.identity, tls::ALPN_DIR, inner.transport.clone())?;
    let endpoint = new_endpoint(&inner.rt, Some(sc), sock).map_err(|e| e.to_string())?;
    Ok(Some(Holder {
        _lock: lock,
        endpoint,
    }))
}

/// One attempt at the role; `Err` says why it could not be taken although it was free.
fn take_role(inner: &Arc<Inner>) -> Result<(), String> {
    if inner.role.lock().is_some() {
        return Ok(());
    }
    if let Some(h) = try_take_role(inner)? {
        inner.rt.spawn(serve(inner.clone(), h.endpoint.clone()));
        if inner.cfg.subnet.is_some() {
            match super::subnet::send_sockets(inner.cfg.bind) {
                Ok((socks, failed)) => {
                    for e in failed {
                        inner.log(&format!("network: SUBNET announcements over {e}"));
                    }
                    inner
                        .rt
                        .spawn(super::subnet::announce_loop(inner.clone(), socks));
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
    loop {
        if inner.stopped() {
            break;
        }
        match take_role(&inner) {
            Ok(()) => reported = false,
            Err(why) => {
                if !reported {
                    inner.log(&format!("network: host role: {why}; retrying quietly"));
                    reported = true;
                }
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(inner.cfg.role_retry) => {}
            _ = stop.wait_for(|s| *s) => break,
        }
    }
}

async fn serve(inner: Arc<Inner>, endpoint: quinn::Endpoint) {
    let mut stop = inner.stop.clone();
    let slots = Arc::new(Semaphore::new(MAX_QUERIES));
    loop {
        let incoming = tokio::select! {
            i = endpoint.accept() => i,
            _ = stop.wait_for(|s| *s) => None,
        };
        let Some(incoming) = incoming else { break };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            incoming.refuse();
            continue;
        };
        let (me, hs) = (inner.clone(), inner.cfg.handshake_timeout);
        inner.rt.spawn(async move {
            let _slot = slot;
            let _ = tokio::time::timeout(hs, answer(&me, incoming)).await;
        });
    }
    endpoint.close(0u32.into(), b"shutdown");
}

async fn answer(inner: &Inner, incoming: quinn::Incoming) -> Result<(), String> {
    let dir = inner.dir.as_path();
    let from = super::peer_address(incoming.remote_address());
    let conn = match incoming.await {
        Ok(c) => c,
        Err(e) => {
            // With SROS2 on, most likely a peer of another CA or of none: logged once.
            inner.auth_failed(from, &e);
            return Err(e.to_string());
        }
    };
    let (mut send, mut recv) = conn.accept_bi().await.map_err(|e| e.to_string())?;
    let req = recv
        .read_to_end(REQUEST.len())
        .await
        .map_err(|e| e.to_string())?;
    if req != REQUEST {
        conn.close(1u32.into(), b"bad directory request");
        return Err("bad directory request".into());
    }
    let mut text = String::new();
    for (name, port) in members(dir) {
        text.push_str(&format!("{name} {port}\n"));
    }
    send.write_all(text.as_bytes())
        .await
        .map_err(|e| e.to_string())?;
    let _ = send.finish();
    let _ = send.stopped().await;
    conn.close(0u32.into(), b"done");
    Ok(())
}

/// Ask the directory at `addr` for its members.
async fn query(inner: &Inner, addr: SocketAddr) -> Result<Vec<(String, u16)>, String> {
    let connecting = inner
        .endpoint
        .connect_with(inner.dir_client.clone(), addr, tls::SERVER_NAME)
        .map_err(|e| e.to_string())?;
    let conn = connecting.await.map_err(|e| format!("{addr}: {e}"))?;
    let out = async {
        let (mut send, mut recv) = conn.open_bi().await.map_err(|e| e.to_string())?;
        send.write_all(REQUEST).await.map_err(|e| e.to_string())?;
        let _ = send.finish();
        let bytes = recv
            .read_to_end(MAX_ANSWER)
            .await
            .map_err(|e| format!("directory answer: {e}"))?;
        parse_answer(&bytes)
    }
    .await;
    conn.close(0u32.into(), b"done");
    out
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
fn reachable_from(bind: IpAddr, to: IpAddr) -> bool {
    bind == IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED) || bind.is_ipv4() == to.is_ipv4()
}

/// Resolve `host` to an address we can reach from `bind` (each time: names may move): any,
/// in the resolver's order, from the dual-stack `[::]`; otherwise one of `bind`'s family.
async fn resolve(host: &str, port: u16, bind: IpAddr) -> Result<SocketAddr, String> {
    let addrs = tokio::net::lookup_host((host, port))
        .await
        .map_err(|e| format!("cannot resolve {host}: {e}"))?;
    addrs
        .into_iter()
        .find(|a| reachable_from(bind, a.ip()))
        .ok_or_else(|| format!("{host} has no address of the family we bind ({bind})"))
}

/// A peer host whose directory is asked: a static peer's entry (`host[:port]`, resolved at
/// each round, since names may move) or the address a SUBNET announcement gave.
pub(crate) enum PeerHost {
    Static(String),
    Announced(SocketAddr),
}

impl PeerHost {
    fn label(&self) -> String {
        match self {
            PeerHost::Static(e) => format!("static peer {e}"),
            PeerHost::Announced(a) => format!("announced host {a}"),
        }
    }
}

/// Resolves when `gone` turns true or its sender goes (never without one: a static peer).
async fn ended(gone: &mut Option<watch::Receiver<bool>>) {
    match gone {
        Some(g) => {
            let _ = g.wait_for(|g| *g).await;
        }
        None => std::future::pending().await,
    }
}

enum Where {
    Name(String, u16),
    Addr(SocketAddr),
}

/// Reach one peer host for as long as the transport runs (a static peer) or until `gone` turns
/// true (an announced host no longer heard): ask its directory every `poll_interval` and connect
/// to its members; a failure is reported once, then retried quietly with a backoff until the
/// host answers again. After the first round (the query and the connects it started), `first`
/// is told once.
pub(crate) async fn peer_loop(
    inner: Arc<Inner>,
    host: PeerHost,
    first: Option<std::sync::mpsc::Sender<()>>,
    gone: Option<watch::Receiver<bool>>,
) {
    let mut first = first;
    let mut stop = inner.stop.clone();
    let mut gone = gone;
    let label = host.label();
    let target = match &host {
        PeerHost::Static(entry) => match parse_peer(entry, inner.cfg.directory_port) {
            Some((name, port)) => Where::Name(name, port),
            None => {
                inner.log(&format!(
                    "network: static peer {entry:?} is not host[:port]; ignored"
                ));
                let _ = first.take().map(|f| f.send(()));
                return;
            }
        },
        PeerHost::Announced(a) => Where::Addr(*a),
    };
    let mut backoff = BACKOFF.0;
    let mut reported = false;
    loop {
        if inner.stopped() || gone.as_ref().is_some_and(|g| *g.borrow()) {
            break;
        }
        let hs = inner.cfg.handshake_timeout;
        let r = async {
            let addr = match &target {
                Where::Addr(a) => *a,
                Where::Name(name, port) => resolve(name, *port, inner.cfg.bind).await?,
            };
            let members = tokio::time::timeout(hs, query(&inner, addr))
                .await
                .map_err(|_| format!("{addr}: no answer from the host directory"))??;
            Ok::<_, String>((addr, members))
        }
        .await;
        let wait = match r {
            Ok((addr, members)) => {
                if reported {
                    inner.log(&format!("network: {label} reached again"));
                    reported = false;
                }
                backoff = BACKOFF.0;
                let mut started = Vec::new();
                for (name, port) in members {
                    // The directory's address with the member's port: a link-local
                    // address keeps its interface (scope id).
                    let mut at = addr;
                    at.set_port(port);
                    started.extend(inner.maybe_connect(&name, at));
                }
                if first.is_some() {
                    for h in started {
                        let _ = h.await;
                    }
                }
                inner.cfg.poll_interval
            }
            Err(why) => {
                if !reported {
                    inner.log(&format!("network: {label}: {why}; retrying quietly"));
                    reported = true;
                }
                let w = backoff;
                backoff = (backoff * 2).min(BACKOFF.1);
                w
            }
        };
        let _ = first.take().map(|f| f.send(()));
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = stop.wait_for(|s| *s) => break,
            _ = ended(&mut gone) => break,
        }
    }
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
