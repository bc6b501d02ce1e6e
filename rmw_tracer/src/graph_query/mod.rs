//! Graph queries (R3) answered from the endpoint registry: this context's own records and every
//! peer's, as `Registry::snapshot` gives them. Pure functions over the records, so the rules
//! (what is listed, how names are demangled, when a node does not exist) are tested without C.

use std::collections::{BTreeMap, BTreeSet};

use crate::boundary::clib;
use crate::boundary::graph_out::EndpointInfo;
use crate::boundary::{RmwError, RmwResult};
use crate::names;
use crate::registry::{EntityKind, Record};

/// A registry snapshot: `(None, r)` for this context's records, `(Some(peer), r)` for a peer's.
pub type Snapshot = [(Option<String>, Record)];

/// A node as `rmw_get_node_names_with_enclaves` lists it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct NodeName {
    pub name: String,
    pub namespace: String,
    pub enclave: String,
}

/// Every node, here and on peers, sorted (a node name may repeat: ROS allows it and warns).
pub fn node_names(snap: &Snapshot) -> Vec<NodeName> {
    let mut out: Vec<NodeName> = snap
        .iter()
        .filter(|(_, r)| r.kind == EntityKind::Node)
        .map(|(_, r)| NodeName {
            name: r.node_name.clone(),
            namespace: r.node_namespace.clone(),
            enclave: if r.enclave.is_empty() {
                "/".to_owned()
            } else {
                r.enclave.clone()
            },
        })
        .collect();
    out.sort();
    out
}

/// How a topic name is reported: as the user named it (demangled), or, with `no_demangle`, as
/// the middleware names it, the vertex path (`/net/x` is the vertex `/.net/x`).
///
/// Demangled listings leave out what is not a ROS topic name (an endpoint made with
/// `avoid_ros_namespace_conventions`), as the DDS implementations leave out topics without
/// their `rt/` prefix.
fn listed_name(topic: &str, no_demangle: bool) -> Option<String> {
    if no_demangle {
        return Some(names::topic_path(topic, true).unwrap_or_else(|_| topic.to_owned()));
    }
    if clib::validate_full_topic_name(topic).is_err() {
        clib::reset_error();
        return None;
    }
    Some(topic.to_owned())
}

/// Group `records` into sorted (name, sorted types) pairs.
fn group<'a>(
    records: impl Iterator<Item = &'a Record>,
    name: impl Fn(&Record) -> Option<String>,
) -> Vec<(String, Vec<String>)> {
    let mut m: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for r in records {
        if let Some(n) = name(r) {
            m.entry(n).or_default().insert(r.type_name.clone());
        }
    }
    m.into_iter()
        .map(|(n, t)| (n, t.into_iter().collect()))
        .collect()
}

fn is_topic_endpoint(r: &Record) -> bool {
    matches!(r.kind, EntityKind::Publisher | EntityKind::Subscription)
}

/// `rmw_get_topic_names_and_types`.
pub fn topic_names_and_types(snap: &Snapshot, no_demangle: bool) -> Vec<(String, Vec<String>)> {
    group(
        snap.iter().map(|(_, r)| r).filter(|r| is_topic_endpoint(r)),
        |r| listed_name(&r.topic, no_demangle),
    )
}

/// `rmw_get_service_names_and_types`: a service is listed when a server or a client of it
/// exists (as with DDS, where either end makes the request and reply topics).
pub fn service_names_and_types(snap: &Snapshot) -> Vec<(String, Vec<String>)> {
    group(
        snap.iter()
            .map(|(_, r)| r)
            .filter(|r| matches!(r.kind, EntityKind::Service | EntityKind::Client)),
        |r| Some(r.topic.clone()),
    )
}

/// The node named `name` in `namespace`: its gids (a name may repeat). Validates both names as
/// rmw documents and fails with `RMW_RET_NODE_NAME_NON_EXISTENT` when there is no such node.
fn node_gids(snap: &Snapshot, name: &str, namespace: &str) -> RmwResult<Vec<crate::gid::Gid>> {
    clib::validate_node_name(name)?;
    clib::validate_namespace(namespace)?;
    let gids: Vec<_> = snap
        .iter()
        .filter(|(_, r)| {
            r.kind == EntityKind::Node && r.node_name == name && r.node_namespace == namespace
        })
        .map(|(_, r)| r.gid)
        .collect();
    if gids.is_empty() {
        let full = if namespace.ends_with('/') {
            format!("{namespace}{name}")
        } else {
            format!("{namespace}/{name}")
        };
        return Err(RmwError::NodeNameNonExistent(full));
    }
    Ok(gids)
}

/// The `*_names_and_types_by_node` queries: endpoints of `kind` of the named node.
pub fn names_and_types_by_node(
    snap: &Snapshot,
    kind: EntityKind,
    name: &str,
    namespace: &str,
    no_demangle: bool,
) -> RmwResult<Vec<(String, Vec<String>)>> {
    let gids = node_gids(snap, name, namespace)?;
    let of_node = |r: &&Record| r.kind == kind && r.node_gid.is_some_and(|g| gids.contains(&g));
    Ok(match kind {
        EntityKind::Publisher | EntityKind::Subscription => {
            group(snap.iter().map(|(_, r)| r).filter(of_node), |r| {
                listed_name(&r.topic, no_demangle)
            })
        }
        _ => group(snap.iter().map(|(_, r)| r).filter(of_node), |r| {
            Some(r.topic.clone())
        }),
    })
}

/// `rmw_count_*`: endpoints of `kind` on the topic (or service) `name`.
pub fn count(snap: &Snapshot, kind: EntityKind, name: &str) -> usize {
    snap.iter()
        .filter(|(_, r)| r.kind == kind && r.topic == name)
        .count()
}

/// Parse `RIHS01_<64 hex digits>`.
pub fn parse_type_hash(s: &str) -> Option<(u8, [u8; 32])> {
    let rest = s.strip_prefix("RIHS")?;
    let (ver, hex) = rest.split_once('_')?;
    let version: u8 = ver.parse().ok()?;
    if hex.len() != 64 || version == 0 {
        return None;
    }
    let mut v = [0u8; 32];
    for (i, b) in v.iter_mut().enumerate() {
        *b = u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some((version, v))
}

/// `rmw_get_publishers_info_by_topic` / `_subscriptions_info_by_topic`. With `no_mangle` the
/// name is the middleware's (a vertex path), else a ROS topic name.
pub fn endpoint_infos(
    snap: &Snapshot,
    kind: EntityKind,
    topic: &str,
    no_mangle: bool,
) -> Vec<EndpointInfo> {
    let endpoint_type = match kind {
        EntityKind::Publisher => ffi::RMW_ENDPOINT_PUBLISHER,
        _ => ffi::RMW_ENDPOINT_SUBSCRIPTION,
    };
    snap.iter()
        .map(|(_, r)| r)
        .filter(|r| r.kind == kind)
        .filter(|r| {
            if no_mangle {
                names::topic_path(&r.topic, true).is_ok_and(|p| p == topic)
            } else {
                r.topic == topic
            }
        })
        .map(|r| EndpointInfo {
            node_name: r.node_name.clone(),
            node_namespace: r.node_namespace.clone(),
            topic_type: r.type_name.clone(),
            type_hash: parse_type_hash(&r.type_hash),
            endpoint_type,
            gid: r.gid.0,
            qos: r
                .qos
                .map(crate::qos::Qos::from_numbers)
                .unwrap_or_else(crate::qos::Qos::system_default)
                .profile,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gid::GidSource;

    fn rec(
        src: &GidSource,
        kind: EntityKind,
        node: Option<&Record>,
        topic: &str,
        ty: &str,
    ) -> Record {
        let mut r = Record::new(kind, src.next());
        if let Some(n) = node {
            r.node_gid = Some(n.gid);
            r.node_name = n.node_name.clone();
            r.node_namespace = n.node_namespace.clone();
        }
        r.topic = topic.into();
        r.type_name = ty.into();
        r
    }

    fn node(src: &GidSource, name: &str, ns: &str) -> Record {
        let mut r = Record::new(EntityKind::Node, src.next());
        r.node_name = name.into();
        r.node_namespace = ns.into();
        r
    }

    fn snapshot() -> Vec<(Option<String>, Record)> {
        let a = GidSource::new();
        let b = GidSource::new();
        let talker = node(&a, "talker", "/");
        let listener = node(&b, "listener", "/ns");
        vec![
            (
                None,
                rec(
                    &a,
                    EntityKind::Publisher,
                    Some(&talker),
                    "/chatter",
                    "std_msgs/msg/String",
                ),
            ),
            (
                None,
                rec(
                    &a,
                    EntityKind::Service,
                    Some(&talker),
                    "/talker/get_parameters",
                    "rcl_interfaces/srv/GetParameters",
                ),
            ),
            (
                None,
                rec(
                    &a,
                    EntityKind::Publisher,
                    Some(&talker),
                    "/net/x",
                    "std_msgs/msg/Int32",
                ),
            ),
            (
                None,
                rec(
                    &a,
                    EntityKind::Publisher,
                    Some(&talker),
                    "raw_topic",
                    "std_msgs/msg/Int32",
                ),
            ),
            (None, talker),
            (
                Some("peer".into()),
                rec(
                    &b,
                    EntityKind::Subscription,
                    Some(&listener),
                    "/chatter",
                    "std_msgs/msg/String",
                ),
            ),
            (
                Some("peer".into()),
                rec(
                    &b,
                    EntityKind::Client,
                    Some(&listener),
                    "/add",
                    "test_msgs/srv/BasicTypes",
                ),
            ),
            (Some("peer".into()), listener),
        ]
    }

    // Ruling (rmw graph API): nodes of every peer are listed, with their enclave.
    #[test]
    fn nodes_from_every_peer() {
        let n = node_names(&snapshot());
        let names: Vec<_> = n
            .iter()
            .map(|n| (n.name.as_str(), n.namespace.as_str()))
            .collect();
        assert_eq!(names, vec![("listener", "/ns"), ("talker", "/")]);
        assert_eq!(n[0].enclave, "/");
    }

    // Ruling: demangled listings are ROS names only; no_demangle gives the vertex paths.
    #[test]
    fn topics_demangled_and_raw() {
        let s = snapshot();
        let t = topic_names_and_types(&s, false);
        assert_eq!(
            t,
            vec![
                (
                    "/chatter".to_owned(),
                    vec!["std_msgs/msg/String".to_owned()]
                ),
                ("/net/x".to_owned(), vec!["std_msgs/msg/Int32".to_owned()]),
            ]
        );
        let raw: Vec<_> = topic_names_and_types(&s, true)
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        assert_eq!(raw, vec!["/.net/x", "/chatter", "/raw_topic"]);
    }

    #[test]
    fn services_from_servers_and_clients() {
        let names: Vec<_> = service_names_and_types(&snapshot())
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        assert_eq!(names, vec!["/add", "/talker/get_parameters"]);
    }

    // Ruling (rmw_get_*_names_and_types_by_node): unknown node -> RMW_RET_NODE_NAME_NON_EXISTENT,
    // a bad name -> RMW_RET_INVALID_ARGUMENT.
    #[test]
    fn by_node() {
        let s = snapshot();
        let p = names_and_types_by_node(&s, EntityKind::Publisher, "talker", "/", false).unwrap();
        assert_eq!(p.len(), 2);
        let c = names_and_types_by_node(&s, EntityKind::Client, "listener", "/ns", false).unwrap();
        assert_eq!(
            c,
            vec![(
                "/add".to_owned(),
                vec!["test_msgs/srv/BasicTypes".to_owned()]
            )]
        );
        let none =
            names_and_types_by_node(&s, EntityKind::Subscription, "talker", "/", false).unwrap();
        assert!(none.is_empty());
        let e =
            names_and_types_by_node(&s, EntityKind::Publisher, "nobody", "/", false).unwrap_err();
        assert_eq!(e.code(), ffi::RMW_RET_NODE_NAME_NON_EXISTENT);
        let e =
            names_and_types_by_node(&s, EntityKind::Publisher, "bad name", "/", false).unwrap_err();
        assert_eq!(e.code(), ffi::RMW_RET_INVALID_ARGUMENT);
    }

    #[test]
    fn counts_and_infos() {
        let s = snapshot();
        assert_eq!(count(&s, EntityKind::Publisher, "/chatter"), 1);
        assert_eq!(count(&s, EntityKind::Subscription, "/chatter"), 1);
        assert_eq!(count(&s, EntityKind::Client, "/add"), 1);
        assert_eq!(count(&s, EntityKind::Service, "/add"), 0);
        let i = endpoint_infos(&s, EntityKind::Subscription, "/chatter", false);
        assert_eq!(i.len(), 1);
        assert_eq!(i[0].node_name, "listener");
        assert_eq!(i[0].endpoint_type, ffi::RMW_ENDPOINT_SUBSCRIPTION);
        assert_eq!(
            endpoint_infos(&s, EntityKind::Publisher, "/.net/x", true).len(),
            1
        );
        assert_eq!(
            endpoint_infos(&s, EntityKind::Publisher, "/.net/x", false).len(),
            0
        );
    }

    #[test]
    fn type_hashes() {
        let h = format!("RIHS01_{}", "0f".repeat(32));
        assert_eq!(parse_type_hash(&h), Some((1, [0x0f; 32])));
        assert_eq!(parse_type_hash("RIHS01_abc"), None);
        assert_eq!(parse_type_hash(""), None);
    }
}
