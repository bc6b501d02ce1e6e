//! The edge-facing half of `Graph`: subscribe / unsubscribe, `:subscribers[]`, links.

use std::sync::Arc;

use super::Graph;
use crate::acl::{Credentials, Rights};
use crate::error::Error;
use crate::link::Link;
use crate::path::{MetaSegment, Path};
use crate::peers::LinkId;
use crate::state::close_rec;
use crate::vertex::edge::{
    DeliveryPolicy, Edge, EdgeKind, EdgeRec, EdgeShared, EdgeState, SubscriberInfo, Target, Window,
};
use crate::vertex::Incoming;
use crate::wire::frame::Role;

/// A subscriber's tag as an edge carries it: at most `wire::MAX_TAG` bytes.
fn edge_tag(tag: &[u8]) -> Result<Option<bytes::Bytes>, Error> {
    if tag.len() > crate::wire::MAX_TAG {
        return Err(Error::Malformed(format!(
            "an edge tag of {} bytes (at most {})",
            tag.len(),
            crate::wire::MAX_TAG
        )));
    }
    Ok(Some(bytes::Bytes::copy_from_slice(tag)))
}

impl Graph {
    /// Subscribe `target` (a local vertex) to `source` (local or `/net/<peer>/...`, optionally
    /// ending in `/:children[]`). Gated by SUBSCRIBE on the source and WRITE on the target
    /// (fan-in). A remote subscribe returns at once with a pending edge.
    pub fn subscribe(
        &self,
        source: &str,
        target: &str,
        policy: DeliveryPolicy,
    ) -> Result<Edge, Error> {
        self.subscribe_with(&self.inner.owner, source, target, policy, None, None)
    }

    /// `subscribe` with a tag saying who subscribes (at most `wire::MAX_TAG` bytes, opaque):
    /// the edge carries it, here and in SUBSCRIBE over a link, and the source's edge filter
    /// (`set_edge_filter`) judges each write for the edge by it, so a write the subscriber would
    /// refuse is never handed to the edge, nor sent over its link.
    pub fn subscribe_tagged(
        &self,
        source: &str,
        target: &str,
        policy: DeliveryPolicy,
        tag: &[u8],
    ) -> Result<Edge, Error> {
        self.subscribe_with(
            &self.inner.owner,
            source,
            target,
            policy,
            edge_tag(tag)?,
            None,
        )
    }

    /// `subscribe_tagged` with flow control (docs/wire.md section 2, "Flow control"): with a
    /// paced reliable `policy`, the producer sends no more than `window` beyond what `target`
    /// has let go (each sample holds its credit until its last copy is dropped: taken, refused
    /// on arrival, or evicted), and a writer waits for room, up to its deadline. A producer
    /// that does not pace (a peer that predates it) delivers as on an unpaced edge.
    pub fn subscribe_paced(
        &self,
        source: &str,
        target: &str,
        policy: DeliveryPolicy,
        tag: &[u8],
        window: Window,
    ) -> Result<Edge, Error> {
        let tag = edge_tag(tag)?;
        if window.messages == 0 || window.bytes == 0 {
            return Err(Error::Malformed(
                "a paced edge needs a window of at least one message and one byte".into(),
            ));
        }
        let policy = policy.with_paced(true);
        self.subscribe_with(&self.inner.owner, source, target, policy, tag, Some(window))
    }

    /// `subscribe` on behalf of another principal.
    pub fn subscribe_as(
        &self,
        who: &Credentials,
        source: &str,
        target: &str,
        policy: DeliveryPolicy,
    ) -> Result<Edge, Error> {
        self.subscribe_with(who, source, target, policy, None, None)
    }

    fn subscribe_with(
        &self,
        who: &Credentials,
        source: &str,
        target: &str,
        policy: DeliveryPolicy,
        tag: Option<bytes::Bytes>,
        window: Option<Window>,
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
        if let Some((peer, _)) = sp.net_split() {
            self.inner.check_mount(peer, who, Rights::SUBSCRIBE)?;
            let id = self.inner.new_edge_id();
            return self
                .inner
                .peers
                .subscribe_remote(id, &sp, tnode, policy, tag, window);
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
            tag,
            Target::Local(tnode),
            Some(Arc::downgrade(&handle)),
            policy.is_transient_local() && !structural,
            window.filter(|_| !structural),
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
            EdgeKind::Remote { link, .. } => self.inner.peers.unsubscribe_remote(*link, e.id),
        }
        e.set_state(EdgeState::Closed);
        Ok(())
    }

    /// Edges in the vertex's `:subscribers[]` (0 for a path that does not exist here).
    pub fn subscriber_count(&self, path: &str) -> usize {
        self.local_node(path).map_or(0, |n| n.edges.live_len())
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
            out.extend(n.edges.live().iter().map(|r| r.info(false)));
        }
        if matches!(p.meta(), None | Some(MetaSegment::Children)) {
            out.extend(n.struct_edges.live().iter().map(|r| r.info(true)));
        }
        Ok(out)
    }

    /// How many error replies came back for forwarded writes nobody waited for, and the last.
    pub fn remote_write_errors(&self) -> (u64, Option<Error>) {
        self.inner.peers.remote_errors()
    }

    /// Deliveries below an exact edge's source that a peer sent anyway and this graph refused
    /// (a peer that predates exact edges: wire.md, SUBSCRIBE), over the links up now.
    pub fn nested_refused(&self) -> u64 {
        self.inner.peers.nested_refused()
    }

    /// Peers mounted at `/net/<name>`.
    pub fn peers(&self) -> Vec<String> {
        self.inner.peers.peers()
    }

    /// Who `peer` is, when it is a graph on another host: what its link authenticated (the
    /// certificate subject, or anonymous). `None` for a peer of this host (its uid is the
    /// kernel's word) or a name with no link.
    pub fn peer_subject(&self, peer: &str) -> Option<crate::acl::Subject> {
        self.inner.peers.peer_subject(peer)
    }

    /// Who is at the other end of `peer`'s link: for a graph of this host its uid, gid and pid
    /// as the kernel reported them (`SO_PEERCRED`); `None` for a name with no link.
    pub fn peer_identity(&self, peer: &str) -> Option<crate::link::PeerIdentity> {
        self.inner.peers.peer_identity(peer)
    }

    /// Wait until each of `peers` has handled every frame this graph sent it before the call
    /// (so every delivery of an earlier write has landed in the peer's targets), or until
    /// `deadline` (`None`: no deadline) with `Error::Timeout`. One READ round trip per peer,
    /// all in flight at once; no frame of its own (wire.md, section 5, "Order"). A peer that is
    /// not mounted or whose link goes meanwhile counts as done: it holds nothing of ours.
    pub fn sync_peers(
        &self,
        peers: &[String],
        deadline: Option<std::time::Instant>,
    ) -> Result<(), Error> {
        self.inner.peers.sync_peers(peers, deadline)
    }

    /// Attach a link to a peer: mounts `/net/<peer>`. The transport then feeds the link's
    /// frames to `link_frame` and calls `link_down` when it drops.
    pub fn attach_link(&self, link: Arc<dyn Link>) -> Result<LinkId, Error> {
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
        self.inner.peers.shutdown();
        for id in self.inner.peers.link_ids() {
            crate::net::detach(&self.inner, id);
        }
    }
}
