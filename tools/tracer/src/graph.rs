//! `tracer graph`: the ROS graph as the endpoint registries of the peers tell it (nodes,
//! topics with types, publishers and subscriptions, services and clients, QoS per endpoint)
//! and the edges rmw_tracer makes from them: every publisher reaches every subscription of
//! its topic and type (docs/rmw-mapping.md), locally or over the link between two peers,
//! unless their QoS does not match: such a pair is listed, marked with the policy, as
//! rmw_tracer decides it (`tracer_recording::qos_match`, the one copy of the rules). A topic
//! endpoint also shows the `layout` of its peer's topic vertex `:schema` (`plain <n>`: the type
//! is loanable, its n-byte struct is its CDR body; docs/loans.md).

use std::collections::{BTreeMap, BTreeSet};
use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tracer_mcap::ros2::{Durability, History, Liveliness, Reliability};
use tracer_recording::qos_match::{self, Policy};
use tracer_recording::{Announcement, EntityKind, Gid, QosNumbers, Record};

use crate::participant::{topic_path, Event, Participant, Schemas};

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Format {
    Text,
    Dot,
    Json,
}

#[derive(clap::Args)]
pub struct Args {
    /// Graphviz DOT (nodes as ellipses, topics as boxes, an edge per publisher / subscription).
    #[arg(long, conflicts_with = "json")]
    dot: bool,
    /// One JSON object (with --watch: one per line, per change).
    #[arg(long)]
    json: bool,
    /// Keep running and redraw whenever the graph changes (Ctrl-C to stop).
    #[arg(long)]
    watch: bool,
    /// Leave out /rosout, /parameter_events and the parameter and type-description services
    /// every node has.
    #[arg(long)]
    hide_ros: bool,
    /// How long to wait for the peers' registries before printing (seconds); printing is
    /// earlier when every peer's registry has arrived and nothing changed for 0.3 s.
    #[arg(long, default_value_t = 2.0)]
    wait: f64,
}

/// What the registries say, per peer.
#[derive(Default)]
struct Model {
    peers: BTreeSet<String>,
    entities: BTreeMap<(String, Gid), Record>,
    /// The peers' vertex `:schema`s (the participant's structural feeds): topic layouts.
    schemas: Schemas,
}

impl Model {
    /// True when the event changed what is shown.
    fn apply(&mut self, ev: Event) -> bool {
        match ev {
            Event::PeerUp(p) => self.peers.insert(p),
            Event::PeerDown(p) => {
                self.entities.retain(|(q, _), _| *q != p);
                self.peers.remove(&p)
            }
            Event::Endpoint(p, Announcement::Present(r)) => {
                let key = (p, r.gid);
                let changed = self.entities.get(&key) != Some(&*r);
                self.entities.insert(key, *r);
                changed
            }
            Event::Endpoint(p, Announcement::Gone(g)) => self.entities.remove(&(p, g)).is_some(),
        }
    }
}

fn fqn(namespace: &str, name: &str) -> String {
    if namespace.is_empty() || namespace == "/" {
        format!("/{name}")
    } else {
        format!("{}/{name}", namespace.trim_end_matches('/'))
    }
}

fn is_ros_infra(name: &str) -> bool {
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
    fn view(&self, hide_ros: bool) -> Value {
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
            "nodes": nodes.into_values().collect::<Vec<_>>(),
            "topics": topics.into_values().collect::<Vec<_>>(),
            "services": services.into_values().collect::<Vec<_>>(),
            "edges": edges,
        })
    }
}

fn s(v: &Value) -> &str {
    v.as_str().unwrap_or("")
}

fn list(v: &Value) -> &[Value] {
    v.as_array().map_or(&[], Vec::as_slice)
}

fn text(v: &Value) -> String {
    let mut o = String::new();
    let peers = list(&v["peers"]);
    o.push_str(&format!("peers ({}):\n", peers.len()));
    for p in peers {
        o.push_str(&format!("  {}\n", s(p)));
    }
    let nodes = list(&v["nodes"]);
    o.push_str(&format!("nodes ({}):\n", nodes.len()));
    for n in nodes {
        o.push_str(&format!("  {}  [peer {}]\n", s(&n["name"]), s(&n["peer"])));
        for key in ["publishers", "subscriptions", "services", "clients"] {
            let items = list(&n[key]);
            if items.is_empty() {
                continue;
            }
            o.push_str(&format!("    {key}:\n"));
            for e in items {
                let qos = e["qos"]
                    .as_str()
                    .map(|q| format!("  {q}"))
                    .unwrap_or_default();
                o.push_str(&format!(
                    "      {} [{}]{qos}\n",
                    s(&e["name"]),
                    s(&e["type"])
                ));
            }
        }
    }
    for (title, key, roles) in [
        ("topics", "topics", ["publishers", "subscriptions"]),
        ("services", "services", ["services", "clients"]),
    ] {
        let items = list(&v[key]);
        o.push_str(&format!("{title} ({}):\n", items.len()));
        for t in items {
            let types: Vec<&str> = list(&t["types"]).iter().map(s).collect();
            let mut layouts: Vec<&str> = roles
                .iter()
                .flat_map(|r| list(&t[*r]))
                .filter_map(|e| e["layout"].as_str())
                .collect();
            layouts.sort_unstable();
            layouts.dedup();
            let layout = if layouts.is_empty() {
                String::new()
            } else {
                format!("  layout {}", layouts.join(", "))
            };
            o.push_str(&format!(
                "  {} [{}]{layout}\n",
                s(&t["name"]),
                types.join(", ")
            ));
            for role in roles {
                for e in list(&t[role]) {
                    let qos = e["qos"]
                        .as_str()
                        .map(|q| format!("  {q}"))
                        .unwrap_or_default();
                    o.push_str(&format!(
                        "    {:<13} {} [peer {}]{qos}\n",
                        role.trim_end_matches('s'),
                        s(&e["node"]),
                        s(&e["peer"])
                    ));
                }
            }
        }
    }
    let edges = list(&v["edges"]);
    o.push_str(&format!("edges ({}):\n", edges.len()));
    for e in edges {
        let via = match list(&e["crosses"]) {
            [a, b] => format!("link {} -> {}", s(a), s(b)),
            _ => format!("local in {}", s(&e["from"]["peer"])),
        };
        let qos = match e["incompatible_qos"].as_str() {
            Some(p) => format!("  INCOMPATIBLE QoS: {p} (no data flows)"),
            None => String::new(),
        };
        o.push_str(&format!(
            "  {}: {} -> {}  ({via}){qos}\n",
            s(&e["name"]),
            s(&e["from"]["node"]),
            s(&e["to"]["node"])
        ));
    }
    o
}

fn dot_id(prefix: &str, name: &str) -> String {
    format!("\"{prefix}:{}\"", name.replace('"', "\\\""))
}

fn dot(v: &Value) -> String {
    let mut o = String::from("digraph ros {\n  rankdir=LR;\n");
    let mut by_peer: BTreeMap<&str, Vec<&Value>> = BTreeMap::new();
    for n in list(&v["nodes"]) {
        by_peer.entry(s(&n["peer"])).or_default().push(n);
    }
    for (i, (peer, nodes)) in by_peer.iter().enumerate() {
        o.push_str(&format!(
            "  subgraph cluster_{i} {{\n    label=\"{}\";\n",
            peer.replace('"', "\\\"")
        ));
        for n in nodes {
            o.push_str(&format!(
                "    {} [shape=ellipse, label=\"{}\"];\n",
                dot_id(&format!("node@{peer}"), s(&n["name"])),
                s(&n["name"]).replace('"', "\\\"")
            ));
        }
        o.push_str("  }\n");
    }
    for (key, shape) in [("topics", "box"), ("services", "hexagon")] {
        for t in list(&v[key]) {
            let types: Vec<&str> = list(&t["types"]).iter().map(s).collect();
            o.push_str(&format!(
                "  {} [shape={shape}, label=\"{}\\n{}\"];\n",
                dot_id(key, s(&t["name"])),
                s(&t["name"]).replace('"', "\\\""),
                types.join(", ")
            ));
            for (role, outgoing) in [
                ("publishers", true),
                ("subscriptions", false),
                ("clients", true),
                ("services", false),
            ] {
                for e in list(&t[role]) {
                    let node = dot_id(&format!("node@{}", s(&e["peer"])), s(&e["node"]));
                    let topic = dot_id(key, s(&t["name"]));
                    let label = e["qos"].as_str().unwrap_or("");
                    let (a, b) = if outgoing {
                        (node, topic)
                    } else {
                        (topic, node)
                    };
                    o.push_str(&format!("  {a} -> {b} [label=\"{label}\", fontsize=8];\n"));
                }
            }
        }
    }
    // A pair that does not match: a dashed red edge from publisher to subscriber, with the
    // policy.
    for e in list(&v["edges"]) {
        if let Some(p) = e["incompatible_qos"].as_str() {
            let end = |x: &Value| dot_id(&format!("node@{}", s(&x["peer"])), s(&x["node"]));
            o.push_str(&format!(
                "  {} -> {} [style=dashed, color=red, fontcolor=red, fontsize=8, label=\"{}: QoS incompatible: {p}\"];\n",
                end(&e["from"]),
                end(&e["to"]),
                s(&e["name"]).replace('"', "\\\"")
            ));
        }
    }
    o.push_str("}\n");
    o
}

fn render(v: &Value, format: Format) -> String {
    match format {
        Format::Text => text(v),
        Format::Dot => dot(v),
        Format::Json => format!("{v}\n"),
    }
}

pub fn run(a: Args) -> Result<(), String> {
    let format = if a.dot {
        Format::Dot
    } else if a.json {
        Format::Json
    } else {
        Format::Text
    };
    let stop = Arc::new(AtomicBool::new(false));
    if a.watch {
        let stop = stop.clone();
        ctrlc::set_handler(move || stop.store(true, Ordering::SeqCst))
            .map_err(|e| format!("cannot handle SIGINT/SIGTERM: {e}"))?;
    }
    let mut part = Participant::join("graph")?;
    let mut model = Model {
        schemas: part.schemas.clone(),
        ..Model::default()
    };
    let started = Instant::now();
    let deadline = started + Duration::from_secs_f64(a.wait.max(0.0));
    let mut last_change = Instant::now();
    // Until the registries have arrived (or --wait passed): collect.
    while Instant::now() < deadline {
        if let Some(ev) = part.next(Duration::from_millis(50)) {
            if model.apply(ev) {
                last_change = Instant::now();
            }
        }
        let quiet = last_change.elapsed() >= Duration::from_millis(300);
        if quiet && part.settled() && started.elapsed() >= Duration::from_millis(300) {
            break;
        }
    }
    let tty = std::io::stdout().is_terminal();
    let mut out = std::io::stdout().lock();
    let mut shown = model.view(a.hide_ros);
    let mut draw = |v: &Value| -> bool {
        let clear = if a.watch && tty && format != Format::Json {
            "\x1b[2J\x1b[H"
        } else {
            ""
        };
        let sep = if a.watch && !tty && format != Format::Json {
            "\n"
        } else {
            ""
        };
        write!(out, "{clear}{}{sep}", render(v, format)).is_ok() && out.flush().is_ok()
    };
    if !draw(&shown) || !a.watch {
        part.shutdown();
        return Ok(());
    }
    let mut dirty = false;
    while !stop.load(Ordering::SeqCst) {
        if let Some(ev) = part.next(Duration::from_millis(100)) {
            if model.apply(ev) {
                dirty = true;
                last_change = Instant::now();
            }
        }
        // Redraw once a burst of changes is over (a node start is a dozen records).
        if dirty && last_change.elapsed() >= Duration::from_millis(200) {
            dirty = false;
            let v = model.view(a.hide_ros);
            if v != shown {
                shown = v;
                if !draw(&shown) {
                    break; // stdout closed
                }
            }
        }
    }
    part.shutdown();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(kind: EntityKind, id: u8, node: &str, topic: &str, ty: &str) -> Box<Record> {
        let mut r = Record::new(kind, Gid([id; 16]));
        r.node_name = node.into();
        r.node_namespace = "/".into();
        r.topic = topic.into();
        r.type_name = ty.into();
        if matches!(kind, EntityKind::Publisher | EntityKind::Subscription) {
            r.qos = QosNumbers::decode("1,7,1,2,1");
        }
        Box::new(r)
    }

    #[test]
    fn edges_join_publishers_and_subscriptions_of_one_type_and_name_the_link() {
        let mut m = Model::default();
        let s = "std_msgs/msg/String";
        for ev in [
            Event::PeerUp("a".into()),
            Event::PeerUp("b".into()),
            Event::Endpoint(
                "a".into(),
                Announcement::Present(rec(EntityKind::Node, 1, "talker", "", "")),
            ),
            Event::Endpoint(
                "a".into(),
                Announcement::Present(rec(EntityKind::Publisher, 2, "talker", "/chatter", s)),
            ),
            Event::Endpoint(
                "a".into(),
                Announcement::Present(rec(EntityKind::Subscription, 3, "talker", "/chatter", s)),
            ),
            Event::Endpoint(
                "b".into(),
                Announcement::Present(rec(EntityKind::Subscription, 4, "listener", "/chatter", s)),
            ),
            Event::Endpoint(
                "b".into(),
                Announcement::Present(rec(
                    EntityKind::Subscription,
                    5,
                    "odd",
                    "/chatter",
                    "x/msg/Y",
                )),
            ),
            Event::Endpoint(
                "b".into(),
                Announcement::Present(rec(EntityKind::Service, 6, "listener", "/srv", "p/srv/S")),
            ),
            Event::Endpoint(
                "a".into(),
                Announcement::Present(rec(EntityKind::Client, 7, "talker", "/srv", "p/srv/S")),
            ),
        ] {
            assert!(m.apply(ev));
        }
        let v = m.view(false);
        let edges = list(&v["edges"]);
        assert_eq!(edges.len(), 3, "{v:#}");
        assert_eq!(edges[0]["crosses"], Value::Null);
        assert_eq!(edges[1]["crosses"], json!(["a", "b"]));
        assert_eq!(edges[2]["kind"], "service");
        assert_eq!(list(&v["topics"])[0]["types"], json!([s, "x/msg/Y"]));
        // No :schema seen: no layout.
        assert_eq!(
            list(&v["topics"])[0]["publishers"][0]["layout"],
            Value::Null
        );
        m.schemas.lock().insert(
            ("a".into(), "/chatter".into()),
            libtracer_core::SchemaInfo {
                type_name: s.into(),
                encoding: "ros2msg".into(),
                type_hash: String::new(),
                definition: String::new(),
                layout: "plain 48".into(),
            },
        );
        let v = m.view(false);
        let chatter = &list(&v["topics"])[0];
        assert_eq!(chatter["publishers"][0]["layout"], "plain 48");
        assert_eq!(chatter["subscriptions"][0]["layout"], "plain 48");
        assert_eq!(
            chatter["subscriptions"][1]["layout"],
            Value::Null,
            "peer b has no :schema"
        );
        assert!(text(&v).contains("  /chatter [std_msgs/msg/String, x/msg/Y]  layout plain 48\n"));
        let t = text(&v);
        assert!(
            t.contains("/chatter: /talker -> /listener  (link a -> b)"),
            "{t}"
        );
        assert!(
            t.contains("keep_last(7), reliable, volatile, automatic"),
            "{t}"
        );
        assert!(dot(&v).contains("\"node@a:/talker\" -> \"topics:/chatter\""));
        // A retraction and a peer going take their endpoints with them.
        assert!(m.apply(Event::Endpoint(
            "b".into(),
            Announcement::Gone(Gid([4; 16]))
        )));
        assert!(m.apply(Event::PeerDown("a".into())));
        let v = m.view(false);
        assert_eq!(list(&v["edges"]).len(), 0);
        assert_eq!(list(&v["peers"]), &[json!("b")]);
    }

    #[test]
    fn an_incompatible_pair_is_marked_with_the_policy() {
        let mut m = Model::default();
        let s = "std_msgs/msg/String";
        let with = |kind, id, node: &str, qos: &str| {
            let mut r = rec(kind, id, node, "/t", s);
            r.qos = QosNumbers::decode(qos);
            r
        };
        let p = |r| Event::Endpoint("a".into(), Announcement::Present(r));
        m.apply(Event::PeerUp("a".into()));
        // A best-effort publisher, a reliable one; a reliable volatile subscription, a
        // best-effort transient-local one.
        m.apply(p(with(EntityKind::Publisher, 1, "be", "1,7,2,2,1")));
        m.apply(p(with(EntityKind::Publisher, 2, "rel", "1,7,1,2,1")));
        m.apply(p(with(EntityKind::Subscription, 3, "sub_rel", "1,7,1,2,1")));
        m.apply(p(with(EntityKind::Subscription, 4, "sub_tl", "1,7,2,1,1")));
        let v = m.view(false);
        let marks: Vec<(String, String, Value)> = list(&v["edges"])
            .iter()
            .map(|e| {
                let n = |x: &Value| s_owned(&x["node"]);
                (n(&e["from"]), n(&e["to"]), e["incompatible_qos"].clone())
            })
            .collect();
        assert_eq!(
            marks,
            [
                ("/be".into(), "/sub_rel".into(), json!("RELIABILITY")),
                ("/be".into(), "/sub_tl".into(), json!("DURABILITY")),
                ("/rel".into(), "/sub_rel".into(), Value::Null),
                ("/rel".into(), "/sub_tl".into(), json!("DURABILITY")),
            ]
        );
        let t = text(&v);
        assert!(
            t.contains(
                "/t: /be -> /sub_rel  (local in a)  INCOMPATIBLE QoS: RELIABILITY (no data flows)"
            ),
            "{t}"
        );
        assert!(t.contains("/t: /rel -> /sub_rel  (local in a)\n"), "{t}");
        let d = dot(&v);
        assert!(
            d.contains("\"node@a:/be\" -> \"node@a:/sub_rel\" [style=dashed, color=red, fontcolor=red, fontsize=8, label=\"/t: QoS incompatible: RELIABILITY\"]"),
            "{d}"
        );
        assert_eq!(d.matches("style=dashed").count(), 3, "{d}");
    }

    fn s_owned(v: &Value) -> String {
        s(v).to_owned()
    }

    #[test]
    fn hide_ros_leaves_out_what_every_node_has() {
        assert!(is_ros_infra("/rosout"));
        assert!(is_ros_infra("/talker/get_parameters"));
        assert!(!is_ros_infra("/chatter"));
    }
}
