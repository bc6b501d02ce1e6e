//! Reaching a peer host: one task per host (a static peer, or one SUBNET announced) asks its
//! directory (`directory.rs`) every poll over one kept connection (no handshake per poll) and
//! connects to its members. That connection's keep-alive is the host's liveness: when it dies
//! and a new one cannot be made within `host_probe`, the host has vanished and the links to
//! the members it listed go down; a member no longer listed (its process died) loses its link
//! at once. So a process pays liveness per peer host, not per remote process
//! (docs/network.md sections 3 and 8).
//!
//! The loop runs on the chores' thread (`chores.rs`); its connection is one of the links'
//! engine (`dir_exchange.rs`).

use std::collections::HashSet;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use super::chores::{self, Racing};
use super::dir_exchange::DirClient;
use super::directory::{parse_answer, parse_peer, reachable_from};
use super::Inner;

/// How often a probe (`probe`) starts one more attempt.
const PROBE_ATTEMPT: Duration = Duration::from_millis(100);
/// Backoff of a static peer that cannot be reached: from the first value, doubling, to the last.
const BACKOFF: (Duration, Duration) = (Duration::from_millis(250), Duration::from_secs(2));

/// Ask a directory for its members over its connection.
async fn ask(conn: &DirClient) -> Result<Vec<(String, u16)>, String> {
    parse_answer(&conn.ask().await?)
}

/// Resolve `host` to an address we can reach from `bind` (each time: names may move): any,
/// in the resolver's order, from the dual-stack `[::]`; otherwise one of `bind`'s family.
async fn resolve(host: &str, port: u16, bind: IpAddr) -> Result<SocketAddr, String> {
    let addrs = chores::lookup_host(host, port)
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
    /// A host we neither list nor heard announce, whose process linked to us: its directory
    /// is at its address with our domain's directory port. Asked for its liveness (section 3
    /// of docs/network.md) and its members, as a static peer is, for as long as we run.
    Learned(SocketAddr),
}

impl PeerHost {
    fn label(&self) -> String {
        match self {
            PeerHost::Static(e) => format!("static peer {e}"),
            PeerHost::Announced(a) => format!("announced host {a}"),
            PeerHost::Learned(a) => format!("host {a} (its process linked to us)"),
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

/// The kept connection to one peer host's directory.
struct HostConn {
    addr: SocketAddr,
    conn: DirClient,
}

/// Resolves when the host's directory connection is gone (never without one).
async fn lost(host: &Option<HostConn>) {
    match host {
        Some(h) => h.conn.closed().await,
        None => std::future::pending().await,
    }
}

/// One round: the host's address (a name is resolved at each round, since names may move),
/// the kept connection or a new one, and the members it lists now.
async fn round(
    inner: &Inner,
    target: &Where,
    host: &mut Option<HostConn>,
) -> Result<(SocketAddr, Vec<(String, u16)>), String> {
    let hs = inner.cfg.handshake_timeout;
    let addr = match target {
        Where::Addr(a) => *a,
        Where::Name(name, port) => resolve(name, *port, inner.cfg.bind).await?,
    };
    if let Some(h) = host.take_if(|h| h.addr != addr) {
        // The name moved: another host's directory from now on.
        h.conn.close(b"moved");
    }
    if host.is_none() {
        let conn = DirClient::dial(inner, addr, hs).await?;
        *host = Some(HostConn { addr, conn });
    }
    let conn = &host.as_ref().expect("made above").conn;
    let members = chores::timeout(hs, ask(conn))
        .await
        .map_err(|_| format!("{addr}: no answer from the host directory"))??;
    Ok((addr, members))
}

/// The host's directory connection died: make a new one within `host_probe` (a connection the
/// holder closed, as when it exits, also waits for another member to take the role). `None`:
/// the host did not answer, it vanished.
async fn probe(inner: &Arc<Inner>, h: &HostConn) -> Option<HostConn> {
    let timed_out = h.conn.timed_out();
    let mut bound = inner.cfg.host_probe;
    if !timed_out {
        bound += inner.cfg.role_retry * 2;
    }
    // A new attempt every PROBE_ATTEMPT, the earlier ones still running: an Initial sent
    // before a new holder bound the port is lost (and QUIC would resend it only after about a
    // second), while a slow but live host still completes its first handshake.
    let start = std::time::Instant::now();
    let deadline = start + bound;
    let mut next = start;
    // Dropped with the probe: the attempts still running end with it.
    let mut tries = Racing::default();
    loop {
        tokio::select! {
            _ = chores::sleep_until(next), if next < deadline => {
                let (me, addr) = (inner.clone(), h.addr);
                let left = deadline.saturating_duration_since(std::time::Instant::now());
                tries.push(async move { DirClient::dial(&me, addr, left).await });
                next += PROBE_ATTEMPT;
            }
            r = tries.next() => {
                if let Ok(conn) = r {
                    return Some(HostConn { addr: h.addr, conn });
                }
            }
            _ = chores::sleep_until(deadline) => return None,
        }
    }
}

/// Reach one peer host for as long as the transport runs (a static peer) or until `gone` turns
/// true (an announced host no longer heard): ask its directory every `poll_interval` over one
/// kept connection and connect to its members; a failure is reported once, then retried
/// quietly with a backoff until the host answers again. The links to members the directory
/// stopped listing go down, and all the listed ones when the host vanishes (its connection
/// died and no new one could be made). After the first round (the query and the connects it
/// started), `first` is told once.
pub(crate) async fn peer_loop(
    inner: Arc<Inner>,
    host: PeerHost,
    first: Option<std::sync::mpsc::Sender<()>>,
    gone: Option<watch::Receiver<bool>>,
    claimed: Option<SocketAddr>,
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
        PeerHost::Announced(a) | PeerHost::Learned(a) => Where::Addr(*a),
    };
    // The directory address this loop asks, as the transport knows it (so that a process of a
    // host asked here is not given a learned loop too): `claimed` by the spawner, or taken at
    // once for an address, and at each resolution for a name.
    let mut polling = claimed;
    if polling.is_none() {
        let known = match &target {
            Where::Addr(a) => Some(*a),
            Where::Name(name, port) => name
                .parse::<IpAddr>()
                .ok()
                .map(|ip| SocketAddr::new(ip, *port)),
        };
        if let Some(a) = known {
            inner.poll_start(a);
            polling = Some(a);
        }
    }
    let mut backoff = BACKOFF.0;
    let mut reported = false;
    let mut conn: Option<HostConn> = None;
    // The members this host's directory listed last.
    let mut listed: HashSet<String> = HashSet::new();
    'rounds: loop {
        if inner.stopped() || gone.as_ref().is_some_and(|g| *g.borrow()) {
            break;
        }
        let wait = match round(&inner, &target, &mut conn).await {
            Ok((addr, members)) => {
                if reported {
                    inner.log(&format!("network: {label} reached again"));
                    reported = false;
                }
                backoff = BACKOFF.0;
                if polling != Some(addr) {
                    if let Some(old) = polling.replace(addr) {
                        inner.poll_end(old);
                    }
                    inner.poll_start(addr);
                }
                let now: HashSet<String> = members.iter().map(|(n, _)| n.clone()).collect();
                inner.drop_lost(listed.difference(&now));
                listed = now;
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
        // Until the next round: the host's connection may die meanwhile (or have died in the
        // round), which is the host's liveness.
        loop {
            if conn.as_ref().is_some_and(|h| h.conn.is_closed()) {
                let dead = conn.take().expect("checked");
                conn = probe(&inner, &dead).await;
                if conn.is_none() && !listed.is_empty() {
                    let n = inner.drop_lost(listed.iter());
                    inner.log(&format!(
                        "network: {label} vanished (its directory connection died and it did \
                         not answer again within {:?}); {n} links closed",
                        inner.cfg.host_probe
                    ));
                    listed.clear();
                }
                if conn.is_some() {
                    continue 'rounds;
                }
            }
            tokio::select! {
                _ = chores::sleep(wait) => continue 'rounds,
                _ = stop.wait_for(|s| *s) => break 'rounds,
                _ = ended(&mut gone) => break 'rounds,
                _ = lost(&conn) => {}
            }
        }
    }
    if let Some(h) = conn {
        h.conn.close(b"done");
    }
    if let Some(a) = polling {
        inner.poll_end(a);
    }
}
