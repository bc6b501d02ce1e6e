//! The graph's shared state, `GraphInner`, and the machinery on it: access checks, tree changes
//! (with their structural events), removal with edge clean-up, edge attachment (transient-local
//! replay, feed snapshots) and mounts.
//!
//! Below both the public `Graph` and `net`: it knows its peers (`peers::Peers`) through the link
//! seam only, never the transports nor how a peer's frames are answered.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};

use crate::acl::{permits, Acl, Credentials, Rights};
use crate::error::Error;
use crate::path::{relative, Path};
use crate::peers::Peers;
use crate::structure::What;
use crate::tree::Tree;
use crate::vertex::edge::{EdgeRec, EdgeState, Replayed, Target};
use crate::vertex::{Incoming, Kind, Node, StreamOptions};
use crate::wire::frame::{Frame, Role, StructEvent};

pub(crate) struct GraphInner {
    pub(crate) name: String,
    pub(crate) domain_id: u32,
    pub(crate) owner: Credentials,
    pub(crate) tree: Tree,
    /// How many vertices carry an `:acl`. While 0 a request needs no ancestor walk.
    acls: AtomicUsize,
    /// How many of those ACLs have a deny entry that matches the owner. While 0 the owner's
    /// requests skip the ancestor walk (the owner holds every right no ACL denies it).
    owner_denials: AtomicUsize,
    pub(crate) next_edge: AtomicU64,
    pub(crate) peers: Peers,
}

fn denied(node: &Node, who: &Credentials, right: Rights) -> Error {
    Error::PermissionDenied {
        path: node.path.to_string(),
        right: right.name(),
        by: format!(" for {who}"),
    }
}

impl GraphInner {
    /// A graph of `tree` with no ACL yet and no peer.
    pub(crate) fn new(name: String, domain_id: u32, tree: Tree) -> GraphInner {
        GraphInner {
            name,
            domain_id,
            owner: Credentials::current(),
            tree,
            acls: AtomicUsize::new(0),
            owner_denials: AtomicUsize::new(0),
            next_edge: AtomicU64::new(1),
            peers: Peers::default(),
        }
    }

    /// The nearest `:acl` at or above `node` governs (see `acl`).
    pub(crate) fn allowed(&self, node: &Node, who: &Credentials, right: Rights) -> bool {
        let owner = self.owner_uid();
        if self.acls.load(Ordering::Acquire) == 0 {
            return who.uid() == Some(owner);
        }
        let mut cur = Some(node);
        while let Some(n) = cur {
            if let Some(acl) = n.acl.read().clone() {
                return permits(Some(&acl), owner, who, right);
            }
            cur = n.parent.as_deref();
        }
        permits(None, owner, who, right)
    }

    pub(crate) fn check(&self, node: &Node, who: &Credentials, right: Rights) -> Result<(), Error> {
        if self.allowed(node, who, right) {
            Ok(())
        } else {
            Err(denied(node, who, right))
        }
    }

    /// A request forwarded through the mount `/net/<peer>` reaches the peer with this graph's
    /// credentials, so the local ACL of the mount decides first who may use it (no confused
    /// deputy). The owner may, unless an ACL denies it.
    pub(crate) fn check_mount(
        &self,
        peer: &str,
        who: &Credentials,
        right: Rights,
    ) -> Result<(), Error> {
        match self.tree.get(&format!("/net/{peer}")) {
            Some(m) => self.check(&m, who, right),
            None => Err(Error::NotFound(format!("/net/{peer} (no such peer)"))),
        }
    }

    /// Keep the ACL counters right when a vertex's ACL goes from `old` to `new`.
    pub(crate) fn count_acl(&self, old: Option<&Acl>, new: Option<&Acl>) {
        let denies = |a: Option<&Acl>| a.is_some_and(|a| a.may_deny(&self.owner));
        match (old.is_some(), new.is_some()) {
            (false, true) => {
                self.acls.fetch_add(1, Ordering::AcqRel);
            }
            (true, false) => {
                self.acls.fetch_sub(1, Ordering::AcqRel);
            }
            _ => {}
        }
        match (denies(old), denies(new)) {
            (false, true) => {
                self.owner_denials.fetch_add(1, Ordering::AcqRel);
            }
            (true, false) => {
                self.owner_denials.fetch_sub(1, Ordering::AcqRel);
            }
            _ => {}
        }
    }

    /// The graph owner's uid.
    pub(crate) fn owner_uid(&self) -> u32 {
        self.owner.uid().unwrap_or(u32::MAX)
    }

    /// The owner's own request: free unless some ACL could deny the owner (the owner holds
    /// every right no ACL denies it, so ACLs that only grant others, as rmw_tracer's do, cost
    /// the owner's writes nothing).
    #[inline]
    pub(crate) fn check_owner(&self, node: &Node, right: Rights) -> Result<(), Error> {
        if self.owner_denials.load(Ordering::Acquire) == 0 {
            return Ok(());
        }
        self.check(node, &self.owner, right)
    }

    /// Find or create (mkdir -p, CREATE on the nearest existing ancestor) the vertex at `p`,
    /// giving it `kind` if it is new or still inner.
    pub(crate) fn ensure(
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
                n.emit(What::Created);
            }
            return Ok(n);
        }
        let anc = self.tree.nearest(p);
        self.check(&anc, who, Rights::CREATE)?;
        let (leaf, created) = self.tree.create(p);
        leaf.set_kind(kind, opts)?;
        for n in &created {
            n.emit(What::Created);
        }
        Ok(leaf)
    }

    /// The vertex a data write to `p` lands in: an existing one (WRITE), else a new value made
    /// mkdir -p (CREATE on the nearest existing ancestor). Re-checked under the structure lock,
    /// so a write racing with `create_stream` of the same path lands in the stream.
    pub(crate) fn ensure_write(&self, p: &Path, who: &Credentials) -> Result<Arc<Node>, Error> {
        let existing = |n: Arc<Node>| -> Result<Arc<Node>, Error> {
            n.writable()?;
            self.check(&n, who, Rights::WRITE)?;
            Ok(n)
        };
        if let Some(n) = self.tree.get(p.base()) {
            return existing(n);
        }
        let _g = self.tree.lock();
        if let Some(n) = self.tree.get(p.base()) {
            return existing(n);
        }
        self.ensure(p, who, Kind::Value, StreamOptions::default())
    }

    /// Remove `node`'s subtree: its edges (both directions) and structural entries go.
    pub(crate) fn remove_node(&self, node: &Arc<Node>) {
        let _g = self.tree.lock();
        if node.is_removed() {
            return;
        }
        let nodes = self.tree.detach(node);
        for n in &nodes {
            n.emit(What::Removed);
            // A watcher of the removed vertex itself hears `Removed { path: "" }` last.
            n.emit_self(What::Removed);
        }
        for n in &nodes {
            self.unhook(n);
            let old = n.acl.write().take();
            self.count_acl(old.as_deref(), None);
            n.ready.wake();
        }
    }

    /// Drop every edge that starts or ends at `n`.
    fn unhook(&self, n: &Arc<Node>) {
        let mut out = n.edges.take_all();
        // A remote consumer of a data edge hears that the source is gone through the structural
        // convention `Removed { path: "" }` on its edge id, and closes the edge.
        for rec in &out {
            if let Target::Remote { link, edge } = &rec.target {
                let _ = link.send(
                    &Frame::Structure {
                        edge: *edge,
                        event: StructEvent::Removed {
                            path: String::new(),
                        },
                    },
                    false,
                );
            }
        }
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
    /// of `source` and, for a subtree edge, of its descendants (tree order, each oldest first),
    /// then goes live. Writes
    /// that race with the replay are buffered by the edge and delivered after it, minus those
    /// the snapshot already held, so nothing is lost or doubled; a write stored before the
    /// snapshot that reaches the edge only after the replay is dropped there too
    /// (`EdgeRec::deliver`).
    pub(crate) fn attach_data_edge(&self, source: &Arc<Node>, rec: Arc<EdgeRec>) {
        source.edges.insert(rec.clone());
        if !rec.policy.is_transient_local() {
            return;
        }
        let nodes = if rec.policy.is_exact() {
            vec![source.clone()]
        } else {
            let _g = self.tree.lock();
            self.tree.subtree(source, true)
        };
        let mut captured = Vec::with_capacity(nodes.len());
        let mut filter = None;
        for n in &nodes {
            let (seq, hist) = n.history();
            captured.push((n, seq));
            let suffix = if Arc::ptr_eq(n, source) {
                None
            } else {
                Some(relative(&n.path, &source.path).to_string())
            };
            for mut s in hist {
                if !source.edge_takes(&rec, &s.meta, &mut filter) {
                    continue;
                }
                s.suffix = suffix.clone();
                rec.send_replayed(s);
            }
        }
        rec.finish_replay(Replayed::new(captured));
    }

    /// Insert a `:children[]` edge: first a `Created` for every existing descendant (tree order),
    /// then live events. Holding the structure lock makes the snapshot and the live feed one
    /// sequence.
    pub(crate) fn attach_struct_edge(&self, source: &Arc<Node>, rec: Arc<EdgeRec>) {
        let _g = self.tree.lock();
        let nodes = self.tree.subtree(source, false);
        source.struct_edges.insert(rec.clone());
        for n in &nodes {
            rec.deliver_event(&n.struct_event(relative(&n.path, &source.path), What::Created));
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
            n.emit(What::Created);
        }
        Ok(leaf)
    }
}

/// Close one outgoing record of `source`: unhook it from its target and tell its holder.
pub(crate) fn close_rec(source: &Arc<Node>, rec: &Arc<EdgeRec>) {
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
        self.peers.shutdown();
    }
}
