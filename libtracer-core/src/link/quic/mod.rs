//! `QuicTransport`: links between graphs of different hosts over QUIC (quinn + rustls), the
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
//! Threads: every endpoint and connection of the process runs on one small tokio runtime, and
//! handler callbacks on two dispatcher threads (`runtime.rs`), whatever the number of links.

mod announce;
mod directory;
mod exercise;
mod ifaces;
mod link;
mod peer_host;
mod queue;
mod receive;
mod runtime;
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

use bytes::Bytes;
use parking_lot::{Condvar, Mutex};
use tokio::runtime::Handle;
use tokio::sync::watch;

pub use announce::{
    decode as decode_announcement, encode as announce_bytes, exercise_announce, AnnounceError,
    Announcement,
};
pub use exercise::{exercise_datagram, exercise_directory_answer, exercise_flood, FloodReport};
pub use link::{QuicLink, ShedCounts};
pub use receive::decode_datagram;
pub use subnet::{SubnetConfig, ANNOUNCE_GROUP, ANNOUNCE_GROUP_V6, ANNOUNCE_PORT_BASE, MAX_HOSTS};
pub use tls::{subject_of, QuicSecurity};

use self::link::{hello, read_hello, refuse, write_frame, HelloOutcome};
use super::rendezvous::prepare_dir;
use super::{valid_node_name, LinkError, LinkHandler, PeerIdentity};
use crate::acl::Subject;
use crate::wire::{ErrorCode, FrameDecoder};

/// At most this many incoming handshakes at once; more are refused at once (a flood).
const MAX_HANDSHAKES: usize = 64;
/// At most this many connections (links and handshakes) per transport.
const MAX_CONNECTIONS: usize = 1024;
/// A peer whose link we closed (by `close`, or for malformed input or a failed handler) is not
/// linked again, either way, for this long: the directory poll would otherwise bring back at
/// once what was closed on purpose. A link lost to the network is re-formed at once.
const COOLDOWN: Duration = Duration::from_secs(2);

/// Where a transport's diagnostics go (once per condition, never per packet).
pub type NetLog = Arc<dyn Fn(&str) + Send + Sync>;

/// Settings of a QUIC transport. The defaults are the documented ones of docs/network.md.
#[derive(Clone)]
pub struct QuicConfig {
    /// Address the endpoints bind: every address by default (`[::]`, dual stack: IPv6 and
    /// IPv4 peers alike; `0.0.0.0` on a kernel without IPv6; see [`every_address`]); tests bind
    /// loopback.
    pub bind: IpAddr,
    /// This host's directory port for the domain (`24650 + domain id` by default).
    pub directory_port: u16,
    /// Hosts to reach: `host`, `host:port` or `[v6]:port`; the port is the directory's.
    pub static_peers: Vec<String>,
    /// How often a peer host's directory is asked for its members.
    pub poll_interval: Duration,
    /// How often a process that does not hold the host role tries to take it.
    pub role_retry: Duration,
    /// A link that has received nothing for this long is dead (link down). A backstop: the
    /// links to a host whose directory we ask go down with the host's liveness below, and the
    /// link to a member its directory no longer lists at once (docs/network.md section 4).
    pub idle_timeout: Duration,
    /// QUIC keep-alive on an idle link (the backstop's).
    pub keep_alive: Duration,
    /// Host liveness: the one connection to each peer host's directory (asked over it every
    /// `poll_interval`) is dead when it has received nothing for this long; then the host is
    /// probed once more (`host_probe`) and, if it does not answer, the links to its members
    /// go down.
    pub host_idle_timeout: Duration,
    /// QUIC keep-alive on a directory connection.
    pub host_keep_alive: Duration,
    /// Bound on the new directory connection made when one is lost: a host whose role moved
    /// (its holder died) answers from its new holder within it.
    pub host_probe: Duration,
    /// Bound on one HELLO exchange (and on one directory query).
    pub handshake_timeout: Duration,
    /// A write blocked this long (the peer stopped reading) fails and closes the link.
    pub write_timeout: Duration,
    /// Bytes a reliable stream's queue holds; past it a new delivery drops the oldest queued
    /// ones, counted (docs/network.md section 7, "Reliable overflow"). 64 MiB.
    pub queue_bytes: usize,
    /// `start` waits up to this long for the links to the static peers' members (as the Unix
    /// transport returns once the graphs already there are linked); the rest come up later.
    pub initial_wait: Duration,
    /// Diagnostics; `None` = stderr with a `libtracer: ` prefix.
    pub log: Option<NetLog>,
    /// SUBNET discovery (`ROS_AUTOMATIC_DISCOVERY_RANGE=SUBNET`): the host role's holder
    /// announces this host's directory on the local network and every process reaches the
    /// hosts it hears (docs/network.md section 2a). `None`: only the static peers are reached.
    pub subnet: Option<SubnetConfig>,
    /// SROS2 authentication: present the enclave's certificate and refuse every peer whose
    /// certificate does not chain to the keystore's identity CA. `None`: encrypted, not
    /// authenticated (docs/network.md section 5).
    pub security: Option<QuicSecurity>,
    /// SROS2 permissions over the link (docs/wire.md section 2, HELLO's PERMISSIONS): the
    /// document this process sends, and what it does with each authenticated peer's.
    pub permissions: Option<PermissionsExchange>,
}

/// Called with a peer's proven subject and the permissions document it sent (`None`: none).
pub type LearnPermissions = Arc<dyn Fn(&str, Option<&[u8]>) + Send + Sync>;

/// What a QUIC transport with SROS2 sends in its HELLO and does with the peer's: `document`
/// (this enclave's `permissions.p7s`) goes in every HELLO; `learn` is called with the subject
/// the TLS handshake proved and the document the peer sent (`None`: it sent none) before the
/// peer's link is made, so before any request of the peer is handled. Opaque here: rmw_tracer
/// verifies it (docs/network.md section 5).
#[derive(Clone)]
pub struct PermissionsExchange {
    pub document: Arc<[u8]>,
    pub learn: LearnPermissions,
}

/// The first directory port; domain `d` uses `DIRECTORY_PORT_BASE + d`.
pub const DIRECTORY_PORT_BASE: u16 = 24650;

impl QuicConfig {
    /// The defaults for `domain_id`, binding every interface.
    pub fn for_domain(domain_id: u32) -> QuicConfig {
        let port = u16::try_from(domain_id)
            .ok()
            .and_then(|d| DIRECTORY_PORT_BASE.checked_add(d))
            .unwrap_or(DIRECTORY_PORT_BASE);
        QuicConfig {
            bind: every_address(),
            directory_port: port,
            static_peers: Vec::new(),
            poll_interval: Duration::from_secs(1),
            role_retry: Duration::from_millis(500),
            idle_timeout: Duration::from_secs(15),
            keep_alive: Duration::from_secs(5),
            host_idle_timeout: Duration::from_millis(1600),
            host_keep_alive: Duration::from_millis(200),
            host_probe: Duration::from_millis(500),
            handshake_timeout: Duration::from_secs(2),
            write_timeout: Duration::from_secs(10),
            queue_bytes: queue::QUEUE_BYTES,
            initial_wait: Duration::from_millis(500),
            log: None,
            subnet: None,
            security: None,
            permissions: None,
        }
    }
}

impl std::fmt::Debug for QuicConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QuicConfig")
            .field("bind", &self.bind)
            .field("directory_port", &self.directory_port)
            .field("static_peers", &self.static_peers)
            .field("poll_interval", &self.poll_interval)
            .field("idle_timeout", &self.idle_timeout)
            .field("host_idle_timeout", &self.host_idle_timeout)
            .field("subnet", &self.subnet)
            .field("authenticated", &self.security.is_some())
            .finish_non_exhaustive()
    }
}

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

/// A handshake that ended in a TLS alert (a QUIC CRYPTO_ERROR, codes 0x100-0x1ff) sent by
/// either end: a certificate refused, or none given; not a timeout nor a closed endpoint.
fn is_tls_failure(e: &quinn::ConnectionError) -> bool {
    let code = match e {
        quinn::ConnectionError::TransportError(t) => u64::from(t.code),
        quinn::ConnectionError::ConnectionClosed(c) => u64::from(c.error_code),
        _ => return false,
    };
    (0x100..=0x1ff).contains(&code)
}

/// At most this many addresses are remembered as logged; past it the set starts again.
const AUTH_LOGGED_MAX: usize = 1024;

pub(crate) struct Inner {
    name: String,
    dir: PathBuf,
    handler: Arc<dyn LinkHandler>,
    cfg: QuicConfig,
    rt: Handle,
    endpoint: quinn::Endpoint,
    link_client: quinn::ClientConfig,
    dir_client: quinn::ClientConfig,
    identity: tls::Identity,
    /// The directory server's transport (its connections are the hosts' liveness).
    dir_transport: Arc<quinn::TransportConfig>,
    table: Mutex<Table>,
    downs: Condvar,
    stop: watch::Receiver<bool>,
    role: Mutex<Option<directory::Holder>>,
    member_file: PathBuf,
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
}

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
        let rt = runtime::handle().map_err(io_err)?;
        let identity = tls::Identity::new(cfg.security.as_ref()).map_err(io_err)?;
        let transport = tls::transport(cfg.idle_timeout, cfg.keep_alive);
        let dir_transport = tls::transport(cfg.host_idle_timeout, cfg.host_keep_alive);
        let server =
            tls::server_config(&identity, tls::ALPN_LINK, transport.clone()).map_err(io_err)?;
        let link_client =
            tls::client_config(&identity, tls::ALPN_LINK, transport.clone()).map_err(io_err)?;
        let dir_client =
            tls::client_config(&identity, tls::ALPN_DIR, dir_transport.clone()).map_err(io_err)?;
        let sock = tuning::bind(SocketAddr::new(cfg.bind, 0))?;
        let endpoint = new_endpoint(&rt, Some(server), sock)?;
        let port = endpoint.local_addr()?.port();
        let member_file = directory::register(dir, local_name, port)?;
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
            rt: rt.clone(),
            endpoint,
            link_client,
            dir_client,
            identity,
            dir_transport,
            table: Mutex::new(Table::default()),
            downs: Condvar::new(),
            stop: stop_rx,
            role: Mutex::new(None),
            member_file,
            host_id,
            polled: Mutex::new(HashMap::new()),
            found: Mutex::new(HashMap::new()),
            rejected: AtomicU64::new(0),
            said: Mutex::new(HashSet::new()),
        });
        let t = QuicTransport {
            inner: inner.clone(),
            stop: stop_tx,
        };
        // The role first, so that a host's first process answers its own directory at once.
        directory::take_role_now(&inner);
        rt.spawn(inner.clone().accept_loop());
        rt.spawn(directory::role_loop(inner.clone()));
        if let Some(sub) = &inner.cfg.subnet {
            match subnet::listen_sockets(inner.cfg.bind, sub) {
                Ok((socks, failed)) => {
                    for e in failed {
                        inner.log(&format!(
                            "network: SUBNET: cannot listen for announcements on port {} over {e}",
                            sub.port
                        ));
                    }
                    rt.spawn(subnet::listen_loop(inner.clone(), socks));
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
            rt.spawn(peer_host::peer_loop(
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

    /// The UDP port of this process's link endpoint.
    pub fn port(&self) -> u16 {
        self.inner.endpoint.local_addr().map_or(0, |a| a.port())
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
    pub fn link_to(&self, peer: &str) -> Option<Arc<QuicLink>> {
        self.inner.table.lock().links.get(peer).cloned()
    }

    /// Close everything. Waits (up to 3 s) for every link's `on_down`, except when called from
    /// a callback (a dispatcher thread). Idempotent.
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
            use super::Link;
            l.close();
        }
        // What each link had written reaches its peer before the endpoint goes (the close
        // tasks are bounded by their linger): a sample whose publish returned is not lost.
        let lingering: Vec<_> = links.iter().filter_map(|l| l.take_linger()).collect();
        let _ = runtime::block_on(&self.inner.rt, async move {
            for t in lingering {
                let _ = t.await;
            }
        });
        if !runtime::on_dispatcher() {
            let deadline = Instant::now() + Duration::from_secs(3);
            let mut t = self.inner.table.lock();
            while t.live > 0 {
                if self.inner.downs.wait_until(&mut t, deadline).timed_out() {
                    break;
                }
            }
        }
        self.inner.endpoint.close(0u32.into(), b"shutdown");
        if let Some(h) = self.inner.role.lock().take() {
            h.close();
        }
        directory::unregister(&self.inner.member_file);
    }
}

impl Drop for QuicTransport {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn cooling(t: &Table, name: &str) -> bool {
    t.cooldown
        .get(name)
        .is_some_and(|until| *until > Instant::now())
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

fn new_endpoint(
    rt: &Handle,
    server: Option<quinn::ServerConfig>,
    sock: UdpSocket,
) -> Result<quinn::Endpoint, LinkError> {
    let _guard = rt.enter();
    Ok(quinn::Endpoint::new(
        quinn::EndpointConfig::default(),
        server,
        sock,
        Arc::new(quinn::TokioRuntime),
    )?)
}

impl Inner {
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

    /// A QUIC handshake with `addr` failed. With SROS2 on, that is a peer without a
    /// certificate of our keystore's CA (or one whose CA we are not of): say so once per
    /// address, since the peer will keep trying. Without, the handshake failing is a network
    /// matter the directory poll reports.
    fn auth_failed(&self, addr: SocketAddr, e: &quinn::ConnectionError) {
        if !self.identity.authenticated() || !is_tls_failure(e) {
            return;
        }
        {
            let mut t = self.table.lock();
            if t.auth_logged.len() >= AUTH_LOGGED_MAX {
                t.auth_logged.clear();
            }
            if !t.auth_logged.insert(addr) {
                return;
            }
        }
        let msg = match e {
            quinn::ConnectionError::ConnectionClosed(_) => {
                format!("security: the peer at {addr} refused our certificate: {e}")
            }
            _ => format!("security: refused the peer at {addr}: {e}"),
        };
        self.log(&msg);
    }

    /// The reader of `l` ended: drop it from the table (if it is still the one there); a link
    /// we closed on purpose puts its peer on the cooldown list.
    pub(crate) fn forget(&self, l: &Arc<QuicLink>, deliberate: bool) {
        use super::Link;
        let mut t = self.table.lock();
        let name = &l.peer().name;
        if t.links.get(name).is_some_and(|x| Arc::ptr_eq(x, l)) {
            t.links.remove(name);
        }
        if deliberate && !t.stopped {
            let now = Instant::now();
            t.cooldown.retain(|_, until| *until > now);
            t.cooldown.insert(name.clone(), now + COOLDOWN);
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

    /// A member of a peer host: connect unless it is us, local (linked over a Unix socket),
    /// linked or being linked already, or cooling down. The handle ends when the link is up or
    /// the attempt failed.
    fn maybe_connect(
        self: &Arc<Self>,
        name: &str,
        addr: SocketAddr,
    ) -> Option<tokio::task::JoinHandle<()>> {
        if name == self.name
            || !valid_node_name(name)
            || self.dir.join(format!("{name}.sock")).exists()
        {
            return None;
        }
        {
            let mut t = self.table.lock();
            if t.stopped
                || t.links.contains_key(name)
                || t.pending.contains(name)
                || t.accepting.contains(name)
                || cooling(&t, name)
            {
                return None;
            }
            t.pending.insert(name.to_owned());
        }
        Some(
            self.rt
                .spawn(self.clone().connect_link(name.to_owned(), addr)),
        )
    }

    /// Connect to `peer` at `addr`; a refusal (the other direction is winning, or an old link
    /// of the peer's is about to be found dead) is retried a few times.
    async fn connect_link(self: Arc<Self>, peer: String, addr: SocketAddr) {
        for attempt in 0..5 {
            if self.stopped() || self.table.lock().links.contains_key(&peer) {
                break;
            }
            match self.handshake_out(&peer, addr).await {
                Ok(()) => break,
                Err(Some(_refused)) if attempt < 4 => {
                    tokio::time::sleep(Duration::from_millis(100)).await
                }
                Err(_) => break,
            }
        }
        self.table.lock().pending.remove(&peer);
    }

    /// Initiator side. `Err(Some(reason))`: the peer refused; `Err(None)`: it failed.
    async fn handshake_out(
        self: &Arc<Self>,
        peer: &str,
        addr: SocketAddr,
    ) -> Result<(), Option<String>> {
        let hs = self.cfg.handshake_timeout;
        let deadline = Instant::now() + hs;
        let connecting = self
            .endpoint
            .connect_with(self.link_client.clone(), addr, tls::SERVER_NAME)
            .map_err(|_| None)?;
        let conn = match tokio::time::timeout(hs, connecting).await {
            Ok(Ok(c)) => c,
            Ok(Err(e)) => {
                self.auth_failed(addr, &e);
                return Err(None);
            }
            Err(_) => return Err(None),
        };
        let left = deadline.saturating_duration_since(Instant::now());
        let (mut send, mut recv) = match tokio::time::timeout(left, conn.open_bi()).await {
            Ok(Ok(s)) => s,
            _ => {
                conn.close(0u32.into(), b"handshake failed");
                return Err(None);
            }
        };
        if write_frame(&mut send, &self.hello()).await.is_err() {
            conn.close(0u32.into(), b"handshake failed");
            return Err(None);
        }
        let (h, dec, rest) = match read_hello(&mut recv, deadline).await {
            Ok(HelloOutcome::Hello(h, dec, rest)) => (h, dec, rest),
            Ok(HelloOutcome::Refused(why)) => {
                conn.close(0u32.into(), b"refused");
                return Err(Some(why));
            }
            Err(_) => {
                conn.close(0u32.into(), b"handshake failed");
                return Err(None);
            }
        };
        if h.node != peer {
            refuse(
                &conn,
                &mut send,
                ErrorCode::Malformed,
                "HELLO names a node other than the directory's",
            )
            .await;
            return Err(None);
        }
        self.learn_permissions(&conn, h.permissions.as_deref());
        let mut t = self.table.lock();
        if t.stopped || t.links.contains_key(peer) {
            drop(t);
            conn.close(0u32.into(), b"duplicate link");
            return Ok(());
        }
        self.install(&mut t, conn, send, recv, h.node, h.max_frame, dec, rest);
        Ok(())
    }

    async fn accept_loop(self: Arc<Self>) {
        let mut stop = self.stop.clone();
        loop {
            let incoming = tokio::select! {
                i = self.endpoint.accept() => i,
                _ = stop.wait_for(|s| *s) => None,
            };
            let Some(incoming) = incoming else { break };
            let admit = {
                let mut t = self.table.lock();
                let ok = !t.stopped
                    && t.handshakes < MAX_HANDSHAKES
                    && t.links.len() + t.handshakes < MAX_CONNECTIONS;
                if ok {
                    t.handshakes += 1;
                }
                ok
            };
            if !admit {
                incoming.refuse();
                continue;
            }
            let me = self.clone();
            self.rt.spawn(async move {
                me.handshake_in(incoming).await;
                me.table.lock().handshakes -= 1;
            });
        }
    }

    /// Acceptor side: the whole exchange bounded by the handshake timeout.
    async fn handshake_in(self: &Arc<Self>, incoming: quinn::Incoming) {
        let hs = self.cfg.handshake_timeout;
        let deadline = Instant::now() + hs;
        let from = peer_address(incoming.remote_address());
        let conn = match tokio::time::timeout(hs, incoming).await {
            Ok(Ok(c)) => c,
            Ok(Err(e)) => {
                self.auth_failed(from, &e);
                return;
            }
            Err(_) => return,
        };
        let left = deadline.saturating_duration_since(Instant::now());
        let (mut send, mut recv) = match tokio::time::timeout(left, conn.accept_bi()).await {
            Ok(Ok(s)) => s,
            _ => {
                conn.close(0u32.into(), b"no HELLO");
                return;
            }
        };
        let (h, dec, rest) = match read_hello(&mut recv, deadline).await {
            Ok(HelloOutcome::Hello(h, dec, rest)) => (h, dec, rest),
            _ => {
                conn.close(0u32.into(), b"no HELLO");
                return;
            }
        };
        if !valid_node_name(&h.node) || h.node == self.name {
            refuse(
                &conn,
                &mut send,
                ErrorCode::PermissionDenied,
                "invalid or clashing node name",
            )
            .await;
            return;
        }
        let refusal = {
            let mut t = self.table.lock();
            if t.stopped {
                Some("shutting down")
            } else if t.links.contains_key(&h.node) || t.accepting.contains(&h.node) {
                Some("duplicate link: a link to you is already up")
            } else if cooling(&t, &h.node) {
                Some("our link to you was closed a moment ago")
            } else if t.pending.contains(&h.node) && self.name.as_str() < h.node.as_str() {
                Some("duplicate link: my connection to you wins (smaller name)")
            } else {
                t.accepting.insert(h.node.clone());
                None
            }
        };
        if let Some(why) = refusal {
            refuse(&conn, &mut send, ErrorCode::Internal, why).await;
            return;
        }
        self.learn_permissions(&conn, h.permissions.as_deref());
        let replied = write_frame(&mut send, &self.hello()).await;
        let mut t = self.table.lock();
        t.accepting.remove(&h.node);
        if replied.is_err() || t.stopped {
            drop(t);
            conn.close(0u32.into(), b"handshake failed");
            return;
        }
        let remote = conn.remote_address();
        self.install(&mut t, conn, send, recv, h.node, h.max_frame, dec, rest);
        drop(t);
        self.watch_host_of(remote);
    }

    /// A process of another host linked to us: unless a peer loop already asks its host's
    /// directory (its address with our domain's directory port), start one, so that the
    /// host's liveness covers this link too (docs/network.md section 3) even when we do not
    /// list that host ourselves.
    fn watch_host_of(self: &Arc<Self>, remote: SocketAddr) {
        let mut dir = remote;
        dir.set_port(self.cfg.directory_port);
        {
            let mut p = self.polled.lock();
            let key = peer_address(dir);
            if p.contains_key(&key) {
                return;
            }
            p.insert(key, 1);
        }
        self.rt.spawn(peer_host::peer_loop(
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

    /// Our HELLO, with our permissions document when SROS2 is on.
    fn hello(&self) -> crate::wire::Frame {
        let doc = (self.cfg.permissions.as_ref()).map(|p| Bytes::copy_from_slice(&p.document));
        hello(&self.name, doc)
    }

    /// Hand an authenticated peer's permissions document (or its absence) to `learn`, before
    /// its link exists (docs/network.md section 5). Nothing without SROS2 or for a peer the
    /// handshake did not authenticate.
    fn learn_permissions(&self, conn: &quinn::Connection, doc: Option<&[u8]>) {
        let Some(p) = &self.cfg.permissions else {
            return;
        };
        if let crate::acl::Subject::Authenticated(s) = self.identity.peer_subject(conn) {
            (p.learn)(&s, doc);
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn install(
        self: &Arc<Self>,
        t: &mut Table,
        conn: quinn::Connection,
        send: quinn::SendStream,
        recv: quinn::RecvStream,
        name: String,
        peer_max: u32,
        dec: FrameDecoder,
        rest: Bytes,
    ) {
        let Ok(tx) = runtime::dispatcher() else {
            conn.close(0u32.into(), b"no dispatcher");
            return;
        };
        let subject = self.identity.peer_subject(&conn);
        if subject == Subject::Anonymous && self.identity.authenticated() {
            let addr = peer_address(conn.remote_address());
            self.log_once(
                format!("anonymous {addr}"),
                &format!(
                    "security: admitted the peer at {addr} unauthenticated (no certificate of \
                     our identity CA; the governance allows unauthenticated participants): it \
                     may use only topics without access control"
                ),
            );
        }
        let id = PeerIdentity {
            name: name.clone(),
            // Not attested across hosts and not used by the ACL: a remote peer is the
            // principal its handshake proved (docs/network.md section 5).
            uid: nix::unistd::getuid().as_raw(),
            gid: nix::unistd::getgid().as_raw(),
            pid: 0,
            remote: Some(subject),
        };
        let link = Arc::new(QuicLink::new(
            id,
            conn,
            send,
            peer_max,
            self.rt.clone(),
            self.cfg.write_timeout,
            self.cfg.queue_bytes,
            self.handler.clone(),
            Arc::downgrade(self),
        ));
        t.links.insert(name, link.clone());
        t.live += 1;
        self.rt.spawn(link::read_loop(link, recv, dec, rest, tx));
    }
}
