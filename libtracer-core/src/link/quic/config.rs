//! The settings of a QUIC transport (docs/network.md: ports, peers, timings, security).

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use super::{every_address, queue, QuicSecurity, SubnetConfig};

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
    /// The graph's scope in the abstract namespace (`HostTransport`'s, docs/host.md): the
    /// host role and the member entries live there too, so that the graphs of one network
    /// namespace share one role and one directory whatever their rendezvous directories.
    /// `None`: the rendezvous directory only (an `flock` and `<name>.quic` files).
    pub host_scope: Option<crate::link::HostScope>,
}

/// Called with a peer's proven subject and the permissions document it sent (`None`: none);
/// answers when what it made of them stops holding (`None`: never). The link is closed then
/// (`expiry.rs`), and the next handshake learns afresh.
pub type LearnPermissions = Arc<dyn Fn(&str, Option<&[u8]>) -> Option<GrantTurn> + Send + Sync>;

/// When what `LearnPermissions` made of a peer's grant stops holding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GrantTurn {
    /// The grant runs out: the first moment it is no longer valid.
    Ends(std::time::SystemTime),
    /// The grant is not valid yet (the peer has none meanwhile) and starts then: a new
    /// handshake takes it (a keystore made on a host whose clock is ahead).
    Starts(std::time::SystemTime),
}

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
            host_scope: None,
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
