//! `tracer serve`: the live graph over the Foxglove WebSocket protocol
//! (`foxglove.websocket.v1`), so Foxglove Studio opens a robot running rmw_tracer without a
//! bridge node.
//!
//! What is spoken: on connect `serverInfo`, then `advertise` of every channel (one per ROS
//! topic and type with a publisher: encoding `cdr`, `schemaEncoding` `ros2msg`, the topic
//! vertex's `:schema` text), later `advertise` / `unadvertise` as publishers come and go;
//! the client's `subscribe` / `unsubscribe`; binary `Message Data` frames (opcode 1, u32
//! subscription id, u64 receive time in ns, the CDR payload). Services, parameters and client
//! publishing are not offered (the `capabilities` list is empty).
//!
//! Threads: the main thread is the graph participant (registry, schemas, edges); each client
//! has one thread that reads its requests and writes its frames. A peer's topic gets its edge
//! when the first client subscribes and loses it when the last one goes. The sink only pushes
//! to each subscribed client's bounded queue; a slow client loses frames (counted per client),
//! never the publisher's time.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use libtracer_core::{DeliveryPolicy, Sample};
use parking_lot::Mutex;
use serde_json::{json, Value};
use tracer_recording::{Announcement, EntityKind};
use tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tungstenite::Message;

use crate::participant::{topic_path, Event, Participant, Wanted};

const SUBPROTOCOL: &str = "foxglove.websocket.v1";
/// Frames queued per client before its newest are dropped.
const CLIENT_QUEUE: usize = 1024;

#[derive(clap::Args)]
pub struct Args {
    /// TCP port.
    #[arg(long, default_value_t = 8765)]
    port: u16,
    /// Address to bind: loopback by default; another address is the user's explicit choice.
    #[arg(long, default_value = "127.0.0.1")]
    address: IpAddr,
}

struct Channel {
    topic: String,
    type_name: String,
    schema: String,
    /// Peers with a publisher on it, with their publishers' gids.
    publishers: HashMap<String, HashSet<[u8; 16]>>,
}

impl Channel {
    fn advertisement(&self, id: u32) -> Value {
        json!({"id": id, "topic": self.topic, "encoding": "cdr", "schemaName": self.type_name,
               "schema": self.schema, "schemaEncoding": "ros2msg"})
    }
}

struct Client {
    out: mpsc::SyncSender<Message>,
    /// subscription id -> channel id.
    subs: HashMap<u32, u32>,
    dropped: Arc<AtomicU64>,
}

#[derive(Default)]
struct Hub {
    channels: BTreeMap<u32, Channel>,
    clients: HashMap<u64, Client>,
}

impl Hub {
    fn broadcast(&self, text: &str) {
        for c in self.clients.values() {
            let _ = c.out.try_send(Message::text(text.to_owned()));
        }
    }

    /// Channels some client subscribes to.
    fn wanted(&self) -> HashSet<u32> {
        self.clients
            .values()
            .flat_map(|c| c.subs.values().copied())
            .collect()
    }

    /// A sample of channel `ch` to every client subscribed to it.
    fn deliver(&self, ch: u32, s: &Sample) {
        let payload = s.payload.as_ref();
        for c in self.clients.values() {
            for (sub, chan) in &c.subs {
                if *chan != ch {
                    continue;
                }
                let mut frame = Vec::with_capacity(13 + payload.len());
                frame.push(1u8);
                frame.extend_from_slice(&sub.to_le_bytes());
                frame.extend_from_slice(
                    &u64::try_from(s.received_timestamp_ns)
                        .unwrap_or(0)
                        .to_le_bytes(),
                );
                frame.extend_from_slice(payload);
                if c.out.try_send(Message::binary(frame)).is_err() {
                    c.dropped.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    }
}

pub fn run(a: Args) -> Result<(), String> {
    let addr = SocketAddr::new(a.address, a.port);
    let listener = TcpListener::bind(addr).map_err(|e| format!("cannot listen on {addr}: {e}"))?;
    listener
        .set_nonblocking(true)
        .map_err(|e| format!("{addr}: {e}"))?;
    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = stop.clone();
        ctrlc::set_handler(move || stop.store(true, Ordering::SeqCst))
            .map_err(|e| format!("cannot handle SIGINT/SIGTERM: {e}"))?;
    }
    let mut part = Participant::join("serve")?;
    let hub = Arc::new(Mutex::new(Hub::default()));
    eprintln!("tracer serve: listening on ws://{addr} ({SUBPROTOCOL}; Ctrl-C to stop)");
    let mut next_channel = 1u32;
    let mut next_client = 1u64;
    let mut next_sink = 1u64;
    // (peer, channel) -> its edge, while a client wants the channel.
    let mut edges: HashMap<(String, u32), Wanted> = HashMap::new();
    let mut threads = Vec::new();
    let mut last_retry = Instant::now();
    while !stop.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok((stream, peer)) => {
                let (id, hub2, stop2) = (next_client, hub.clone(), stop.clone());
                next_client += 1;
                threads.push(std::thread::spawn(move || {
                    if let Err(e) = client(stream, id, &hub2, &stop2) {
                        eprintln!("tracer serve: client {peer}: {e}");
                    }
                    hub2.lock().clients.remove(&id);
                }));
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => eprintln!("tracer serve: accept: {e}"),
        }
        match part.next(Duration::from_millis(20)) {
            Some(Event::Endpoint(p, Announcement::Present(r)))
                if r.kind == EntityKind::Publisher =>
            {
                let mut h = hub.lock();
                let found = h
                    .channels
                    .iter()
                    .find(|(_, c)| c.topic == r.topic && c.type_name == r.type_name)
                    .map(|(id, _)| *id);
                let id = match found {
                    Some(id) => id,
                    None => {
                        drop(h);
                        let Some(schema) = part.wait_schema(&p, &topic_path(&r.topic)) else {
                            continue;
                        };
                        h = hub.lock();
                        let id = next_channel;
                        next_channel += 1;
                        let ch = Channel {
                            topic: r.topic.clone(),
                            type_name: r.type_name.clone(),
                            schema: schema.definition,
                            publishers: HashMap::new(),
                        };
                        let msg = json!({"op": "advertise", "channels": [ch.advertisement(id)]});
                        h.channels.insert(id, ch);
                        h.broadcast(&msg.to_string());
                        id
                    }
                };
                if let Some(ch) = h.channels.get_mut(&id) {
                    ch.publishers.entry(p).or_default().insert(r.gid.0);
                }
            }
            Some(Event::Endpoint(p, Announcement::Gone(g))) => gone(&hub, |peer, gids| {
                if peer == p {
                    gids.remove(&g.0);
                }
            }),
            Some(Event::PeerDown(p)) => gone(&hub, |peer, gids| {
                if peer == p {
                    gids.clear();
                }
            }),
            _ => {}
        }
        // Edges follow the clients' subscriptions and the channels' publishers.
        let want: HashSet<(String, u32)> = {
            let h = hub.lock();
            let wanted = h.wanted();
            h.channels
                .iter()
                .filter(|(id, _)| wanted.contains(id))
                .flat_map(|(id, c)| c.publishers.keys().map(move |p| (p.clone(), *id)))
                .collect()
        };
        let unwanted: Vec<(String, u32)> = edges
            .keys()
            .filter(|k| !want.contains(*k))
            .cloned()
            .collect();
        for k in unwanted {
            if let Some(w) = edges.remove(&k) {
                let sink = w.sink.clone();
                w.drop_from(&part.graph);
                let _ = part.graph.remove(&sink);
            }
        }
        for (peer, id) in want {
            if edges.contains_key(&(peer.clone(), id)) {
                continue;
            }
            let Some(topic) = hub.lock().channels.get(&id).map(|c| c.topic.clone()) else {
                continue;
            };
            let sink = format!("/.serve/sub/{next_sink}");
            next_sink += 1;
            let h = hub.clone();
            let made = part.graph.create_sink(
                &sink,
                Arc::new(move |s: &Sample| {
                    if s.suffix.is_none() {
                        h.lock().deliver(id, s);
                    }
                }),
            );
            if let Err(e) = made {
                eprintln!("tracer serve: {sink}: {e}");
                continue;
            }
            let w = Wanted::new(
                &part.graph,
                format!("/net/{peer}{}", topic_path(&topic)),
                sink,
                DeliveryPolicy::RELIABLE,
                Some("serve"),
            );
            edges.insert((peer, id), w);
        }
        if last_retry.elapsed() >= Duration::from_millis(100) {
            for w in edges.values_mut() {
                w.ensure(&part.graph);
            }
            last_retry = Instant::now();
        }
    }
    for (_, w) in edges.drain() {
        w.drop_from(&part.graph);
    }
    part.shutdown();
    for t in threads {
        let _ = t.join();
    }
    Ok(())
}

/// Applies a publisher's (or a peer's) departure; a channel left without publishers is
/// unadvertised.
fn gone(hub: &Mutex<Hub>, mut f: impl FnMut(&str, &mut HashSet<[u8; 16]>)) {
    let mut h = hub.lock();
    let mut empty = Vec::new();
    for (id, c) in h.channels.iter_mut() {
        for (peer, gids) in c.publishers.iter_mut() {
            f(peer, gids);
        }
        c.publishers.retain(|_, g| !g.is_empty());
        if c.publishers.is_empty() {
            empty.push(*id);
        }
    }
    if empty.is_empty() {
        return;
    }
    for id in &empty {
        h.channels.remove(id);
    }
    for c in h.clients.values_mut() {
        c.subs.retain(|_, ch| !empty.contains(ch));
    }
    h.broadcast(&json!({"op": "unadvertise", "channelIds": empty}).to_string());
}

/// One client: the handshake (the subprotocol is required), then requests in, frames out.
fn client(stream: TcpStream, id: u64, hub: &Mutex<Hub>, stop: &AtomicBool) -> Result<(), String> {
    stream.set_nonblocking(false).map_err(|e| e.to_string())?;
    stream
        .set_read_timeout(Some(Duration::from_millis(20)))
        .map_err(|e| e.to_string())?;
    // The signature is tungstenite's `Callback`; its error type is the HTTP response itself.
    #[allow(clippy::result_large_err)]
    let callback = |req: &Request, mut resp: Response| -> Result<Response, ErrorResponse> {
        let offered = req
            .headers()
            .get_all("Sec-WebSocket-Protocol")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(',').map(str::trim))
            .any(|p| p == SUBPROTOCOL);
        if !offered {
            let mut e = ErrorResponse::new(Some(format!("subprotocol {SUBPROTOCOL} required")));
            *e.status_mut() = tungstenite::http::StatusCode::BAD_REQUEST;
            return Err(e);
        }
        resp.headers_mut().insert(
            "Sec-WebSocket-Protocol",
            tungstenite::http::HeaderValue::from_static(SUBPROTOCOL),
        );
        Ok(resp)
    };
    let mut ws =
        tungstenite::accept_hdr(stream, callback).map_err(|e| format!("handshake: {e}"))?;
    let (tx, rx) = mpsc::sync_channel::<Message>(CLIENT_QUEUE);
    let dropped = Arc::new(AtomicU64::new(0));
    {
        let mut h = hub.lock();
        let info = json!({"op": "serverInfo", "name": "rmw_tracer", "capabilities": [],
                          "supportedEncodings": [], "metadata": {}, "sessionId": format!("{id}")});
        let _ = tx.try_send(Message::text(info.to_string()));
        let chans: Vec<Value> = h
            .channels
            .iter()
            .map(|(id, c)| c.advertisement(*id))
            .collect();
        let _ = tx.try_send(Message::text(
            json!({"op": "advertise", "channels": chans}).to_string(),
        ));
        h.clients.insert(
            id,
            Client {
                out: tx,
                subs: HashMap::new(),
                dropped: dropped.clone(),
            },
        );
    }
    while !stop.load(Ordering::SeqCst) {
        match ws.read() {
            Ok(Message::Text(t)) => {
                if let Some(reply) = request(hub, id, t.as_str()) {
                    ws.send(Message::text(reply.to_string()))
                        .map_err(|e| e.to_string())?;
                }
            }
            Ok(Message::Close(_)) => break,
            Ok(_) => {}
            Err(tungstenite::Error::Io(e))
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(tungstenite::Error::ConnectionClosed | tungstenite::Error::AlreadyClosed) => break,
            Err(e) => return Err(e.to_string()),
        }
        while let Ok(m) = rx.try_recv() {
            if let Err(e) = ws.write(m) {
                return Err(e.to_string());
            }
        }
        match ws.flush() {
            Ok(()) => {}
            Err(tungstenite::Error::Io(e)) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e.to_string()),
        }
    }
    let n = dropped.load(Ordering::Relaxed);
    if n > 0 {
        eprintln!("tracer serve: client {id}: {n} frames dropped (the client read too slowly)");
    }
    Ok(())
}

/// A client's JSON request; a reply for a bad one (`status` level error, as the protocol has).
fn request(hub: &Mutex<Hub>, id: u64, text: &str) -> Option<Value> {
    let status = |msg: String| Some(json!({"op": "status", "level": 2, "message": msg}));
    let v: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => return status(format!("not JSON: {e}")),
    };
    let mut h = hub.lock();
    let known: HashSet<u32> = h.channels.keys().copied().collect();
    let c = h.clients.get_mut(&id)?;
    match v["op"].as_str() {
        Some("subscribe") => {
            for s in v["subscriptions"].as_array().map_or(&[][..], Vec::as_slice) {
                let (Some(sub), Some(ch)) = (s["id"].as_u64(), s["channelId"].as_u64()) else {
                    return status(format!("subscribe: bad subscription {s}"));
                };
                let (sub, ch) = (sub as u32, ch as u32);
                if !known.contains(&ch) {
                    return status(format!("subscribe: no channel {ch}"));
                }
                c.subs.insert(sub, ch);
            }
            None
        }
        Some("unsubscribe") => {
            for s in v["subscriptionIds"]
                .as_array()
                .map_or(&[][..], Vec::as_slice)
            {
                if let Some(sub) = s.as_u64() {
                    c.subs.remove(&(sub as u32));
                }
            }
            None
        }
        Some(op) => status(format!("operation {op:?} is not supported by this server")),
        None => status("a request without \"op\"".into()),
    }
}
