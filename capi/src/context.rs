//! A context: one libtracer graph on a domain, the node the native program appears as to ROS
//! tools (`ros2 node list`), its entity records, and the watch that wires its subscriptions.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use libtracer_core::{Graph, Rights};
use tracer_recording::delivery::Retained;
use tracer_recording::gid::GidSource;
use tracer_recording::record;
use tracer_recording::registry::{self, ENDPOINTS};
use tracer_recording::security::{self, Access, Action, WriterCheck};
use tracer_recording::{EntityKind, Gid, Record};
use tracer_shm::{Pool, PoolConfig};

use crate::env;
use crate::error::{CapiError, CapiResult};
use crate::watch::Watch;

/// How long a new context waits for the peers already there to watch its records (as
/// rmw_tracer's `rmw_init` does): an entity made right after is then matched at once.
const WATCHERS_LIMIT: Duration = Duration::from_millis(100);

pub struct Context {
    pub graph: Graph,
    pub gids: GidSource,
    pub node_gid: Gid,
    pub node_name: String,
    pub node_namespace: String,
    pub domain_id: u32,
    pub watch: Arc<Watch>,
    /// Local vertices of this context (subscription rings, registry sinks) live under it.
    pub prefix: String,
    next_local: AtomicU64,
    /// Loans' shared-memory pool, made at the first borrow (None: no memfd here).
    pool: OnceLock<Option<Pool>>,
    /// SROS2: what this enclave and its peers may do (None: security is off).
    access: Option<Arc<Access>>,
    /// The network is on (static peers or SUBNET): links can be cut and come back, so reliable
    /// publishers keep a resend window and reliable subscriptions filter replays
    /// (`tracer_recording::resume`).
    pub networked: bool,
    /// What the topic vertices retain for transient-local subscribers and resends.
    pub retained: Retained,
}

impl Context {
    /// Join the graph of `domain_id` (negative: `ROS_DOMAIN_ID`) as node `namespace`/`name`.
    pub fn new(name: &str, namespace: &str, domain_id: i32) -> CapiResult<Context> {
        // `RMW_TRACER_RECORD`: the first context opens the file (before the watch starts, which
        // learns the peers' definitions while recording), the last one finishes it.
        record::context_started(&env::RECORD_HOST);
        let made = Context::join(name, namespace, domain_id);
        if made.is_err() {
            record::context_shutdown();
        }
        made
    }

    fn join(name: &str, namespace: &str, domain_id: i32) -> CapiResult<Context> {
        check_node_name(name)?;
        check_namespace(namespace)?;
        let domain_id = env::domain_id(domain_id)?;
        let (cfg, secure) = env::graph_config(domain_id)?;
        let access = secure.map(|s| s.access);
        let gids = GidSource::new();
        let node_gid = gids.next();
        let prefix = "/.capi".to_owned();
        let mut node = Record::new(EntityKind::Node, node_gid);
        node.node_name = name.to_owned();
        node.node_namespace = namespace.to_owned();
        let context_rec = Record::new(EntityKind::Context, gids.context_gid());
        // Records and the watch before discovery starts: a peer mounts us as soon as our links
        // are up and subscribes to our `/.ros/endpoints` at once.
        let networked = cfg.network.is_some();
        let users = cfg.host_users;
        let (graph, watch) = Graph::new_with(cfg, |g| {
            announce(g, &context_rec)?;
            announce(g, &node)?;
            // Other users' and hosts' peers may use our vertices as rmw_tracer's may: with
            // SROS2 the registry (made by the records just announced) is the joining grants',
            // each vertex its own (`guard`).
            security::grant_peers(g, access.as_ref(), networked, users)?;
            Watch::start(g, &prefix)
        })?;
        await_watchers(&graph, WATCHERS_LIMIT);
        Ok(Context {
            graph,
            gids,
            node_gid,
            node_name: name.to_owned(),
            node_namespace: namespace.to_owned(),
            domain_id,
            watch,
            prefix,
            next_local: AtomicU64::new(1),
            pool: OnceLock::new(),
            access,
            networked,
            retained: Retained::default(),
        })
    }

    /// With SROS2: fail unless this enclave's permissions allow each action on its DDS topic
    /// (before anything is made), as rmw_tracer's `Shared::permit`.
    pub fn permit(&self, checks: &[(Action, &str)]) -> CapiResult<()> {
        match &self.access {
            Some(a) => Ok(checks.iter().try_for_each(|(x, t)| a.check_own(*x, t))?),
            None => Ok(()),
        }
    }

    /// With SROS2: give the vertex `path` the ACL that lets in the peers whose permissions
    /// allow `action` on the DDS `topic`, used with `right` (rmw_tracer's `Shared::guard`).
    pub fn guard(&self, path: &str, action: Action, topic: &str, right: Rights) -> CapiResult<()> {
        if let Some(a) = &self.access {
            self.graph.set_acl(path, a.acl_for(action, topic, right))?;
        }
        Ok(())
    }

    /// With SROS2: which peers a subscription to `topic` (DDS topic `dds`) takes data from.
    pub fn writer_check(&self, topic: &str, dds: &str) -> Option<WriterCheck> {
        self.access
            .as_ref()
            .map(|a| WriterCheck::new(a.clone(), topic, dds.to_owned()))
    }

    /// Whether SROS2 is on.
    pub fn secured(&self) -> bool {
        self.access.is_some()
    }

    /// A fresh local vertex path for a subscription's ring.
    pub fn local_path(&self, what: &str) -> String {
        let n = self.next_local.fetch_add(1, Ordering::Relaxed);
        format!("{}/{what}-{n}", self.prefix)
    }

    /// An endpoint record of this context's node.
    pub fn endpoint_record(
        &self,
        kind: EntityKind,
        gid: Gid,
        topic: &str,
        type_name: &str,
    ) -> Record {
        let mut rec = Record::new(kind, gid);
        rec.node_gid = Some(self.node_gid);
        rec.node_name = self.node_name.clone();
        rec.node_namespace = self.node_namespace.clone();
        rec.topic = topic.to_owned();
        rec.type_name = type_name.to_owned();
        rec
    }

    pub fn announce(&self, rec: &Record) -> CapiResult<()> {
        announce(&self.graph, rec)
    }

    pub fn retract(&self, rec: &Record) {
        registry::retract(&self.graph, rec.kind, rec.gid);
    }

    /// The loans' pool (made once; None when this host cannot make shared memory).
    pub fn pool(&self) -> Option<&Pool> {
        self.pool
            .get_or_init(|| Pool::new(PoolConfig::default()).ok())
            .as_ref()
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        record::context_shutdown();
        self.watch.stop();
        registry::retract(&self.graph, EntityKind::Node, self.node_gid);
        registry::retract(&self.graph, EntityKind::Context, self.gids.context_gid());
        self.graph.shutdown();
    }
}

fn announce(g: &Graph, rec: &Record) -> CapiResult<()> {
    let text = rec
        .encode()
        .ok_or_else(|| CapiError::invalid("a name contains a newline"))?;
    registry::announce(g, rec.gid, text).map_err(CapiError::Internal)
}

/// Wait, at most `limit`, until every peer linked now watches our records (rmw_tracer's
/// `Registry::await_watchers`, for the same reason).
fn await_watchers(graph: &Graph, limit: Duration) {
    let deadline = Instant::now() + limit;
    let Some(endpoints) = graph.vertex(ENDPOINTS) else {
        return;
    };
    loop {
        let version = endpoints.edges_version();
        let watching: BTreeSet<String> = graph
            .subscribers(ENDPOINTS)
            .map(|v| v.into_iter().filter_map(|s| s.peer).collect())
            .unwrap_or_default();
        if graph.peers().iter().all(|p| watching.contains(p)) || Instant::now() >= deadline {
            return;
        }
        endpoints.await_edges(version, Some(deadline));
    }
}

/// rmw's node name rule: `[A-Za-z_][A-Za-z0-9_]*`, at most 255 bytes.
fn check_node_name(name: &str) -> CapiResult<()> {
    let ok = !name.is_empty()
        && name.len() <= 255
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(CapiError::invalid(format!(
            "node name `{name}` is not [A-Za-z_][A-Za-z0-9_]*"
        )))
    }
}

/// rmw's namespace rule: `/` or `/`-separated name tokens, no trailing `/`.
fn check_namespace(ns: &str) -> CapiResult<()> {
    let ok = ns == "/"
        || (ns.starts_with('/')
            && ns[1..].split('/').all(|t| {
                !t.is_empty()
                    && !t.starts_with(|c: char| c.is_ascii_digit())
                    && t.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
            }));
    if ok {
        Ok(())
    } else {
        Err(CapiError::invalid(format!(
            "namespace `{ns}` is not a ROS namespace"
        )))
    }
}
