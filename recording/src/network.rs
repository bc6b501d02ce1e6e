//! Where a graph looks for peers, from the environment variables rmw_tracer reads (README,
//! "Using it"; docs/network.md section 2): the domain (`ROS_DOMAIN_ID`), the discovery range
//! (`ROS_AUTOMATIC_DISCOVERY_RANGE`), the static peers (`ROS_STATIC_PEERS`), the rendezvous
//! directory (`RMW_TRACER_RENDEZVOUS_DIR`) and the network's ports and address
//! (`RMW_TRACER_PORT_BASE`, `RMW_TRACER_BIND`). No ROS: rmw_tracer maps rmw's discovery-range
//! enum onto [`Range`] (`rmw_tracer/src/context.rs`), the C API reads everything here
//! ([`graph_config`]), so both join the same graphs from the same environment.

use std::ffi::OsStr;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use libtracer_core::link::quic::{NetLog, SubnetConfig, ANNOUNCE_PORT_BASE, DIRECTORY_PORT_BASE};
use libtracer_core::link::{HostUsers, QuicConfig};
use libtracer_core::{Acl, Discovery, Graph, GraphConfig, Principal, Rights};

/// The domain when the caller leaves it open.
pub const DOMAIN_ENV: &str = "ROS_DOMAIN_ID";
/// OFF, LOCALHOST or SUBNET (rcl's variable).
pub const RANGE_ENV: &str = "ROS_AUTOMATIC_DISCOVERY_RANGE";
/// Other hosts to link to, `;`-separated (rcl's variable).
pub const PEERS_ENV: &str = "ROS_STATIC_PEERS";
/// Moves the base of the rendezvous directories (tests isolate themselves with it); each
/// domain still has its own directory under it.
pub const RENDEZVOUS_ENV: &str = "RMW_TRACER_RENDEZVOUS_DIR";
/// Moves the base of the host directory ports: domain `d` is `<base> + d` (docs/network.md).
pub const PORT_BASE_ENV: &str = "RMW_TRACER_PORT_BASE";
/// Binds the network endpoints to one address instead of every interface.
pub const BIND_ENV: &str = "RMW_TRACER_BIND";
/// `all` (the default: graphs of every user of this host link, docs/host.md) or `self` (only
/// graphs of this process's own uid).
pub const HOST_USERS_ENV: &str = "RMW_TRACER_HOST_USERS";

/// rmw's automatic discovery range, without ROS.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Range {
    /// The caller did not say (not rcl): read [`RANGE_ENV`] and [`PEERS_ENV`].
    NotSet,
    /// LOCALHOST (rmw_tracer's default: nothing leaves the host unless asked).
    SystemDefault,
    /// In-process only.
    Off,
    Localhost,
    /// Announced to the subnet and reachable by other hosts.
    Subnet,
}

/// What the environment asked for that cannot be done.
#[derive(Debug, thiserror::Error)]
pub enum EnvError {
    #[error("{DOMAIN_ENV} `{0}` is not a number")]
    DomainId(String),
    #[error("{PORT_BASE_ENV}={0}: not a UDP port")]
    PortBase(String),
    #[error("{PORT_BASE_ENV}={base} + domain {domain} is past the last UDP port")]
    DirectoryPort { base: u16, domain: u32 },
    #[error(
        "{PORT_BASE_ENV}={base}: the SUBNET announcement port of domain {domain} is past the \
         last UDP port"
    )]
    AnnouncePort { base: u16, domain: u32 },
    #[error("{BIND_ENV}={0}: not an IP address")]
    Bind(String),
    #[error("{HOST_USERS_ENV}={0}: want `all` or `self`")]
    HostUsers(String),
    #[error("{RENDEZVOUS_ENV}={}: cannot make the directory: {source}", .base.display())]
    Rendezvous {
        base: PathBuf,
        source: std::io::Error,
    },
}

impl EnvError {
    /// A value the user set is wrong (as opposed to the system refusing a directory).
    pub fn is_invalid_value(&self) -> bool {
        match self {
            EnvError::DomainId(_)
            | EnvError::PortBase(_)
            | EnvError::DirectoryPort { .. }
            | EnvError::AnnouncePort { .. }
            | EnvError::Bind(_)
            | EnvError::HostUsers(_) => true,
            EnvError::Rendezvous { .. } => false,
        }
    }
}

fn var(name: &str) -> Option<String> {
    std::env::var(name)
        .ok()
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
}

/// The domain of [`DOMAIN_ENV`], 0 when it is unset or empty.
pub fn domain_from_env() -> Result<u32, EnvError> {
    match var(DOMAIN_ENV) {
        Some(v) => v.parse::<u32>().map_err(|_| EnvError::DomainId(v)),
        None => Ok(0),
    }
}

/// Which users' graphs of this host to link to, from [`HOST_USERS_ENV`].
pub fn host_users_from_env() -> Result<HostUsers, EnvError> {
    match var(HOST_USERS_ENV).as_deref() {
        None | Some("all") => Ok(HostUsers::All),
        Some("self") => Ok(HostUsers::Own),
        Some(v) => Err(EnvError::HostUsers(v.to_owned())),
    }
}

/// The range in effect, from what the caller passed and [`RANGE_ENV`].
pub fn effective_range(range: Range) -> Range {
    range_in_effect(range, std::env::var(RANGE_ENV).ok().as_deref())
}

/// NOT_SET (a caller that is not rcl) reads the variable as rcl would. SUBNET with the variable
/// unset or empty is the system default: Jazzy's rcl passes SUBNET when the variable is unset
/// (it is DDS's default), so the options alone cannot tell "unset" from a user's SUBNET, and
/// rmw_tracer's default is LOCALHOST, nothing leaving the host unless asked (docs/network.md
/// section 2). Measured before this rule: every process with a bare environment opened its QUIC
/// endpoint and the domain's directory port on 0.0.0.0.
pub fn range_in_effect(range: Range, variable: Option<&str>) -> Range {
    let variable = variable.map(str::trim).filter(|v| !v.is_empty());
    match (range, variable) {
        (Range::NotSet, v) => match v {
            Some("OFF") => Range::Off,
            Some("LOCALHOST") => Range::Localhost,
            Some("SUBNET") => Range::Subnet,
            _ => Range::SystemDefault,
        },
        (Range::Subnet, None) => Range::SystemDefault,
        (r, _) => r,
    }
}

/// How a graph finds peers on its host: OFF keeps it in-process; everything else uses the
/// Unix-socket rendezvous (the network, if on, comes in addition: [`network_for`]).
pub fn discovery_for(range: Range) -> Discovery {
    if effective_range(range) == Range::Off {
        Discovery::Off
    } else {
        Discovery::Host
    }
}

/// Whether, and how, the graph reaches other hosts (docs/network.md section 2): never with
/// OFF; with static peers whatever the range; with SUBNET (reachable by others). LOCALHOST and
/// the system default (= LOCALHOST) without static peers keep everything on this host. NOT_SET
/// (a caller that is not rcl) reads [`PEERS_ENV`] (`;`-separated) itself. `log` receives the
/// network's warnings.
pub fn network_for(
    range: Range,
    static_peers: &[String],
    domain_id: u32,
    log: Option<NetLog>,
) -> Result<Option<QuicConfig>, EnvError> {
    let mut peers: Vec<String> = static_peers
        .iter()
        .map(|p| p.trim().to_owned())
        .filter(|p| !p.is_empty())
        .collect();
    if range == Range::NotSet && peers.is_empty() {
        if let Ok(v) = std::env::var(PEERS_ENV) {
            peers = v
                .split(';')
                .map(|p| p.trim().to_owned())
                .filter(|p| !p.is_empty())
                .collect();
        }
    }
    let mut cfg = network_in(effective_range(range), peers, domain_id)?;
    if let Some(c) = cfg.as_mut() {
        c.log = log;
    }
    Ok(cfg)
}

/// [`network_for`] once the range in effect and the peers are known.
pub fn network_in(
    range: Range,
    peers: Vec<String>,
    domain_id: u32,
) -> Result<Option<QuicConfig>, EnvError> {
    if range == Range::Off || (range != Range::Subnet && peers.is_empty()) {
        return Ok(None);
    }
    let mut cfg = QuicConfig::for_domain(domain_id);
    let base = match var(PORT_BASE_ENV) {
        Some(v) => v.parse::<u16>().map_err(|_| EnvError::PortBase(v))?,
        None => DIRECTORY_PORT_BASE,
    };
    cfg.directory_port = u16::try_from(domain_id)
        .ok()
        .and_then(|d| base.checked_add(d))
        .ok_or(EnvError::DirectoryPort {
            base,
            domain: domain_id,
        })?;
    if let Some(v) = var(BIND_ENV) {
        cfg.bind = v.parse().map_err(|_| EnvError::Bind(v))?;
    }
    if range == Range::Subnet {
        // The announcements' port keeps its distance from the directory's (docs/network.md
        // section 2a): 25650 + d by default, moved with the base.
        let mut sub = SubnetConfig::for_domain(u16::try_from(domain_id).unwrap_or(u16::MAX));
        sub.port = (ANNOUNCE_PORT_BASE - DIRECTORY_PORT_BASE)
            .checked_add(cfg.directory_port)
            .ok_or(EnvError::AnnouncePort {
                base,
                domain: domain_id,
            })?;
        cfg.subnet = Some(sub);
    }
    cfg.static_peers = peers;
    Ok(Some(cfg))
}

/// The rendezvous directory of `domain_id` when `base` (the value of [`RENDEZVOUS_ENV`]) moves
/// it: `<base>/domain-<id>`, the core's own layout, so that processes of different domains given
/// the same override still never see each other (the link handshake carries no domain id).
/// `None` (unset or empty) leaves the core's per-user default. The base is made (mode 0700) if
/// it is missing, so any process may start first; the core makes the domain's directory and
/// checks that it is private.
pub fn rendezvous_dir(base: Option<&OsStr>, domain_id: u32) -> Result<Option<PathBuf>, EnvError> {
    let Some(base) = base.filter(|b| !b.is_empty()).map(Path::new) else {
        return Ok(None);
    };
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(base)
        .map_err(|source| EnvError::Rendezvous {
            base: base.to_owned(),
            source,
        })?;
    Ok(Some(libtracer_core::link::rendezvous_dir_in(
        base, domain_id,
    )))
}

/// The graph of a caller that is not rcl (range and peers from the environment alone) on
/// `domain_id`: discovery, rendezvous directory and network as rmw_tracer's would be.
pub fn graph_config(domain_id: u32, log: Option<NetLog>) -> Result<GraphConfig, EnvError> {
    let discovery = discovery_for(Range::NotSet);
    let rendezvous_dir = match discovery {
        Discovery::Off => None,
        Discovery::Host => rendezvous_dir(std::env::var_os(RENDEZVOUS_ENV).as_deref(), domain_id)?,
    };
    Ok(GraphConfig {
        name: None,
        domain_id,
        discovery,
        rendezvous_dir,
        host_users: host_users_from_env()?,
        network: network_for(Range::NotSet, &[], domain_id, log)?,
    })
}

/// A graph without SROS2: graphs of other users of this host (with [`HostUsers::All`]) and,
/// when `networked`, of other hosts may read, write and subscribe to every vertex, as the
/// owner's own may (with SROS2 each vertex carries its own ACL, rmw_tracer's `security.rs`,
/// and other users get nothing: they cannot prove an identity over a Unix socket,
/// docs/host.md). No ADMIN or CREATE for anyone but the owner.
pub fn open_to_peers(
    g: &Graph,
    networked: bool,
    users: HostUsers,
) -> Result<(), libtracer_core::Error> {
    let rights = Rights::READ | Rights::WRITE | Rights::SUBSCRIBE;
    let mut acl = Acl::new();
    if users == HostUsers::All {
        acl = acl.allow(Principal::Host, rights);
    }
    if networked {
        acl = acl.allow(Principal::Anonymous, rights);
    }
    if acl.is_empty() {
        return Ok(());
    }
    g.set_acl("/", acl)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn discovery_ranges() {
        assert_eq!(discovery_for(Range::Off), Discovery::Off);
        assert_eq!(discovery_for(Range::Localhost), Discovery::Host);
        assert_eq!(discovery_for(Range::Subnet), Discovery::Host);
    }

    /// The override is a base: one directory per domain under it, made on demand.
    #[test]
    fn rendezvous_override_is_a_base_per_domain() {
        use std::os::unix::fs::PermissionsExt;
        assert!(rendezvous_dir(None, 3).unwrap().is_none());
        assert!(rendezvous_dir(Some(OsStr::new("")), 3).unwrap().is_none());
        let base =
            std::env::temp_dir().join(format!("tracer-network-rdv-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let nested = base.join("deeper");
        let d3 = rendezvous_dir(Some(nested.as_os_str()), 3)
            .unwrap()
            .unwrap();
        let d4 = rendezvous_dir(Some(nested.as_os_str()), 4)
            .unwrap()
            .unwrap();
        assert_eq!(d3, nested.join("domain-3"));
        assert_eq!(d4, nested.join("domain-4"));
        assert_ne!(d3, d4);
        let mode = std::fs::metadata(&nested).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        // A base that is a file cannot hold the domains' directories: a clear error.
        let file = base.join("file");
        std::fs::write(&file, b"x").unwrap();
        let err = rendezvous_dir(Some(file.as_os_str()), 0).unwrap_err();
        assert!(err.to_string().contains(RENDEZVOUS_ENV), "{err}");
        assert!(!err.is_invalid_value());
        std::fs::remove_dir_all(&base).unwrap();
    }

    /// Nothing leaves the host unless asked: static peers (any range but OFF) or SUBNET.
    #[test]
    fn network_only_when_asked() {
        let peers = vec!["192.0.2.2".to_owned(), " ".to_owned()];
        let on = |range, peers: &[String]| network_for(range, peers, 3, None).unwrap();
        assert!(on(Range::Off, &peers).is_none());
        assert!(on(Range::Localhost, &[]).is_none());
        assert!(on(Range::SystemDefault, &[]).is_none());
        let c = on(Range::Localhost, &peers).unwrap();
        assert_eq!(c.static_peers, vec!["192.0.2.2"]);
        assert_eq!(c.directory_port, DIRECTORY_PORT_BASE + 3);
        assert!(c.subnet.is_none(), "static peers alone announce nothing");
        // rcl's SUBNET for an unset variable (the test's environment): off.
        assert!(on(Range::Subnet, &[]).is_none());
        let s = network_in(Range::Subnet, vec![], 3).unwrap().unwrap();
        assert!(s.static_peers.is_empty());
        let sub = s.subnet.expect("SUBNET announces");
        assert_eq!((sub.domain_id, sub.port), (3, ANNOUNCE_PORT_BASE + 3));
    }

    /// rcl's SUBNET for an unset variable is the system default (LOCALHOST); a SUBNET the user
    /// set, or one a caller passes with the variable set, stays SUBNET.
    #[test]
    fn subnet_only_when_the_user_set_it() {
        use Range::*;
        assert_eq!(range_in_effect(Subnet, None), SystemDefault);
        assert_eq!(range_in_effect(Subnet, Some(" ")), SystemDefault);
        assert_eq!(range_in_effect(Subnet, Some("SUBNET")), Subnet);
        assert_eq!(range_in_effect(Localhost, None), Localhost);
        assert_eq!(range_in_effect(Off, None), Off);
        assert_eq!(range_in_effect(NotSet, Some("SUBNET")), Subnet);
        assert_eq!(range_in_effect(NotSet, Some("OFF")), Off);
        assert_eq!(range_in_effect(NotSet, None), SystemDefault);
    }
}
