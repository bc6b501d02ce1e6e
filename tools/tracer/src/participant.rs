//! A libtracer participant of the host graph that learns what the ROS processes have: what
//! `tracer record`, `graph`, `echo` and `serve` share.
//!
//! It joins the graph (`Discovery::Host`, domain `ROS_DOMAIN_ID`, rendezvous base
//! `RMW_TRACER_RENDEZVOUS_DIR`, as rmw_tracer uses them), watches `/net/:children[]` for peer
//! mounts and, for each peer at `/net/<p>`:
//! - subscribes a sink to the peer's structural feed `/net/<p>/:children[]`, whose `Created` /
//!   `SchemaSet` events carry each topic vertex's `:schema` (type, RIHS01 hash, `ros2msg`
//!   definition), kept in [`Participant::schemas`];
//! - subscribes a sink to the peer's endpoint registry `/net/<p>/.ros/endpoints` (transient
//!   local: every record the peer has, then each new one and each retraction), read with
//!   `tracer_recording`'s registry record codec, rmw_tracer's own.
//!
//! The caller gets [`Event`]s from [`Participant::next`]: peer mounts and unmounts (the
//! per-peer sinks are already made or gone) and the registry's announcements.

use std::collections::HashMap;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use libtracer_core::{
    DeliveryPolicy, Discovery, Edge, EdgeState, Graph, GraphConfig, Sample, SchemaInfo, StructEvent,
};
use parking_lot::Mutex;
use tracer_recording::{decode, Announcement};

/// What the participant learnt.
#[derive(Debug)]
pub enum Event {
    PeerUp(String),
    PeerDown(String),
    Endpoint(String, Announcement),
}

/// (peer, vertex path) -> the vertex's `:schema`, from the peers' structural feeds.
pub type Schemas = Arc<Mutex<HashMap<(String, String), SchemaInfo>>>;

/// The vertex path of a ROS topic (rmw_tracer's mapping: `/net/..` lives at `/.net/..`).
pub fn topic_path(topic: &str) -> String {
    if topic == "/net" || topic.starts_with("/net/") {
        format!("/.{}", &topic[1..])
    } else {
        topic.to_owned()
    }
}

/// The ROS topic of a vertex path (rmw_tracer's mapping), `None` for its own `/.`-paths.
pub fn path_topic(path: &str) -> Option<String> {
    if let Some(rest) = path.strip_prefix("/.net") {
        if rest.is_empty() || rest.starts_with('/') {
            return Some(format!("/net{rest}"));
        }
    }
    if path.starts_with("/.") {
        return None;
    }
    Some(path.to_owned())
}

pub fn graph_config() -> Result<GraphConfig, String> {
    use tracer_recording::network;
    let domain_id = network::domain_from_env().map_err(|e| e.to_string())?;
    let base = std::env::var_os(network::RENDEZVOUS_ENV);
    Ok(GraphConfig {
        // The core's default name, "<hostname>-<pid>-<n>", like every rmw_tracer process (a
        // longer one can overflow the socket path's limit in a deep rendezvous directory).
        name: None,
        domain_id,
        discovery: Discovery::Host,
        // The override is a base holding one directory per domain, as rmw_tracer reads it.
        rendezvous_dir: network::rendezvous_dir(base.as_deref(), domain_id)
            .map_err(|e| e.to_string())?,
        host_users: network::host_users_from_env().map_err(|e| e.to_string())?,
        // This host only (the recorder does not reach other hosts yet: docs/network.md).
        network: None,
    })
}

/// An edge we keep wanting: a remote subscribe can fail (the peer has not made the source
/// yet, e.g. a peer that mounted us before its own registry existed) and is retried every 100 ms.
pub struct Wanted {
    pub source: String,
    pub sink: String,
    policy: DeliveryPolicy,
    edge: Option<Edge>,
    /// `tracer <tool>: established <source>` is said once on stderr (tests and users wait for it).
    announce: Option<&'static str>,
}

impl Wanted {
    pub fn new(
        graph: &Graph,
        source: String,
        sink: String,
        policy: DeliveryPolicy,
        announce: Option<&'static str>,
    ) -> Wanted {
        let mut w = Wanted {
            source,
            sink,
            policy,
            edge: None,
            announce,
        };
        w.ensure(graph);
        w
    }

    /// (Re)subscribe unless the edge is pending or established.
    pub fn ensure(&mut self, graph: &Graph) {
        if let Some(e) = &self.edge {
            match e.state() {
                EdgeState::Pending => return,
                EdgeState::Established => {
                    if let Some(tool) = self.announce.take() {
                        eprintln!("tracer {tool}: established {}", self.source);
                    }
                    return;
                }
                _ => {}
            }
            let _ = graph.unsubscribe(e);
        }
        self.edge = graph.subscribe(&self.source, &self.sink, self.policy).ok();
    }

    pub fn is_established(&self) -> bool {
        self.edge
            .as_ref()
            .is_some_and(|e| matches!(e.state(), EdgeState::Established))
    }

    pub fn drop_from(self, graph: &Graph) {
        if let Some(e) = &self.edge {
            let _ = graph.unsubscribe(e);
        }
    }
}

/// `/net/:children[]` reports paths relative to `/net`: a peer mount is one segment.
fn is_peer(path: &str) -> bool {
    !path.is_empty() && !path.contains('/')
}

pub struct Participant {
    pub graph: Graph,
    pub schemas: Schemas,
    tool: &'static str,
    /// Local vertices of this participant live under it (`/.record`, `/.graph`, ..).
    prefix: String,
    tx: mpsc::Sender<Event>,
    rx: mpsc::Receiver<Event>,
    watch: Edge,
    peer_edges: HashMap<String, Vec<Wanted>>,
    last_retry: Instant,
}

impl Participant {
    /// Joins the host graph as `tracer <tool>`; local vertices under `/.<tool>`.
    pub fn join(tool: &'static str) -> Result<Participant, String> {
        let graph =
            Graph::new(graph_config()?).map_err(|e| format!("cannot join the graph: {e}"))?;
        let prefix = format!("/.{tool}");
        let (tx, rx) = mpsc::channel::<Event>();
        let watch_tx = Mutex::new(tx.clone());
        graph
            .create_sink(
                &format!("{prefix}/net-watch"),
                Arc::new(
                    move |s: &Sample| match StructEvent::decode(s.payload.as_ref()) {
                        Ok(StructEvent::Created { path, .. }) if is_peer(&path) => {
                            let _ = watch_tx.lock().send(Event::PeerUp(path));
                        }
                        Ok(StructEvent::Removed { path }) if is_peer(&path) => {
                            let _ = watch_tx.lock().send(Event::PeerDown(path));
                        }
                        _ => {}
                    },
                ),
            )
            .map_err(|e| e.to_string())?;
        let watch = graph
            .subscribe(
                "/net/:children[]",
                &format!("{prefix}/net-watch"),
                DeliveryPolicy::RELIABLE,
            )
            .map_err(|e| format!("cannot watch /net: {e}"))?;
        Ok(Participant {
            graph,
            schemas: Arc::new(Mutex::new(HashMap::new())),
            tool,
            prefix,
            tx,
            rx,
            watch,
            peer_edges: HashMap::new(),
            last_retry: Instant::now(),
        })
    }

    /// The next event, waiting at most `timeout`; failed edges are retried meanwhile.
    pub fn next(&mut self, timeout: Duration) -> Option<Event> {
        let ev = self.rx.recv_timeout(timeout).ok();
        match &ev {
            Some(Event::PeerUp(p)) => self.peer_up(p),
            Some(Event::PeerDown(p)) => self.peer_down(p),
            _ => {}
        }
        if self.last_retry.elapsed() >= Duration::from_millis(100) {
            for es in self.peer_edges.values_mut() {
                for e in es {
                    e.ensure(&self.graph);
                }
            }
            self.last_retry = Instant::now();
        }
        ev
    }

    /// An extra edge the caller keeps for a peer (removed with the peer's own).
    pub fn add_peer_edge(&mut self, peer: &str, w: Wanted) {
        self.peer_edges.entry(peer.to_owned()).or_default().push(w);
    }

    /// Every peer's feed and registry edge is established (nothing is left to arrive but news).
    pub fn settled(&self) -> bool {
        self.peer_edges
            .values()
            .all(|es| es.iter().all(Wanted::is_established))
    }

    pub fn peers(&self) -> Vec<String> {
        let mut v: Vec<String> = self.peer_edges.keys().cloned().collect();
        v.sort();
        v
    }

    fn peer_up(&mut self, peer: &str) {
        if self.peer_edges.contains_key(peer) {
            return;
        }
        let mut edges = Vec::new();
        // Schemas first, so a topic's schema is known when its publisher's record arrives.
        let schemas = self.schemas.clone();
        let p = peer.to_owned();
        let feed_sink = format!("{}/peers/{peer}/structure", self.prefix);
        if self
            .graph
            .create_sink(
                &feed_sink,
                Arc::new(move |s: &Sample| {
                    let Some((path, schema)) = StructEvent::decode(s.payload.as_ref())
                        .ok()
                        .and_then(StructEvent::into_schema_set)
                    else {
                        return;
                    };
                    schemas
                        .lock()
                        .insert((p.clone(), format!("/{path}")), schema);
                }),
            )
            .is_ok()
        {
            edges.push(Wanted::new(
                &self.graph,
                format!("/net/{peer}/:children[]"),
                feed_sink,
                DeliveryPolicy::RELIABLE,
                None,
            ));
        }
        let reg_sink = format!("{}/peers/{peer}/endpoints", self.prefix);
        let tx = Mutex::new(self.tx.clone());
        let p = peer.to_owned();
        if self
            .graph
            .create_sink(
                &reg_sink,
                Arc::new(move |s: &Sample| {
                    if let Some(r) = decode(s.payload.as_ref()) {
                        let _ = tx.lock().send(Event::Endpoint(p.clone(), r));
                    }
                }),
            )
            .is_ok()
        {
            // Transient local: every record the peer has, then each new one. A graph that is
            // not an rmw_tracer process (another tool) has no registry: retried, harmless.
            edges.push(Wanted::new(
                &self.graph,
                format!("/net/{peer}/.ros/endpoints"),
                reg_sink,
                DeliveryPolicy::new(true, 0, true),
                None,
            ));
        }
        self.peer_edges.insert(peer.to_owned(), edges);
    }

    fn peer_down(&mut self, peer: &str) {
        for e in self.peer_edges.remove(peer).unwrap_or_default() {
            e.drop_from(&self.graph);
        }
        let _ = self.graph.remove(&format!("{}/peers/{peer}", self.prefix));
        self.schemas.lock().retain(|(p, _), _| p != peer);
    }

    /// The schema of a peer's vertex; the structural feed was subscribed before the registry,
    /// so it is normally there already; wait briefly otherwise.
    pub fn wait_schema(&self, peer: &str, path: &str) -> Option<SchemaInfo> {
        let key = (peer.to_owned(), path.to_owned());
        let until = Instant::now() + Duration::from_secs(1);
        loop {
            if let Some(s) = self.schemas.lock().get(&key) {
                return Some(s.clone());
            }
            if Instant::now() >= until {
                eprintln!("tracer {}: /net/{peer}{path}: no :schema", self.tool);
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Unsubscribes everything and leaves the graph.
    pub fn shutdown(mut self) {
        let _ = self.graph.unsubscribe(&self.watch);
        for (_, es) in self.peer_edges.drain() {
            for e in es {
                e.drop_from(&self.graph);
            }
        }
        self.graph.shutdown();
    }
}
