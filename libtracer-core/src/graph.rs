//! The graph: the public entry point that ties the tree, edges, ACLs and links together.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use crate::acl::{permits, Acl, Credentials, Rights};
use crate::edge::{
    DeliveryPolicy, Edge, EdgeKind, EdgeRec, EdgeShared, EdgeState, SubscriberInfo, Target,
};
use crate::error::Error;
use crate::net::{LinkId, Net, PeerLink};
use crate::path::{relative, valid_segment, MetaSegment, Path};
use crate::payload::{Meta, Payload};
use crate::structure::{self, What};
use crate::tree::Tree;
use crate::vertex::{
    dispatch, now_ns, Incoming, Kind, Node, Sample, SinkFn, StreamOptions, Vertex,
};
use crate::wire::frame::{Role, SchemaInfo};

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
    /// Node identity, a valid segment; None = "<hostname>-<pid>-<n>".
    pub name: Option<String>,
    pub domain_id: u32,
    pub discovery: Discovery,
    /// Default: a per-user, per-domain directory (mode 0700).
    pub rendezvous_dir: Option<std::path::PathBuf>,
}

/// One per process-level participant. Cheap `Clone`.
#[derive(Clone)]
pub struct Graph {
    pub(crate) inner: Arc<GraphInner>,
}

pub(crate) struct GraphInner {
    pub(crate) name: String,
    pub(crate) domain_id: u32,
    pub(crate) owner: Credentials,
    pub(crate) tree: Tree,
    /// How many vertices carry an `:acl`. While 0 the owner's requests skip the ancestor walk.
    acls: AtomicUsize,
    pub(crate) next_edge: AtomicU64,
    pub(crate) net: Net,
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
        "{host}-{}-{}",
        std::process::id(),
        GRAPH_SEQ.fetch_add(1, Ordering::Relaxed)
    )
}

fn denied(node: &Node, right: Rights) -> Error {
    Error::PermissionDenied {
        path: node.path.to_string(),
        right: right.name(),
    }
}

impl GraphInner {
    /// The nearest `:acl` at or above `node` governs (see `acl`).
    pub(crate) fn allowed(&self, node: &Node, who: &Credentials, right: Rights) -> bool {
        if self.acls.load(Ordering::Acquire) == 0 {
            return who.uid == self.owner.uid;
        }
        let mut cur = Some(node);
        while let Some(n) = cur {
            if let Some(acl) = n.acl.read().clone() {
                return permits(Some(&acl), self.owner.uid, who, right);
            }
            cur = n.parent.as_deref();
        }
        permits(None, self.owner.uid, who, right)
    }

    pub(crate) fn check(&self, node: &Node, who: &Credentials, right: Rights) -> Result<(), Error> {
        if self.allowed(node, who, right) {
            Ok(())
        } else {
            Err(denied(node, right))
        }
    }

    /// The owner's own request: free unless some ACL exists.
    #[inline]
    pub(crate) fn check_owner(&self, node: &Node, right: Rights) -> Result<(), Error> {
        if self.acls.load(Ordering::Acquire) == 0 {
            return Ok(());
        }
        self.check(node, &self.owner, right)
    }

    /// Find or create (mkdir -p, CREATE on the nearest existing ancestor) the vertex at `p`,
    /// giving it `kind` if it is new or still inner.
    fn ensure(
        &self,
        p: &Path,
        who: &Credentials,
        kind: Kind,
        opts: StreamOptions,
    ) -> Result<Arc<Node>, Error> {
        if p.is_root() {
            return Err(Error::WrongRole {
                path: "/".into(),
                role: Role::Inner,
                wanted: "the root is a directory and takes no role",
            });
        }
        let _g = self.tree.lock();
        if let Some(n) = self.tree.get(p.base()) {
            if n.kind.get().is_none() {
                self.check(&n, who, Rights::CREATE)?;
            }
            if n.set_kind(kind, opts)? {
                // An inner vertex got a role: announce it again with the role.
                structure::emit(&n, What::Created);
            }
            return Ok(n);
        }
        let anc = self.tree.nearest(p);
        self.check(&anc, who, Rights::CREATE)?;
        let (leaf, created) = self.tree.create(p);
        leaf.set_kind(kind, opts)?;
        for n in &created {
            structure::emit(n, What::Created);
        }
        Ok(leaf)
    }

    /// Remove `node`'s subtree: its edges (both directions) and structural entries go.
    pub(crate) fn remove_node(&self, node: &Arc<Node>) {
        let _g = self.tree.lock();
        if node.is_removed() {
            return;
        }
        let nodes = self.tree.detach(node);
        for n in &nodes {
            structure::emit(n, What::Removed);
            // A watcher of the removed vertex itself hears `Removed { path: "" }` last.
            structure::emit_self(n, What::Removed);
        }
        for n in &nodes {
            self.unhook(n);
            if n.acl.write().take().is_some() {
                self.acls.fetch_sub(1, Ordering::AcqRel);
            }
            n.ready.wake();
        }
    }

    /// Drop every edge that starts or ends at `n`.
    fn unhook(&self, n: &Arc<Node>) {
        let mut out = n.edges.take_all();
        out.extend(n.struct_edges.take_all());
        for rec in out {
            close_rec(n, &rec);
        }
        let incoming = std::mem::take(&mut *n.incoming.lock());
        for inc in incoming {
            match inc {
                Incoming::Local { source, id } => {
                    if let Some(src) = source.upgrade() {
                        let mut gone = src.edges.remove_where(|e| e.link.is_none() && e.id == id);
                        gone.extend(
                            src.struct_edges
                                .remove_where(|e| e.link.is_none() && e.id == id),
                        );
                        for rec in gone {
                            if let Some(h) = rec.handle.as_ref().and_then(Weak::upgrade) {
                                h.set_state(EdgeState::Closed);
                            }
                        }
                    }
                }
                Incoming::Remote { link, edge } => {
                    if let Some(l) = link.upgrade() {
                        l.drop_consumer(edge, true);
                    }
                }
            }
        }
    }

    pub(crate) fn new_edge_id(&self) -> u64 {
        self.next_edge.fetch_add(1, Ordering::Relaxed)
    }

    /// Insert a data edge on `source`; a transient-local one first replays the retained history
    /// of `source` and its descendants (tree order, each oldest first), then goes live. Writes
    /// that race with the replay are buffered by the edge and delivered after it, minus those
    /// the snapshot already held, so nothing is lost or doubled.
    pub(crate) fn attach_data_edge(&self, source: &Arc<Node>, rec: Arc<EdgeRec>) {
        source.edges.insert(rec.clone());
        if !rec.policy.is_transient_local() {
            return;
        }
        let nodes = {
            let _g = self.tree.lock();
            self.tree.subtree(source, true)
        };
        let mut captured: HashMap<usize, u64> = HashMap::with_capacity(nodes.len());
        for n in &nodes {
            let (seq, hist) = n.history();
            captured.insert(Arc::as_ptr(n) as usize, seq);
            let suffix = if Arc::ptr_eq(n, source) {
                None
            } else {
                Some(relative(&n.path, &source.path).to_string())
            };
            for mut s in hist {
                s.suffix = suffix.clone();
                rec.send(s);
            }
        }
        rec.finish_replay(|p| captured.get(&p).copied().unwrap_or(0));
    }

    /// Insert a `:children[]` edge: first a `Created` for every existing descendant (tree order),
    /// then live events. Holding the structure lock makes the snapshot and the live feed one
    /// sequence.
    pub(crate) fn attach_struct_edge(&self, source: &Arc<Node>, rec: Arc<EdgeRec>) {
        let _g = self.tree.lock();
        let nodes = self.tree.subtree(source, false);
        source.struct_edges.insert(rec.clone());
        for n in &nodes {
            rec.deliver_event(&structure::make_event(
                n,
                relative(&n.path, &source.path),
                What::Created,
            ));
        }
    }

    /// Mount `/net/<peer>` (no CREATE check: mounts are the graph's own doing).
    pub(crate) fn mount(&self, peer: &str) -> Result<Arc<Node>, Error> {
        let p = Path::parse(&format!("/net/{peer}"))?;
        let _g = self.tree.lock();
        if let Some(old) = self.tree.get(p.base()) {
            self.remove_node(&old);
        }
        let (leaf, created) = self.tree.create(&p);
        leaf.set_kind(Kind::Mount, StreamOptions::default())?;
        for n in &created {
            structure::emit(n, What::Created);
        }
        Ok(leaf)
    }
}

/// Close one outgoing record of `source`: unhook it from its target and tell its holder.
fn close_rec(source: &Arc<Node>, rec: &Arc<EdgeRec>) {
    match &rec.target {
        Target::Local(t) => {
            let sp = Arc::as_ptr(source);
            t.incoming.lock().retain(|i| {
                !matches!(i, Incoming::Local { source: s, id } if *id == rec.id && s.as_ptr() == sp)
            });
        }
        Target::Remote { link, edge } => link.forget_produced(*edge),
    }
    if let Some(h) = rec.handle.as_ref().and_then(Weak::upgrade) {
        h.set_state(EdgeState::Closed);
    }
}

impl Drop for GraphInner {
    fn drop(&mut self) {
        self.net.shutdown();
    }
}

/// A path the local tree owns: no meta segment, not at or below `/net`.
fn parse_local(path: &str) -> Result<Path, Error> {
    let p = Path::parse(path)?;
    if p.meta().is_some() {
        return Err(Error::InvalidPath {
            path: path.into(),
            reason: "a vertex path, not a meta child",
        });
    }
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
        let name = match cfg.name {
            Some(n) if valid_segment(&n) => n,
            Some(n) => {
                return Err(Error::InvalidPath {
                    path: n,
                    reason: "graph name must be a valid segment",
                })
            }
            None => default_name(),
        };
        let tree = Tree::new();
        let (net_node, _) = tree.create(&Path::parse("/net")?);
        drop(net_node);
        let g = Graph {
            inner: Arc::new(GraphInner {
                name,
                domain_id: cfg.domain_id,
                owner: Credentials::current(),
                tree,
                acls: AtomicUsize::new(0),
                next_edge: AtomicU64::new(1),
                net: Net::default(),
            }),
        };
        if cfg.discovery == Discovery::Host {
            crate::net::start_host(&g, cfg.rendezvous_dir)?;
        }
        Ok(g)
    }

    pub fn name(&self) -> &str {
        &self.inner.name
    }

    pub fn domain_id(&self) -> u32 {
        self.inner.domain_id
    }

    /// The uid/gid this graph runs as; local calls act as this principal.
    pub fn owner(&self) -> Credentials {
        self.inner.owner
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
            return self
                .inner
                .net
                .forward_write(peer, rest, payload, meta, None);
        }
        let p = parse_local(path)?;
        let node = match self.inner.tree.get(p.base()) {
            Some(n) => {
                n.writable()?;
                self.inner.check(&n, who, Rights::WRITE)?;
                n
            }
            None => self
                .inner
                .ensure(&p, who, Kind::Value, StreamOptions::default())?,
        };
        dispatch(
            &node,
            Sample {
                payload,
                meta,
                received_timestamp_ns: now_ns(),
                suffix: None,
                origin: None,
            },
        );
        Ok(())
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
                    .net
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
            return self.inner.net.read_remote(peer, rest, timeout);
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
        structure::emit(&n, What::SchemaSet);
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

    /// Put an `:acl` on the vertex; it governs the vertex and every descendant that has no
    /// nearer `:acl` of its own.
    pub fn set_acl(&self, path: &str, acl: Acl) -> Result<(), Error> {
        let n = match Path::parse(path)?.base() {
            "/" => self.inner.tree.root.clone(),
            _ => self.local_node(path)?,
        };
        self.inner.check(&n, &self.inner.owner, Rights::ADMIN)?;
        if n.acl.write().replace(Arc::new(acl)).is_none() {
            self.inner.acls.fetch_add(1, Ordering::AcqRel);
        }
        Ok(())
    }

    /// Remove the vertex's own `:acl` (the next one up governs again).
    pub fn clear_acl(&self, path: &str) -> Result<(), Error> {
        let n = self.local_node(path)?;
        self.inner.check(&n, &self.inner.owner, Rights::ADMIN)?;
        if n.acl.write().take().is_some() {
            self.inner.acls.fetch_sub(1, Ordering::AcqRel);
        }
        Ok(())
    }

    /// The vertex's own `:acl`, if it has one.
    pub fn acl(&self, path: &str) -> Option<Acl> {
        let n = self.local_node(path).ok()?;
        let a = n.acl.read().clone();
        a.map(|a| (*a).clone())
    }

    /// Subscribe `target` (a local vertex) to `source` (local or `/net/<peer>/...`, optionally
    /// ending in `/:children[]`). Gated by SUBSCRIBE on the source and WRITE on the target
    /// (fan-in). A remote subscribe returns at once with a pending edge.
    pub fn subscribe(
        &self,
        source: &str,
        target: &str,
        policy: DeliveryPolicy,
    ) -> Result<Edge, Error> {
        self.subscribe_as(&self.inner.owner, source, target, policy)
    }

    /// `subscribe` on behalf of another principal.
    pub fn subscribe_as(
        &self,
        who: &Credentials,
        source: &str,
        target: &str,
        policy: DeliveryPolicy,
    ) -> Result<Edge, Error> {
        let tnode = self.local_node(target)?;
        if tnode.role() == Role::Mount {
            return Err(Error::WrongRole {
                path: target.into(),
                role: Role::Mount,
                wanted: "a delivery target must be a local vertex",
            });
        }
        self.inner.check(&tnode, who, Rights::WRITE)?;
        let sp = Path::parse(source)?;
        let structural = match sp.meta() {
            None => false,
            Some(MetaSegment::Children) => true,
            Some(m) => {
                return Err(Error::SchemaNotFound(format!(
                    "{source}: only a vertex or its {} can be subscribed, not {}",
                    MetaSegment::Children.as_str(),
                    m.as_str()
                )))
            }
        };
        if let Some((peer, rest)) = sp.net_split() {
            let full = sp.to_string();
            return self
                .inner
                .net
                .subscribe_remote(&self.inner, peer, rest, full, tnode, policy);
        }
        let snode = self
            .inner
            .tree
            .get(sp.base())
            .ok_or_else(|| Error::NotFound(sp.base().to_string()))?;
        self.inner.check(&snode, who, Rights::SUBSCRIBE)?;
        let id = self.inner.new_edge_id();
        let handle = EdgeShared::new(
            id,
            sp.to_string(),
            tnode.path.to_string(),
            policy,
            EdgeKind::Local {
                source: Arc::downgrade(&snode),
                structural,
            },
            EdgeState::Established,
        );
        tnode.incoming.lock().push(Incoming::Local {
            source: Arc::downgrade(&snode),
            id,
        });
        let rec = EdgeRec::new(
            id,
            None,
            policy,
            Target::Local(tnode),
            Some(Arc::downgrade(&handle)),
            policy.is_transient_local() && !structural,
        );
        if structural {
            self.inner.attach_struct_edge(&snode, rec);
        } else {
            self.inner.attach_data_edge(&snode, rec);
        }
        Ok(Edge(handle))
    }

    /// Remove the edge (a remote one: tell the peer). Unsubscribing twice is a no-op.
    pub fn unsubscribe(&self, edge: &Edge) -> Result<(), Error> {
        let e = &edge.0;
        match &e.kind {
            EdgeKind::Local { source, .. } => {
                if let Some(src) = source.upgrade() {
                    let mut gone = src.edges.remove_where(|r| r.link.is_none() && r.id == e.id);
                    gone.extend(
                        src.struct_edges
                            .remove_where(|r| r.link.is_none() && r.id == e.id),
                    );
                    for rec in gone {
                        close_rec(&src, &rec);
                    }
                }
            }
            EdgeKind::Remote { link, .. } => self.inner.net.unsubscribe_remote(*link, e.id),
        }
        e.set_state(EdgeState::Closed);
        Ok(())
    }

    /// Edges in the vertex's `:subscribers[]` (0 for a path that does not exist here).
    pub fn subscriber_count(&self, path: &str) -> usize {
        self.local_node(path).map_or(0, |n| n.edges.len())
    }

    /// The entries of the vertex's `:subscribers[]` and `:children[]` lists. With a trailing
    /// `/:subscribers[]` or `/:children[]`, only that list.
    pub fn subscribers(&self, path: &str) -> Result<Vec<SubscriberInfo>, Error> {
        let p = Path::parse(path)?;
        let n = match p.base() {
            "/" => self.inner.tree.root.clone(),
            b => self.local_node(b)?,
        };
        let mut out = Vec::new();
        if matches!(p.meta(), None | Some(MetaSegment::Subscribers)) {
            if let Some(l) = n.edges.snapshot() {
                out.extend(l.iter().map(|r| r.info(false)));
            }
        }
        if matches!(p.meta(), None | Some(MetaSegment::Children)) {
            if let Some(l) = n.struct_edges.snapshot() {
                out.extend(l.iter().map(|r| r.info(true)));
            }
        }
        Ok(out)
    }

    /// How many error replies came back for forwarded writes nobody waited for, and the last.
    pub fn remote_write_errors(&self) -> (u64, Option<Error>) {
        self.inner.net.remote_errors()
    }

    /// Peers mounted at `/net/<name>`.
    pub fn peers(&self) -> Vec<String> {
        self.inner.net.peers()
    }

    /// Attach a link to a peer: mounts `/net/<peer>`. The transport then feeds the link's
    /// frames to `link_frame` and calls `link_down` when it drops.
    pub fn attach_link(&self, link: Arc<dyn PeerLink>) -> Result<LinkId, Error> {
        crate::net::attach(&self.inner, link)
    }

    /// One frame that arrived on `link`.
    pub fn link_frame(&self, link: LinkId, frame: crate::wire::frame::Frame) {
        crate::net::on_frame(&self.inner, link, frame);
    }

    /// The link dropped: its mount, its edges and its structural entries go.
    pub fn link_down(&self, link: LinkId) {
        crate::net::detach(&self.inner, link);
    }

    /// This graph as a transport's `LinkHandler` (e.g. `MemoryFabric::join(name, handler)`).
    pub fn link_handler(&self) -> Arc<crate::net::GraphHandler> {
        crate::net::GraphHandler::new(&self.inner)
    }

    /// Close every link and stop discovery. The graph stays usable in-process.
    pub fn shutdown(&self) {
        self.inner.net.shutdown();
        for id in self.inner.net.link_ids() {
            crate::net::detach(&self.inner, id);
        }
    }
}

impl std::fmt::Debug for Graph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Graph({})", self.inner.name)
    }
}
