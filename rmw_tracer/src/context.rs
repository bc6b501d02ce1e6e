//! The rmw context: one libtracer [`Graph`] per `rmw_context_t`, its endpoint registry and the
//! ids of everything made in it.

use std::ffi::OsStr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use libtracer_core::link::quic::NetLog;
use libtracer_core::link::QuicConfig;
use libtracer_core::{Discovery, Graph, GraphConfig};
use tracer_recording::delivery::Retained;
use tracer_recording::network::{self, Range, RENDEZVOUS_ENV};

use crate::boundary::{RmwError, RmwResult};
use crate::gid::GidSource;
use crate::registry::{EntityKind, Entry, Record, Registry};
use crate::teardown::Teardown;

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
    /// What the topic vertices retain: the most of their transient-local publishers' history
    /// and, with the network on, of their reliable publishers' resend windows (docs/network.md
    /// section 6).
    pub retained: Retained,
    /// The network is on (static peers or SUBNET): links can be cut and come back, so reliable
    /// publishers keep a resend window and reliable subscriptions filter replays
    /// (`tracer_recording::resume`).
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
    let d = network::domain_from_env().map_err(env_error)?;
    usize::try_from(d).map_err(|_| RmwError::invalid(format!("domain id {d} is out of range")))
}

/// rmw's discovery range as the shared network settings know it (`tracer_recording::network`:
/// the environment's rules, the range in effect, the network's config, shared with the C API).
fn range(r: ffi::rmw_automatic_discovery_range_t) -> Range {
    match r {
        ffi::RMW_AUTOMATIC_DISCOVERY_RANGE_NOT_SET => Range::NotSet,
        ffi::RMW_AUTOMATIC_DISCOVERY_RANGE_OFF => Range::Off,
        ffi::RMW_AUTOMATIC_DISCOVERY_RANGE_LOCALHOST => Range::Localhost,
        ffi::RMW_AUTOMATIC_DISCOVERY_RANGE_SUBNET => Range::Subnet,
        // SYSTEM_DEFAULT, and a number of a later rmw: LOCALHOST, nothing leaves the host.
        _ => Range::SystemDefault,
    }
}

/// A setting of the environment, reported as rmw reports it.
fn env_error(e: network::EnvError) -> RmwError {
    if e.is_invalid_value() {
        RmwError::invalid(e.to_string())
    } else {
        RmwError::failed(e.to_string())
    }
}

/// How a graph finds peers on its host (`network::discovery_for`).
pub fn discovery_for(r: ffi::rmw_automatic_discovery_range_t) -> Discovery {
    network::discovery_for(range(r))
}

/// Whether, and how, the graph reaches other hosts (`network::network_for`, docs/network.md
/// section 2); the network's warnings go to the rmw log.
pub fn network_for(
    r: ffi::rmw_automatic_discovery_range_t,
    static_peers: &[String],
    domain_id: u32,
) -> RmwResult<Option<QuicConfig>> {
    let log: NetLog = Arc::new(|m: &str| {
        crate::log::log!(RMW_LOG_SEVERITY_WARN, "{m}");
    });
    network::network_for(range(r), static_peers, domain_id, Some(log)).map_err(env_error)
}

/// The rendezvous directory of `domain_id` (`network::rendezvous_dir`).
pub fn rendezvous_dir(base: Option<&OsStr>, domain_id: u32) -> RmwResult<Option<PathBuf>> {
    network::rendezvous_dir(base, domain_id).map_err(env_error)
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
        let host_users = network::host_users_from_env().map_err(env_error)?;
        let graph_cfg = GraphConfig {
            name: None,
            domain_id: domain32,
            discovery,
            rendezvous_dir,
            host_users,
            network,
        };
        // The MCUs' graphs join as this one does (same domain, directory and network).
        let serial = crate::serial_link::start(&graph_cfg);
        let (graph, (registry, entry)) = Graph::new_with(graph_cfg, |g| {
            let made = Registry::start(g.clone(), rec)?;
            crate::security::grant_peers(g, access.as_ref(), networked, host_users)?;
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
                retained: Retained::default(),
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
            Some(a) => Ok(checks.iter().try_for_each(|(x, t)| a.check_own(*x, t))?),
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
}

#[cfg(test)]
mod tests {
    use super::*;

    /// rmw's enum onto the shared one; the rules themselves are tested beside them
    /// (`recording/src/network.rs`).
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
        assert_eq!(
            range(ffi::RMW_AUTOMATIC_DISCOVERY_RANGE_SYSTEM_DEFAULT),
            Range::SystemDefault
        );
        assert_eq!(
            range(ffi::RMW_AUTOMATIC_DISCOVERY_RANGE_NOT_SET),
            Range::NotSet
        );
    }

    /// Nothing leaves the host unless asked: static peers (any range but OFF) or SUBNET.
    #[test]
    fn network_only_when_asked() {
        let peers = vec!["192.0.2.2".to_owned(), " ".to_owned()];
        let on = |range, peers: &[String]| network_for(range, peers, 3).unwrap();
        assert!(on(ffi::RMW_AUTOMATIC_DISCOVERY_RANGE_OFF, &peers).is_none());
        assert!(on(ffi::RMW_AUTOMATIC_DISCOVERY_RANGE_LOCALHOST, &[]).is_none());
        let c = on(ffi::RMW_AUTOMATIC_DISCOVERY_RANGE_LOCALHOST, &peers).unwrap();
        assert_eq!(c.static_peers, vec!["192.0.2.2"]);
        assert!(c.log.is_some(), "the network's warnings go to the rmw log");
    }

    /// A rendezvous base that cannot be made is a failure, not an invalid argument.
    #[test]
    fn rendezvous_error_names_the_variable() {
        let file = std::env::temp_dir().join(format!("rmw_tracer-rdv-file-{}", std::process::id()));
        std::fs::write(&file, b"x").unwrap();
        let err = rendezvous_dir(Some(file.join("x").as_os_str()), 0).unwrap_err();
        assert!(err.to_string().contains(RENDEZVOUS_ENV), "{err}");
        std::fs::remove_file(&file).unwrap();
    }

    #[test]
    fn explicit_domain_id_wins() {
        assert_eq!(resolve_domain_id(7).unwrap(), 7);
    }
}
