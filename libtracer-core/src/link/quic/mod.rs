//! `QuicTransport`: links between graphs of different hosts over QUIC (quinn-proto + rustls), the
//! design in docs/network.md.
//!
//! Every process with the network on has one QUIC endpoint (an ephemeral UDP port) for its
//! links. One process per host and domain holds the host role (an `flock` in the rendezvous
//! directory) and serves the host directory on the domain's well-known port: the names and
//! link ports of the host's members. For each static peer a task asks that host's directory
//! every `poll_interval` and connects to each member it has no link to. A link's control
//! stream (bidirectional) carries the HELLO handshake and the requests, its edge streams
//! (unidirectional, one per priority class) and datagrams the deliveries (`streams.rs`), all
//! with the same frames and codec as a Unix socket; one link per pair survives a connect race by
//! the same rule (the smaller name's connection wins). With SUBNET the holder also
//! announces the directory on the local network and every process reaches each host it hears
//! as a static peer (`subnet.rs`, `announce.rs`).
//!
//! Threads: the links run on the runtime-free engine (docs/network.md section 4a:
//! `handshake.rs`, `link.rs`): quinn-proto driven by the Unix links' loop and by the sending
//! threads, the callbacks on the Unix links' workers; and so does the directory
//! (`dir_exchange.rs`: its server on an engine of its own, its clients on the links' engine).
//! SUBNET and the peer hosts' and connect attempts' loops run on one thread of chores
//! (`chores.rs`). No async runtime, and the same threads whatever the number of links.

mod announce;
mod chores;
mod config;
mod dir_exchange;
mod directory;
mod engine;
mod exercise;
mod expiry;
mod handshake;
mod hello;
mod ifaces;
mod inbound;
mod link;
mod peer_cert;
mod peer_host;
mod probe;
mod probe_engine;
mod probe_inline;
#[cfg(feature = "quinn-probe")]
mod probe_quinn;
mod queue;
mod receive;
mod routes;
mod send;
mod streams;
mod subnet;
mod tls;
mod tuning;

use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use tokio::sync::watch;

pub use announce::{
    decode as decode_announcement, encode as announce_bytes, exercise_announce, AnnounceError,
    Announcement,
};
pub use config::{
    GrantTurn, LearnPermissions, NetLog, PermissionsExchange, QuicConfig, DIRECTORY_PORT_BASE,
};
pub use exercise::{exercise_datagram, exercise_directory_answer, exercise_flood, FloodReport};
use link::QuicLink;
pub use link::{QuicLinkHandle, ShedCounts};
pub use peer_cert::subject_of;
pub use probe::{probe_burst, probe_echo, probe_ping, ProbeMode};
pub use receive::decode_datagram;
pub use subnet::{SubnetConfig, ANNOUNCE_GROUP, ANNOUNCE_GROUP_V6, ANNOUNCE_PORT_BASE, MAX_HOSTS};
pub use tls::QuicSecurity;

use super::rendezvous::prepare_dir;
use super::{valid_node_name, Link, LinkError, LinkHandler};

/// At most this many connections (links and handshakes) per transport.
const MAX_CONNECTIONS: usize = 1024;
/// A peer whose link we closed (by `close`, or for malformed input or a failed handler) is not
/// linked again, either way, for this long: the directory poll would otherwise bring back at
/// once what was closed on purpose. A link lost to the network is re-formed at once.
const COOLDOWN: Duration = Duration::from_secs(2);

#[derive(Default)]
struct Table {
    links: HashMap<String, Arc<QuicLink>>,
    /// Peers we are connecting to.
    pending: HashSet<String>,
    /// Peers whose incoming connection we are accepting (HELLO reply in flight).
    accepting: HashSet<String>,
    /// Incoming handshakes in progress.
    handshakes: usize,
    /// Links whose `on_down` has not run yet.
    live: usize,
    /// Peers not to link again before the instant (see `COOLDOWN`).
    cooldown: HashMap<String, Instant>,
    /// Addresses whose failed authentication was logged (once each; bounded).
    auth_logged: HashSet<SocketAddr>,
    stopped: bool,
}

/// At most this many addresses are remembered as logged; past it the set starts again.
const AUTH_LOGGED_MAX: usize = 1024;

pub(crate) struct Inner {
    name: String,
    dir: PathBuf,
    handler: Arc<dyn LinkHandler>,
    cfg: QuicConfig,
    /// The links' engine (the directory clients dial through it too), until shutdown.
    engine: Mutex<Option<Arc<engine::Engine>>>,
    /// The UDP port the directory lists for this process's links.
    link_port: u16,
    link_client: quinn_proto::ClientConfig,
    dir_client: quinn_proto::ClientConfig,
    identity: tls::Identity,
    /// The directory server's transport (its connections are the hosts' liveness).
    dir_transport: Arc<quinn_proto::TransportConfig>,
    table: Mutex<Table>,
    downs: Condvar,
    stop: watch::Receiver<bool>,
    role: Mutex<Option<directory::Holder>>,
    member: Mutex<Option<directory::Entry>>,
    /// This host's id for the domain (SUBNET only; 0 without).
    host_id: u64,
    /// Directory addresses some peer loop asks, with how many loops ask each.
    polled: Mutex<HashMap<SocketAddr, u32>>,
    /// Announced hosts being reached (SUBNET).
    found: Mutex<subnet::FoundHosts>,
    /// Datagrams on the announcement port that were not announcements of our subnet.
    rejected: AtomicU64,
    /// Conditions already reported (each once; bounded).
    said: Mutex<HashSet<String>>,
    /// The graphs listening in our scope, as last read from `/proc/net/unix`, and when
    /// (`is_local`: a directory poll asks about every member it lists).
    local_names: Mutex<Option<(Instant, HashSet<String>)>>,
}

/// How long a reading of the scope's listeners answers `is_local`.
const LOCAL_NAMES_FRESH: Duration = Duration::from_millis(250);

/// The QUIC transport of one graph. Dropping it (or `shutdown`) closes every link and waits for
/// their `on_down`, gives up the host role and removes its directory entry.
pub struct QuicTransport {
    inner: Arc<Inner>,
    stop: watch::Sender<bool>,
}

fn io_err(why: impl std::fmt::Display) -> LinkError {
    LinkError::Io(std::io::Error::other(why.to_string()))
}

impl QuicTransport {
    /// Start as `local_name`, registered in the rendezvous directory `dir` (the one of the
    /// Unix transport, whose sockets tell which members are local).
    pub fn start(
        dir: &Path,
        local_name: &str,
        handler: Arc<dyn LinkHandler>,
        cfg: QuicConfig,
    ) -> Result<QuicTransport, LinkError> {
        if !valid_node_name(local_name) {
            return Err(LinkError::InvalidName(local_name.to_owned()));
        }
        prepare_dir(dir)?;
        // The directory, SUBNET and the connect attempts run on the chores' thread (stage 3
        // of docs/network.md section 4a).
        chores::start()?;
        let identity = tls::Identity::new(cfg.security.as_ref()).map_err(io_err)?;
        let transport = tls::transport(cfg.idle_timeout, cfg.keep_alive);
        let dir_transport = tls::transport(cfg.host_idle_timeout, cfg.host_keep_alive);
        let server =
            tls::server_config(&identity, tls::ALPN_LINK, transport.clone()).map_err(io_err)?;
        let link_client =
            tls::client_config(&identity, tls::ALPN_LINK, transport.clone()).map_err(io_err)?;
        let dir_client =
            tls::client_config(&identity, tls::ALPN_DIR, dir_transport.clone()).map_err(io_err)?;
        // The engine's socket takes the links and the directory clients' connections; its
        // port is the one the directory lists.
        let (engine, owner) = handshake::bind(SocketAddr::new(cfg.bind, 0), server)?;
        let port = engine.local_addr()?.port();
        let member = directory::register(dir, cfg.host_scope.as_ref(), local_name, port)?;
        let host_id = match cfg.subnet {
            Some(_) => subnet::host_id(dir)?,
            None => 0,
        };
        let (stop_tx, stop_rx) = watch::channel(false);
        let inner = Arc::new(Inner {
            name: local_name.to_owned(),
            dir: dir.to_owned(),
            handler,
            cfg,
            engine: Mutex::new(Some(engine)),
            link_port: port,
            link_client,
            dir_client,
            identity,
            dir_transport,
            table: Mutex::new(Table::default()),
            downs: Condvar::new(),
            stop: stop_rx,
            role: Mutex::new(None),
            member: Mutex::new(Some(member)),
            host_id,
            polled: Mutex::new(HashMap::new()),
            found: Mutex::new(HashMap::new()),
            rejected: AtomicU64::new(0),
            said: Mutex::new(HashSet::new()),
            local_names: Mutex::new(None),
        });
        let t = QuicTransport {
            inner: inner.clone(),
            stop: stop_tx,
        };
        let _ = owner.set(Arc::downgrade(&inner));
        // The role first, so that a host's first process answers its own directory at once.
        directory::take_role_now(&inner);
        chores::detach(directory::role_loop(inner.clone()));
        if let Some(sub) = &inner.cfg.subnet {
            match subnet::listen_sockets(inner.cfg.bind, sub) {
                Ok((socks, failed)) => {
                    for e in failed {
                        inner.log(&format!(
                            "network: SUBNET: cannot listen for announcements on port {} over {e}",
                            sub.port
                        ));
                    }
                    chores::detach(subnet::listen_loop(inner.clone(), socks));
                }
                Err(e) => inner.log(&format!(
                    "network: SUBNET: cannot listen for announcements on port {}: {e}",
                    sub.port
                )),
            }
        }
        let (first_tx, first_rx) = std::sync::mpsc::channel();
        let n = inner.cfg.static_peers.len();
        for entry in inner.cfg.static_peers.clone() {
            chores::detach(peer_host::peer_loop(
                inner.clone(),
                peer_host::PeerHost::Static(entry),
                Some(first_tx.clone()),
                None,
                None,
            ));
        }
        let deadline = Instant::now() + inner.cfg.initial_wait;
        for _ in 0..n {
            let left = deadline.saturating_duration_since(Instant::now());
            if first_rx.recv_timeout(left).is_err() {
                break;
            }
        }
        Ok(t)
    }

    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The UDP port of this process's links (the engine's socket).
    pub fn port(&self) -> u16 {
        self.inner.link_port
    }

    /// Whether this process holds its host's role (serves the directory).
    pub fn holds_role(&self) -> bool {
        self.inner.role.lock().is_some()
    }

    /// The directory addresses of the hosts found by SUBNET announcements, sorted.
    pub fn announced_hosts(&self) -> Vec<SocketAddr> {
        subnet::found_hosts(&self.inner)
    }

    /// Datagrams heard on the announcement port that were not an announcement (garbage,
    /// another version) or came from beyond our subnets; each was dropped.
    pub fn announcements_rejected(&self) -> u64 {
        self.inner.rejected.load(Ordering::Relaxed)
    }

    /// Names of the peers with a live link, sorted.
    pub fn peers(&self) -> Vec<String> {
        let mut v: Vec<String> = self.inner.table.lock().links.keys().cloned().collect();
        v.sort();
        v
    }

    /// The live link to `peer`.
    pub fn link_to(&self, peer: &str) -> Option<QuicLinkHandle> {
        let l = self.inner.table.lock().links.get(peer).cloned();
        l.map(QuicLinkHandle)
    }

    /// Close everything. Waits (up to 3 s) for every link's `on_down`, except when called from
    /// a callback (a link worker). Idempotent.
    pub fn shutdown(&self) {
        let links: Vec<Arc<QuicLink>> = {
            let mut t = self.inner.table.lock();
            if t.stopped {
                return;
            }
            t.stopped = true;
            t.links.values().cloned().collect()
        };
        self.stop.send_replace(true);
        for l in &links {
            l.close();
        }
        // What each link had written reaches its peer before the engine goes (bounded by the
        // linger): a sample whose publish returned is not lost.
        handshake::wait_lingered(&links);
        if !super::dispatch::on_worker() {
            let deadline = Instant::now() + Duration::from_secs(3);
            let mut t = self.inner.table.lock();
            while t.live > 0 {
                if self.inner.downs.wait_until(&mut t, deadline).timed_out() {
                    break;
                }
            }
        }
        // Its connections (closed or lingered by now) go with it.
        drop(self.inner.engine.lock().take());
        if let Some(h) = self.inner.role.lock().take() {
            h.close();
        }
        if let Some(m) = self.inner.member.lock().take() {
            directory::unregister(m);
        }
    }
}

impl Drop for QuicTransport {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// The address that binds every address of this host: `[::]` as one dual-stack socket (IPv4
/// peers reach it as IPv4-mapped addresses) where the kernel has IPv6, else `0.0.0.0`.
pub fn every_address() -> IpAddr {
    let v6 = SocketAddr::new(IpAddr::V6(Ipv6Addr::UNSPECIFIED), 0);
    match bind_udp(v6) {
        Ok(_) => v6.ip(),
        Err(_) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
    }
}

/// A peer's address as the peer knows itself: an IPv4 peer of the dual-stack `[::]` arrives as
/// `[::ffff:a.b.c.d]`, which is said (in logs, in `QuicLink::remote_address`) as `a.b.c.d`.
pub(crate) fn peer_address(a: SocketAddr) -> SocketAddr {
    SocketAddr::new(a.ip().to_canonical(), a.port())
}

/// A UDP socket bound at `addr`; at `[::]` it takes IPv4 too (`IPV6_V6ONLY` off, whatever the
/// system's `net.ipv6.bindv6only` says).
pub(crate) fn bind_udp(addr: SocketAddr) -> std::io::Result<UdpSocket> {
    let domain = socket2::Domain::for_address(addr);
    let s = socket2::Socket::new(domain, socket2::Type::DGRAM, Some(socket2::Protocol::UDP))?;
    if addr.ip() == IpAddr::V6(Ipv6Addr::UNSPECIFIED) {
        s.set_only_v6(false)?;
    }
    s.bind(&addr.into())?;
    Ok(s.into())
}

impl Inner {
    /// Whether `name` is a graph of this host linked over a Unix socket (its socket in our
    /// rendezvous directory, or its name in our scope of the abstract namespace): never
    /// linked over QUIC as well.
    fn is_local(&self, name: &str) -> bool {
        if self.dir.join(format!("{name}.sock")).exists() {
            return true;
        }
        let Some(scope) = &self.cfg.host_scope else {
            return false;
        };
        let mut seen = self.local_names.lock();
        let stale = seen
            .as_ref()
            .is_none_or(|(at, _)| at.elapsed() >= LOCAL_NAMES_FRESH);
        if stale {
            *seen = Some((Instant::now(), scope.listeners().into_iter().collect()));
        }
        seen.as_ref().is_some_and(|(_, names)| names.contains(name))
    }

    fn log(&self, msg: &str) {
        match &self.cfg.log {
            Some(f) => f(msg),
            None => eprintln!("libtracer: {msg}"),
        }
    }

    /// Report `msg` once for `key` (the set is bounded: past it, conditions are said again).
    fn log_once(&self, key: String, msg: &str) {
        {
            let mut said = self.said.lock();
            if said.len() >= AUTH_LOGGED_MAX {
                said.clear();
            }
            if !said.insert(key) {
                return;
            }
        }
        self.log(msg);
    }

    fn stopped(&self) -> bool {
        *self.stop.borrow()
    }

    /// The reader of `l` ended: drop it from the table (if it is still the one there); a link
    /// we closed on purpose puts its peer on the cooldown list.
    pub(crate) fn forget(&self, l: &Arc<QuicLink>, deliberate: bool) {
        let mut t = self.table.lock();
        let name = l.peer().name.as_str();
        if t.links.get(name).is_some_and(|x| Arc::ptr_eq(x, l)) {
            t.links.remove(name);
        }
        if deliberate && !t.stopped {
            let now = Instant::now();
            t.cooldown.retain(|_, until| *until > now);
            t.cooldown.insert(name.to_owned(), now + COOLDOWN);
        }
    }

    /// The links to these peers go down as lost to the network (their host vanished, or its
    /// directory no longer lists them), with no cooldown: each is linked again as soon as its
    /// host's directory lists it.
    pub(crate) fn drop_lost<'a>(&self, names: impl IntoIterator<Item = &'a String>) -> usize {
        let links: Vec<_> = {
            let t = self.table.lock();
            names
                .into_iter()
                .filter_map(|n| t.links.get(n).cloned())
                .collect()
        };
        for l in &links {
            l.lost();
        }
        links.len()
    }

    /// One link's `on_down` has run.
    pub(crate) fn down_done(&self) {
        let mut t = self.table.lock();
        t.live = t.live.saturating_sub(1);
        self.downs.notify_all();
    }

    /// A process of another host linked to us: unless a peer loop already asks its host's
    /// directory (its address with the directory port its HELLO named), start one, so that the
    /// host's liveness covers this link too (docs/network.md section 3) even when we do not
    /// list that host ourselves.
    fn watch_host_of(self: &Arc<Self>, remote: SocketAddr, directory: Option<u16>) {
        let mut dir = remote;
        // Its HELLO says its directory's port; an older peer's is taken to be ours.
        dir.set_port(directory.unwrap_or(self.cfg.directory_port));
        {
            let mut p = self.polled.lock();
            let key = peer_address(dir);
            if p.contains_key(&key) {
                return;
            }
            p.insert(key, 1);
        }
        chores::detach(peer_host::peer_loop(
            self.clone(),
            peer_host::PeerHost::Learned(dir),
            None,
            None,
            Some(dir),
        ));
    }

    /// A peer loop asks the directory at `a` (counted: several may; keyed by the canonical
    /// address, as a link's remote address is compared).
    pub(crate) fn poll_start(&self, a: SocketAddr) {
        *self.polled.lock().entry(peer_address(a)).or_insert(0) += 1;
    }

    /// A peer loop no longer asks the directory at `a`.
    pub(crate) fn poll_end(&self, a: SocketAddr) {
        let a = peer_address(a);
        let mut p = self.polled.lock();
        if let Some(n) = p.get_mut(&a) {
            *n -= 1;
            if *n == 0 {
                p.remove(&a);
            }
        }
    }
}
