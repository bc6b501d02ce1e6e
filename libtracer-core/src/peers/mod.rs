//! The graph's peers: one `LinkState` per link (what was sent and is awaited over it, the
//! edges made over it either way) and the table of them, `Peers`, with the requests this graph
//! makes of a peer (forwarded writes, remote reads and subscribes, the `sync_peers` barrier).
//!
//! Below the graph: it knows vertices and edges, not the graph that holds it. Making and
//! removing links and answering a peer's frames are the graph's, in `net`.
//!
//! The graph talks to a link through the one link seam, `link::Link` (send a frame, who is the
//! peer, close). A link's errors become the graph's in one place (`link_error`).
//!
//! Edge ids: the consumer picks the id (graph-unique here, so unique per link); the producer keys
//! the edge by (link, id) and sends DELIVERY / STRUCTURE frames with it; the consumer maps the id
//! back to its target.
mod credit;

pub(crate) use credit::RemoteCredit;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex, RwLock};

use crate::acl::{Credentials, Subject};
use crate::error::Error;
use crate::link::{Link, LinkError, PeerIdentity};
use crate::path::{MetaSegment, Path};
use crate::payload::{Meta, Payload};
use crate::sample::Sample;
use crate::vertex::edge::{DeliveryPolicy, Edge, EdgeKind, EdgeShared, EdgeState, Window};
use crate::vertex::{Incoming, Node};
use crate::wire::frame::{EdgeId, Frame, ReqId};

/// A link's error as the graph reports it: the one map between the two.
pub(crate) fn link_error(e: LinkError) -> Error {
    match e {
        LinkError::Encode(e) => Error::TooLarge(e.to_string()),
        LinkError::Io(e) => Error::Io(Arc::new(e)),
        LinkError::InvalidName(n) => Error::InvalidPath {
            path: n,
            reason: "not a valid node name",
        },
        e @ (LinkError::Closed(_) | LinkError::Handshake { .. }) => Error::LinkDown(e.to_string()),
        e @ (LinkError::InsecureDir { .. } | LinkError::NameTaken(_)) => {
            Error::Io(Arc::new(std::io::Error::other(e.to_string())))
        }
    }
}

/// A link as `Graph::attach_link` registered it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LinkId(pub(crate) usize);

/// A reply slot for a request that waits (confirmed write, remote read).
#[derive(Default)]
pub(crate) struct Reply {
    slot: Mutex<Option<Result<Option<Sample>, Error>>>,
    cv: Condvar,
}

impl Reply {
    pub(crate) fn fill(&self, r: Result<Option<Sample>, Error>) {
        *self.slot.lock() = Some(r);
        self.cv.notify_all();
    }
    fn wait(&self, timeout: Duration) -> Result<Option<Sample>, Error> {
        self.wait_until(Instant::now().checked_add(timeout))
    }
    /// `None`: no deadline (the answer, or the link going down, ends the wait).
    fn wait_until(&self, deadline: Option<Instant>) -> Result<Option<Sample>, Error> {
        let mut g = self.slot.lock();
        while g.is_none() {
            match deadline {
                Some(d) => {
                    if self.cv.wait_until(&mut g, d).timed_out() {
                        break;
                    }
                }
                None => self.cv.wait(&mut g),
            }
        }
        g.take().unwrap_or(Err(Error::Timeout))
    }
}

pub(crate) enum Pending {
    Subscribe(EdgeId),
    Wait(Arc<Reply>),
}

/// A subscription this graph made over the link.
pub(crate) struct Consumer {
    pub(crate) target: Arc<Node>,
    pub(crate) handle: Arc<EdgeShared>,
    /// A paced edge's credit, given back by the samples that landed from it.
    pub(crate) credit: Option<Arc<RemoteCredit>>,
}

pub(crate) struct LinkState {
    pub(crate) key: usize,
    pub(crate) peer: PeerIdentity,
    /// `peer.name`, as every sample that arrives over the link carries it (`Sample::origin`).
    pub(crate) origin: Arc<str>,
    creds: Credentials,
    link: Arc<dyn Link>,
    mount: Mutex<Option<Arc<Node>>>,
    pub(crate) consumer: Mutex<HashMap<EdgeId, Consumer>>,
    /// Edges the peer made on our vertices: id -> source vertex.
    pub(crate) produced: Mutex<HashMap<EdgeId, Weak<Node>>>,
    pub(crate) pending: Mutex<HashMap<ReqId, Pending>>,
    down: AtomicBool,
    /// Frames other than READ whose send has returned (a READ asks, it carries nothing the
    /// peer must have): what `sync_peers` compares with `synced`.
    sent: AtomicU64,
    /// The `sent` count that a `sync_peers` barrier has proved handled by the peer.
    synced: AtomicU64,
    /// DELIVERY frames with a suffix on an exact edge of ours: a producer that does not know
    /// exact edges sent its subtree (wire.md, SUBSCRIBE); refused before any ring.
    pub(crate) nested_refused: AtomicU64,
}

impl LinkState {
    pub(crate) fn send(&self, f: &Frame) -> Result<(), Error> {
        self.send_as(f, false)
    }

    fn send_as(&self, f: &Frame, owed: bool) -> Result<(), Error> {
        if self.down.load(Ordering::Acquire) {
            return Err(Error::LinkDown(self.peer.name.clone()));
        }
        if owed {
            self.link.send_owed(f).map_err(link_error)?;
        } else {
            self.link.send(f).map_err(link_error)?;
        }
        if !matches!(f, Frame::Read { .. }) {
            self.sent.fetch_add(1, Ordering::AcqRel);
        }
        Ok(())
    }

    /// Set first when the link goes (`detach`): from then on neither its mount nor its edges
    /// are shown to readers of the graph, whatever is still being removed.
    pub(crate) fn is_down(&self) -> bool {
        self.down.load(Ordering::Acquire)
    }

    /// Who the peer is for the ACL: the kernel's uid and gid on this host, what the link
    /// authenticated across hosts. Made once per link.
    pub(crate) fn creds(&self) -> &Credentials {
        &self.creds
    }

    pub(crate) fn id(&self) -> LinkId {
        LinkId(self.key)
    }

    pub(crate) fn close(&self) {
        self.link.close();
    }

    pub(crate) fn set_mount(&self, m: Arc<Node>) {
        *self.mount.lock() = Some(m);
    }

    pub(crate) fn take_mount(&self) -> Option<Arc<Node>> {
        self.mount.lock().take()
    }

    /// After `Peers::remove`: every edge the peer made here goes, every edge we made over the
    /// link fails with `LinkDown`, every request waiting on it is answered `LinkDown`.
    pub(crate) fn release(&self) {
        let produced: Vec<_> = self.produced.lock().drain().collect();
        for (edge, src) in produced {
            if let Some(src) = src.upgrade() {
                src.edges
                    .remove_where(|e| e.link == Some(self.key) && e.id == edge);
                src.struct_edges
                    .remove_where(|e| e.link == Some(self.key) && e.id == edge);
            }
        }
        let consumers: Vec<_> = self.consumer.lock().drain().collect();
        for (edge, c) in consumers {
            unhook_remote_target(&c.target, self.key, edge);
            c.handle
                .set_state(EdgeState::Failed(Error::LinkDown(self.peer.name.clone())));
        }
        let pending: Vec<_> = self.pending.lock().drain().collect();
        for (_, p) in pending {
            if let Pending::Wait(r) = p {
                r.fill(Err(Error::LinkDown(self.peer.name.clone())));
            }
        }
    }

    /// Forget a consumer-side edge (its target went); `tell` sends UNSUBSCRIBE.
    pub(crate) fn drop_consumer(&self, edge: EdgeId, tell: bool) {
        let c = self.consumer.lock().remove(&edge);
        if let Some(c) = c {
            c.handle.set_state(EdgeState::Closed);
            if tell {
                let _ = self.send(&Frame::Unsubscribe { edge });
            }
        }
    }

    /// The source of a produced edge went away locally.
    pub(crate) fn forget_produced(&self, edge: EdgeId) {
        self.produced.lock().remove(&edge);
    }

    pub(crate) fn reply(&self, req: ReqId, r: Result<(), Error>) {
        if req == 0 {
            return;
        }
        let f = match r {
            Ok(()) => Frame::Ok { req },
            Err(e) => Frame::Error {
                req,
                code: e.code(),
                message: e.to_string(),
            },
        };
        let _ = self.send(&f);
    }
}

#[derive(Default)]
pub(crate) struct Peers {
    by_name: RwLock<HashMap<String, Arc<LinkState>>>,
    by_key: RwLock<HashMap<usize, Arc<LinkState>>>,
    next_key: AtomicU64,
    next_req: AtomicU64,
    /// Error replies to fire-and-forget requests (forwarded writes), for diagnostics.
    remote_errors: AtomicU64,
    last_remote_error: Mutex<Option<Error>>,
    /// The transports feeding this graph (dropped = stopped).
    transports: Mutex<Vec<Box<dyn Send + Sync>>>,
}

impl Peers {
    fn link(&self, peer: &str) -> Result<Arc<LinkState>, Error> {
        self.by_name
            .read()
            .get(peer)
            .cloned()
            .ok_or_else(|| Error::NotFound(format!("/net/{peer} (no such peer)")))
    }

    fn req(&self) -> ReqId {
        self.next_req.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// The peers whose mount `/net/<peer>` exists. `attach` registers a link before it mounts
    /// (so a subscribe prompted by the mount's `Created` event finds the link); a peer listed
    /// here can be subscribed through at once.
    /// What the link of `peer` authenticated, for a graph on another host
    /// (`PeerIdentity::remote`);
    /// `None` for a peer of this host or one not linked.
    pub(crate) fn peer_subject(&self, peer: &str) -> Option<Subject> {
        self.by_name.read().get(peer)?.peer.remote.clone()
    }

    pub(crate) fn peer_identity(&self, peer: &str) -> Option<crate::link::PeerIdentity> {
        Some(self.by_name.read().get(peer)?.peer.clone())
    }

    pub(crate) fn peers(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .by_name
            .read()
            .iter()
            .filter(|(_, st)| !st.is_down() && st.mount.lock().is_some())
            .map(|(name, _)| name.clone())
            .collect();
        v.sort();
        v
    }

    /// The link to `peer`, if one is up.
    pub(crate) fn named(&self, peer: &str) -> Option<Arc<LinkState>> {
        self.by_name.read().get(peer).cloned()
    }

    /// The link `id`, while it is in the table.
    pub(crate) fn get(&self, id: LinkId) -> Option<Arc<LinkState>> {
        self.by_key.read().get(&id.0).cloned()
    }

    /// Register a new link under a new id (the caller has closed any old link of its name).
    pub(crate) fn add(&self, link: Arc<dyn Link>) -> Arc<LinkState> {
        let key = self.next_key.fetch_add(1, Ordering::Relaxed) as usize + 1;
        let peer = link.peer().clone();
        let st = Arc::new(LinkState {
            key,
            origin: Arc::from(peer.name.as_str()),
            creds: peer.credentials(),
            peer,
            link,
            mount: Mutex::new(None),
            consumer: Mutex::new(HashMap::new()),
            produced: Mutex::new(HashMap::new()),
            pending: Mutex::new(HashMap::new()),
            down: AtomicBool::new(false),
            sent: AtomicU64::new(0),
            synced: AtomicU64::new(0),
            nested_refused: AtomicU64::new(0),
        });
        self.by_key.write().insert(key, st.clone());
        self.by_name
            .write()
            .insert(st.peer.name.clone(), st.clone());
        st
    }

    /// Take the link `id` out of the table, marked down first (`LinkState::is_down`).
    pub(crate) fn remove(&self, id: LinkId) -> Option<Arc<LinkState>> {
        let st = self.by_key.write().remove(&id.0)?;
        st.down.store(true, Ordering::Release);
        let mut names = self.by_name.write();
        if names.get(&st.peer.name).is_some_and(|l| l.key == st.key) {
            names.remove(&st.peer.name);
        }
        Some(st)
    }

    /// An error reply to a request nobody waits for.
    pub(crate) fn note_remote_error(&self, err: Error) {
        self.remote_errors.fetch_add(1, Ordering::Relaxed);
        *self.last_remote_error.lock() = Some(err);
    }

    pub(crate) fn add_transport(&self, t: Box<dyn Send + Sync>) {
        self.transports.lock().push(t);
    }

    pub(crate) fn link_ids(&self) -> Vec<LinkId> {
        self.by_key.read().keys().map(|k| LinkId(*k)).collect()
    }

    /// Nested deliveries refused on exact edges, over the links up now.
    pub(crate) fn nested_refused(&self) -> u64 {
        self.by_key
            .read()
            .values()
            .map(|st| st.nested_refused.load(Ordering::Relaxed))
            .sum()
    }

    pub(crate) fn remote_errors(&self) -> (u64, Option<Error>) {
        (
            self.remote_errors.load(Ordering::Relaxed),
            self.last_remote_error.lock().clone(),
        )
    }

    /// Stop discovery and close every link (their `detach` follows from the transport).
    pub(crate) fn shutdown(&self) {
        // Taken out first: the transport's shutdown runs every link's on_down, which must not
        // find this lock held.
        let transports = std::mem::take(&mut *self.transports.lock());
        drop(transports);
        let links: Vec<_> = self.by_key.read().values().cloned().collect();
        for l in links {
            l.link.close();
        }
    }

    /// WRITE `rest` on `peer`. Without `wait` it returns once the frame is sent.
    pub(crate) fn forward_write(
        &self,
        peer: &str,
        rest: String,
        payload: Payload,
        meta: Meta,
        wait: Option<Duration>,
    ) -> Result<(), Error> {
        let l = self.link(peer)?;
        let req = self.req();
        let reply = wait.map(|_| {
            let r = Arc::new(Reply::default());
            l.pending.lock().insert(req, Pending::Wait(r.clone()));
            r
        });
        l.send(&Frame::Write {
            req,
            path: rest,
            meta,
            payload,
        })?;
        match (reply, wait) {
            (Some(r), Some(t)) => {
                let out = r.wait(t).map(|_| ());
                l.pending.lock().remove(&req);
                out
            }
            _ => Ok(()),
        }
    }

    pub(crate) fn read_remote(
        &self,
        peer: &str,
        rest: String,
        timeout: Duration,
    ) -> Result<Option<Sample>, Error> {
        let l = self.link(peer)?;
        let req = self.req();
        let r = Arc::new(Reply::default());
        l.pending.lock().insert(req, Pending::Wait(r.clone()));
        if let Err(e) = l.send(&Frame::Read { req, path: rest }) {
            l.pending.lock().remove(&req);
            return Err(e);
        }
        let out = r.wait(timeout);
        l.pending.lock().remove(&req);
        out
    }

    /// The barrier of `Graph::sync_peers`: one READ of `/` to each peer, then wait for every
    /// answer. A peer handles a link's frames in order on one reader and answers a READ before
    /// it handles the next frame (wire.md, section 5), so an answer, whatever it says, proves
    /// that every frame we sent that peer before it has been handled: every DELIVERY landed.
    /// A peer that is not mounted, or whose link goes meanwhile, holds nothing of ours and
    /// counts as done. A link that has sent nothing since its last barrier was answered needs
    /// no new one (a repeated or zero-timeout wait is answered at once). `deadline` `None`
    /// waits for as long as it takes.
    pub(crate) fn sync_peers(
        &self,
        peers: &[String],
        deadline: Option<Instant>,
    ) -> Result<(), Error> {
        let mut waits = Vec::with_capacity(peers.len());
        for peer in peers {
            let Ok(l) = self.link(peer) else {
                continue;
            };
            // Loaded before the READ is sent: every frame counted here has been written
            // before it, so the READ's answer covers them (a frame still being written is
            // counted later and asks for another barrier next time).
            let mark = l.sent.load(Ordering::Acquire);
            if l.synced.load(Ordering::Acquire) >= mark {
                continue;
            }
            let req = self.req();
            let r = Arc::new(Reply::default());
            l.pending.lock().insert(req, Pending::Wait(r.clone()));
            if l.send(&Frame::Read {
                req,
                path: "/".into(),
            })
            .is_err()
            {
                // The link is broken: it goes down, and what we sent over it with it.
                l.pending.lock().remove(&req);
                continue;
            }
            waits.push((l, req, r, mark));
        }
        let mut out = Ok(());
        for (l, req, r, mark) in waits {
            if out.is_ok() {
                match r.wait_until(deadline) {
                    Err(Error::Timeout) => out = Err(Error::Timeout),
                    _ => {
                        l.synced.fetch_max(mark, Ordering::AcqRel);
                    }
                }
            }
            l.pending.lock().remove(&req);
        }
        out
    }

    pub(crate) fn subscribe_remote(
        &self,
        id: EdgeId,
        source: &Path,
        target: Arc<Node>,
        policy: DeliveryPolicy,
        tag: Option<bytes::Bytes>,
        window: Option<Window>,
    ) -> Result<Edge, Error> {
        let Some((peer, rest)) = source.net_split() else {
            return Err(Error::NotFound(source.to_string()));
        };
        let full_source = source.to_string();
        let structural = rest.ends_with(MetaSegment::Children.as_str());
        let window = window.filter(|_| policy.is_paced() && !structural);
        let l = self.link(peer)?;
        let handle = EdgeShared::new(
            id,
            full_source,
            target.path.to_string(),
            policy,
            EdgeKind::Remote {
                peer: peer.to_string(),
                link: l.key,
                structural,
            },
            EdgeState::Pending,
        );
        let inlet: Arc<dyn crate::vertex::edge::Inlet> = l.clone();
        target.incoming.lock().push(Incoming::Remote {
            link: Arc::downgrade(&inlet),
            edge: id,
        });
        l.consumer.lock().insert(
            id,
            Consumer {
                target: target.clone(),
                handle: handle.clone(),
                credit: window.map(|w| Arc::new(RemoteCredit::new(Arc::downgrade(&l), id, w))),
            },
        );
        let req = self.req();
        l.pending.lock().insert(req, Pending::Subscribe(id));
        if let Err(e) = l.send(&Frame::Subscribe {
            req,
            source: rest,
            edge: id,
            policy: policy.bits(),
            tag,
            window,
        }) {
            l.pending.lock().remove(&req);
            l.consumer.lock().remove(&id);
            unhook_remote_target(&target, l.key, id);
            return Err(e);
        }
        Ok(Edge(handle))
    }

    pub(crate) fn unsubscribe_remote(&self, key: usize, edge: EdgeId) {
        let l = self.by_key.read().get(&key).cloned();
        if let Some(l) = l {
            let c = l.consumer.lock().remove(&edge);
            if let Some(c) = c {
                unhook_remote_target(&c.target, key, edge);
                let _ = l.send(&Frame::Unsubscribe { edge });
            }
        }
    }
}

pub(crate) fn unhook_remote_target(target: &Node, key: usize, edge: EdgeId) {
    target.incoming.lock().retain(|i| {
        !matches!(i, Incoming::Remote { link, edge: e }
            if *e == edge && link.upgrade().is_none_or(|l| l.key() == key))
    });
}

impl crate::vertex::edge::Outlet for LinkState {
    fn send(&self, frame: &Frame, owed: bool) -> Result<(), Error> {
        self.send_as(frame, owed)
    }
    fn peer_name(&self) -> &str {
        &self.peer.name
    }
    fn is_down(&self) -> bool {
        LinkState::is_down(self)
    }
    fn forget_produced(&self, edge: EdgeId) {
        LinkState::forget_produced(self, edge)
    }
}

impl crate::vertex::edge::Inlet for LinkState {
    fn key(&self) -> usize {
        self.key
    }
    fn drop_consumer(&self, edge: EdgeId, tell: bool) {
        LinkState::drop_consumer(self, edge, tell)
    }
}
