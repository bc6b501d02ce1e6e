//! `tracer record`: a native libtracer participant that records ROS topics to MCAP.
//!
//! It joins the host's graph (`Discovery::Host`, domain `ROS_DOMAIN_ID`, rendezvous directory
//! `RMW_TRACER_RENDEZVOUS_DIR` as rmw_tracer uses them) and, for every peer that mounts:
//! - subscribes a sink to the peer's endpoint registry `/net/<p>/.ros/endpoints` (transient
//!   local: every record the peer has, then each new one; read with
//!   `tracer_recording`'s registry record codec, rmw_tracer's own);
//! - subscribes a sink to the peer's structural feed `/net/<p>/:children[]`, whose `Created` /
//!   `SchemaSet` events carry each topic vertex's `:schema` (type, RIHS01 hash, `ros2msg`
//!   definition): that is the MCAP schema;
//! - for each selected topic with a publisher on that peer, one reliable edge from
//!   `/net/<p><topic path>` into a sink that queues the sample to the recorder (the CDR payload
//!   as it arrived, no copy). The edge goes when the peer has no publisher of the topic left.
//!
//! Every message gets the fields of `tracer_recording::fields` (route `/net/<p><path>`).
//! SIGINT / SIGTERM or `--duration` stop it; the file is finished and a summary printed.

use std::collections::{BTreeMap, HashMap};
use std::os::unix::fs::DirBuilderExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use libtracer_core::{
    DeliveryPolicy, Discovery, Edge, EdgeState, Graph, GraphConfig, Sample, SchemaInfo, StructEvent,
};
use parking_lot::Mutex;
use tracer_mcap::recorder::ChannelId;
use tracer_mcap::ros2::channel_metadata;
use tracer_mcap::{Compression, Recorder};
use tracer_recording::fields::{mcap_time, recorder_options};
use tracer_recording::{
    decode, Announcement, EntityKind, Fields, MessageFields, Record, Selection, StampLocator,
};

#[derive(Parser, Debug)]
pub struct Args {
    /// Output file.
    #[arg(short, long, default_value = "tracer_record.mcap")]
    output: PathBuf,
    /// Topics to record: names or globs (`*` within a segment, `**` across). Default: all.
    topics: Vec<String>,
    /// Record every topic (the default when no topic is given).
    #[arg(long, conflicts_with = "topics")]
    all: bool,
    /// Stop after this many seconds (e.g. `10`, `2.5`).
    #[arg(long)]
    duration: Option<f64>,
    /// Chunk compression.
    #[arg(long, default_value = "zstd", value_parser = ["zstd", "lz4", "none"])]
    compression: String,
    /// One edge per peer on its whole tree (`/net/<p>`) instead of one per topic: every write
    /// of the peer arrives on it, `Sample::suffix` names the topic, the selection filters.
    #[arg(long)]
    subtree: bool,
    /// Recorder queue bound in messages (messages beyond it are dropped and counted).
    #[arg(long, default_value_t = 65_536)]
    queue: usize,
}

#[derive(Debug)]
enum Event {
    PeerUp(String),
    PeerDown(String),
    Endpoint(String, Announcement),
}

/// An edge we keep wanting: a remote subscribe can fail (the peer has not made the source
/// yet, e.g. a peer that mounted us before its own registry existed) and is retried every 100 ms.
struct Wanted {
    source: String,
    sink: String,
    policy: DeliveryPolicy,
    edge: Option<Edge>,
    /// Said once on stderr when established (tests and users wait for it).
    announced: bool,
}

impl Wanted {
    fn new(graph: &Graph, source: String, sink: String, policy: DeliveryPolicy) -> Wanted {
        let mut w = Wanted {
            source,
            sink,
            policy,
            edge: None,
            announced: false,
        };
        w.ensure(graph);
        w
    }

    /// (Re)subscribe unless the edge is pending or established.
    fn ensure(&mut self, graph: &Graph) {
        if let Some(e) = &self.edge {
            match e.state() {
                EdgeState::Pending => return,
                EdgeState::Established => {
                    if !self.announced {
                        self.announced = true;
                        eprintln!("tracer record: established {}", self.source);
                    }
                    return;
                }
                _ => {}
            }
            let _ = graph.unsubscribe(e);
        }
        self.edge = graph.subscribe(&self.source, &self.sink, self.policy).ok();
    }

    fn drop_from(self, graph: &Graph) {
        if let Some(e) = &self.edge {
            let _ = graph.unsubscribe(e);
        }
    }
}

/// One recorded (topic, type) on one peer.
struct TopicEdge {
    edge: Wanted,
    /// Publisher gids of this peer on the topic.
    publishers: Vec<[u8; 16]>,
}

struct State {
    graph: Graph,
    rec: Arc<Recorder>,
    fields: Fields,
    select: Selection,
    /// (peer, vertex path) -> schema, from the peers' structural feeds.
    schemas: Arc<Mutex<HashMap<(String, String), SchemaInfo>>>,
    channels: HashMap<(String, String), ChannelId>,
    counts: Arc<Mutex<BTreeMap<String, u64>>>,
    /// `--subtree`: what the per-peer sinks share.
    subtree: Option<Arc<Subtree>>,
    peer_edges: HashMap<String, Vec<Wanted>>,
    topics: HashMap<(String, String), TopicEdge>,
    next_sink: u64,
}

/// The vertex path of a ROS topic (rmw_tracer's mapping: `/net/..` lives at `/.net/..`).
fn topic_path(topic: &str) -> String {
    if topic == "/net" || topic.starts_with("/net/") {
        format!("/.{}", &topic[1..])
    } else {
        topic.to_owned()
    }
}

fn graph_config() -> Result<GraphConfig, String> {
    let domain_id = match std::env::var("ROS_DOMAIN_ID") {
        Ok(v) if !v.trim().is_empty() => v
            .trim()
            .parse::<u32>()
            .map_err(|_| format!("ROS_DOMAIN_ID={v}: not a domain id"))?,
        _ => 0,
    };
    Ok(GraphConfig {
        // The core's default name, "<hostname>-<pid>-<n>", like every rmw_tracer process (a
        // longer one can overflow the socket path's limit in a deep rendezvous directory).
        name: None,
        domain_id,
        discovery: Discovery::Host,
        // The override is a base holding one directory per domain, as rmw_tracer reads it.
        rendezvous_dir: match std::env::var_os("RMW_TRACER_RENDEZVOUS_DIR")
            .filter(|v| !v.is_empty())
        {
            Some(base) => {
                // Made (0700) when missing, as rmw_tracer does, so either may start first.
                let base = PathBuf::from(base);
                std::fs::DirBuilder::new()
                    .recursive(true)
                    .mode(0o700)
                    .create(&base)
                    .map_err(|e| {
                        format!(
                            "RMW_TRACER_RENDEZVOUS_DIR={}: cannot make it: {e}",
                            base.display()
                        )
                    })?;
                Some(libtracer_core::link::rendezvous_dir_in(&base, domain_id))
            }
            None => None,
        },
        // This host only (the recorder does not reach other hosts yet: docs/network.md).
        network: None,
    })
}

pub fn run(a: Args) -> Result<(), String> {
    let select = if a.all {
        Selection::all()
    } else {
        Selection::from_patterns(a.topics.iter().map(String::as_str))
    };
    // Configuration and graph errors before the output file is created.
    let graph = Graph::new(graph_config()?).map_err(|e| format!("cannot join the graph: {e}"))?;
    let mut opts = recorder_options();
    opts.write.compression = match a.compression.as_str() {
        "lz4" => Compression::Lz4,
        "none" => Compression::None,
        _ => Compression::Zstd,
    };
    opts.max_queued_messages = a.queue.max(1);
    let rec = Arc::new(
        Recorder::create(&a.output, opts)
            .map_err(|e| format!("cannot create {}: {e}", a.output.display()))?,
    );
    let fields = Fields::declare(&rec).map_err(|e| e.to_string())?;

    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = stop.clone();
        ctrlc::set_handler(move || stop.store(true, Ordering::SeqCst))
            .map_err(|e| format!("cannot handle SIGINT/SIGTERM: {e}"))?;
    }
    let (tx, rx) = mpsc::channel::<Event>();
    let watch_tx = Mutex::new(tx.clone());
    graph
        .create_sink(
            "/.record/net-watch",
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
            "/.record/net-watch",
            DeliveryPolicy::RELIABLE,
        )
        .map_err(|e| format!("cannot watch /net: {e}"))?;

    let mut st = State {
        graph: graph.clone(),
        rec: rec.clone(),
        fields,
        select,
        schemas: Arc::new(Mutex::new(HashMap::new())),
        channels: HashMap::new(),
        counts: Arc::new(Mutex::new(BTreeMap::new())),
        peer_edges: HashMap::new(),
        topics: HashMap::new(),
        next_sink: 1,
        subtree: None,
    };
    if a.subtree {
        st.subtree = Some(Arc::new(Subtree {
            rec: rec.clone(),
            fields,
            select: st.select.clone(),
            schemas: st.schemas.clone(),
            counts: st.counts.clone(),
            qos: Mutex::new(HashMap::new()),
            channels: Mutex::new(HashMap::new()),
            unknown: AtomicU64::new(0),
        }));
    }
    eprintln!(
        "tracer record: recording {} to {} (Ctrl-C to stop)",
        if st.select.is_all() {
            "every topic".to_string()
        } else {
            a.topics.join(", ")
        },
        a.output.display()
    );
    let started = Instant::now();
    let deadline = a
        .duration
        .map(|d| started + Duration::from_secs_f64(d.max(0.0)));
    let mut last_retry = Instant::now();
    while !stop.load(Ordering::SeqCst) && deadline.is_none_or(|d| Instant::now() < d) {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(ev) => st.handle(ev, &tx),
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
        if last_retry.elapsed() >= Duration::from_millis(100) {
            st.retry();
            last_retry = Instant::now();
        }
    }
    let _ = graph.unsubscribe(&watch);
    for (_, t) in st.topics.drain() {
        t.edge.drop_from(&graph);
    }
    for (_, es) in st.peer_edges.drain() {
        for e in es {
            e.drop_from(&graph);
        }
    }
    let report = rec.finish();
    graph.shutdown();
    let secs = started.elapsed().as_secs_f64();
    println!("recorded to {} in {secs:.1} s", a.output.display());
    for (topic, n) in st.counts.lock().iter() {
        println!("  {topic}: {n} messages");
    }
    println!(
        "  total: {} written, {} dropped",
        report.written, report.dropped
    );
    if let Some(sub) = &st.subtree {
        let n = sub.unknown.load(Ordering::Relaxed);
        if n > 0 {
            println!("  {n} writes of vertices without a :schema were not recorded");
        }
    }
    match report.error {
        Some(e) => Err(format!("writing {} failed: {e}", a.output.display())),
        None => Ok(()),
    }
}

/// `/net/:children[]` reports paths relative to `/net`: a peer mount is one segment.
fn is_peer(path: &str) -> bool {
    !path.is_empty() && !path.contains('/')
}

impl State {
    fn handle(&mut self, ev: Event, tx: &mpsc::Sender<Event>) {
        match ev {
            Event::PeerUp(p) => self.peer_up(&p, tx),
            Event::PeerDown(p) => self.peer_down(&p),
            Event::Endpoint(p, r) => self.endpoint(&p, r),
        }
    }

    fn peer_up(&mut self, peer: &str, tx: &mpsc::Sender<Event>) {
        if self.peer_edges.contains_key(peer) {
            return;
        }
        let mut edges = Vec::new();
        // Schemas first, so a topic's schema is known when its publisher's record arrives.
        let schemas = self.schemas.clone();
        let p = peer.to_owned();
        let feed_sink = format!("/.record/peers/{peer}/structure");
        if self
            .graph
            .create_sink(
                &feed_sink,
                Arc::new(move |s: &Sample| {
                    let (path, schema) = match StructEvent::decode(s.payload.as_ref()) {
                        Ok(StructEvent::Created {
                            path,
                            schema: Some(schema),
                            ..
                        }) => (path, schema),
                        Ok(StructEvent::SchemaSet { path, schema }) => (path, schema),
                        _ => return,
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
            ));
        }
        let reg_sink = format!("/.record/peers/{peer}/endpoints");
        let tx = Mutex::new(tx.clone());
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
            ));
        }
        if let Some(sub) = &self.subtree {
            let all_sink = format!("/.record/peers/{peer}/all");
            let (sub, p) = (sub.clone(), peer.to_owned());
            if self
                .graph
                .create_sink(&all_sink, Arc::new(move |s: &Sample| sub.on_sample(&p, s)))
                .is_ok()
            {
                edges.push(Wanted::new(
                    &self.graph,
                    format!("/net/{peer}"),
                    all_sink,
                    DeliveryPolicy::RELIABLE,
                ));
            }
        }
        self.peer_edges.insert(peer.to_owned(), edges);
    }

    fn peer_down(&mut self, peer: &str) {
        for e in self.peer_edges.remove(peer).unwrap_or_default() {
            e.drop_from(&self.graph);
        }
        let _ = self.graph.remove(&format!("/.record/peers/{peer}"));
        let gone: Vec<_> = self
            .topics
            .keys()
            .filter(|(p, _)| p == peer)
            .cloned()
            .collect();
        for k in gone {
            if let Some(t) = self.topics.remove(&k) {
                self.drop_edge(t);
            }
        }
        self.schemas.lock().retain(|(p, _), _| p != peer);
    }

    fn drop_edge(&self, t: TopicEdge) {
        let sink = t.edge.sink.clone();
        t.edge.drop_from(&self.graph);
        let _ = self.graph.remove(&sink);
    }

    /// Ten times a second: failed edges are made again (see [`Wanted`]), new ones announced.
    fn retry(&mut self) {
        for es in self.peer_edges.values_mut() {
            for e in es {
                e.ensure(&self.graph);
            }
        }
        for t in self.topics.values_mut() {
            t.edge.ensure(&self.graph);
        }
    }

    fn endpoint(&mut self, peer: &str, a: Announcement) {
        let r = match a {
            Announcement::Present(r) => r,
            Announcement::Gone(gone) => {
                self.publisher_gone(peer, gone.0);
                return;
            }
        };
        if r.kind != EntityKind::Publisher || !self.select.matches(&r.topic) {
            return;
        }
        if let Some(sub) = &self.subtree {
            // The peer's subtree edge carries the data; the registry gives the offered QoS.
            sub.qos
                .lock()
                .entry((peer.to_owned(), r.topic.clone()))
                .or_default()
                .extend(r.qos.map(|n| n.offered()));
            return;
        }
        let key = (peer.to_owned(), r.topic.clone());
        if let Some(t) = self.topics.get_mut(&key) {
            if !t.publishers.contains(&r.gid.0) {
                t.publishers.push(r.gid.0);
            }
            return;
        }
        let path = topic_path(&r.topic);
        let schema = self.wait_schema(peer, &path);
        let definition = schema
            .as_ref()
            .filter(|s| s.type_name == r.type_name)
            .map(|s| s.definition.clone())
            .unwrap_or_default();
        let Some(channel) = self.channel(&r, &definition) else {
            return;
        };
        let route = format!("/net/{peer}{path}");
        let sink = format!("/.record/sub/{}", self.next_sink);
        self.next_sink += 1;
        let rec = self.rec.clone();
        let fields = self.fields;
        let stamp = StampLocator::for_type(&r.type_name, &definition);
        let counts = self.counts.clone();
        let topic = r.topic.clone();
        let n = Arc::new(AtomicU64::new(0));
        let route2 = route.clone();
        let made = self.graph.create_sink(
            &sink,
            Arc::new(move |s: &Sample| {
                if s.suffix.is_some() {
                    return; // a nested topic (`T/compressed`): recorded by its own edge
                }
                let values = fields.values(&MessageFields {
                    sensor_time: stamp.and_then(|st| st.read(s.payload.as_ref())),
                    gid: s.meta.writer,
                    sequence: s.meta.sequence,
                    route: &route2,
                });
                if rec.write(
                    channel,
                    mcap_time(s.received_timestamp_ns),
                    mcap_time(s.meta.source_timestamp_ns),
                    s.meta.sequence as u32,
                    s.payload.clone(),
                    values,
                ) {
                    n.fetch_add(1, Ordering::Relaxed);
                    *counts.lock().entry(topic.clone()).or_default() += 1;
                }
            }),
        );
        if let Err(e) = made {
            eprintln!("tracer record: {route}: {e}");
            return;
        }
        eprintln!("tracer record: subscribing {route} ({})", r.type_name);
        let edge = Wanted::new(&self.graph, route, sink, DeliveryPolicy::RELIABLE);
        self.topics.insert(
            key,
            TopicEdge {
                edge,
                publishers: vec![r.gid.0],
            },
        );
    }

    /// A retraction: the publisher leaves its topics; a topic with none left loses its edge.
    fn publisher_gone(&mut self, peer: &str, gid: [u8; 16]) {
        let mut empty = None;
        for (k, t) in self.topics.iter_mut() {
            if k.0 == peer {
                t.publishers.retain(|g| *g != gid);
                if t.publishers.is_empty() {
                    empty = Some(k.clone());
                }
            }
        }
        if let Some(k) = empty {
            if let Some(t) = self.topics.remove(&k) {
                self.drop_edge(t);
            }
        }
    }

    /// The schema of a peer's vertex; the structural feed was subscribed before the registry,
    /// so it is normally there already; wait briefly otherwise.
    fn wait_schema(&self, peer: &str, path: &str) -> Option<SchemaInfo> {
        let key = (peer.to_owned(), path.to_owned());
        let until = Instant::now() + Duration::from_secs(1);
        loop {
            if let Some(s) = self.schemas.lock().get(&key) {
                return Some(s.clone());
            }
            if Instant::now() >= until {
                eprintln!(
                    "tracer record: /net/{peer}{path}: no :schema, recorded without a definition"
                );
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn channel(&mut self, r: &Record, definition: &str) -> Option<ChannelId> {
        let key = (r.topic.clone(), r.type_name.clone());
        if let Some(c) = self.channels.get(&key) {
            return Some(*c);
        }
        let made = self
            .rec
            .add_schema(&r.type_name, "ros2msg", definition.as_bytes())
            .and_then(|s| {
                let qos: Vec<_> = r.qos.map(|n| n.offered()).into_iter().collect();
                self.rec
                    .add_channel(s, &r.topic, "cdr", &channel_metadata(&qos))
            });
        match made {
            Ok(c) => {
                self.channels.insert(key, c);
                Some(c)
            }
            Err(e) => {
                eprintln!("tracer record: {}: {e}", r.topic);
                None
            }
        }
    }
}

/// A channel and its type's stamp locator.
type SubtreeChannel = (ChannelId, Option<StampLocator>);

/// `--subtree`: one edge per peer on `/net/<p>`; each sample's suffix is the vertex it was
/// written at, relative to the peer's root.
struct Subtree {
    rec: Arc<Recorder>,
    fields: Fields,
    select: Selection,
    schemas: Arc<Mutex<HashMap<(String, String), SchemaInfo>>>,
    counts: Arc<Mutex<BTreeMap<String, u64>>>,
    /// (peer, topic) -> offered QoS of its publishers (from the registry).
    qos: Mutex<HashMap<(String, String), Vec<tracer_mcap::ros2::OfferedQos>>>,
    /// (topic, type) -> channel and the type's stamp locator.
    channels: Mutex<HashMap<(String, String), SubtreeChannel>>,
    /// Writes to selected vertices whose schema is unknown (not a ROS topic of rmw_tracer).
    unknown: AtomicU64,
}

/// The ROS topic of a vertex path (rmw_tracer's mapping), `None` for its own `/.`-paths.
fn path_topic(path: &str) -> Option<String> {
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

impl Subtree {
    /// On the delivering thread: only short locks, never the disk.
    fn on_sample(&self, peer: &str, s: &Sample) {
        let Some(suffix) = &s.suffix else {
            return; // a write at the peer's root itself: no topic
        };
        let path = format!("/{suffix}");
        let Some(topic) = path_topic(&path) else {
            return;
        };
        if !self.select.matches(&topic) {
            return;
        }
        let Some(schema) = self
            .schemas
            .lock()
            .get(&(peer.to_owned(), path.clone()))
            .cloned()
        else {
            self.unknown.fetch_add(1, Ordering::Relaxed);
            return;
        };
        if schema.encoding != "cdr" {
            self.unknown.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let key = (topic.clone(), schema.type_name.clone());
        let (channel, stamp) = {
            let mut ch = self.channels.lock();
            match ch.get(&key) {
                Some(c) => *c,
                None => {
                    let qos = self
                        .qos
                        .lock()
                        .get(&(peer.to_owned(), topic.clone()))
                        .cloned()
                        .unwrap_or_default();
                    let made = self
                        .rec
                        .add_schema(&schema.type_name, "ros2msg", schema.definition.as_bytes())
                        .and_then(|sid| {
                            self.rec
                                .add_channel(sid, &topic, "cdr", &channel_metadata(&qos))
                        });
                    let Ok(c) = made else {
                        return;
                    };
                    let v = (
                        c,
                        StampLocator::for_type(&schema.type_name, &schema.definition),
                    );
                    ch.insert(key, v);
                    v
                }
            }
        };
        let route = format!("/net/{peer}{path}");
        let values = self.fields.values(&MessageFields {
            sensor_time: stamp.and_then(|st| st.read(s.payload.as_ref())),
            gid: s.meta.writer,
            sequence: s.meta.sequence,
            route: &route,
        });
        if self.rec.write(
            channel,
            mcap_time(s.received_timestamp_ns),
            mcap_time(s.meta.source_timestamp_ns),
            s.meta.sequence as u32,
            s.payload.clone(),
            values,
        ) {
            *self.counts.lock().entry(topic).or_default() += 1;
        }
    }
}
