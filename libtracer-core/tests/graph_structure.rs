//! Rulings: the structural feed (`:children[]`) and `:schema`.

mod common;
use common::{events, graph, m, p};

use libtracer_core::{DeliveryPolicy, Error, Role, Schema, StreamOptions, StructEvent};

fn created(path: &str, role: Role) -> StructEvent {
    StructEvent::Created {
        path: path.into(),
        role,
        schema: None,
    }
}

#[test]
fn ruling_children_feed_snapshot_then_live_created_removed_schema_set() {
    let g = graph("g");
    g.create_stream("/w/a", StreamOptions::default()).unwrap();
    g.create_value("/w/a/x").unwrap();
    g.create_value("/w/b").unwrap();
    g.create_value("/elsewhere").unwrap();
    let feed = g.create_stream("/feed", StreamOptions::default()).unwrap();
    let e = g
        .subscribe("/w/:children[]", "/feed", DeliveryPolicy::default())
        .unwrap();
    assert!(e.is_structural());
    // Snapshot, tree order, paths relative to the watched vertex.
    assert_eq!(
        events(&feed),
        vec![
            created("a", Role::Stream),
            created("a/x", Role::Value),
            created("b", Role::Value)
        ]
    );
    // Live: mkdir -p announces each new vertex; writes elsewhere are not reported.
    g.write("/w/n/m", p(b"1"), m(1)).unwrap();
    g.write("/elsewhere2", p(b"1"), m(1)).unwrap();
    let schema = Schema {
        type_name: "std_msgs/msg/String".into(),
        type_hash: "RIHS01_abc".into(),
        definition: "string data".into(),
        encoding: "cdr".into(),
        ..Default::default()
    };
    g.set_schema("/w/a", schema.clone()).unwrap();
    g.remove("/w/a").unwrap();
    assert_eq!(
        events(&feed),
        vec![
            created("n", Role::Inner),
            created("n/m", Role::Value),
            StructEvent::SchemaSet {
                path: "a".into(),
                schema: schema.clone()
            },
            StructEvent::Removed { path: "a/x".into() },
            StructEvent::Removed { path: "a".into() },
        ]
    );
    // An inner vertex that gets a role is announced again, with the role and its schema.
    g.set_schema("/w/n", schema.clone()).unwrap();
    g.create_stream("/w/n", StreamOptions::default()).unwrap();
    assert_eq!(
        events(&feed),
        vec![
            StructEvent::SchemaSet {
                path: "n".into(),
                schema: schema.clone()
            },
            StructEvent::Created {
                path: "n".into(),
                role: Role::Stream,
                schema: Some(schema.clone())
            },
        ]
    );
    assert_eq!(g.schema("/w/n"), Some(schema));
    assert_eq!(g.subscribers("/w/:children[]").unwrap().len(), 1);
    assert_eq!(
        g.subscriber_count("/w"),
        0,
        ":children[] is not :subscribers[]"
    );
    g.unsubscribe(&e).unwrap();
    g.create_value("/w/z").unwrap();
    assert!(feed.is_empty());
}

#[test]
fn ruling_only_children_meta_can_be_subscribed() {
    let g = graph("g");
    g.create_value("/a").unwrap();
    g.create_stream("/t", StreamOptions::default()).unwrap();
    assert!(matches!(
        g.subscribe("/a/:acl", "/t", DeliveryPolicy::default()),
        Err(Error::SchemaNotFound(_))
    ));
    assert!(matches!(
        g.write("/a/:schema", p(b"x"), m(0)),
        Err(Error::SchemaNotFound(_))
    ));
}

#[test]
fn ruling_net_children_feed_exists_before_any_peer() {
    let g = graph("g");
    let feed = g.create_stream("/feed", StreamOptions::default()).unwrap();
    g.subscribe("/net/:children[]", "/feed", DeliveryPolicy::default())
        .unwrap();
    assert!(feed.is_empty());
    assert!(g.peers().is_empty());
    // /net is reserved for mounts.
    assert!(matches!(
        g.create_value("/net/x"),
        Err(Error::InvalidPath { .. })
    ));
    assert!(matches!(
        g.write("/net/nobody/x", p(b"x"), m(0)),
        Err(Error::NotFound(_))
    ));
}

#[test]
fn ruling_watcher_of_a_removed_vertex_hears_removed_itself_last() {
    let g = graph("g");
    g.create_value("/w/a").unwrap();
    let feed = g.create_stream("/feed", StreamOptions::default()).unwrap();
    let e = g
        .subscribe("/w/:children[]", "/feed", DeliveryPolicy::default())
        .unwrap();
    g.remove("/w").unwrap();
    assert_eq!(
        events(&feed),
        vec![
            created("a", Role::Value),
            StructEvent::Removed { path: "a".into() },
            StructEvent::Removed { path: "".into() },
        ]
    );
    assert!(matches!(e.state(), libtracer_core::EdgeState::Closed));
}
