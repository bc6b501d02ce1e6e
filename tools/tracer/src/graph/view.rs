//! The shown graph as one JSON value, built from the [`Model`]: nodes with their endpoints,
//! topics and services with theirs (QoS and layout), and the edges rmw_tracer makes between
//! them, an incompatible-QoS pair marked with the policy.

use std::collections::BTreeMap;

use serde_json::{json, Value};
use tracer_mcap::ros2::{Durability, History, Liveliness, Reliability};
use tracer_recording::qos_match::{self, Policy};
use tracer_recording::{EntityKind, QosNumbers, Record};

use super::Model;
use crate::participant::topic_path;

fn fqn(namespace: &str, name: &str) -> String {
    if namespace.is_empty() || namespace == "/" {
        format!("/{name}")
    } else {
        format!("{}/{name}", namespace.trim_end_matches('/'))
    }
}

pub(super) fn is_ros_infra(name: &str) -> bool {
    const SERVICES: [&str; 7] = [
        "describe_parameters",
        "get_parameter_types",
        "get_parameters",
        "list_parameters",
        "set_parameters",
        "set_parameters_atomically",
        "get_type_description",
    ];
    name == "/rosout"
        || name == "/parameter_events"
        || SERVICES.iter().any(|s| name.rsplit('/').next() == Some(s))
}

/// `keep_last(10), reliable, volatile, automatic`.
fn qos_text(q: &QosNumbers) -> String {
    let o = q.offered();
    let history = match o.history {
        History::KeepLast => format!("keep_last({})", o.depth),
        History::KeepAll => "keep_all".into(),
        History::SystemDefault => "system_default".into(),
        History::Unknown => "unknown".into(),
    };
    let reliability = match o.reliability {
        Reliability::Reliable => "reliable",
        Reliability::BestEffort => "best_effort",
        Reliability::SystemDefault => "system_default",
        Reliability::BestAvailable => "best_available",
        Reliability::Unknown => "unknown",
    };
    let durability = match o.durability {
        Durability::Volatile => "volatile",
        Durability::TransientLocal => "transient_local",
        Durability::SystemDefault => "system_default",
        Durability::BestAvailable => "best_available",
        Durability::Unknown => "unknown",
    };
    let liveliness = match o.liveliness {
        Liveliness::Automatic => "automatic",
        Liveliness::ManualByTopic => "manual_by_topic",
        Liveliness::SystemDefault => "system_default",
        Liveliness::BestAvailable => "best_available",
        Liveliness::Unknown => "unknown",
    };
    format!("{history}, {reliability}, {durability}, {liveliness}")
}

/// The node an endpoint belongs to, by name.
fn node_of(r: &Record) -> String {
    fqn(&r.node_namespace, &r.node_name)
}

fn endpoint_json(peer: &str, r: &Record, layout: Option<String>) -> Value {
    json!({
        "node": node_of(r),
        "peer": peer,
        "gid": r.gid.hex(),
        "type": r.type_name,
        "qos": r.qos.as_ref().map(qos_text),
        "layout": layout,
    })
}

impl Model {
    fn of_kind(&self, kind: EntityKind, hide_ros: bool) -> Vec<(&str, &Record)> {
        self.entities
            .iter()
            .filter(|(_, r)| r.kind == kind && !(hide_ros && is_ros_infra(&r.topic)))
            .map(|((p, _), r)| (p.as_str(), r))
            .collect()
    }

    /// The `layout` of `topic`'s vertex `:schema` on `peer`; None when it has none (or empty).
    fn layout(&self, peer: &str, topic: &str) -> Option<String> {
        let schemas = self.schemas.lock();
        let l = &schemas.get(&(peer.to_owned(), topic_path(topic)))?.layout;
        (!l.is_empty()).then(|| l.clone())
    }

    /// The shown graph as one JSON value; text and DOT are drawn from it.
    pub(super) fn view(&self, hide_ros: bool) -> Value {
        let mut nodes: BTreeMap<(String, String), Value> = BTreeMap::new();
        for (peer, r) in self.of_kind(EntityKind::Node, false) {
            nodes.insert(
                (node_of(r), peer.to_owned()),
                json!({"name": node_of(r), "peer": peer, "gid": r.gid.hex(),
                       "publishers": [], "subscriptions": [], "services": [], "clients": []}),
            );
        }
        let kinds = [
            (EntityKind::Publisher, "publishers"),
            (EntityKind::Subscription, "subscriptions"),
            (EntityKind::Service, "services"),
            (EntityKind::Client, "clients"),
        ];
        let mut topics: BTreeMap<String, Value> = BTreeMap::new();
        let mut services: BTreeMap<String, Value> = BTreeMap::new();
        for (kind, key) in kinds {
            for (peer, r) in self.of_kind(kind, hide_ros) {
                let n = nodes
                    .entry((node_of(r), peer.to_owned()))
                    .or_insert_with(|| {
                        json!({"name": node_of(r), "peer": peer, "gid": null,
                               "publishers": [], "subscriptions": [], "services": [], "clients": []})
                    });
                n[key].as_array_mut().expect("array literal").push(json!({
                    "name": r.topic, "type": r.type_name, "qos": r.qos.as_ref().map(qos_text),
                }));
                let table = if matches!(kind, EntityKind::Publisher | EntityKind::Subscription) {
                    &mut topics
                } else {
                    &mut services
                };
                let t = table.entry(r.topic.clone()).or_insert_with(|| {
                    json!({"name": r.topic, "types": [], "publishers": [], "subscriptions": [],
                           "services": [], "clients": []})
                });
                let ty = json!(r.type_name);
                if !t["types"].as_array().expect("array").contains(&ty) {
                    t["types"].as_array_mut().expect("array").push(ty);
                }
                let layout = match kind {
                    EntityKind::Publisher | EntityKind::Subscription => self.layout(peer, &r.topic),
                    _ => None,
                };
                t[key]
                    .as_array_mut()
                    .expect("array literal")
                    .push(endpoint_json(peer, r, layout));
            }
        }
        for t in topics.values_mut().chain(services.values_mut()) {
            if let Some(o) = t.as_object_mut() {
                let empty: Vec<String> = o
                    .iter()
                    .filter(|(k, v)| {
                        k.as_str() != "types" && v.as_array().is_some_and(|a| a.is_empty())
                    })
                    .map(|(k, _)| k.clone())
                    .collect();
                for k in empty {
                    o.remove(&k);
                }
            }
        }
        let mut edges = Vec::new();
        let pairs = [
            (EntityKind::Publisher, EntityKind::Subscription),
            (EntityKind::Client, EntityKind::Service),
        ];
        for (from_kind, to_kind) in pairs {
            for (fp, f) in self.of_kind(from_kind, hide_ros) {
                for (tp, t) in self.of_kind(to_kind, hide_ros) {
                    if f.topic != t.topic || f.type_name != t.type_name {
                        continue;
                    }
                    // A pair whose QoS does not match gets no data: rmw_tracer does not wire
                    // it (the same rules, `tracer_recording::qos_match`). Service pairs are
                    // never refused for QoS.
                    let incompatible = match (from_kind, &f.qos, &t.qos) {
                        (EntityKind::Publisher, Some(o), Some(r)) => {
                            qos_match::incompatible(o, r).map(Policy::name)
                        }
                        _ => None,
                    };
                    edges.push(json!({
                        "name": f.topic,
                        "type": f.type_name,
                        "kind": if from_kind == EntityKind::Publisher { "topic" } else { "service" },
                        "from": {"node": node_of(f), "peer": fp, "gid": f.gid.hex()},
                        "to": {"node": node_of(t), "peer": tp, "gid": t.gid.hex()},
                        "crosses": if fp == tp { Value::Null } else { json!([fp, tp]) },
                        "incompatible_qos": incompatible,
                    }));
                }
            }
        }
        json!({
            "peers": self.peers.iter().collect::<Vec<_>>(),
            "other_users": self.other_users,
            "nodes": nodes.into_values().collect::<Vec<_>>(),
            "topics": topics.into_values().collect::<Vec<_>>(),
            "services": services.into_values().collect::<Vec<_>>(),
            "edges": edges,
        })
    }
}

// Reading a view back (text, dot, the tests): a missing string reads as empty, a missing list
// as no items, so a drawer never fails on the value it was given.
pub(super) fn s(v: &Value) -> &str {
    v.as_str().unwrap_or("")
}

pub(super) fn list(v: &Value) -> &[Value] {
    v.as_array().map_or(&[], Vec::as_slice)
}
