//! The endpoint registry: which ROS entities exist, here and on every peer.
//!
//! Every context, node, publisher and subscription writes a value vertex
//! `/.ros/endpoints/<gid hex>` holding its [`Record`]. Each graph watches `/net/:children[]`
//! for peer mounts; for every peer `<p>` it subscribes `/net/<p>/.ros/endpoints` (subtree,
//! transient local, so existing records come first) into a sink `/.ros/peers/<p>`, and so knows
//! every remote entity. When a mount goes, that peer's entities go with it.
//!
//! The registry also wires subscriptions to remote publishers: a local subscription on topic
//! `T` gets an edge from `/net/<p>/T` for each peer `<p>` that has a publisher on `T` with the
//! same type and a compatible QoS (`crate::qos_compat`), made when that publisher appears and
//! removed when it goes.
//!
//! Sinks run on the delivering thread and must not block, so they only queue what arrived; one
//! worker thread per context applies it, (re)wires subscriptions and raises the graph guard
//! conditions.

mod edges;
mod peers;
mod verdicts;

pub use tracer_recording::delivery::subscription_edge;
pub use verdicts::Verdicts;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, TryRecvError};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use libtracer_core::{DeliveryPolicy, Edge, EdgeState, Graph, Meta, Payload, Sample, Signal};
use parking_lot::Mutex;

use crate::boundary::{RmwError, RmwResult};
use crate::gid::Gid;
use crate::qos::Qos;
use crate::qos_compat;
use edges::established;
use tracer_recording::resume::Resume;
/// The record's one codec is the ROS-free `tracer_recording::endpoint` (docs/rmw-mapping.md
/// documents the format), which `tracer record` reads peers' registries with as well.
pub use tracer_recording::{EntityKind, Record};

/// Where entity records live.
pub use tracer_recording::registry::{record_path, ENDPOINTS};
/// The sink vertices that receive peers' records.
const PEERS: &str = "/.ros/peers";
/// The sink vertex that receives the `/net/:children[]` structural feed.
const NET_WATCH: &str = "/.ros/net-watch";
/// How often the worker looks at edges that are not established yet, or failed (while there
/// are none, it sleeps until a message comes: an idle process has no periodic work here).
const TICK: Duration = Duration::from_millis(250);
/// How long a failed edge waits before it is tried again.
const RETRY: Duration = Duration::from_secs(1);

/// What a local subscription tells the registry so that it can be wired to remote publishers.
pub struct SubscriptionLink {
    /// The subscription's gid: the tag of its edges (`verdicts`).
    pub gid: Gid,
    /// ROS topic name.
    pub topic: String,
    /// Vertex path of the topic.
    pub path: String,
    pub type_name: String,
    /// The subscription's target ring.
    pub target: String,
    pub policy: DeliveryPolicy,
    /// The subscription's resolved QoS: publishers whose offer does not meet it are not wired.
    pub qos: Qos,
    /// A reliable subscription with the network on: an edge made again to a peer replays the
    /// publisher's history, and the ring admits only what it had not got (`tracer_recording::resume`).
    pub resume: Option<Arc<Resume>>,
    /// One edge per peer that has a matching publisher; `None` once the subscription is going
    /// away, so that the worker, which may still hold the link, wires nothing more into it.
    pub remote: Mutex<Option<BTreeMap<String, RemoteEdge>>>,
    /// Peers that refused this subscription (their ACL: SROS2 permissions), each logged once.
    pub refused_by: Mutex<std::collections::BTreeSet<String>>,
    /// With SROS2: which peers' publishers may feed it (their publish permission).
    pub writers: Option<crate::security::WriterCheck>,
    /// The registry's verdict on each known writer of the topic (`verdicts`).
    pub verdicts: Verdicts,
}

/// An edge from a peer's topic vertex into a local subscription.
pub struct RemoteEdge {
    pub edge: Edge,
    made: Instant,
}

impl SubscriptionLink {
    /// Drop every remote edge for good (the subscription is going away).
    pub fn disconnect(&self, graph: &Graph) {
        for (_, e) in self.remote.lock().take().unwrap_or_default() {
            let _ = graph.unsubscribe(&e.edge);
        }
    }

    /// Peers whose edge into this subscription is established.
    pub fn established_peers(&self) -> Vec<String> {
        self.remote
            .lock()
            .iter()
            .flatten()
            .filter(|(_, e)| matches!(e.edge.state(), EdgeState::Established))
            .map(|(p, _)| p.clone())
            .collect()
    }
}

struct Peer {
    records: BTreeMap<Gid, Record>,
    edge: Option<Edge>,
    edge_made: Instant,
    sink: String,
}

#[derive(Default)]
struct State {
    local: BTreeMap<Gid, Record>,
    peers: BTreeMap<String, Peer>,
    subs: Vec<Weak<SubscriptionLink>>,
}

enum Msg {
    Structure(Sample),
    Entity {
        peer: String,
        sample: Sample,
    },
    /// A subscription was added (its edges are new): look at them again.
    Kick,
    Stop,
}

struct Inner {
    graph: Graph,
    state: Mutex<State>,
    tx: Sender<Msg>,
    listeners: Mutex<Vec<(u64, Signal)>>,
    next_listener: std::sync::atomic::AtomicU64,
    /// The producer's edge verdicts (`verdicts`); shared with the edge filters' fast path.
    pairs: Arc<verdicts::PairVerdicts>,
}

/// One per context.
pub struct Registry {
    inner: Arc<Inner>,
    worker: Mutex<Option<JoinHandle<()>>>,
}

/// A local entity's announcement; dropping it retracts the record.
pub struct Entry {
    inner: Weak<Inner>,
    kind: EntityKind,
    gid: Gid,
}

impl Drop for Entry {
    fn drop(&mut self) {
        if let Some(inner) = self.inner.upgrade() {
            inner.retract(self.kind, self.gid);
        }
    }
}

/// The resolved QoS a record carries (`None` for a record without a `qos=` line).
pub fn record_qos(r: &Record) -> Option<Qos> {
    r.qos.map(Qos::from_numbers)
}

/// The policy that keeps publisher record `publisher` from matching a subscription with
/// `requested`; `None` when they match (a record without QoS matches, as it always did).
pub fn incompatible_with(
    publisher: &Record,
    requested: &Qos,
) -> Option<ffi::rmw_qos_policy_kind_t> {
    qos_compat::incompatible(&record_qos(publisher)?, requested)
}

/// The policy that keeps a publisher with `offered` from matching subscription record `sub`.
pub fn incompatible_sub(offered: &Qos, sub: &Record) -> Option<ffi::rmw_qos_policy_kind_t> {
    qos_compat::incompatible(offered, &record_qos(sub)?)
}

/// A publisher record that a subscription of `type_name` with `requested` takes from.
fn delivers_to(r: &Record, topic: &str, type_name: &str, requested: &Qos) -> bool {
    r.kind == EntityKind::Publisher
        && r.topic == topic
        && r.type_name == type_name
        && incompatible_with(r, requested).is_none()
}

impl Registry {
    /// Start the registry of `graph`, announcing the context itself with `context`.
    pub fn start(graph: Graph, context: Record) -> RmwResult<(Registry, Entry)> {
        let (tx, rx) = mpsc::channel();
        let inner = Arc::new(Inner {
            graph: graph.clone(),
            state: Mutex::new(State::default()),
            tx: tx.clone(),
            listeners: Mutex::new(Vec::new()),
            next_listener: std::sync::atomic::AtomicU64::new(1),
            pairs: Default::default(),
        });
        let entry = Registry::announce_in(&inner, context)?;
        let watch_tx = tx.clone();
        graph
            .create_sink(
                NET_WATCH,
                Arc::new(move |s: &Sample| {
                    let _ = watch_tx.send(Msg::Structure(s.clone()));
                }),
            )
            .map_err(|e| RmwError::failed(format!("cannot create {NET_WATCH}: {e}")))?;
        graph
            .subscribe("/net/:children[]", NET_WATCH, DeliveryPolicy::RELIABLE)
            .map_err(|e| RmwError::failed(format!("cannot watch /net for peers: {e}")))?;
        let worker_inner = inner.clone();
        let worker = std::thread::Builder::new()
            .name("rmw_tracer-registry".into())
            .spawn(move || worker_inner.run(rx))
            .map_err(|e| RmwError::failed(format!("cannot start the registry thread: {e}")))?;
        Ok((
            Registry {
                inner,
                worker: Mutex::new(Some(worker)),
            },
            entry,
        ))
    }

    fn announce_in(inner: &Arc<Inner>, rec: Record) -> RmwResult<Entry> {
        let text = rec
            .encode()
            .ok_or_else(|| RmwError::invalid("a name contains a newline"))?;
        tracer_recording::registry::announce(&inner.graph, rec.gid, text)
            .map_err(RmwError::failed)?;
        let entry = Entry {
            inner: Arc::downgrade(inner),
            kind: rec.kind,
            gid: rec.gid,
        };
        {
            let mut st = inner.state.lock();
            verdicts::judge_local(&st, &rec);
            st.local.insert(rec.gid, rec);
        }
        inner.notify();
        Ok(entry)
    }

    /// Wait, at most `limit`, until every peer linked now watches this context's records (its
    /// registry has subscribed to our `/.ros/endpoints`). Called once at `rmw_init`: the links to
    /// the peers already there are up when discovery starts, but each peer subscribes from its
    /// own registry thread a little later (1-40 ms under load, measured). An entity created in
    /// that window was matched only when the subscription arrived, which was most of the
    /// discovery tail of issue 9; after the wait, a new publisher's record reaches every peer
    /// as it is written. A peer that never subscribes (not a ROS process) only costs the limit;
    /// one whose link goes down meanwhile is no longer waited for. Nothing polls: the wait
    /// sleeps until the edges on our records change (`Vertex::await_edges`).
    pub fn await_watchers(&self, limit: Duration) {
        let deadline = Instant::now() + limit;
        let Some(endpoints) = self.inner.graph.vertex(ENDPOINTS) else {
            return;
        };
        loop {
            let version = endpoints.edges_version();
            let linked = self.inner.graph.peers();
            let watching: BTreeSet<String> = self
                .inner
                .graph
                .subscribers(ENDPOINTS)
                .map(|v| v.into_iter().filter_map(|s| s.peer).collect())
                .unwrap_or_default();
            if linked.iter().all(|p| watching.contains(p)) || Instant::now() >= deadline {
                return;
            }
            endpoints.await_edges(version, Some(deadline));
        }
    }

    /// Announce a local entity.
    pub fn announce(&self, rec: Record) -> RmwResult<Entry> {
        Registry::announce_in(&self.inner, rec)
    }

    /// Rewrite the record of an announced entity (a liveliness assertion: `asserted=`).
    pub fn reannounce(&self, rec: &Record) -> RmwResult<()> {
        let text = rec
            .encode()
            .ok_or_else(|| RmwError::invalid("a name contains a newline"))?;
        let path = record_path(rec.gid);
        self.inner
            .graph
            .write(&path, Payload::from(text.into_bytes()), Meta::default())
            .map_err(|e| RmwError::failed(format!("cannot write {path}: {e}")))?;
        {
            let mut st = self.inner.state.lock();
            verdicts::judge_local(&st, rec);
            st.local.insert(rec.gid, rec.clone());
        }
        self.inner.notify();
        Ok(())
    }

    /// Wire `sub` to every matching remote publisher, now and whenever one appears.
    pub fn add_subscription(&self, sub: &Arc<SubscriptionLink>) {
        let mut st = self.inner.state.lock();
        st.subs.push(Arc::downgrade(sub));
        let _ = self.inner.reconcile(&st, sub);
        drop(st);
        // The worker may be asleep with nothing unsettled: its new edges are.
        let _ = self.inner.tx.send(Msg::Kick);
    }

    /// Raise `signal` whenever the registry changes (graph guard conditions). Returns an id for
    /// [`Registry::remove_listener`].
    pub fn add_listener(&self, signal: Signal) -> u64 {
        let id = self
            .inner
            .next_listener
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.inner.listeners.lock().push((id, signal));
        id
    }

    pub fn remove_listener(&self, id: u64) {
        self.inner.listeners.lock().retain(|(i, _)| *i != id);
    }

    /// Every known entity: `(None, r)` for local ones, `(Some(peer), r)` for remote ones.
    pub fn snapshot(&self) -> Vec<(Option<String>, Record)> {
        let st = self.inner.state.lock();
        let mut out: Vec<_> = st.local.values().map(|r| (None, r.clone())).collect();
        for (p, peer) in &st.peers {
            out.extend(peer.records.values().map(|r| (Some(p.clone()), r.clone())));
        }
        out
    }

    /// The filter a topic vertex with a local publisher puts on its edges: an edge tagged with
    /// a subscription's gid takes a write only from a writer that subscription matches
    /// (`verdicts`). Holds the registry weakly.
    pub fn edge_filter(&self) -> libtracer_core::EdgeFilterFn {
        let inner = Arc::downgrade(&self.inner);
        let pairs = self.inner.pairs.clone();
        Arc::new(move |tag: &[u8], meta: &Meta| {
            pairs.none_refused()
                || inner
                    .upgrade()
                    .is_none_or(|i| i.takes(Gid(meta.writer), tag))
        })
    }

    /// Whether the subscription whose edge carries `tag` takes what `writer` writes.
    pub fn edge_takes(&self, writer: Gid, tag: &[u8]) -> bool {
        self.inner.takes(writer, tag)
    }

    /// The records of `kind` on `topic`, here (`None`) and on every peer.
    pub fn on_topic(&self, kind: EntityKind, topic: &str) -> Vec<(Option<String>, Record)> {
        let st = self.inner.state.lock();
        let on = |r: &&Record| r.kind == kind && r.topic == topic;
        let mut out: Vec<_> = st
            .local
            .values()
            .filter(on)
            .map(|r| (None, r.clone()))
            .collect();
        for (p, peer) in &st.peers {
            out.extend(
                peer.records
                    .values()
                    .filter(on)
                    .map(|r| (Some(p.clone()), r.clone())),
            );
        }
        out
    }

    /// Publishers on `topic` with `type_name` and a compatible QoS that deliver into `sub`:
    /// the local ones and those of peers whose edge into it is established.
    pub fn matched_publishers(&self, sub: &SubscriptionLink) -> usize {
        let peers = sub.established_peers();
        let st = self.inner.state.lock();
        let is_match = |r: &Record| delivers_to(r, &sub.topic, &sub.type_name, &sub.qos);
        let local = st.local.values().filter(|r| is_match(r)).count();
        let remote: usize = peers
            .iter()
            .filter_map(|p| st.peers.get(p))
            .map(|peer| peer.records.values().filter(|r| is_match(r)).count())
            .sum();
        local + remote
    }

    /// Stop the worker (context teardown).
    pub fn stop(&self) {
        let _ = self.inner.tx.send(Msg::Stop);
        if let Some(w) = self.worker.lock().take() {
            let _ = w.join();
        }
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        self.stop();
    }
}

impl Inner {
    /// The registry changed: the producer's verdicts start afresh, the listeners hear of it.
    /// Called without the state lock.
    fn notify(&self) {
        self.pairs.reset(&self.state.lock());
        for (_, s) in self.listeners.lock().iter() {
            s.raise();
        }
    }

    fn retract(&self, kind: EntityKind, gid: Gid) {
        tracer_recording::registry::retract(&self.graph, kind, gid);
        self.state.lock().local.remove(&gid);
        self.notify();
    }

    fn run(self: Arc<Self>, rx: Receiver<Msg>) {
        let mut unsettled = true;
        'work: loop {
            // A tick only while some edge is pending or failed (it retries and re-wires); else
            // the worker sleeps until a message comes.
            let first = if unsettled {
                rx.recv_timeout(TICK)
            } else {
                rx.recv().map_err(|_| RecvTimeoutError::Disconnected)
            };
            // `changed`: the set of entities changed (graph guard conditions are raised); a tick
            // only retries what failed and re-wires, which is no graph change. Every message
            // already queued is handled before the subscriptions are reconciled, once: a peer
            // joining sends one message per entity of its process, and N peers joining at once
            // would otherwise cost N times the reconciling.
            let mut changed = false;
            let mut next = first;
            loop {
                match next {
                    Ok(Msg::Stop) | Err(RecvTimeoutError::Disconnected) => break 'work,
                    Ok(Msg::Structure(s)) => changed |= self.on_structure(&s),
                    Ok(Msg::Entity { peer, sample }) => changed |= self.on_entity(&peer, &sample),
                    Ok(Msg::Kick) => {}
                    Err(RecvTimeoutError::Timeout) => self.retry_peers(),
                }
                next = match rx.try_recv() {
                    Ok(m) => Ok(m),
                    Err(TryRecvError::Empty) => break,
                    Err(TryRecvError::Disconnected) => Err(RecvTimeoutError::Disconnected),
                };
            }
            let mut st = self.state.lock();
            st.subs.retain(|w| w.strong_count() > 0);
            let subs: Vec<_> = st.subs.iter().filter_map(Weak::upgrade).collect();
            unsettled = st
                .peers
                .values()
                .any(|p| !p.edge.as_ref().is_some_and(established));
            for sub in &subs {
                unsettled |= !self.reconcile(&st, sub);
            }
            drop(st);
            if changed {
                self.notify();
            }
        }
        // Teardown: stop listening to peers.
        let peers = std::mem::take(&mut self.state.lock().peers);
        for (_, p) in peers {
            self.drop_peer(p);
        }
    }
}
