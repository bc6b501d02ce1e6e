//! What a context knows of the ROS graph, and how its subscriptions are wired to publishers.
//!
//! As rmw_tracer's registry does (docs/rmw-mapping.md), a context watches `/net/:children[]`
//! for peer mounts and subscribes each peer's `/net/<p>/.ros/endpoints` (transient local) into
//! a sink, decoding the records with rmw_tracer's own codec (`tracer_recording`). A
//! subscription is wired with one edge per source that has what it wants:
//! - a topic subscription: an exact edge from `/net/<p>/<topic>` for each peer with a
//!   publisher of that topic, of the same type and a QoS that matches (rmw_tracer's rules,
//!   `tracer_recording::qos_match`), and from the local topic when this context publishes it;
//! - a namespace subscription: one subtree edge from `/net/<p>/<namespace>` per peer with any
//!   publisher below it (the seed's subtree subscription: samples carry their path).
//!
//! Sinks only queue what arrived; one worker thread per context applies it, rewires, and
//! retries edges that failed (a peer's vertex not made yet) every 250 ms while there are any.

use std::collections::{BTreeMap, HashMap};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Weak};
use std::time::Duration;

use libtracer_core::{DeliveryPolicy, Edge, EdgeState, Graph, Sample, StructEvent};
use parking_lot::Mutex;
use tracer_recording::delivery::subscription_edge;
use tracer_recording::resume::Resume;
use tracer_recording::security::WriterCheck;
use tracer_recording::{decode, Announcement, EntityKind, Gid, QosNumbers, Record};

use crate::error::{CapiError, CapiResult};

const TICK: Duration = Duration::from_millis(250);

/// What a subscription takes.
#[derive(Clone, Debug)]
pub enum Wants {
    /// One topic (its vertex path), of one type, with the requested QoS.
    Topic {
        topic: String,
        path: String,
        type_name: String,
        qos: QosNumbers,
    },
    /// Every topic below a namespace (its ROS name and vertex path).
    Namespace { namespace: String, path: String },
}

impl Wants {
    /// The source below a peer's mount (or locally, `peer` None) that `rec` calls for.
    fn source(&self, rec: &Record, peer: Option<&str>) -> Option<String> {
        if rec.kind != EntityKind::Publisher {
            return None;
        }
        let own = match self {
            Wants::Topic {
                topic,
                path,
                type_name,
                qos,
            } => {
                let offered = rec.qos?;
                let ok = rec.topic == *topic
                    && rec.type_name == *type_name
                    && tracer_recording::qos_match::incompatible(&offered, qos).is_none();
                ok.then(|| path.clone())?
            }
            Wants::Namespace { namespace, path } => {
                let under = namespace == "/"
                    || rec
                        .topic
                        .strip_prefix(namespace.as_str())
                        .is_some_and(|r| r.starts_with('/'));
                under.then(|| path.clone())?
            }
        };
        Some(match peer {
            Some(p) if own == "/" => format!("/net/{p}"),
            Some(p) => format!("/net/{p}{own}"),
            None => own,
        })
    }
}

/// A subscription as the watcher wires it.
pub struct Link {
    pub wants: Wants,
    /// The subscription's local stream.
    pub target: String,
    pub policy: DeliveryPolicy,
    /// The subscription's gid, the tag of its edges.
    pub tag: Gid,
    /// Source -> edge; None once the subscription is going (nothing is wired again).
    edges: Mutex<Option<HashMap<String, Edge>>>,
    /// SROS2: the peers whose publishers it may take from (the writer's publish permission).
    writers: Option<WriterCheck>,
    /// With the network on, a reliable subscription's memory of what it admitted from each
    /// writer, so that the edges made again after a cut replay only what it had not got.
    pub resume: Option<Arc<Resume>>,
}

impl Link {
    pub fn new(
        wants: Wants,
        target: String,
        policy: DeliveryPolicy,
        tag: Gid,
        writers: Option<WriterCheck>,
        resume: Option<Arc<Resume>>,
    ) -> Link {
        Link {
            wants,
            target,
            policy,
            tag,
            edges: Mutex::new(Some(HashMap::new())),
            writers,
            resume,
        }
    }

    /// With SROS2, whether `peer`'s publishers may feed this subscription: as a DDS DataReader
    /// ignores a remote DataWriter whose permissions do not allow it to publish the topic (and
    /// rmw_tracer's registry), no edge is made to such a peer (logged once).
    fn writer_allowed(&self, graph: &Graph, peer: &str) -> bool {
        self.writers.as_ref().is_none_or(|check| {
            check.allows(peer, graph.peer_subject(peer).as_ref(), |line| {
                crate::env::log()(line)
            })
        })
    }

    /// Remove every edge (the subscription is going).
    pub fn unwire(&self, graph: &Graph) {
        for (_, e) in self.edges.lock().take().unwrap_or_default() {
            let _ = graph.unsubscribe(&e);
        }
    }
}

enum Msg {
    Structure(Sample),
    Record(String, Sample),
    Changed,
    Stop,
}

#[derive(Default)]
struct State {
    /// Peer -> its records by gid.
    peers: BTreeMap<String, BTreeMap<Gid, Record>>,
    /// This context's own records (its publishers feed its own subscriptions too).
    local: BTreeMap<Gid, Record>,
    /// Peer -> the edge on its registry.
    registry_edges: BTreeMap<String, Edge>,
    /// Peer -> the edge on its structural feed, while this process records (its `:schema`s).
    schema_edges: BTreeMap<String, Edge>,
    links: Vec<Weak<Link>>,
}

/// One per context.
pub struct Watch {
    graph: Graph,
    prefix: String,
    state: Arc<Mutex<State>>,
    tx: Mutex<Sender<Msg>>,
    worker: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// (peer, vertex path) -> the `ros2msg` definition in the vertex's `:schema`, learned from
    /// the peers' structural feeds while this process records (`RMW_TRACER_RECORD`): what a
    /// subscription's recorded channel is decoded with.
    definitions: Arc<Mutex<HashMap<(String, String), String>>>,
}

impl Watch {
    /// Start watching; the context's local vertices live under `prefix`.
    pub fn start(graph: &Graph, prefix: &str) -> CapiResult<Arc<Watch>> {
        let (tx, rx) = mpsc::channel();
        let sink_tx = Mutex::new(tx.clone());
        let net_watch = format!("{prefix}/net-watch");
        graph.create_sink(
            &net_watch,
            Arc::new(move |s: &Sample| {
                let _ = sink_tx.lock().send(Msg::Structure(s.clone()));
            }),
        )?;
        graph
            .subscribe("/net/:children[]", &net_watch, DeliveryPolicy::RELIABLE)
            .map_err(|e| CapiError::internal(format!("cannot watch /net for peers: {e}")))?;
        let w = Arc::new(Watch {
            graph: graph.clone(),
            prefix: prefix.to_owned(),
            state: Arc::default(),
            tx: Mutex::new(tx),
            worker: Mutex::new(None),
            definitions: Arc::default(),
        });
        let weak = Arc::downgrade(&w);
        let worker = std::thread::Builder::new()
            .name("libtracer-watch".into())
            .spawn(move || run(weak, rx))
            .map_err(|e| CapiError::internal(format!("cannot start the watch thread: {e}")))?;
        *w.worker.lock() = Some(worker);
        Ok(w)
    }

    fn send(&self, m: Msg) {
        let _ = self.tx.lock().send(m);
    }

    /// A local record (this context's publishers feed its own subscriptions).
    pub fn local(&self, rec: &Record, present: bool) {
        let mut st = self.state.lock();
        if present {
            st.local.insert(rec.gid, rec.clone());
        } else {
            st.local.remove(&rec.gid);
        }
        drop(st);
        self.send(Msg::Changed);
    }

    /// Wire a new subscription now and whenever the graph changes.
    pub fn add(&self, link: &Arc<Link>) {
        let mut st = self.state.lock();
        st.links.retain(|l| l.strong_count() > 0);
        st.links.push(Arc::downgrade(link));
        self.reconcile(&st, link);
    }

    /// The definition in the `:schema` of `peer`'s vertex `path`, if its feed gave one.
    pub fn definition(&self, peer: &str, path: &str) -> Option<String> {
        self.definitions
            .lock()
            .get(&(peer.to_owned(), path.to_owned()))
            .cloned()
    }

    /// Every record known: the peers' and this context's own, with the peer each came from.
    pub fn records(&self) -> Vec<(Option<String>, Record)> {
        let st = self.state.lock();
        let mut v: Vec<(Option<String>, Record)> =
            st.local.values().map(|r| (None, r.clone())).collect();
        for (p, recs) in &st.peers {
            v.extend(recs.values().map(|r| (Some(p.clone()), r.clone())));
        }
        v
    }

    /// Make `link`'s edges those the known records call for; true when none is left pending
    /// or failed.
    fn reconcile(&self, st: &State, link: &Link) -> bool {
        // Source -> the peer it is on (None: this graph).
        let mut wanted: BTreeMap<String, Option<&str>> = BTreeMap::new();
        for r in st.local.values() {
            wanted.extend(link.wants.source(r, None).map(|s| (s, None)));
        }
        for (p, recs) in &st.peers {
            let mut sources = recs.values().filter_map(|r| link.wants.source(r, Some(p)));
            let Some(first) = sources.next() else {
                continue;
            };
            if !link.writer_allowed(&self.graph, p) {
                continue;
            }
            for s in std::iter::once(first).chain(sources) {
                wanted.insert(s, Some(p.as_str()));
            }
        }
        let mut edges = link.edges.lock();
        let Some(edges) = edges.as_mut() else {
            return true; // the subscription is going
        };
        edges.retain(|src, e| {
            let keep = wanted.contains_key(src)
                && !matches!(e.state(), EdgeState::Failed(_) | EdgeState::Closed);
            if !keep {
                let _ = self.graph.unsubscribe(e);
            }
            keep
        });
        let mut settled = true;
        for (src, peer) in wanted {
            if edges.contains_key(&src) {
                settled &= matches!(edges[&src].state(), EdgeState::Established);
                continue;
            }
            settled = false;
            // An edge to a peer made again after a cut replays the publisher's resend window,
            // which the ring's filter cuts to what it had not got (tracer_recording::resume).
            let policy = match (&link.resume, peer) {
                (Some(r), Some(p)) if r.rewire(p) => link.policy.with_transient_local(true),
                _ => link.policy,
            };
            // Paced for RELIABLE + KEEP_ALL with rmw_tracer's windows: the publisher is held
            // back as for an rclpy subscription (tracer_recording::delivery).
            let made =
                subscription_edge(&self.graph, &src, &link.target, policy, &link.tag.0, peer);
            if let Ok(e) = made {
                edges.insert(src, e);
            }
        }
        settled
    }

    fn reconcile_all(&self, st: &mut State) -> bool {
        st.links.retain(|l| l.strong_count() > 0);
        let links: Vec<Arc<Link>> = st.links.iter().filter_map(Weak::upgrade).collect();
        let mut settled = true;
        for l in links {
            settled &= self.reconcile(st, &l);
        }
        settled
            && st
                .registry_edges
                .values()
                .all(|e| matches!(e.state(), EdgeState::Established))
    }

    fn peer_up(&self, st: &mut State, peer: &str) {
        if st.registry_edges.contains_key(peer) {
            return;
        }
        let sink = format!("{}/peers/{peer}", self.prefix);
        let tx = Mutex::new(self.tx.lock().clone());
        let p = peer.to_owned();
        let made = self.graph.create_sink(
            &sink,
            Arc::new(move |s: &Sample| {
                let _ = tx.lock().send(Msg::Record(p.clone(), s.clone()));
            }),
        );
        if made.is_err() {
            return;
        }
        if let Ok(e) = self.graph.subscribe(
            &format!("/net/{peer}/.ros/endpoints"),
            &sink,
            DeliveryPolicy::new(true, 0, true),
        ) {
            st.registry_edges.insert(peer.to_owned(), e);
        }
        st.peers.entry(peer.to_owned()).or_default();
        if tracer_recording::record::recording() {
            self.watch_schemas(st, peer);
        }
    }

    /// Learn the `:schema` of `peer`'s vertices from its structural feed (what `tracer record`
    /// does), for the definitions a recording needs.
    fn watch_schemas(&self, st: &mut State, peer: &str) {
        let sink = format!("{}/schemas/{peer}", self.prefix);
        let (defs, p) = (self.definitions.clone(), peer.to_owned());
        let made = self.graph.create_sink(
            &sink,
            Arc::new(move |s: &Sample| {
                let Some((path, schema)) = StructEvent::decode(s.payload.as_ref())
                    .ok()
                    .and_then(StructEvent::into_schema_set)
                else {
                    return;
                };
                if !schema.definition.is_empty() {
                    defs.lock()
                        .insert((p.clone(), format!("/{path}")), schema.definition);
                }
            }),
        );
        if made.is_err() {
            return;
        }
        let feed = format!("/net/{peer}/:children[]");
        if let Ok(e) = self.graph.subscribe(&feed, &sink, DeliveryPolicy::RELIABLE) {
            st.schema_edges.insert(peer.to_owned(), e);
        }
    }

    fn peer_down(&self, st: &mut State, peer: &str) {
        if let Some(e) = st.registry_edges.remove(peer) {
            let _ = self.graph.unsubscribe(&e);
        }
        let _ = self.graph.remove(&format!("{}/peers/{peer}", self.prefix));
        st.peers.remove(peer);
        if let Some(e) = st.schema_edges.remove(peer) {
            let _ = self.graph.unsubscribe(&e);
        }
        let _ = self
            .graph
            .remove(&format!("{}/schemas/{peer}", self.prefix));
        self.definitions.lock().retain(|(p, _), _| p != peer);
    }

    /// A registry edge that failed (the peer had no registry yet) is made again.
    fn retry_registries(&self, st: &mut State) {
        let failed: Vec<String> = st
            .registry_edges
            .iter()
            .filter(|(_, e)| matches!(e.state(), EdgeState::Failed(_) | EdgeState::Closed))
            .map(|(p, _)| p.clone())
            .collect();
        for p in failed {
            if let Some(e) = st.registry_edges.remove(&p) {
                let _ = self.graph.unsubscribe(&e);
            }
            let sink = format!("{}/peers/{p}", self.prefix);
            if let Ok(e) = self.graph.subscribe(
                &format!("/net/{p}/.ros/endpoints"),
                &sink,
                DeliveryPolicy::new(true, 0, true),
            ) {
                st.registry_edges.insert(p, e);
            }
        }
    }

    /// Stop the worker (the context is going).
    pub fn stop(&self) {
        self.send(Msg::Stop);
        if let Some(w) = self.worker.lock().take() {
            let _ = w.join();
        }
    }
}

/// `/net/:children[]` reports paths relative to `/net`: a peer mount is one segment.
fn is_peer(path: &str) -> bool {
    !path.is_empty() && !path.contains('/')
}

fn run(w: Weak<Watch>, rx: Receiver<Msg>) {
    let mut settled = true;
    loop {
        let msg = if settled {
            rx.recv().map_err(|_| RecvTimeoutError::Disconnected)
        } else {
            rx.recv_timeout(TICK)
        };
        let Some(w) = w.upgrade() else { return };
        let mut st = w.state.lock();
        match msg {
            Ok(Msg::Stop) | Err(RecvTimeoutError::Disconnected) => return,
            Ok(Msg::Structure(s)) => match StructEvent::decode(s.payload.as_ref()) {
                Ok(StructEvent::Created { path, .. }) if is_peer(&path) => {
                    w.peer_up(&mut st, &path)
                }
                Ok(StructEvent::Removed { path }) if is_peer(&path) => w.peer_down(&mut st, &path),
                _ => {}
            },
            Ok(Msg::Record(peer, s)) => {
                if let Some(recs) = st.peers.get_mut(&peer) {
                    match decode(s.payload.as_ref()) {
                        Some(Announcement::Present(r)) => {
                            recs.insert(r.gid, *r);
                        }
                        Some(Announcement::Gone(g)) => {
                            recs.remove(&g);
                        }
                        None => {}
                    }
                }
            }
            Ok(Msg::Changed) | Err(RecvTimeoutError::Timeout) => {}
        }
        w.retry_registries(&mut st);
        settled = w.reconcile_all(&mut st);
    }
}
