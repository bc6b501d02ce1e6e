//! The shown graph as text: peers, nodes with their endpoints, topics and services with
//! theirs, and the edges (local or over a link, incompatible QoS marked).

use serde_json::Value;

use super::view::{list, s};

pub(super) fn text(v: &Value) -> String {
    let mut o = String::new();
    let peers = list(&v["peers"]);
    o.push_str(&format!("peers ({}):\n", peers.len()));
    for p in peers {
        match v["other_users"][s(p)].as_u64() {
            Some(uid) => o.push_str(&format!("  {}  [uid {uid}: another user]\n", s(p))),
            None => o.push_str(&format!("  {}\n", s(p))),
        }
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
