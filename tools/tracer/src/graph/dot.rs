//! The shown graph as Graphviz DOT: nodes as ellipses clustered by peer, topics as boxes,
//! services as hexagons, an edge per endpoint and a dashed red one per incompatible pair.

use std::collections::BTreeMap;

use serde_json::Value;

use super::view::{list, s};

fn dot_id(prefix: &str, name: &str) -> String {
    format!("\"{prefix}:{}\"", name.replace('"', "\\\""))
}

pub(super) fn dot(v: &Value) -> String {
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
