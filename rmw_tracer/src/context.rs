//! The rmw context: one libtracer [`Graph`] per `rmw_context_t`, its endpoint registry and the
//! ids of everything made in it.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use libtracer_core::link::quic::{SubnetConfig, ANNOUNCE_PORT_BASE, DIRECTORY_PORT_BASE};
use libtracer_core::link::QuicConfig;
use libtracer_core::{Discovery, Graph, GraphConfig};
use parking_lot::Mutex;

use crate::boundary::{RmwError, RmwResult};
use crate::gid::GidSource;
use crate::registry::{EntityKind, Entry, Record, Registry};
use crate::teardown::Teardown;

/// Environment variable that moves the base of the rendezvous directories (tests isolate
/// themselves with it); each domain still has its own directory under it.
pub const RENDEZVOUS_ENV: &str = "RMW_TRACER_RENDEZVOUS_DIR";
/// Moves the base of the host directory ports: domain `d` is `<base> + d` (docs/network.md).
pub const PORT_BASE_ENV: &str = "RMW_TRACER_PORT_BASE";
/// Binds the network endpoints to one address instead of every interface.
pub const BIND_ENV: &str = "RMW_TRACER_BIND";
/// The longest `rmw_init` waits for the peers already there to watch its records
/// (`Registry::await_watchers`): well above the 1-40 ms this takes on a loaded machine, and
/// what a peer that is not a ROS process (which never watches) costs each new context.
const INIT_WATCH_LIMIT: std::time::Duration = std::time::Duration::from_millis(100);

/// What `rmw_init` needs from the init options, already read out of the C struct.
#[derive(Clone, Debug)]
pub struct InitConfig {
    /// `RMW_DEFAULT_DOMAIN_ID` when the options leave it to us.
    pub domain_id: usize,
    pub enclave: String,
    pub discovery_range: ffi::rmw_automatic_discovery_range_t,
    /// `discovery_options.static_peers` (rcl fills them from `ROS_STATIC_PEERS`).
    pub static_peers: Vec<String>,
    /// `security_options` (rcl fills them from the `ROS_SECURITY_*` variables).
    pub security: crate::security::SecurityOptions,
}

/// Everything made in a context shares this (nodes outlive neither it nor their graph).
pub struct Shared {
    pub graph: Graph,
    /// SROS2 access control, when security is on (`security.rs`).
    pub access: Option<Arc<crate::security::Access>>,
    pub registry: Registry,
    pub gids: GidSource,
    pub domain_id: usize,
    pub enclave: String,
    shut_down: AtomicBool,
    /// What `rmw_shutdown` leaves to a thread of its own; `rmw_context_fini` waits for it.
    teardown: Teardown,
    next_ring: AtomicU64,
    /// Large samples' shared-memory pool (`crate::shm`); None when off or unavailable.
    pub shm: Option<crate::shm::ShmOut>,
    /// Topic vertex -> the history it retains, depth (`usize::MAX`: no count bound) and byte
    /// budget: the largest of its transient-local publishers and, with the network on, of its
    /// reliable publishers' resend windows (docs/network.md section 6).
    retained: Mutex<HashMap<String, (usize, usize)>>,
    /// The network is on (static peers or SUBNET): links can be cut and come back, so reliable
    /// publishers keep a resend window and reliable subscriptions filter replays
    /// (`crate::resume`).
    pub networked: bool,
}

/// The object behind `rmw_context_t::impl`.
pub struct Context {
    pub shared: Arc<Shared>,
    _entry: Entry,
    /// `RMW_TRACER_SERIAL`: the ports this process stands for (`crate::serial_link`).
    _serial: Option<crate::serial_link::SerialLinks>,
}

/// The domain id in effect: the options' own, else `ROS_DOMAIN_ID`, else 0.
pub fn resolve_domain_id(requested: usize) -> RmwResult<usize> {
    if requested != ffi::RMW_DEFAULT_DOMAIN_ID {
        return Ok(requested);
    }
    match std::env::var("ROS_DOMAIN_ID") {
        Ok(v) if !v.trim().is_empty() => v
            .trim()
            .parse::<usize>()
            .map_err(|_| RmwError::invalid(format!("ROS_DOMAIN_ID `{v}` is not a number"))),
        _ => Ok(0),
    }
}

/// The range in effect, from what rcl passed and the `ROS_AUTOMATIC_DISCOVERY_RANGE` variable.
fn effective_range(
    range: ffi::rmw_automatic_discovery_range_t,
) -> ffi::rmw_automatic_discovery_range_t {
    range_in_effect(
        range,
        std::env::var("ROS_AUTOMATIC_DISCOVERY_RANGE")
            .ok()
            .as_deref(),
    )
}

/// NOT_SET (a caller that is not rcl) reads the variable as rcl would. SUBNET with the variable
/// unset or empty is the system default: Jazzy's rcl passes SUBNET when the variable is unset
/// (it is DDS's default), so the options alone cannot tell "unset" from a user's SUBNET, and
/// rmw_tracer's default is LOCALHOST, nothing leaving the host unless asked (docs/network.md
/// section 2). Measured before this rule: every process with a bare environment opened its QUIC
/// endpoint and the domain's directory port on 0.0.0.0.
fn range_in_effect(
    range: ffi::rmw_automatic_discovery_range_t,
    variable: Option<&str>,
) -> ffi::rmw_automatic_discovery_range_t {
    let variable = variable.map(str::trim).filter(|v| !v.is_empty());
    match (range, variable) {
        (ffi::RMW_AUTOMATIC_DISCOVERY_RANGE_NOT_SET, v) => match v {
            Some("OFF") => ffi::RMW_AUTOMATIC_DISCOVERY_RANGE_OFF,
            Some("LOCALHOST") => ffi::RMW_AUTOMATIC_DISCOVERY_RANGE_LOCALHOST,
            Some("SUBNET") => ffi::RMW_AUTOMATIC_DISCOVERY_RANGE_SUBNET,
            _ => ffi::RMW_AUTOMATIC_DISCOVERY_RANGE_SYSTEM_DEFAULT,
        },
        (ffi::RMW_AUTOMATIC_DISCOVERY_RANGE_SUBNET, None) => {
            ffi::RMW_AUTOMATIC_DISCOVERY_RANGE_SYSTEM_DEFAULT
        }
        (r, _) => r,
    }
}

/// How a graph finds peers on its host: OFF keeps it in-process; everything else uses the
/// Unix-socket rendezvous (the network, if on, comes in addition: [`network_for`]).
pub fn discovery_for(range: ffi::rmw_automatic_discovery_range_t) -> Discovery {
    if effective_range(range) == ffi::RMW_AUTOMATIC_DISCOVERY_RANGE_OFF {
        Discovery::Off
    } else {
        Discovery::Host
    }
}

/// Whether, and how, the graph reaches other hosts (docs/network.md section 2): never with
/// OFF; with static peers whatever the range; with SUBNET (reachable by others). LOCALHOST and
/// the system default (= LOCALHOST) without static peers keep everything on this host. NOT_SET
/// (a caller that is not rcl) reads `ROS_STATIC_PEERS` (`;`-separated) itself.
pub fn network_for(
    range: ffi::rmw_automatic_discovery_range_t,
    static_peers: &[String],
    domain_id: u32,
) -> RmwResult<Option<QuicConfig>> {
    let mut peers: Vec<String> = static_peers
        .iter()
        .map(|p| p.trim().to_owned())
        .filter(|p| !p.is_empty())
        .collect();
    if range == ffi::RMW_AUTOMATIC_DISCOVERY_RANGE_NOT_SET && peers.is_empty() {
        if let Ok(v) = std::env::var("ROS_STATIC_PEERS") {
            peers = v
                .split(';')
                .map(|p| p.trim().to_owned())
                .filter(|p| !p.is_empty())
                .collect();
        }
    }
    network_in(effective_range(range), peers, domain_id)
}

/// [`network_for`] once the range in effect and the peers are known.
fn network_in(
    range: ffi::rmw_automatic_discovery_range_t,
    peers: Vec<String>,
    domain_id: u32,
) -> RmwResult<Option<QuicConfig>> {
    if range == ffi::RMW_AUTOMATIC_DISCOVERY_RANGE_OFF
        || (range != ffi::RMW_AUTOMATIC_DISCOVERY_RANGE_SUBNET && peers.is_empty())
    {
        return Ok(None);
    }
    let mut cfg = QuicConfig::for_domain(domain_id);
    let base = match std::env::var(PORT_BASE_ENV) {
        Ok(v) if !v.trim().is_empty() => v
            .trim()
            .parse::<u16>()
            .map_err(|_| RmwError::invalid(format!("{PORT_BASE_ENV}={v}: not a UDP port")))?,
        _ => DIRECTORY_PORT_BASE,
    };
    cfg.directory_port = u16::try_from(domain_id)
        .ok()
        .and_then(|d| base.checked_add(d))
        .ok_or_else(|| {
            RmwError::invalid(format!(
                "{PORT_BASE_ENV}={base} + domain {domain_id} is past the last UDP port"
            ))
        })?;
    if let Ok(v) = std::env::var(BIND_ENV) {
        if !v.trim().is_empty() {
            cfg.bind = v
                .trim()
                .parse()
                .map_err(|_| RmwError::invalid(format!("{BIND_ENV}={v}: not an IP address")))?;
        }
    }
    if range == ffi::RMW_AUTOMATIC_DISCOVERY_RANGE_SUBNET {
        // The announcements' port keeps its distance from the directory's (docs/network.md
        // section 2a): 25650 + d by default, moved with the base.
        let mut sub = SubnetConfig::for_domain(u16::try_from(domain_id).unwrap_or(u16::MAX));
        sub.port = (ANNOUNCE_PORT_BASE - DIRECTORY_PORT_BASE)
            .checked_add(cfg.directory_port)
            .ok_or_else(|| {
                RmwError::invalid(format!(
                    "{PORT_BASE_ENV}={base}: the SUBNET announcement port of domain {domain_id} \
                     is past the last UDP port"
                ))
            })?;
        cfg.subnet = Some(sub);
    }
    cfg.static_peers = peers;
    cfg.log = Some(Arc::new(|m: &str| {
        crate::log::log!(RMW_LOG_SEVERITY_WARN, "{m}");
    }));
    Ok(Some(cfg))
}

/// The rendezvous directory of `domain_id` when `base` (the value of [`RENDEZVOUS_ENV`]) moves
/// it: `<base>/domain-<id>`, the core's own layout, so that processes of different domains given
/// the same override still never see each other (the link handshake carries no domain id).
/// `None` (unset or empty) leaves the core's per-user default. The base is made (mode 0700) if
/// it is missing; the core makes the domain's directory and checks that it is private.
pub fn rendezvous_dir(base: Option<&OsStr>, domain_id: u32) -> RmwResult<Option<PathBuf>> {
    let Some(base) = base.filter(|b| !b.is_empty()).map(Path::new) else {
        return Ok(None);
    };
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(base)
        .map_err(|e| {
            RmwError::failed(format!(
                "{RENDEZVOUS_ENV}={}: cannot make the directory: {e}",
                base.display()
            ))
        })?;
    Ok(Some(libtracer_core::link::rendezvous_dir_in(
        base, domain_id,
    )))
}

impl Context {
    pub fn new(cfg: &InitConfig) -> RmwResult<Context> {
        let domain_id = resolve_domain_id(cfg.domain_id)?;
        let domain32 = u32::try_from(domain_id)
            .map_err(|_| RmwError::invalid(format!("domain id {domain_id} is out of range")))?;
        let discovery = discovery_for(cfg.discovery_range);
        let rendezvous_dir = match discovery {
            Discovery::Off => None,
            _ => rendezvous_dir(std::env::var_os(RENDEZVOUS_ENV).as_deref(), domain32)?,
        };
        let mut network = network_for(cfg.discovery_range, &cfg.static_peers, domain32)?;
        let secure = crate::security::load(&cfg.security, domain32)?;
        if let Some(n) = network.as_mut() {
            n.security = secure.as_ref().map(|s| s.quic.clone());
            n.permissions = secure.as_ref().map(|s| s.exchange());
        }
        let access = secure.map(|s| s.access);
        let networked = network.is_some();
        let gids = GidSource::new();
        let mut rec = Record::new(EntityKind::Context, gids.context_gid());
        rec.enclave = cfg.enclave.clone();
        // The registry (this context's record, `/.ros/endpoints`, the watch on `/net`) before
        // discovery starts: a peer mounts us as soon as our links are up and subscribes to our
        // `/.ros/endpoints` at once; were it not there yet, it would learn of our endpoints
        // only at its next retry, a second later (the "0.8 s to match" of issue 9).
        let graph_cfg = GraphConfig {
            name: None,
            domain_id: domain32,
            discovery,
            rendezvous_dir,
            network,
        };
        // The MCUs' graphs join as this one does (same domain, directory and network).
        let serial = crate::serial_link::start(&graph_cfg);
        let (graph, (registry, entry)) = Graph::new_with(graph_cfg, |g| {
            let made = Registry::start(g.clone(), rec)?;
            if networked {
                crate::security::grant_remote(g, access.as_ref())?;
            }
            Ok::<_, RmwError>(made)
        })?;
        registry.await_watchers(INIT_WATCH_LIMIT);
        let teardown = Teardown::start(graph.clone());
        Ok(Context {
            shared: Arc::new(Shared {
                graph,
                registry,
                gids,
                domain_id,
                enclave: cfg.enclave.clone(),
                shm: crate::shm::ShmOut::from_env(),
                shut_down: AtomicBool::new(false),
                teardown,
                next_ring: AtomicU64::new(1),
                retained: Mutex::new(HashMap::new()),
                networked,
                access,
            }),
            _entry: entry,
            _serial: serial,
        })
    }
}

impl Shared {
    /// With security on: fail unless this enclave's permissions allow `action` on each DDS
    /// topic of `checks` (before anything is made).
    pub fn permit(&self, checks: &[(crate::security::Action, &str)]) -> RmwResult<()> {
        match &self.access {
            Some(a) => checks.iter().try_for_each(|(x, t)| a.check_own(*x, t)),
            None => Ok(()),
        }
    }

    /// With security on: give the vertex `path` the ACL that lets in the peers whose
    /// permissions allow `remote` (the action on the DDS topic, and the right a peer uses the
    /// vertex with).
    pub fn guard(
        &self,
        path: &str,
        remote: (crate::security::Action, &str, libtracer_core::Rights),
    ) -> RmwResult<()> {
        if let Some(a) = &self.access {
            self.graph
                .set_acl(path, a.acl_for(remote.0, remote.1, remote.2))?;
        }
        Ok(())
    }

    /// `rmw_shutdown`: mark the context shut down and return at once (a second call is a
    /// no-op); the links close and the recording finishes on the teardown thread
    /// (`teardown.rs` says why).
    pub fn shutdown(&self) -> RmwResult<()> {
        if !self.shut_down.swap(true, Ordering::SeqCst) {
            self.teardown.request();
        }
        Ok(())
    }

    /// Wait until the teardown that `shutdown` started is done (`rmw_context_fini`).
    pub fn finish_teardown(&self) {
        self.teardown.finish();
    }

    pub fn is_shut_down(&self) -> bool {
        self.shut_down.load(Ordering::SeqCst)
    }

    /// Fail if the context was shut down (no new nodes then, as with Fast DDS; every other
    /// entity can still be made, used and destroyed).
    pub fn check_live(&self) -> RmwResult<()> {
        if self.is_shut_down() {
            Err(RmwError::invalid("context has been shut down"))
        } else {
            Ok(())
        }
    }

    /// A fresh path for a subscription's target ring.
    pub fn new_ring_path(&self) -> String {
        format!(
            "/.ros/sub/{}",
            self.next_ring.fetch_add(1, Ordering::Relaxed)
        )
    }

    /// Make sure the topic vertex at `path` retains at least `depth` samples (`usize::MAX` =
    /// keep all within the byte budget) for transient-local subscribers.
    pub fn retain_at_least(&self, path: &str, depth: usize, byte_budget: usize) -> RmwResult<()> {
        let mut r = self.retained.lock();
        let (cur_depth, cur_budget) = r.get(path).copied().unwrap_or((1, 0));
        let depth = depth.max(cur_depth);
        let budget = byte_budget.max(cur_budget);
        if (depth, budget) == (cur_depth, cur_budget) {
            return Ok(());
        }
        if depth == usize::MAX {
            self.graph.set_history_depth(path, 0)?;
            self.graph.set_ring_source(path, budget)?;
        } else {
            self.graph.set_history_depth(path, depth)?;
        }
        r.insert(path.to_owned(), (depth, budget));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn discovery_ranges() {
        assert_eq!(
            discovery_for(ffi::RMW_AUTOMATIC_DISCOVERY_RANGE_OFF),
            Discovery::Off
        );
        assert_eq!(
            discovery_for(ffi::RMW_AUTOMATIC_DISCOVERY_RANGE_LOCALHOST),
            Discovery::Host
        );
        assert_eq!(
            discovery_for(ffi::RMW_AUTOMATIC_DISCOVERY_RANGE_SUBNET),
            Discovery::Host
        );
    }

    /// The override is a base: one directory per domain under it, made on demand.
    #[test]
    fn rendezvous_override_is_a_base_per_domain() {
        use std::os::unix::fs::PermissionsExt;
        assert!(rendezvous_dir(None, 3).unwrap().is_none());
        assert!(rendezvous_dir(Some(OsStr::new("")), 3).unwrap().is_none());
        let base = std::env::temp_dir().join(format!("rmw_tracer-rdv-test-{}", std::process::id()));
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
        std::fs::remove_dir_all(&base).unwrap();
    }

    /// Nothing leaves the host unless asked: static peers (any range but OFF) or SUBNET.
    #[test]
    fn network_only_when_asked() {
        let peers = vec!["192.0.2.2".to_owned(), " ".to_owned()];
        let on = |range, peers: &[String]| network_for(range, peers, 3).unwrap();
        assert!(on(ffi::RMW_AUTOMATIC_DISCOVERY_RANGE_OFF, &peers).is_none());
        assert!(on(ffi::RMW_AUTOMATIC_DISCOVERY_RANGE_LOCALHOST, &[]).is_none());
        assert!(on(ffi::RMW_AUTOMATIC_DISCOVERY_RANGE_SYSTEM_DEFAULT, &[]).is_none());
        let c = on(ffi::RMW_AUTOMATIC_DISCOVERY_RANGE_LOCALHOST, &peers).unwrap();
        assert_eq!(c.static_peers, vec!["192.0.2.2"]);
        assert_eq!(c.directory_port, DIRECTORY_PORT_BASE + 3);
        assert!(c.subnet.is_none(), "static peers alone announce nothing");
        // rcl's SUBNET for an unset variable (the test's environment): off.
        assert!(on(ffi::RMW_AUTOMATIC_DISCOVERY_RANGE_SUBNET, &[]).is_none());
        let s = network_in(ffi::RMW_AUTOMATIC_DISCOVERY_RANGE_SUBNET, vec![], 3)
            .unwrap()
            .unwrap();
        assert!(s.static_peers.is_empty());
        let sub = s.subnet.expect("SUBNET announces");
        assert_eq!((sub.domain_id, sub.port), (3, ANNOUNCE_PORT_BASE + 3));
    }

    /// rcl's SUBNET for an unset variable is the system default (LOCALHOST); a SUBNET the user
    /// set, or one a caller passes with the variable set, stays SUBNET.
    #[test]
    fn subnet_only_when_the_user_set_it() {
        use ffi::{
            RMW_AUTOMATIC_DISCOVERY_RANGE_LOCALHOST as LOCALHOST,
            RMW_AUTOMATIC_DISCOVERY_RANGE_NOT_SET as NOT_SET,
            RMW_AUTOMATIC_DISCOVERY_RANGE_OFF as OFF,
            RMW_AUTOMATIC_DISCOVERY_RANGE_SUBNET as SUBNET,
            RMW_AUTOMATIC_DISCOVERY_RANGE_SYSTEM_DEFAULT as DEFAULT,
        };
        assert_eq!(range_in_effect(SUBNET, None), DEFAULT);
        assert_eq!(range_in_effect(SUBNET, Some(" ")), DEFAULT);
        assert_eq!(range_in_effect(SUBNET, Some("SUBNET")), SUBNET);
        assert_eq!(range_in_effect(LOCALHOST, None), LOCALHOST);
        assert_eq!(range_in_effect(OFF, None), OFF);
        assert_eq!(range_in_effect(NOT_SET, Some("SUBNET")), SUBNET);
        assert_eq!(range_in_effect(NOT_SET, Some("OFF")), OFF);
        assert_eq!(range_in_effect(NOT_SET, None), DEFAULT);
    }

    #[test]
    fn explicit_domain_id_wins() {
        assert_eq!(resolve_domain_id(7).unwrap(), 7);
    }
}
