//! `tracer record`: a native libtracer participant that records ROS topics to MCAP.
//!
//! It is a [`Participant`] (participant.rs: the peers' endpoint registries and structural
//! feeds, whose `:schema` of each topic vertex is the MCAP schema) and, for every peer:
//! - for each selected topic with a publisher on that peer, one reliable edge from
//!   `/net/<p><topic path>` into a sink that queues the sample to the recorder (the CDR payload
//!   as it arrived, no copy). The edge goes when the peer has no publisher of the topic left.
//!
//! Every message gets the fields of `tracer_recording::fields` (route `/net/<p><path>`).
//! SIGINT / SIGTERM or `--duration` stop it; the file is finished and a summary printed.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use indicatif::{ProgressBar, ProgressStyle};
use libtracer_core::{DeliveryPolicy, Sample};
use parking_lot::Mutex;
use tracer_mcap::recorder::ChannelId;
use tracer_mcap::ros2::channel_metadata;
use tracer_mcap::{Compression, Recorder};
use tracer_recording::fields::{fields_for, mcap_time, recorder_options};
use tracer_recording::{
    Announcement, EntityKind, Fields, MessageFields, Record, Selection, StampLocator,
};

use crate::format::size;
use crate::participant::{path_topic, topic_path, Event, Participant, Schemas, Wanted};

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
    /// A plain file: no message fields (publish_time is the MCAP message's own), for tools
    /// that do not know the message-fields extension.
    #[arg(long)]
    plain: bool,
    /// Recorder queue bound in messages (messages beyond it are dropped and counted).
    #[arg(long, default_value_t = 65_536)]
    queue: usize,
}

/// The live status line on a terminal (indicatif draws nothing when stderr is not one):
/// topics, messages and their rate over the last second, bytes, drops.
struct Status {
    pb: ProgressBar,
    last: Instant,
    last_count: u64,
    rate: f64,
}

impl Status {
    fn new() -> Status {
        let pb = ProgressBar::new_spinner();
        if let Ok(style) = ProgressStyle::with_template("{spinner} {elapsed} {msg}") {
            pb.set_style(style);
        }
        Status {
            pb,
            last: Instant::now(),
            last_count: 0,
            rate: 0.0,
        }
    }

    fn update(&mut self, st: &State) {
        if self.pb.is_hidden() || self.last.elapsed() < Duration::from_millis(250) {
            return;
        }
        let (topics, count) = {
            let c = st.counts.lock();
            (c.len(), c.values().sum::<u64>())
        };
        let dt = self.last.elapsed().as_secs_f64();
        self.rate = 0.5 * self.rate + 0.5 * (count - self.last_count) as f64 / dt;
        self.last = Instant::now();
        self.last_count = count;
        self.pb.set_message(format!(
            "{topics} topics, {count} messages ({:.0}/s), {}, {} dropped",
            self.rate,
            size(st.bytes.load(Ordering::Relaxed)),
            st.rec.dropped()
        ));
        self.pb.tick();
    }
}

/// One recorded (topic, type) on one peer.
struct TopicEdge {
    edge: Wanted,
    /// Publisher gids of this peer on the topic.
    publishers: Vec<[u8; 16]>,
}

struct State {
    part: Participant,
    rec: Arc<Recorder>,
    fields: Fields,
    select: Selection,
    channels: HashMap<(String, String), ChannelId>,
    counts: Arc<Mutex<BTreeMap<String, u64>>>,
    /// Payload bytes queued to the recorder (for the status line).
    bytes: Arc<AtomicU64>,
    /// `--subtree`: what the per-peer sinks share.
    subtree: Option<Arc<Subtree>>,
    topics: HashMap<(String, String), TopicEdge>,
    next_sink: u64,
}

pub fn run(a: Args) -> Result<(), String> {
    let select = if a.all {
        Selection::all()
    } else {
        Selection::from_patterns(a.topics.iter().map(String::as_str))
    };
    // Configuration and graph errors before the output file is created.
    let part = Participant::join("record")?;
    let mut opts = recorder_options(a.plain);
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
    let fields = fields_for(&rec, a.plain).map_err(|e| e.to_string())?;

    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = stop.clone();
        ctrlc::set_handler(move || stop.store(true, Ordering::SeqCst))
            .map_err(|e| format!("cannot handle SIGINT/SIGTERM: {e}"))?;
    }
    let schemas = part.schemas.clone();
    let mut st = State {
        part,
        rec: rec.clone(),
        fields,
        select,
        channels: HashMap::new(),
        counts: Arc::new(Mutex::new(BTreeMap::new())),
        bytes: Arc::new(AtomicU64::new(0)),
        topics: HashMap::new(),
        next_sink: 1,
        subtree: None,
    };
    if a.subtree {
        st.subtree = Some(Arc::new(Subtree {
            rec: rec.clone(),
            fields,
            select: st.select.clone(),
            schemas,
            counts: st.counts.clone(),
            bytes: st.bytes.clone(),
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
    let mut status = Status::new();
    while !stop.load(Ordering::SeqCst) && deadline.is_none_or(|d| Instant::now() < d) {
        if let Some(ev) = st.part.next(Duration::from_millis(100)) {
            st.handle(ev);
        }
        if last_retry.elapsed() >= Duration::from_millis(100) {
            st.retry();
            last_retry = Instant::now();
        }
        status.update(&st);
    }
    status.pb.finish_and_clear();
    for (_, t) in st.topics.drain() {
        t.edge.drop_from(&st.part.graph);
    }
    let report = rec.finish();
    st.part.shutdown();
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

impl State {
    fn handle(&mut self, ev: Event) {
        match ev {
            Event::PeerUp(p) => self.peer_up(&p),
            Event::PeerDown(p) => self.peer_down(&p),
            Event::Endpoint(p, r) => self.endpoint(&p, r),
        }
    }

    /// The participant made the peer's feed and registry edges; `--subtree` adds its own.
    fn peer_up(&mut self, peer: &str) {
        let Some(sub) = &self.subtree else {
            return;
        };
        let all_sink = format!("/.record/peers/{peer}/all");
        let (sub, p) = (sub.clone(), peer.to_owned());
        if self
            .part
            .graph
            .create_sink(&all_sink, Arc::new(move |s: &Sample| sub.on_sample(&p, s)))
            .is_ok()
        {
            let w = Wanted::new(
                &self.part.graph,
                format!("/net/{peer}"),
                all_sink,
                DeliveryPolicy::RELIABLE,
                Some("record"),
            );
            self.part.add_peer_edge(peer, w);
        }
    }

    fn peer_down(&mut self, peer: &str) {
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
    }

    fn drop_edge(&self, t: TopicEdge) {
        let sink = t.edge.sink.clone();
        t.edge.drop_from(&self.part.graph);
        let _ = self.part.graph.remove(&sink);
    }

    /// Ten times a second: failed edges are made again (see [`Wanted`]), new ones announced.
    fn retry(&mut self) {
        for t in self.topics.values_mut() {
            t.edge.ensure(&self.part.graph);
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
        let schema = self.part.wait_schema(peer, &path);
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
        let n = self.bytes.clone();
        let route2 = route.clone();
        let made = self.part.graph.create_sink(
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
                    n.fetch_add(s.payload.as_ref().len() as u64, Ordering::Relaxed);
                    *counts.lock().entry(topic.clone()).or_default() += 1;
                }
            }),
        );
        if let Err(e) = made {
            eprintln!("tracer record: {route}: {e}");
            return;
        }
        eprintln!("tracer record: subscribing {route} ({})", r.type_name);
        let edge = Wanted::new(
            &self.part.graph,
            route,
            sink,
            DeliveryPolicy::RELIABLE,
            Some("record"),
        );
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
    schemas: Schemas,
    counts: Arc<Mutex<BTreeMap<String, u64>>>,
    bytes: Arc<AtomicU64>,
    /// (peer, topic) -> offered QoS of its publishers (from the registry).
    qos: Mutex<HashMap<(String, String), Vec<tracer_mcap::ros2::OfferedQos>>>,
    /// (topic, type) -> channel and the type's stamp locator.
    channels: Mutex<HashMap<(String, String), SubtreeChannel>>,
    /// Writes to selected vertices whose schema is unknown (not a ROS topic of rmw_tracer).
    unknown: AtomicU64,
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
            self.bytes
                .fetch_add(s.payload.as_ref().len() as u64, Ordering::Relaxed);
            *self.counts.lock().entry(topic).or_default() += 1;
        }
    }
}
