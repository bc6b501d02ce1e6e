//! The MCU's node in the graph: a libtracer graph of its own, named after the node, that the
//! holder of the port runs for it (docs/serial.md section 9). It joins the host's rendezvous
//! directory like any process's graph, carries the registry records rmw_tracer writes for a
//! node and its endpoints, a stream vertex per MCU publisher and a ring per MCU subscription,
//! so every ROS process of the host (and of linked hosts) sees the MCU by ordinary discovery,
//! one hop away. It lives from the session's `Ready` to its `Reset` or `Lost`: dropping it
//! retracts the records and closes the graph's links, so the node leaves everywhere.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use libtracer_core::{Graph, GraphConfig, Meta, Payload, Schema, StreamOptions, Vertex};
use parking_lot::Mutex;
use tracer_serial::{Endpoint, EndpointKind, NodeInfo};

use crate::boundary::{RmwError, RmwResult};
use crate::gid::Gid;
use crate::qos::{End, Qos};
use crate::registry::{EntityKind, Entry, Record, Registry, SubscriptionLink};
use crate::topic::now_ns;

/// The byte 8..16 half of the node's gid: endpoints have alias + 1 (docs/serial.md section 4),
/// the node 0, the proxy's context record the largest value (rmw_tracer's own contexts use 0,
/// but the serial spec gave 0 to the node first).
const CONTEXT_INDEX: u64 = u64::MAX;

/// An MCU subscription as the proxy holds it: the ring its peers' publishers deliver into,
/// which the serial thread drains into `Session::send`.
pub struct Inbox {
    pub alias: u8,
    pub ring: Vertex,
    link: Arc<SubscriptionLink>,
}

pub struct Proxy {
    graph: Graph,
    registry: Registry,
    /// The records; dropped before the graph shuts down, so peers read tombstones first.
    entries: Vec<Entry>,
    publishers: BTreeMap<u8, Vertex>,
    pub inboxes: Vec<Inbox>,
}

/// What the proxy graph is configured with besides its name: the holder context's domain,
/// discovery, rendezvous directory and network, so other hosts see the MCU too.
pub type Template = GraphConfig;

/// The graph's name: the node's name and its boot's gid half, so a new boot (a new
/// participant) never takes over the mount of the last one while a peer still holds it.
fn graph_name(node: &NodeInfo, gid: &[u8; 16]) -> String {
    let clean: String = node
        .name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .take(64)
        .collect();
    let half = u64::from_le_bytes(gid[..8].try_into().unwrap_or_default());
    format!("mcu-{clean}-{half:016x}")
}

fn with_index(gid: &[u8; 16], index: u64) -> Gid {
    let mut g = *gid;
    g[8..].copy_from_slice(&index.to_le_bytes());
    Gid(g)
}

/// The resolved QoS of a declared endpoint: keep last `depth`, its reliability, volatile.
fn qos_of(ep: &Endpoint) -> RmwResult<Qos> {
    let zero = ffi::rmw_time_t { sec: 0, nsec: 0 };
    let req = ffi::rmw_qos_profile_t {
        history: ffi::RMW_QOS_POLICY_HISTORY_KEEP_LAST,
        depth: usize::from(ep.depth.max(1)),
        reliability: if ep.reliable {
            ffi::RMW_QOS_POLICY_RELIABILITY_RELIABLE
        } else {
            ffi::RMW_QOS_POLICY_RELIABILITY_BEST_EFFORT
        },
        durability: ffi::RMW_QOS_POLICY_DURABILITY_VOLATILE,
        deadline: zero,
        lifespan: zero,
        liveliness: ffi::RMW_QOS_POLICY_LIVELINESS_AUTOMATIC,
        liveliness_lease_duration: zero,
        avoid_ros_namespace_conventions: false,
    };
    let end = match ep.kind {
        EndpointKind::Publisher => End::Publisher,
        EndpointKind::Subscription => End::Subscription,
    };
    Qos::resolve(&req, end)
}

fn endpoint_record(ep: &Endpoint, node_gid: Gid, qos: Qos) -> Record {
    let kind = match ep.kind {
        EndpointKind::Publisher => EntityKind::Publisher,
        EndpointKind::Subscription => EntityKind::Subscription,
    };
    let mut rec = Record::new(kind, Gid(ep.gid));
    rec.node_gid = Some(node_gid);
    rec.node_name = ep.node.name.clone();
    rec.node_namespace = ep.node.namespace.clone();
    rec.topic = ep.topic.clone();
    rec.type_name = ep.type_name.clone();
    rec.type_hash = ep.type_hash.clone();
    rec.qos = Some(qos.numbers());
    rec
}

/// A topic name the MCU declared, as a vertex path (a ROS name; refused otherwise).
fn path_of(ep: &Endpoint) -> RmwResult<String> {
    crate::names::topic_path(&ep.topic, false)
}

impl Proxy {
    /// The node and `endpoints` join the graph. `on_inbox` is called on the delivering thread
    /// whenever a message lands in an MCU subscription's ring (it wakes the serial thread).
    pub fn start(
        template: &Template,
        node: &NodeInfo,
        endpoints: &[Arc<Endpoint>],
        on_inbox: Arc<dyn Fn() + Send + Sync>,
    ) -> RmwResult<Proxy> {
        let first = endpoints
            .first()
            .map(|e| e.gid)
            .unwrap_or_else(|| tracer_serial::gid(node, 0));
        let node_gid = with_index(&first, 0);
        let mut cfg = template.clone();
        let networked = cfg.network.is_some();
        let users = cfg.host_users;
        cfg.name = Some(graph_name(node, &first));
        let mut planned = Vec::new();
        for ep in endpoints {
            planned.push((ep.clone(), path_of(ep)?, qos_of(ep)?));
        }
        // Everything a peer subscribes to is made before discovery starts (as `Context::new`
        // does): the registry, the topic vertices, the rings.
        let (graph, (registry, context_entry, publishers, rings)) = Graph::new_with(cfg, |g| {
            let mut ctx = Record::new(EntityKind::Context, with_index(&first, CONTEXT_INDEX));
            ctx.enclave = "/".to_owned();
            let (registry, entry) = Registry::start(g.clone(), ctx)?;
            // What a context grants peers of other users and hosts (without SROS2: anyone the
            // network lets in; the proxy holds no enclave of its own).
            crate::security::grant_peers(g, None, networked, users)?;
            let mut publishers = BTreeMap::new();
            let mut rings = Vec::new();
            for (ep, path, qos) in &planned {
                match ep.kind {
                    EndpointKind::Publisher => {
                        let v = g.create_stream(path, StreamOptions::keep_last(1))?;
                        if g.schema(path).is_none() {
                            g.set_schema(path, schema_of(ep))?;
                        }
                        publishers.insert(ep.alias, v);
                    }
                    EndpointKind::Subscription => {
                        let ring_path = format!("/.ros/sub/mcu{}", ep.alias);
                        let ring = g.create_stream(&ring_path, qos.subscription_ring())?;
                        let wake = on_inbox.clone();
                        g.set_on_land(&ring_path, Some(Arc::new(move |_| wake())))?;
                        rings.push((ep.alias, ring_path, ring));
                    }
                }
            }
            Ok::<_, RmwError>((registry, entry, publishers, rings))
        })?;
        let mut entries = vec![context_entry];
        let mut node_rec = Record::new(EntityKind::Node, node_gid);
        node_rec.node_name = node.name.clone();
        node_rec.node_namespace = node.namespace.clone();
        node_rec.enclave = "/".to_owned();
        entries.push(registry.announce(node_rec)?);
        let mut inboxes = Vec::new();
        for (ep, path, qos) in &planned {
            entries.push(registry.announce(endpoint_record(ep, node_gid, *qos))?);
            if ep.kind != EndpointKind::Subscription {
                continue;
            }
            let Some((_, ring_path, ring)) = rings.iter().find(|r| r.0 == ep.alias) else {
                continue;
            };
            let link = Arc::new(SubscriptionLink {
                gid: Gid(ep.gid),
                topic: ep.topic.clone(),
                path: path.clone(),
                type_name: ep.type_name.clone(),
                target: ring_path.clone(),
                policy: qos
                    .delivery()
                    .with_priority(crate::priority::topic_class(&ep.topic)),
                qos: *qos,
                resume: None,
                remote: Mutex::new(Some(BTreeMap::new())),
                refused_by: Mutex::new(Default::default()),
                writers: None,
                verdicts: Default::default(),
            });
            // Wired like an rmw subscription: an edge from every peer with a matching
            // publisher on the topic, made and removed by the registry as they come and go.
            registry.add_subscription(&link);
            inboxes.push(Inbox {
                alias: ep.alias,
                ring: ring.clone(),
                link,
            });
        }
        Ok(Proxy {
            graph,
            registry,
            entries,
            publishers,
            inboxes,
        })
    }

    /// A message of MCU publisher `alias`, as the session reconstructed it. `Err` gives it
    /// back when a RELIABLE + KEEP_ALL subscription has no room for it now (a paced edge
    /// without credit): the caller writes it again later, nothing waits here.
    pub fn publish(
        &self,
        alias: u8,
        writer: [u8; 16],
        sequence: u64,
        payload: Payload,
    ) -> Result<(), Payload> {
        let Some(v) = self.publishers.get(&alias) else {
            return Ok(());
        };
        let meta = Meta {
            source_timestamp_ns: now_ns(),
            sequence,
            writer,
        };
        match v.write_within(payload.clone(), meta, Duration::ZERO) {
            Err(libtracer_core::Error::Timeout) => Err(payload),
            // Any other failure is a vertex that was removed: the proxy is going away.
            _ => Ok(()),
        }
    }
}

fn schema_of(ep: &Endpoint) -> Schema {
    Schema {
        type_name: ep.type_name.clone(),
        encoding: "cdr".to_owned(),
        type_hash: ep.type_hash.clone(),
        // The MCU does not send its message definitions.
        definition: String::new(),
        layout: String::new(),
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        for i in &self.inboxes {
            i.link.disconnect(&self.graph);
        }
        // Tombstones first, then the links close: peers drop the records either way, but a
        // tombstone is read before the mount's removal is.
        self.entries.clear();
        self.registry.stop();
        self.graph.shutdown();
    }
}
