//! Client publishing (`clientPublish`): a Foxglove client's channel becomes a ROS publisher of
//! the serve process, which rmw_tracer subscriptions take from like any other.
//!
//! What a publisher is in rmw_tracer (docs/rmw-mapping.md): a stream vertex at the topic's path
//! with the type's `:schema`, and a registry record `/.ros/endpoints/<gid>` (kind publisher,
//! its node, topic, type, QoS: reliable, volatile, keep last 10) that every rmw_tracer process
//! reads from `/net/<serve>/.ros/endpoints` and answers by wiring its matching subscriptions to
//! `/net/<serve>/<topic>`. The records are rmw_tracer's own codec (`tracer_recording`), so the
//! two cannot drift apart. serve's publishers belong to one node record, `/tracer_serve`,
//! announced with the first of them. A publisher goes (the record retracted, then its vertex
//! removed) on the client's `unadvertise` or when the client disconnects.
//!
//! Payloads are checked before they are written: CDR (the only encoding offered), decodable
//! with the channel's schema when one is known, so a bad frame never reaches a subscriber.

use std::collections::HashMap;
use std::sync::Arc;

use libtracer_core::{Graph, Meta, Payload, Schema as VertexSchema, StreamOptions};
use parking_lot::Mutex;
use tracer_recording::{registry, EntityKind, Gid, QosNumbers, Record, INFINITE_NS};

use super::calls::{new_gid, now_ns};
use crate::participant::topic_path;

const NODE_NAME: &str = "tracer_serve";
const DEPTH: usize = 10;

struct Outlet {
    topic: String,
    path: String,
    gid: Gid,
    /// The schema payloads are checked with, when the definition is known.
    schema: Option<Arc<ros2msg::Schema>>,
    sequence: u64,
}

#[derive(Default)]
struct State {
    node: Option<Gid>,
    /// (client, client channel id) -> its publisher.
    outlets: HashMap<(u64, u32), Outlet>,
    /// Stream vertex path -> how many outlets write to it.
    vertices: HashMap<String, usize>,
}

pub struct Publishing {
    graph: Graph,
    state: Mutex<State>,
}

/// What the client advertised, checked.
pub struct ClientChannel {
    pub id: u32,
    pub topic: String,
    /// `pkg/msg/Type`.
    pub type_name: String,
    /// A `ros2msg` definition from the client or from a publisher of the type in the graph.
    pub definition: Option<String>,
    pub type_hash: String,
}

impl Publishing {
    pub fn new(graph: &Graph) -> Publishing {
        Publishing {
            graph: graph.clone(),
            state: Mutex::new(State::default()),
        }
    }

    fn announce(&self, rec: &Record) -> Result<(), String> {
        let text = rec.encode().ok_or("a name holds a newline")?;
        registry::announce(&self.graph, rec.gid, text)
    }

    fn retract(&self, kind: EntityKind, gid: Gid) {
        registry::retract(&self.graph, kind, gid);
    }

    /// `advertise` from client `client`.
    pub fn advertise(&self, client: u64, ch: ClientChannel) -> Result<(), String> {
        let schema = match &ch.definition {
            Some(d) => Some(Arc::new(
                ros2msg::Schema::parse(&ch.type_name, d)
                    .map_err(|e| format!("channel {} ({}): {e}", ch.id, ch.topic))?,
            )),
            None => None,
        };
        let path = topic_path(&ch.topic);
        let mut st = self.state.lock();
        if st.outlets.contains_key(&(client, ch.id)) {
            return Err(format!("channel {} is already advertised", ch.id));
        }
        let node = match st.node {
            Some(g) => g,
            None => {
                let g = new_gid();
                let mut rec = Record::new(EntityKind::Node, g);
                rec.node_name = NODE_NAME.into();
                rec.node_namespace = "/".into();
                self.announce(&rec)?;
                st.node = Some(g);
                g
            }
        };
        if !st.vertices.contains_key(&path) {
            self.graph
                .create_stream(&path, StreamOptions::keep_last(DEPTH))
                .map_err(|e| format!("cannot create {path}: {e}"))?;
            let vs = VertexSchema {
                type_name: ch.type_name.clone(),
                type_hash: ch.type_hash.clone(),
                definition: ch.definition.clone().unwrap_or_default(),
                encoding: ros2msg::ROS2MSG.to_owned(),
                // A client publishes CDR; whether the type is plain is not known here.
                layout: String::new(),
            };
            if let Err(e) = self.graph.set_schema(&path, vs) {
                let _ = self.graph.remove(&path);
                return Err(format!("cannot set the schema of {path}: {e}"));
            }
        }
        *st.vertices.entry(path.clone()).or_default() += 1;
        let gid = new_gid();
        let mut rec = Record::new(EntityKind::Publisher, gid);
        rec.node_gid = Some(node);
        rec.node_name = NODE_NAME.into();
        rec.node_namespace = "/".into();
        rec.topic = ch.topic.clone();
        rec.type_name = ch.type_name;
        rec.type_hash = ch.type_hash;
        rec.qos = Some(QosNumbers {
            history: 1, // KEEP_LAST
            depth: DEPTH,
            reliability: 1, // RELIABLE
            durability: 2,  // VOLATILE
            liveliness: 1,  // AUTOMATIC
            deadline_ns: INFINITE_NS,
            lifespan_ns: INFINITE_NS,
            lease_ns: INFINITE_NS,
        });
        let outlet = Outlet {
            topic: ch.topic,
            path,
            gid,
            schema,
            sequence: 0,
        };
        if let Err(e) = self.announce(&rec) {
            self.release(&mut st, &outlet);
            return Err(e);
        }
        st.outlets.insert((client, ch.id), outlet);
        Ok(())
    }

    /// Drops one outlet's vertex use (the vertex goes with its last outlet).
    fn release(&self, st: &mut State, o: &Outlet) {
        if let Some(n) = st.vertices.get_mut(&o.path) {
            *n -= 1;
            if *n == 0 {
                st.vertices.remove(&o.path);
                let _ = self.graph.remove(&o.path);
            }
        }
    }

    /// `unadvertise` of one channel; Err for a channel the client does not have.
    pub fn unadvertise(&self, client: u64, id: u32) -> Result<(), String> {
        let mut st = self.state.lock();
        let o = st
            .outlets
            .remove(&(client, id))
            .ok_or_else(|| format!("unadvertise: no client channel {id}"))?;
        self.retract(EntityKind::Publisher, o.gid);
        self.release(&mut st, &o);
        Ok(())
    }

    /// Every channel of a client that left.
    pub fn client_gone(&self, client: u64) {
        let ids: Vec<u32> = {
            let st = self.state.lock();
            st.outlets
                .keys()
                .filter(|(c, _)| *c == client)
                .map(|(_, id)| *id)
                .collect()
        };
        for id in ids {
            let _ = self.unadvertise(client, id);
        }
    }

    /// A `Client Message Data` payload onto the topic of channel `id`.
    pub fn publish(&self, client: u64, id: u32, payload: &[u8]) -> Result<(), String> {
        let mut st = self.state.lock();
        let o = st
            .outlets
            .get_mut(&(client, id))
            .ok_or_else(|| format!("message data: no client channel {id} (advertise it first)"))?;
        if let Some(s) = &o.schema {
            ros2msg::decode(s, payload)
                .map_err(|e| format!("message data on {}: not a CDR {}: {e}", o.topic, s.root()))?;
        } else if !matches!(payload.get(..2), Some([0, 0] | [0, 1])) || payload.len() < 4 {
            return Err(format!(
                "message data on {}: not plain CDR (no 00 00 / 00 01 encapsulation header)",
                o.topic
            ));
        }
        o.sequence += 1;
        let meta = Meta {
            source_timestamp_ns: now_ns(),
            sequence: o.sequence,
            writer: o.gid.0,
        };
        self.graph
            .write(&o.path, Payload::from(payload.to_vec()), meta)
            .map_err(|e| format!("{}: {e}", o.topic))
    }

    /// Retracts everything (serve is stopping).
    pub fn shutdown(&self) {
        let keys: Vec<(u64, u32)> = self.state.lock().outlets.keys().copied().collect();
        for (c, id) in keys {
            let _ = self.unadvertise(c, id);
        }
        if let Some(g) = self.state.lock().node.take() {
            self.retract(EntityKind::Node, g);
        }
    }
}
