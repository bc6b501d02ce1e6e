//! The graph a set of registry events gives: edges, layouts, incompatible QoS, hiding the ROS
//! infrastructure, and how text and DOT draw them.

use serde_json::{json, Value};
use tracer_recording::{Announcement, EntityKind, Gid, QosNumbers, Record};

use super::dot::dot;
use super::text::text;
use super::view::{is_ros_infra, list, s};
use super::Model;
use crate::participant::Event;

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
