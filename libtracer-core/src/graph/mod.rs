//! The graph: the public entry point that ties the tree, edges, ACLs and links together.
//! `inner` holds the shared state's machinery (access checks, tree changes, edge attachment),
//! `subscribe` the edge-facing half of the API.

mod handle;
mod subscribe;

pub use handle::Vertex;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::acl::{Acl, Credentials, Rights};
use crate::error::Error;
use crate::path::{valid_segment, Path};
use crate::payload::{Meta, Payload};
use crate::sample::Sample;
use crate::state::GraphInner;
use crate::structure::What;
use crate::tree::Tree;
use crate::vertex::pacing::DEFAULT_MAX_BLOCKING;
use crate::vertex::{
    dispatch_write, AdmitFn, EdgeFilterFn, Kind, LandFn, Node, SinkFn, StreamOptions,
};
use crate::wire::frame::SchemaInfo;

/// `:schema`: type name, hash, definition and encoding, for tools only.
pub type Schema = SchemaInfo;

/// How a graph finds peers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Discovery {
    /// In-process only (links can still be attached by hand with `Graph::attach_link`).
    #[default]
    Off,
    /// Same-host peers through the per-user, per-domain Unix-socket rendezvous directory.
    Host,
}

#[derive(Clone, Debug, Default)]
pub struct GraphConfig {
    /// Node identity, a valid segment; None = `<hostname>-<pid>-<n>` (in a pid namespace of its
    /// own, a container's, `<hostname>-<pid>.<namespace>-<n>`).
    pub name: Option<String>,
    pub domain_id: u32,
    pub discovery: Discovery,
    /// Default: a per-user, per-domain directory (mode 0700). With `Discovery::Host` the graph
    /// also meets, in the abstract namespace, every graph of this network namespace given the
    /// same setting (the default: every graph of the domain; an explicit directory: the graphs
    /// given the same path), whatever its mount namespace (docs/host.md).
    pub rendezvous_dir: Option<std::path::PathBuf>,
    /// Which users' graphs of this host the graph links to.
    pub host_users: crate::link::HostUsers,
    /// With `Discovery::Host`: also links to other hosts over QUIC (docs/network.md); `None`
    /// keeps the graph on this host.
    #[cfg(feature = "quic")]
    pub network: Option<crate::link::QuicConfig>,
}

/// One per process-level participant. Cheap `Clone`.
#[derive(Clone)]
pub struct Graph {
    pub(crate) inner: Arc<GraphInner>,
}

static GRAPH_SEQ: AtomicU64 = AtomicU64::new(0);

fn default_name() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .unwrap_or_default();
    let host: String = host
        .trim()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '~' | '-') {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    let host = if host.is_empty() || host == "." || host == ".." {
        "host".to_string()
    } else {
        host
    };
    format!(
        "{host}-{}{}-{}",
        std::process::id(),
        pid_namespace_mark(),
        GRAPH_SEQ.fetch_add(1, Ordering::Relaxed)
    )
}

/// Empty in the host's pid namespace; else `.` and the namespace's inode in hex. Containers
/// sharing the host's network have pid namespaces of their own, where the pids repeat (each
/// has its pid 1), while their graphs meet in one abstract namespace and need distinct names.
fn pid_namespace_mark() -> String {
    // The kernel's PROC_PID_INIT_INO: the inode of the initial pid namespace.
    const INIT: u64 = 0xEFFF_FFFC;
    let ino = std::fs::read_link("/proc/self/ns/pid").ok().and_then(|l| {
        let l = l.to_str()?.strip_prefix("pid:[")?.strip_suffix(']')?;
        l.parse::<u64>().ok()
    });
    match ino {
        Some(i) if i != INIT => format!(".{i:x}"),
        _ => String::new(),
    }
}

/// A vertex's own path: no meta segment.
fn parse_vertex(path: &str) -> Result<Path, Error> {
    let p = Path::parse(path)?;
    if p.meta().is_some() {
        return Err(Error::InvalidPath {
            path: path.into(),
            reason: "a vertex path, not a meta child",
        });
    }
    Ok(p)
}

/// A path the local tree owns: a vertex path, not at or below `/net`.
fn parse_local(path: &str) -> Result<Path, Error> {
    let p = parse_vertex(path)?;
    if p.base() == "/net" || p.base().starts_with("/net/") {
        return Err(Error::InvalidPath {
            path: path.into(),
            reason: "/net is reserved for peer mounts",
        });
    }
    Ok(p)
}

impl Graph {
    pub fn new(cfg: GraphConfig) -> Result<Graph, Error> {
        Graph::new_with(cfg, |_| Ok::<(), Error>(())).map(|(g, ())| g)
    }

    /// As [`Graph::new`], running `setup` on the graph before discovery starts, so that what it
    /// makes (vertices, sinks, local edges) is there before any peer can mount this graph. A
    /// peer that mounts us at once and subscribes to a vertex we were about to make would
    /// otherwise be refused with `NotFound`, and learn of it only when it tried again.
    pub fn new_with<T, E: From<Error>>(
        cfg: GraphConfig,
        setup: impl FnOnce(&Graph) -> Result<T, E>,
    ) -> Result<(Graph, T), E> {
        let name = match cfg.name {
            Some(n) if valid_segment(&n) => n,
            Some(n) => {
                return Err(Error::InvalidPath {
                    path: n,
                    reason: "graph name must be a valid segment",
                }
                .into())
            }
            None => default_name(),
        };
        let tree = Tree::new();
        let (net_node, _) = tree.create(&Path::parse("/net").map_err(E::from)?);
        drop(net_node);
        let g = Graph {
            inner: Arc::new(GraphInner::new(name, cfg.domain_id, tree)),
        };
        let made = setup(&g)?;
        if cfg.discovery == Discovery::Host {
            let (dir, scope) = match cfg.rendezvous_dir {
                Some(dir) => {
                    let scope = crate::link::HostScope::for_dir(&dir);
                    (dir, scope)
                }
                None => (
                    crate::link::default_rendezvous_dir(g.inner.domain_id),
                    crate::link::HostScope::for_domain(g.inner.domain_id),
                ),
            };
            let host = crate::link::TransportConfig {
                scope: Some(scope.clone()),
                users: cfg.host_users,
                ..Default::default()
            };
            let _handler = crate::net::start_host(&g.inner, &dir, host).map_err(E::from)?;
            #[cfg(feature = "quic")]
            if let Some(mut network) = cfg.network {
                network.host_scope = Some(scope);
                crate::net::start_network(&g.inner, &dir, _handler, network).map_err(E::from)?;
            }
        }
        Ok((g, made))
    }

    pub fn name(&self) -> &str {
        &self.inner.name
    }

    pub fn domain_id(&self) -> u32 {
        self.inner.domain_id
    }

    /// The uid/gid this graph runs as; local calls act as this principal.
    pub fn owner(&self) -> Credentials {
        self.inner.owner.clone()
    }

    fn handle(&self, node: Arc<Node>) -> Vertex {
        Vertex {
            node,
            graph: self.inner.clone(),
        }
    }

    fn local_node(&self, path: &str) -> Result<Arc<Node>, Error> {
        let p = parse_local(path)?;
        self.inner
            .tree
            .get(p.base())
            .ok_or_else(|| Error::NotFound(p.base().to_string()))
    }

    /// mkdir -p and give the vertex the stream role; idempotent (an existing stream keeps its
    /// bounds: change them with `set_history_depth` / `set_ring_source`).
    pub fn create_stream(&self, path: &str, opts: StreamOptions) -> Result<Vertex, Error> {
        let p = parse_local(path)?;
        let n = self
            .inner
            .ensure(&p, &self.inner.owner, Kind::Stream, opts)?;
        Ok(self.handle(n))
    }

    /// mkdir -p and give the vertex the value role; idempotent.
    pub fn create_value(&self, path: &str) -> Result<Vertex, Error> {
        let p = parse_local(path)?;
        let n = self
            .inner
            .ensure(&p, &self.inner.owner, Kind::Value, StreamOptions::default())?;
        Ok(self.handle(n))
    }

    /// A vertex whose writes run `f` on the delivering thread (`f` must not block). A vertex
    /// that already has a role cannot become a sink.
    pub fn create_sink(&self, path: &str, f: SinkFn) -> Result<Vertex, Error> {
        let p = parse_local(path)?;
        let n = self.inner.ensure(
            &p,
            &self.inner.owner,
            Kind::Sink(f),
            StreamOptions::default(),
        )?;
        Ok(self.handle(n))
    }

    /// A handle on an existing local vertex.
    pub fn vertex(&self, path: &str) -> Option<Vertex> {
        self.local_node(path).ok().map(|n| self.handle(n))
    }

    /// Write `path`: a missing local path is created (mkdir -p, the leaf a value) if the nearest
    /// existing ancestor grants CREATE; `/net/<peer>/...` is forwarded and never waits.
    /// `Err(TooLarge)` when an edge's link cannot carry the payload (above its peer's frame
    /// bound): the write is stored and delivered to every other edge, and the caller knows.
    /// A paced edge without room makes it wait up to `DEFAULT_MAX_BLOCKING`, then fail with
    /// `Timeout` having gone nowhere (`Vertex::write_within` chooses the wait).
    pub fn write(&self, path: &str, payload: Payload, meta: Meta) -> Result<(), Error> {
        self.write_as(&self.inner.owner, path, payload, meta)
    }

    /// `write` on behalf of another principal (the ACL decides as for a peer with these
    /// credentials).
    pub fn write_as(
        &self,
        who: &Credentials,
        path: &str,
        payload: Payload,
        meta: Meta,
    ) -> Result<(), Error> {
        let p = Path::parse(path)?;
        if p.meta().is_some() {
            return Err(Error::SchemaNotFound(format!(
                "{p}: meta children are not written as data (use set_acl / set_schema)"
            )));
        }
        if let Some((peer, rest)) = p.net_split() {
            self.inner.check_mount(peer, who, Rights::WRITE)?;
            return self
                .inner
                .peers
                .forward_write(peer, rest, payload, meta, None);
        }
        let p = parse_local(path)?;
        let node = self.inner.ensure_write(&p, who)?;
        dispatch_write(&node, payload, meta, DEFAULT_MAX_BLOCKING)
    }

    /// A forwarded write that waits for the peer's answer (e.g. `NotFound`); a local path is
    /// written as by `write`.
    pub fn write_confirmed(
        &self,
        path: &str,
        payload: Payload,
        meta: Meta,
        timeout: Duration,
    ) -> Result<(), Error> {
        let p = Path::parse(path)?;
        match p.net_split() {
            Some((peer, rest)) if p.meta().is_none() => {
                self.inner
                    .peers
                    .forward_write(peer, rest, payload, meta, Some(timeout))
            }
            _ => self.write(path, payload, meta),
        }
    }

    /// Read a stored value (or a stream's newest sample). Local: at once; `/net/<peer>/...`:
    /// asks the peer and waits up to `timeout`.
    pub fn read(&self, path: &str, timeout: Duration) -> Result<Option<Sample>, Error> {
        let p = Path::parse(path)?;
        if let Some((peer, rest)) = p.net_split() {
            return self.inner.peers.read_remote(peer, rest, timeout);
        }
        let n = self.local_node(path)?;
        self.inner.check(&n, &self.inner.owner, Rights::READ)?;
        Ok(self.handle(n).value())
    }

    /// Remove the vertex and its subtree, with every edge from or to them.
    pub fn remove(&self, path: &str) -> Result<(), Error> {
        let n = self.local_node(path)?;
        if n.parent.is_none() {
            return Err(Error::InvalidPath {
                path: path.into(),
                reason: "the root cannot be removed",
            });
        }
        self.inner.check(&n, &self.inner.owner, Rights::ADMIN)?;
        self.inner.remove_node(&n);
        Ok(())
    }

    pub fn set_schema(&self, path: &str, schema: Schema) -> Result<(), Error> {
        let n = self.local_node(path)?;
        self.inner.check(&n, &self.inner.owner, Rights::ADMIN)?;
        let _g = self.inner.tree.lock();
        *n.schema.lock() = Some(schema);
        n.emit(What::SchemaSet);
        Ok(())
    }

    pub fn schema(&self, path: &str) -> Option<Schema> {
        self.local_node(path).ok()?.schema.lock().clone()
    }

    fn stream_node(&self, path: &str) -> Result<Arc<Node>, Error> {
        let n = self.local_node(path)?;
        self.inner.check(&n, &self.inner.owner, Rights::ADMIN)?;
        match n.kind.get() {
            Some(Kind::Stream) => Ok(n),
            _ => Err(Error::WrongRole {
                path: path.into(),
                role: n.role(),
                wanted: "ring bounds apply to streams",
            }),
        }
    }

    /// The ring's message-count bound (0 = unbounded). Shrinking drops (and counts) the oldest.
    pub fn set_history_depth(&self, path: &str, depth: usize) -> Result<(), Error> {
        let n = self.stream_node(path)?;
        n.store.lock().ring.set_depth(depth);
        Ok(())
    }

    /// The ring's byte budget (0 = unbounded). Shrinking drops (and counts) the oldest.
    pub fn set_ring_source(&self, path: &str, byte_budget: usize) -> Result<(), Error> {
        let n = self.stream_node(path)?;
        n.store.lock().ring.set_byte_budget(byte_budget);
        Ok(())
    }

    /// Give a stream an admission filter (`None` removes it): every sample about to land in
    /// its ring, local write or delivery, is offered to `f` first and left out when it says
    /// no. rmw_tracer uses it to drop what a subscription already holds when a publisher's
    /// history is replayed after a link came back (docs/network.md section 6).
    pub fn set_stream_filter(&self, path: &str, f: Option<AdmitFn>) -> Result<(), Error> {
        let n = self.stream_node(path)?;
        n.store.lock().admit = f;
        Ok(())
    }

    /// Set (or clear, with `None`) the filter of the vertex's tagged edges (`EdgeFilterFn`):
    /// from now on each write to one of them is first judged by it, live writes and
    /// transient-local replays alike. Any vertex with a role may have one.
    pub fn set_edge_filter(&self, path: &str, f: Option<EdgeFilterFn>) -> Result<(), Error> {
        let n = self.local_node(path)?;
        *n.edge_filter.write() = f;
        Ok(())
    }

    /// Set (or clear, with `None`) a stream's arrival hook: called once for each sample that
    /// lands in its ring, on the delivering thread (`LandFn`). The one way to hear of arrivals
    /// without a thread: a callback per message, no polling. A hook being called when it is
    /// replaced or cleared may still finish its call after this returns.
    pub fn set_on_land(&self, path: &str, f: Option<LandFn>) -> Result<(), Error> {
        let n = self.stream_node(path)?;
        n.store.lock().on_land = f;
        Ok(())
    }

    /// Put an `:acl` on the vertex; it governs the vertex and every descendant that has no
    /// nearer `:acl` of its own.
    ///
    /// `/net` and a mount `/net/<peer>` take an ACL too: it decides who may forward writes and
    /// subscribes through that mount (they reach the peer with this graph's credentials).
    pub fn set_acl(&self, path: &str, acl: Acl) -> Result<(), Error> {
        let p = parse_vertex(path)?;
        let n = self
            .inner
            .tree
            .get(p.base())
            .ok_or_else(|| Error::NotFound(p.base().to_string()))?;
        self.inner.check(&n, &self.inner.owner, Rights::ADMIN)?;
        let new = Arc::new(acl);
        let old = n.acl.write().replace(new.clone());
        self.inner.count_acl(old.as_deref(), Some(&new));
        Ok(())
    }

    /// Remove the vertex's own `:acl` (the next one up governs again).
    pub fn clear_acl(&self, path: &str) -> Result<(), Error> {
        let n = self.local_node(path)?;
        self.inner.check(&n, &self.inner.owner, Rights::ADMIN)?;
        let old = n.acl.write().take();
        self.inner.count_acl(old.as_deref(), None);
        Ok(())
    }

    /// The vertex's own `:acl`, if it has one.
    pub fn acl(&self, path: &str) -> Option<Acl> {
        let n = self.local_node(path).ok()?;
        let a = n.acl.read().clone();
        a.map(|a| (*a).clone())
    }
}

impl std::fmt::Debug for Graph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Graph({})", self.inner.name)
    }
}
