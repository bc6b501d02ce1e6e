//! `tracer serve`: the live graph over the Foxglove WebSocket protocol
//! (`foxglove.websocket.v1`), so Foxglove Studio opens a robot running rmw_tracer without a
//! bridge node.
//!
//! What is spoken: on connect `serverInfo`, then `advertise` of every channel (one per ROS
//! topic and type with a publisher: encoding `cdr`, `schemaEncoding` `ros2msg`, the topic
//! vertex's `:schema` text), later `advertise` / `unadvertise` as publishers come and go;
//! the client's `subscribe` / `unsubscribe`; binary `Message Data` frames (opcode 1, u32
//! subscription id, u64 receive time in ns, the CDR payload). Capabilities:
//! - `services`: every service a server in the graph offers, advertised (`advertiseServices`)
//!   with its request and response `ros2msg` schemas, split from the `ros2srv` definition of
//!   the server's request vertex; a `Service Call Request` becomes a real call
//!   ([`calls`]) answered by `Service Call Response` or `serviceCallFailure`;
//! - `clientPublish`: a client's channels become ROS publishers ([`publish`]);
//! - `parameters`: `getParameters` / `setParameters` on the nodes' parameter services
//!   ([`params`]).
//!
//! Bad input (not JSON, an unknown op, channel, subscription or service id, a malformed binary
//! frame, an encoding other than `cdr`, a payload that does not decode) gets a `status` message
//! of level error (and a `serviceCallFailure` for a call), never a crash; the connection goes on.
//!
//! Threads: the main thread is the graph participant (registry, schemas, edges); each client
//! has one thread that reads its requests and writes its frames. A peer's topic gets its edge
//! when the first client subscribes and loses it when the last one goes. The sink only pushes
//! to each subscribed client's bounded queue; a slow client loses frames (counted per client),
//! never the publisher's time.

mod calls;
mod client;
mod params;
mod publish;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::{IpAddr, SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use libtracer_core::{DeliveryPolicy, Sample, SchemaInfo};
use parking_lot::Mutex;
use serde_json::{json, Value};
use tracer_recording::{Announcement, EntityKind};
use tungstenite::Message;

use crate::participant::{topic_path, Event, Participant, Wanted};
use calls::Caller;
use publish::Publishing;

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

/// Peer -> the gids of its publishers (of a channel) or servers (of a service).
type Providers = HashMap<String, HashSet<[u8; 16]>>;

struct Channel {
    topic: String,
    type_name: String,
    schema: String,
    type_hash: String,
    /// Peers with a publisher on it, with their publishers' gids.
    publishers: Providers,
}

/// A ROS service (name and type) with at least one server.
struct Service {
    name: String,
    /// `pkg/srv/Type`.
    type_name: String,
    request_def: String,
    response_def: String,
    request: Arc<ros2msg::Schema>,
    response: Arc<ros2msg::Schema>,
    servers: Providers,
}

impl Service {
    /// From the `:schema` of a server's request vertex (`ros2srv`, rmw_tracer's services).
    fn new(name: &str, type_name: &str, schema: &SchemaInfo) -> Result<Service, String> {
        if schema.encoding != ros2msg::ROS2SRV || schema.definition.is_empty() {
            return Err(format!(
                "service {name}: its server's schema is {:?} without a definition (an older rmw_tracer?)",
                schema.encoding
            ));
        }
        let (request_def, response_def) = ros2msg::split_service(&schema.definition)
            .map_err(|e| format!("service {name}: {e}"))?;
        let parse = |suffix: &str, def: &str| {
            ros2msg::Schema::parse(&format!("{type_name}{suffix}"), def)
                .map(Arc::new)
                .map_err(|e| format!("service {name} {suffix}: {e}"))
        };
        Ok(Service {
            name: name.to_owned(),
            type_name: type_name.to_owned(),
            request: parse("_Request", &request_def)?,
            response: parse("_Response", &response_def)?,
            request_def,
            response_def,
            servers: HashMap::new(),
        })
    }

    fn advertisement(&self, id: u32) -> Value {
        let def = |suffix: &str, schema: &str| {
            json!({"encoding": "cdr", "schemaName": format!("{}{suffix}", self.type_name),
                   "schemaEncoding": ros2msg::ROS2MSG, "schema": schema})
        };
        json!({"id": id, "name": self.name, "type": self.type_name,
               "request": def("_Request", &self.request_def),
               "response": def("_Response", &self.response_def),
               "requestSchema": self.request_def, "responseSchema": self.response_def})
    }

    fn server_list(&self) -> Vec<calls::Server> {
        self.servers
            .iter()
            .flat_map(|(p, gids)| gids.iter().map(move |g| (p.clone(), *g)))
            .collect()
    }
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
pub struct Hub {
    channels: BTreeMap<u32, Channel>,
    services: BTreeMap<u32, Service>,
    clients: HashMap<u64, Client>,
}

/// What the client threads share with the main thread.
pub struct Shared {
    pub hub: Mutex<Hub>,
    pub caller: Caller,
    pub publishing: Publishing,
}

impl Hub {
    /// The servers and the request and response schemas of service `name` of `type_name`.
    pub fn find_service(
        &self,
        name: &str,
        type_name: &str,
    ) -> Option<(
        Vec<calls::Server>,
        Arc<ros2msg::Schema>,
        Arc<ros2msg::Schema>,
    )> {
        let s = self
            .services
            .values()
            .find(|s| s.name == name && s.type_name == type_name)?;
        Some((s.server_list(), s.request.clone(), s.response.clone()))
    }

    /// The names of the services of `type_name`.
    pub fn service_names(&self, type_name: &str) -> Vec<String> {
        self.services
            .values()
            .filter(|s| s.type_name == type_name)
            .map(|s| s.name.clone())
            .collect()
    }

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
    let shared = Arc::new(Shared {
        hub: Mutex::new(Hub::default()),
        caller: Caller::new(&part.graph, calls::new_gid())?,
        publishing: Publishing::new(&part.graph),
    });
    let hub = &shared.hub;
    eprintln!("tracer serve: listening on ws://{addr} ({SUBPROTOCOL}; Ctrl-C to stop)");
    let mut next_channel = 1u32;
    let mut next_service = 1u32;
    let mut next_client = 1u64;
    let mut next_sink = 1u64;
    // (peer, channel) -> its edge, while a client wants the channel.
    let mut edges: HashMap<(String, u32), Wanted> = HashMap::new();
    let mut threads = Vec::new();
    let mut last_retry = Instant::now();
    // Services whose schema could not be used, said once each.
    let mut refused: HashSet<(String, String)> = HashSet::new();
    while !stop.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok((stream, peer)) => {
                let (id, shared2, stop2) = (next_client, shared.clone(), stop.clone());
                next_client += 1;
                threads.push(std::thread::spawn(move || {
                    if let Err(e) = client::client(stream, id, &shared2, &stop2) {
                        eprintln!("tracer serve: client {peer}: {e}");
                    }
                    shared2.hub.lock().clients.remove(&id);
                    shared2.publishing.client_gone(id);
                }));
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => eprintln!("tracer serve: accept: {e}"),
        }
        shared.caller.expire();
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
                            type_hash: schema.type_hash,
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
            Some(Event::Endpoint(p, Announcement::Present(r))) if r.kind == EntityKind::Service => {
                let mut h = hub.lock();
                let found = h
                    .services
                    .iter()
                    .find(|(_, s)| s.name == r.topic && s.type_name == r.type_name)
                    .map(|(id, _)| *id);
                let id = match found {
                    Some(id) => id,
                    None => {
                        drop(h);
                        let path = format!(
                            "/.ros/services{}/_request/{}",
                            topic_path(&r.topic),
                            r.gid.hex()
                        );
                        let Some(schema) = part.wait_schema(&p, &path) else {
                            continue;
                        };
                        let svc = match Service::new(&r.topic, &r.type_name, &schema) {
                            Ok(s) => s,
                            Err(e) => {
                                if refused.insert((r.topic.clone(), r.type_name.clone())) {
                                    eprintln!("tracer serve: not offered: {e}");
                                }
                                continue;
                            }
                        };
                        h = hub.lock();
                        let id = next_service;
                        next_service += 1;
                        let msg = json!({"op": "advertiseServices",
                                         "services": [svc.advertisement(id)]});
                        h.services.insert(id, svc);
                        h.broadcast(&msg.to_string());
                        id
                    }
                };
                if let Some(s) = h.services.get_mut(&id) {
                    s.servers.entry(p).or_default().insert(r.gid.0);
                }
            }
            Some(Event::Endpoint(p, Announcement::Gone(g))) => gone(hub, |peer, gids| {
                if peer == p {
                    gids.remove(&g.0);
                }
            }),
            Some(Event::PeerDown(p)) => gone(hub, |peer, gids| {
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
            let h = shared.clone();
            let made = part.graph.create_sink(
                &sink,
                Arc::new(move |s: &Sample| {
                    if s.suffix.is_none() {
                        h.hub.lock().deliver(id, s);
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
    for t in threads {
        let _ = t.join();
    }
    shared.publishing.shutdown();
    part.shutdown();
    Ok(())
}

/// Applies a departure to a table's providers; the ids left without any.
fn drop_providers<T>(
    table: &mut BTreeMap<u32, T>,
    providers: impl Fn(&mut T) -> &mut Providers,
    f: &mut impl FnMut(&str, &mut HashSet<[u8; 16]>),
) -> Vec<u32> {
    let mut empty = Vec::new();
    for (id, item) in table.iter_mut() {
        let p = providers(item);
        for (peer, gids) in p.iter_mut() {
            f(peer, gids);
        }
        p.retain(|_, g| !g.is_empty());
        if p.is_empty() {
            empty.push(*id);
        }
    }
    for id in &empty {
        table.remove(id);
    }
    empty
}

/// Applies a publisher's or server's (or a peer's) departure; a channel left without
/// publishers is unadvertised, a service without servers too.
fn gone(hub: &Mutex<Hub>, mut f: impl FnMut(&str, &mut HashSet<[u8; 16]>)) {
    let mut h = hub.lock();
    let empty = drop_providers(&mut h.channels, |c| &mut c.publishers, &mut f);
    let no_servers = drop_providers(&mut h.services, |s| &mut s.servers, &mut f);
    if !empty.is_empty() {
        for c in h.clients.values_mut() {
            c.subs.retain(|_, ch| !empty.contains(ch));
        }
        h.broadcast(&json!({"op": "unadvertise", "channelIds": empty}).to_string());
    }
    if !no_servers.is_empty() {
        h.broadcast(&json!({"op": "unadvertiseServices", "serviceIds": no_servers}).to_string());
    }
}
