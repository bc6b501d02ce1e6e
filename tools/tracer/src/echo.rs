//! `tracer echo <topic>`: a live participant that prints every message of a topic, decoded
//! with the `:schema` the publisher's topic vertex carries (no message package needed).
//!
//! For each peer with a publisher of the topic (from its endpoint registry) one edge from
//! `/net/<p><path>` into a sink; the sink only queues the sample (bounded; a full queue drops
//! and counts), the main thread decodes and prints. A topic without a publisher is waited
//! for, as `ros2 topic echo` does, with one line on stderr saying so.

use std::collections::HashMap;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use libtracer_core::{DeliveryPolicy, Sample};
use ros2msg::Schema;
use tracer_recording::{Announcement, EntityKind, Record};

use crate::decoder::{decode, parse_schema};
use crate::participant::{topic_path, Event, Participant, Wanted};

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Reliability {
    Reliable,
    #[value(name = "best_effort")]
    BestEffort,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Durability {
    Volatile,
    #[value(name = "transient_local")]
    TransientLocal,
}

#[derive(clap::Args)]
pub struct Args {
    /// The ROS topic (`/chatter`; a name without `/` gets one).
    topic: String,
    /// Requested reliability; default: what each publisher offers.
    #[arg(long, value_enum)]
    qos_reliability: Option<Reliability>,
    /// Requested durability (transient_local replays the publisher's history first); default:
    /// what each publisher offers.
    #[arg(long, value_enum)]
    qos_durability: Option<Durability>,
    /// Print one message and exit.
    #[arg(long)]
    once: bool,
    /// Print only this field (a dotted path, `header.stamp.sec`; list elements by index).
    #[arg(long)]
    field: Option<String>,
    /// One JSON object per line instead of YAML-like text separated by `---`.
    #[arg(long)]
    json: bool,
}

/// The edge on one peer's topic and what it needs to decode.
struct PeerTopic {
    edge: Wanted,
    publishers: Vec<[u8; 16]>,
}

pub fn run(a: Args) -> Result<(), String> {
    let topic = if a.topic.starts_with('/') {
        a.topic.clone()
    } else {
        format!("/{}", a.topic)
    };
    let path = topic_path(&topic);
    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = stop.clone();
        ctrlc::set_handler(move || stop.store(true, Ordering::SeqCst))
            .map_err(|e| format!("cannot handle SIGINT/SIGTERM: {e}"))?;
    }
    let mut part = Participant::join("echo")?;
    let (tx, rx) = mpsc::sync_channel::<(String, Sample)>(4096);
    let dropped = Arc::new(AtomicU64::new(0));
    let mut peers: HashMap<String, PeerTopic> = HashMap::new();
    let mut schemas: HashMap<String, Result<Schema, String>> = HashMap::new();
    let mut next_sink = 1u64;
    let started = Instant::now();
    let mut said_waiting = false;
    let mut out = std::io::stdout().lock();
    let mut printed = 0u64;
    let mut last_retry = Instant::now();
    let result = 'main: loop {
        if stop.load(Ordering::SeqCst) {
            break Ok(());
        }
        match part.next(Duration::from_millis(20)) {
            Some(Event::Endpoint(p, Announcement::Present(r)))
                if r.kind == EntityKind::Publisher && r.topic == topic =>
            {
                if let Some(t) = peers.get_mut(&p) {
                    if !t.publishers.contains(&r.gid.0) {
                        t.publishers.push(r.gid.0);
                    }
                } else {
                    let sink = format!("/.echo/sub/{next_sink}");
                    next_sink += 1;
                    let (tx, dropped, peer) = (tx.clone(), dropped.clone(), p.clone());
                    let made = part.graph.create_sink(
                        &sink,
                        Arc::new(move |s: &Sample| {
                            if s.suffix.is_none() && tx.try_send((peer.clone(), s.clone())).is_err()
                            {
                                dropped.fetch_add(1, Ordering::Relaxed);
                            }
                        }),
                    );
                    if let Err(e) = made {
                        break Err(format!("cannot make the sink {sink}: {e}"));
                    }
                    let schema = part
                        .wait_schema(&p, &path)
                        .ok_or_else(|| format!("publisher on peer {p} has no :schema for {path}"))
                        .and_then(|s| {
                            parse_schema(&s.type_name, "ros2msg", "cdr", s.definition.as_bytes())
                        });
                    if let Err(e) = &schema {
                        eprintln!("tracer echo: {topic} on peer {p}: {e}");
                    }
                    schemas.insert(p.clone(), schema);
                    let edge = Wanted::new(
                        &part.graph,
                        format!("/net/{p}{path}"),
                        sink,
                        policy(&a, &r),
                        None,
                    );
                    eprintln!(
                        "tracer echo: subscribed to {topic} [{}] on peer {p}",
                        r.type_name
                    );
                    peers.insert(
                        p,
                        PeerTopic {
                            edge,
                            publishers: vec![r.gid.0],
                        },
                    );
                }
            }
            Some(Event::Endpoint(p, Announcement::Gone(g))) => {
                let empty = peers.get_mut(&p).is_some_and(|t| {
                    t.publishers.retain(|x| *x != g.0);
                    t.publishers.is_empty()
                });
                if empty {
                    drop_peer(&part, &mut peers, &p);
                }
            }
            Some(Event::PeerDown(p)) => drop_peer(&part, &mut peers, &p),
            _ => {}
        }
        if last_retry.elapsed() >= Duration::from_millis(100) {
            for t in peers.values_mut() {
                t.edge.ensure(&part.graph);
            }
            last_retry = Instant::now();
        }
        if peers.is_empty() && !said_waiting && started.elapsed() >= Duration::from_millis(1500) {
            said_waiting = true;
            eprintln!(
                "tracer echo: no publisher of {topic} yet (peers: {}); waiting for one (Ctrl-C to stop)",
                part.peers().len()
            );
        }
        while let Ok((peer, s)) = rx.try_recv() {
            let Some(Ok(schema)) = schemas.get(&peer) else {
                continue; // said when subscribed
            };
            let v = match decode(schema, s.payload.as_ref()) {
                Ok(v) => v,
                Err(e) => {
                    eprintln!("tracer echo: {topic} from peer {peer}: {e}");
                    continue;
                }
            };
            let v = match &a.field {
                None => v,
                Some(f) => match v.get_path(f) {
                    Some(x) => x.clone(),
                    None => {
                        break 'main Err(format!("{topic}: no field {f:?} in {}", schema.root()))
                    }
                },
            };
            let text = if a.json {
                format!("{}\n", v.to_json())
            } else {
                format!("{}---\n", v.to_yaml())
            };
            if out
                .write_all(text.as_bytes())
                .and_then(|_| out.flush())
                .is_err()
            {
                break 'main Ok(()); // stdout closed
            }
            printed += 1;
            if a.once {
                break 'main Ok(());
            }
        }
    };
    for (_, t) in peers.drain() {
        t.edge.drop_from(&part.graph);
    }
    part.shutdown();
    let n = dropped.load(Ordering::Relaxed);
    if n > 0 {
        eprintln!(
            "tracer echo: {printed} printed, {n} dropped (printing was slower than the topic)"
        );
    }
    result
}

/// The requested QoS, or what the publisher offers (reliability 1 = reliable, durability 1 =
/// transient local: rmw's numbers in the registry's `qos=` line).
fn policy(a: &Args, r: &Record) -> DeliveryPolicy {
    let offered_reliable = r.qos.is_none_or(|q| q.reliability != 2);
    let offered_transient = r.qos.is_some_and(|q| q.durability == 1);
    let reliable = match a.qos_reliability {
        Some(Reliability::Reliable) => true,
        Some(Reliability::BestEffort) => false,
        None => offered_reliable,
    };
    let transient = match a.qos_durability {
        Some(Durability::TransientLocal) => true,
        Some(Durability::Volatile) => false,
        None => offered_transient,
    };
    DeliveryPolicy::new(reliable, 0, transient)
}

fn drop_peer(part: &Participant, peers: &mut HashMap<String, PeerTopic>, p: &str) {
    if let Some(t) = peers.remove(p) {
        let sink = t.edge.sink.clone();
        t.edge.drop_from(&part.graph);
        let _ = part.graph.remove(&sink);
        eprintln!("tracer echo: peer {p} has no publisher of the topic any more");
    }
}
