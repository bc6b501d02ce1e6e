//! The rmw context: one libtracer [`Graph`] per `rmw_context_t`, its endpoint registry and the
//! ids of everything made in it.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use libtracer_core::{Discovery, Graph, GraphConfig};
use parking_lot::Mutex;

use crate::boundary::{RmwError, RmwResult};
use crate::gid::GidSource;
use crate::registry::{EntityKind, Entry, Record, Registry};
use crate::teardown::Teardown;

/// Environment variable that moves the base of the rendezvous directories (tests isolate
/// themselves with it); each domain still has its own directory under it.
pub const RENDEZVOUS_ENV: &str = "RMW_TRACER_RENDEZVOUS_DIR";

/// What `rmw_init` needs from the init options, already read out of the C struct.
#[derive(Clone, Debug)]
pub struct InitConfig {
    /// `RMW_DEFAULT_DOMAIN_ID` when the options leave it to us.
    pub domain_id: usize,
    pub enclave: String,
    pub discovery_range: ffi::rmw_automatic_discovery_range_t,
}

/// Everything made in a context shares this (nodes outlive neither it nor their graph).
pub struct Shared {
    pub graph: Graph,
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
    /// Topic vertex -> the history it retains (the largest of its transient-local publishers).
    retained: Mutex<HashMap<String, usize>>,
}

/// The object behind `rmw_context_t::impl`.
pub struct Context {
    pub shared: Arc<Shared>,
    _entry: Entry,
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

/// How a graph finds peers: OFF keeps it in-process; everything else (localhost, subnet,
/// system default) is same-host discovery, since rmw_tracer never leaves the host. NOT_SET
/// (a caller that is not rcl) reads `ROS_AUTOMATIC_DISCOVERY_RANGE` as rcl would.
pub fn discovery_for(range: ffi::rmw_automatic_discovery_range_t) -> Discovery {
    let range = if range == ffi::RMW_AUTOMATIC_DISCOVERY_RANGE_NOT_SET {
        match std::env::var("ROS_AUTOMATIC_DISCOVERY_RANGE").as_deref() {
            Ok("OFF") => ffi::RMW_AUTOMATIC_DISCOVERY_RANGE_OFF,
            _ => ffi::RMW_AUTOMATIC_DISCOVERY_RANGE_SYSTEM_DEFAULT,
        }
    } else {
        range
    };
    if range == ffi::RMW_AUTOMATIC_DISCOVERY_RANGE_OFF {
        Discovery::Off
    } else {
        Discovery::Host
    }
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
        let gids = GidSource::new();
        let mut rec = Record::new(EntityKind::Context, gids.context_gid());
        rec.enclave = cfg.enclave.clone();
        // The registry (this context's record, `/.ros/endpoints`, the watch on `/net`) before
        // discovery starts: a peer mounts us as soon as our links are up and subscribes to our
        // `/.ros/endpoints` at once; were it not there yet, it would learn of our endpoints
        // only at its next retry, a second later (the "0.8 s to match" of issue 9).
        let (graph, (registry, entry)) = Graph::new_with(
            GraphConfig {
                name: None,
                domain_id: domain32,
                discovery,
                rendezvous_dir,
            },
            |g| Registry::start(g.clone(), rec),
        )?;
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
            }),
            _entry: entry,
        })
    }
}

impl Shared {
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
        let cur = r.get(path).copied().unwrap_or(1);
        if depth > cur {
            if depth == usize::MAX {
                self.graph.set_history_depth(path, 0)?;
                self.graph.set_ring_source(path, byte_budget)?;
            } else {
                self.graph.set_history_depth(path, depth)?;
            }
            r.insert(path.to_owned(), depth);
        }
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

    #[test]
    fn explicit_domain_id_wins() {
        assert_eq!(resolve_domain_id(7).unwrap(), 7);
    }
}
