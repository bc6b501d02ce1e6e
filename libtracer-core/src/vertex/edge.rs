//! SUBSCRIBER edges: the public `Edge` handle, and the records that live in a source vertex's
//! `:subscribers[]` (data) or `:children[]` (structure) lists. Their delivery policy is the
//! wire's (`wire::policy`).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::{Duration, Instant};

use bytes::Bytes;
use parking_lot::{Condvar, Mutex, RwLock};

use super::pacing::Pacing;
use super::Node;
use crate::error::Error;
use crate::ready::ChangeNotifier;
use crate::sample::{Credit, Sample};
use crate::structure;
use crate::wire::frame::{EdgeId, Frame, StructEvent};
pub use crate::wire::policy::{DeliveryPolicy, Window};

/// Where an edge stands.
#[derive(Clone, Debug)]
pub enum EdgeState {
    /// A remote subscribe was sent; the peer has not answered yet.
    Pending,
    Established,
    /// Refused (e.g. `PermissionDenied`, `NotFound`) or broken (`LinkDown`).
    Failed(Error),
    /// Removed by `unsubscribe`, or its source or target was removed.
    Closed,
}

/// What `unsubscribe` needs to find the record again.
pub(crate) enum EdgeKind {
    Local {
        source: Weak<Node>,
        structural: bool,
    },
    Remote {
        peer: String,
        link: usize,
        structural: bool,
    },
}

pub(crate) struct EdgeShared {
    pub(crate) id: EdgeId,
    pub(crate) source: String,
    pub(crate) target: String,
    pub(crate) policy: DeliveryPolicy,
    pub(crate) kind: EdgeKind,
    state: Mutex<EdgeState>,
    cv: Condvar,
}

impl EdgeShared {
    pub(crate) fn new(
        id: EdgeId,
        source: String,
        target: String,
        policy: DeliveryPolicy,
        kind: EdgeKind,
        state: EdgeState,
    ) -> Arc<EdgeShared> {
        Arc::new(EdgeShared {
            id,
            source,
            target,
            policy,
            kind,
            state: Mutex::new(state),
            cv: Condvar::new(),
        })
    }

    pub(crate) fn is_structural(&self) -> bool {
        match &self.kind {
            EdgeKind::Local { structural, .. } | EdgeKind::Remote { structural, .. } => *structural,
        }
    }

    pub(crate) fn set_state(&self, s: EdgeState) {
        let mut g = self.state.lock();
        // A closed or failed edge stays so: a late reply must not revive it.
        if matches!(*g, EdgeState::Pending | EdgeState::Established) {
            *g = s;
        }
        self.cv.notify_all();
    }
}

/// A subscription as its creator holds it. Cheap `Clone`; dropping it does not unsubscribe.
#[derive(Clone)]
pub struct Edge(pub(crate) Arc<EdgeShared>);

impl Edge {
    /// The edge id: graph-unique for local edges; for remote ones, the id this graph chose for
    /// the link (the producer keys it by link and id).
    pub fn id(&self) -> EdgeId {
        self.0.id
    }
    pub fn source(&self) -> &str {
        &self.0.source
    }
    pub fn target(&self) -> &str {
        &self.0.target
    }
    pub fn policy(&self) -> DeliveryPolicy {
        self.0.policy
    }
    pub fn state(&self) -> EdgeState {
        self.0.state.lock().clone()
    }
    /// True for a `:children[]` (structural feed) edge.
    pub fn is_structural(&self) -> bool {
        self.0.is_structural()
    }
    /// The peer a remote edge goes through.
    pub fn peer(&self) -> Option<&str> {
        match &self.0.kind {
            EdgeKind::Local { .. } => None,
            EdgeKind::Remote { peer, .. } => Some(peer),
        }
    }
    pub fn is_established(&self) -> bool {
        matches!(*self.0.state.lock(), EdgeState::Established)
    }
    /// Wait until the edge is no longer pending. `Ok` once established; the failure otherwise;
    /// `Err(Timeout)` if still pending after `timeout`.
    pub fn wait_established(&self, timeout: Duration) -> Result<(), Error> {
        let deadline = Instant::now() + timeout;
        let mut g = self.0.state.lock();
        loop {
            match &*g {
                EdgeState::Established => return Ok(()),
                EdgeState::Failed(e) => return Err(e.clone()),
                EdgeState::Closed => return Err(Error::Closed(self.0.source.clone())),
                EdgeState::Pending => {
                    if self.0.cv.wait_until(&mut g, deadline).timed_out()
                        && matches!(*g, EdgeState::Pending)
                    {
                        return Err(Error::Timeout);
                    }
                }
            }
        }
    }
}

impl std::fmt::Debug for Edge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Edge")
            .field("id", &self.0.id)
            .field("source", &self.0.source)
            .field("target", &self.0.target)
            .field("state", &self.state())
            .finish()
    }
}

/// One entry of a vertex's `:subscribers[]`, as `Graph::subscribers` reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubscriberInfo {
    pub edge_id: EdgeId,
    /// A local path, or `/net/<peer>` when the target is behind that transport vertex.
    pub target: String,
    pub policy: DeliveryPolicy,
    /// The peer whose link the edge is bound to (it goes when that link goes).
    pub peer: Option<String>,
    /// True for an entry of `:children[]` (structural feed) rather than `:subscribers[]`.
    pub structural: bool,
    /// Who subscribed, as the subscriber tagged the edge (`Graph::subscribe_tagged`).
    pub tag: Option<Bytes>,
}

/// The producer's end of a link, as an edge that delivers over it sees it. The network layer's
/// link state implements it; this much of the network is all the graph's data types know (they
/// import nothing of `net`).
pub(crate) trait Outlet: Send + Sync {
    /// Send a frame to the consumer; `owed`: a DELIVERY of a transient-local replay
    /// (`Link::send_owed`).
    fn send(&self, frame: &Frame, owed: bool) -> Result<(), Error>;
    /// The peer's node name.
    fn peer_name(&self) -> &str;
    /// True from the moment the link starts going down (`EdgeList::live_len`).
    fn is_down(&self) -> bool;
    /// The source of an edge the peer made here went away.
    fn forget_produced(&self, edge: EdgeId);
}

/// The consumer's end of a link, as a target vertex fed over it sees it (`Incoming::Remote`).
pub(crate) trait Inlet: Send + Sync {
    /// The link's key in the graph (several links to one peer may follow each other).
    fn key(&self) -> usize;
    /// Forget a consumer-side edge (its target went); `tell` sends UNSUBSCRIBE.
    fn drop_consumer(&self, edge: EdgeId, tell: bool);
}

/// Where a delivery goes.
pub(crate) enum Target {
    Local(Arc<Node>),
    /// The consumer is behind a link: send a compact DELIVERY / STRUCTURE frame.
    Remote {
        link: Arc<dyn Outlet>,
        edge: EdgeId,
    },
}

/// Live data that arrived while a transient-local replay was being taken: (writing node, that
/// node's store sequence, sample).
type Buffered = Vec<(usize, u64, Sample)>;

/// What a transient-local replay contained: for each node of the replayed subtree, the store
/// sequence its snapshot was taken at. A write stored at or before that sequence was in the
/// snapshot (or overwritten before it), so the replay stands for it.
///
/// Nodes are known by address, as writes name them (`dispatch`). The `Weak` keeps a removed
/// node's allocation, so no node made later at the same address can be mistaken for it, while
/// its contents are freed as usual.
pub(crate) struct Replayed(Vec<(usize, u64, Weak<Node>)>);

impl Replayed {
    /// `(node, store sequence)` of each snapshot taken.
    pub(crate) fn new(captured: Vec<(&Arc<Node>, u64)>) -> Replayed {
        let mut v: Vec<_> = captured
            .into_iter()
            .map(|(n, seq)| (Arc::as_ptr(n) as usize, seq, Arc::downgrade(n)))
            .collect();
        v.sort_unstable_by_key(|&(n, _, _)| n);
        Replayed(v)
    }

    /// True if the write `seq` stored at `node` is covered by the replay. Sequence 0 is a write
    /// that stored nothing (a sink, a mount): no snapshot holds it.
    fn covers(&self, node: usize, seq: u64) -> bool {
        seq != 0
            && match self.0.binary_search_by_key(&node, |&(n, _, _)| n) {
                Ok(i) => seq <= self.0[i].1,
                Err(_) => false,
            }
    }
}

/// An edge as stored on its source.
pub(crate) struct EdgeRec {
    pub(crate) id: EdgeId,
    /// Key of the link the edge came over (producer side of a remote subscribe).
    pub(crate) link: Option<usize>,
    pub(crate) policy: DeliveryPolicy,
    /// Who subscribed (opaque): what the source's edge filter judges the edge by.
    pub(crate) tag: Option<Bytes>,
    pub(crate) target: Target,
    pub(crate) handle: Option<Weak<EdgeShared>>,
    replaying: AtomicBool,
    buffer: Mutex<Buffered>,
    /// Set once a transient-local replay was taken; consulted by every later delivery, since a
    /// writer may have stored before the snapshot and reach this edge only after the replay.
    replayed: OnceLock<Replayed>,
    /// A paced edge's credit (its policy is paced and its consumer granted a window).
    pub(crate) pacing: Option<Arc<Pacing>>,
}

impl EdgeRec {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        id: EdgeId,
        link: Option<usize>,
        policy: DeliveryPolicy,
        tag: Option<Bytes>,
        target: Target,
        handle: Option<Weak<EdgeShared>>,
        replaying: bool,
        window: Option<Window>,
    ) -> Arc<EdgeRec> {
        let pacing = match window {
            Some(w) if policy.is_paced() => Some(Arc::new(Pacing::new(w))),
            _ => None,
        };
        Arc::new(EdgeRec {
            id,
            link,
            policy,
            tag,
            target,
            handle,
            replaying: AtomicBool::new(replaying),
            buffer: Mutex::new(Vec::new()),
            replayed: OnceLock::new(),
            pacing,
        })
    }

    /// False once the link a remote consumer is behind is going down.
    pub(crate) fn is_live(&self) -> bool {
        match &self.target {
            Target::Local(_) => true,
            Target::Remote { link, .. } => !link.is_down(),
        }
    }

    pub(crate) fn info(&self, structural: bool) -> SubscriberInfo {
        let (target, peer) = match &self.target {
            Target::Local(n) => (n.path.to_string(), None),
            Target::Remote { link, .. } => (
                format!("/net/{}", link.peer_name()),
                Some(link.peer_name().to_owned()),
            ),
        };
        SubscriberInfo {
            edge_id: self.id,
            target,
            policy: self.policy,
            peer,
            structural,
            tag: self.tag.clone(),
        }
    }

    /// Deliver one live write made at `from` (its store sequence `seq`), unless a
    /// transient-local replay of this edge already delivered it.
    ///
    /// `Err(TooLarge)` when the sample cannot cross this edge's link (above the peer's frame
    /// bound): the writer hears of it, never a silent drop. Nothing else fails a delivery.
    #[inline]
    pub(crate) fn deliver(&self, sample: Sample, from: usize, seq: u64) -> Result<(), Error> {
        if self.replaying.load(Ordering::Acquire) {
            let mut b = self.buffer.lock();
            if self.replaying.load(Ordering::Acquire) {
                b.push((from, seq, sample));
                return Ok(());
            }
        }
        // A writer that stored before the snapshot but was slow to reach this edge arrives
        // here after the replay, which already held its write.
        if self.replayed.get().is_some_and(|r| r.covers(from, seq)) {
            return Ok(());
        }
        self.hand(sample, false)
    }

    /// Hand a sample to the target: an ordinary write that lands in the target's store and is
    /// never dispatched further. A sample that cannot cross the link is left out (its writer
    /// went on long ago; `deliver` reports it to a live writer).
    pub(crate) fn send(&self, sample: Sample) {
        let _ = self.hand(sample, false);
    }

    /// `send` a sample of this edge's transient-local replay: owed in full, so a link that
    /// drops deliveries under pressure keeps it (`Link::send_owed`).
    pub(crate) fn send_replayed(&self, sample: Sample) {
        let _ = self.hand(sample, true);
    }

    fn hand(&self, mut sample: Sample, replayed: bool) -> Result<(), Error> {
        // A live sample takes its credit (a replay is owed: it takes none). In this process
        // the sample itself carries the credit back when its target lets it go.
        if let (Some(p), false) = (&self.pacing, replayed) {
            let len = sample.payload.len() as u64;
            p.take(len);
            if matches!(self.target, Target::Local(_)) {
                sample.credit = Credit::held(p.clone(), len);
            }
        }
        match &self.target {
            Target::Local(n) => n.land(sample),
            Target::Remote { link, edge } => {
                let len = sample.payload.len();
                let f = Frame::Delivery {
                    edge: *edge,
                    meta: sample.meta,
                    suffix: sample.suffix,
                    payload: sample.payload,
                };
                // The link stays up; the message cannot be carried to this peer. Any other
                // failure means the link is going down, and on_down removes the edge.
                if let Err(Error::TooLarge(why)) = link.send(&f, replayed) {
                    return Err(Error::TooLarge(format!(
                        "a message of {len} bytes cannot be sent to {}: {why}",
                        link.peer_name()
                    )));
                }
            }
        }
        Ok(())
    }

    /// End a transient-local replay: deliver what was buffered meanwhile, minus the writes the
    /// replay already contained, and remember what it contained for writes still on their way.
    /// The buffer lock is not held while sending, so a sink target that writes back into the
    /// source cannot deadlock; what it writes meanwhile is buffered and sent in the next round.
    pub(crate) fn finish_replay(&self, replayed: Replayed) {
        let replayed = self.replayed.get_or_init(|| replayed);
        loop {
            let batch = {
                let mut b = self.buffer.lock();
                if b.is_empty() {
                    self.replaying.store(false, Ordering::Release);
                    return;
                }
                std::mem::take(&mut *b)
            };
            for (from, seq, s) in batch {
                if !replayed.covers(from, seq) {
                    self.send(s);
                }
            }
        }
    }

    /// Deliver a structural event (`:children[]` edges).
    pub(crate) fn deliver_event(&self, ev: &StructEvent) {
        match &self.target {
            Target::Local(n) => n.land(structure::event_sample(ev)),
            Target::Remote { link, edge } => {
                let _ = link.send(
                    &Frame::Structure {
                        edge: *edge,
                        event: ev.clone(),
                    },
                    false,
                );
            }
        }
    }
}

/// A copy-on-write list of edges: writers clone the `Arc` (one atomic increment) under a read
/// lock and iterate without holding any lock, so a delivery that reaches a link or a sink never blocks a
/// subscribe, and a subscribe never blocks a writer for longer than a pointer swap.
#[derive(Default)]
pub(crate) struct EdgeList {
    count: AtomicUsize,
    /// How many of the edges are paced: while 0 a write waits for nothing here.
    paced: AtomicUsize,
    /// Read-locked by writers (many at once, e.g. every writer below a subscribed root),
    /// write-locked only to swap in a new list.
    list: RwLock<Arc<Vec<Arc<EdgeRec>>>>,
    /// Bumped by every change of the list, so that a reader can wait for one
    /// (`Vertex::await_edges`) instead of polling.
    pub(crate) changed: ChangeNotifier,
}

impl EdgeList {
    #[inline]
    pub(crate) fn snapshot(&self) -> Option<Arc<Vec<Arc<EdgeRec>>>> {
        if self.count.load(Ordering::Acquire) == 0 {
            return None;
        }
        Some(self.list.read().clone())
    }

    /// True when some edge of the list is paced (a write must look for room first).
    #[inline]
    pub(crate) fn has_paced(&self) -> bool {
        self.paced.load(Ordering::Acquire) > 0
    }

    /// The edges a reader of the graph sees: not those bound to a link that is going down.
    /// Detaching a link marks it down in one step and removes its edges afterwards, so a
    /// reader never sees the peer gone while its edges are still counted, nor the reverse
    /// (`Net::peers` reads the same mark).
    pub(crate) fn live_len(&self) -> usize {
        self.snapshot()
            .map_or(0, |l| l.iter().filter(|e| e.is_live()).count())
    }

    /// The records of `live_len`.
    pub(crate) fn live(&self) -> Vec<Arc<EdgeRec>> {
        self.snapshot().map_or_else(Vec::new, |l| {
            l.iter().filter(|e| e.is_live()).cloned().collect()
        })
    }

    pub(crate) fn insert(&self, e: Arc<EdgeRec>) {
        let mut g = self.list.write();
        let mut v: Vec<_> = (**g).clone();
        if e.pacing.is_some() {
            self.paced.fetch_add(1, Ordering::AcqRel);
        }
        v.push(e);
        self.count.store(v.len(), Ordering::Release);
        *g = Arc::new(v);
        drop(g);
        self.changed.bump();
    }

    /// Remove the entries `pred` selects; returns them.
    pub(crate) fn remove_where(&self, pred: impl Fn(&EdgeRec) -> bool) -> Vec<Arc<EdgeRec>> {
        let mut g = self.list.write();
        if !g.iter().any(|e| pred(e)) {
            return Vec::new();
        }
        let (gone, keep): (Vec<_>, Vec<_>) = g.iter().cloned().partition(|e| pred(e));
        self.count.store(keep.len(), Ordering::Release);
        self.paced.store(
            keep.iter().filter(|e| e.pacing.is_some()).count(),
            Ordering::Release,
        );
        *g = Arc::new(keep);
        drop(g);
        self.changed.bump();
        // A writer waiting for room on a removed edge waits no more.
        for e in &gone {
            if let Some(p) = &e.pacing {
                p.close();
            }
        }
        gone
    }

    pub(crate) fn take_all(&self) -> Vec<Arc<EdgeRec>> {
        self.remove_where(|_| true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_packing_round_trips_and_drops_reserved_bits() {
        for r in [false, true] {
            for p in 0..8 {
                for t in [false, true] {
                    let d = DeliveryPolicy::new(r, p, t);
                    let back = DeliveryPolicy::from_bits(d.bits());
                    assert_eq!(back, d);
                    assert_eq!(
                        (
                            back.is_reliable(),
                            back.priority(),
                            back.is_transient_local()
                        ),
                        (r, p, t)
                    );
                    assert!(d.bits() < 32);
                    assert!(!d.is_exact());
                    let x = d.with_exact(true);
                    assert_eq!(DeliveryPolicy::from_bits(x.bits()), x);
                    assert!(x.is_exact());
                    assert_eq!(
                        (x.is_reliable(), x.priority(), x.is_transient_local()),
                        (r, p, t)
                    );
                    // Every other setter keeps the exact bit.
                    assert!(x.with_priority(7 - p).with_reliable(!r).is_exact());
                    assert!(x.with_transient_local(!t).is_exact());
                    assert_eq!(x.with_exact(false), d);
                }
            }
        }
        assert_eq!(DeliveryPolicy::from_bits(0xff80).bits(), 0);
        // Paced is a reliable edge's: kept from the wire, meaningless on best effort.
        let paced = DeliveryPolicy::from_bits(0x41);
        assert!(paced.is_paced() && paced.is_reliable());
        assert!(!DeliveryPolicy::from_bits(0x40).is_paced());
        assert_eq!(paced.with_paced(false), DeliveryPolicy::RELIABLE);
        assert_eq!(DeliveryPolicy::RELIABLE.with_priority(42).priority(), 7);
    }
}
