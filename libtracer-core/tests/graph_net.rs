//! Rulings about the graph over links: mounts at /net/<peer>, forwarded writes (never create),
//! what a peer's requests may do (the ACL with the peer's credentials, or with the principal
//! its link authenticated), and host discovery over real sockets. Runs over the in-process
//! `MemoryFabric` (real codec) and, for credentials the fabric cannot fake, a scripted link that
//! records what the graph sends. Remote edges and the `sync_peers` barrier: graph_net_edges.rs.

mod common;
use common::net::{join, pair, T};
use common::poll::eventually;
use common::{events, graph, m, p, scripted};

use std::time::Instant;

use libtracer_core::link::MemoryFabric;
use libtracer_core::wire::frame::{ErrorCode, Frame};
use libtracer_core::{
    Acl, DeliveryPolicy, Error, Graph, Principal, Rights, Role, StreamOptions, StructEvent, Subject,
};

#[test]
fn ruling_peer_mounts_at_net_and_goes_when_the_link_drops() {
    let fabric = MemoryFabric::new();
    let a = graph("a");
    let feed = a.create_stream("/feed", StreamOptions::default()).unwrap();
    a.subscribe("/net/:children[]", "/feed", DeliveryPolicy::default())
        .unwrap();
    let _na = join(&fabric, &a);
    let b = graph("b");
    let nb = join(&fabric, &b);
    eventually(T, || a.peers() == ["b"]).expect("b mounted on a");
    assert_eq!(
        a.vertex("/net/b").map(|v| v.role()),
        None,
        "a mount is not a local vertex"
    );
    eventually(T, || !feed.is_empty()).expect("Created on /net/:children[]");
    assert_eq!(
        events(&feed),
        vec![StructEvent::Created {
            path: "b".into(),
            role: Role::Mount,
            schema: None
        }]
    );
    drop(nb);
    eventually(T, || a.peers().is_empty()).expect("b unmounted on a");
    eventually(T, || !feed.is_empty()).expect("Removed on /net/:children[]");
    assert_eq!(
        events(&feed),
        vec![StructEvent::Removed { path: "b".into() }]
    );
}

#[test]
fn ruling_forwarded_write_lands_on_peer_and_never_creates() {
    let (a, b, _na, _nb, _f) = pair();
    let t = b.create_stream("/topic", StreamOptions::default()).unwrap();
    a.write("/net/b/topic", p(b"hi"), m(1)).unwrap();
    eventually(T, || !t.is_empty()).expect("write landed");
    let s = t.pop().unwrap();
    assert_eq!(s.payload.as_ref(), b"hi");
    assert_eq!(s.origin.as_deref(), Some("a"));
    // Missing path on the peer: not_found, and nothing is created there.
    assert!(matches!(
        a.write_confirmed("/net/b/missing/x", p(b"x"), m(2), T),
        Err(Error::NotFound(_))
    ));
    assert!(b.vertex("/missing").is_none());
    a.write_confirmed("/net/b/topic", p(b"ok"), m(3), T)
        .unwrap();
    // Fire-and-forget writes that fail are counted, not lost silently.
    a.write("/net/b/nope", p(b"x"), m(4)).unwrap();
    eventually(T, || a.remote_write_errors().0 == 1).expect("error reply counted");
    assert!(matches!(
        a.remote_write_errors().1,
        Some(Error::NotFound(_))
    ));
    // Remote read.
    let r = a.read("/net/b/topic", T).unwrap().unwrap();
    assert_eq!(r.payload.as_ref(), b"ok");
}

#[test]
fn ruling_forwarding_through_a_mount_is_gated_by_its_local_acl() {
    let (a, b, _na, _nb, _f) = pair();
    let t = b.create_stream("/topic", StreamOptions::default()).unwrap();
    a.create_stream("/sub", StreamOptions::default()).unwrap();
    let stranger = libtracer_core::Credentials::local(a.owner().uid().unwrap().wrapping_add(9), 99);
    a.set_acl("/sub", Acl::new().allow(Principal::Any, Rights::WRITE))
        .unwrap();
    // The peer would see a's credentials: a's own ACL on the mount decides first.
    assert!(matches!(
        a.write_as(&stranger, "/net/b/topic", p(b"x"), m(1)),
        Err(Error::PermissionDenied { .. })
    ));
    assert!(matches!(
        a.subscribe_as(&stranger, "/net/b/topic", "/sub", DeliveryPolicy::default()),
        Err(Error::PermissionDenied { .. })
    ));
    a.set_acl(
        "/net/b",
        Acl::new().allow(Principal::Gid(99), Rights::WRITE),
    )
    .unwrap();
    a.write_as(&stranger, "/net/b/topic", p(b"x"), m(1))
        .unwrap();
    eventually(T, || t.len() == 1).expect("forwarded");
    assert!(matches!(
        a.subscribe_as(&stranger, "/net/b/topic", "/sub", DeliveryPolicy::default()),
        Err(Error::PermissionDenied { .. })
    ));
    // The owner keeps its way through (the mount ACL says nothing against it).
    a.write("/net/b/topic", p(b"y"), m(2)).unwrap();
    eventually(T, || t.len() == 2).expect("forwarded");
}

#[test]
fn ruling_incoming_subscribe_checked_with_peer_credentials() {
    let g = graph("g");
    g.create_stream("/s", StreamOptions::default()).unwrap();
    let stranger = g.owner().uid().unwrap().wrapping_add(7);
    let (l, id) = scripted(&g, "peer", stranger, 777);
    let sub = |req, edge| Frame::Subscribe {
        req,
        source: "/s".into(),
        edge,
        policy: 0,
        tag: None,
        window: None,
    };
    g.link_frame(id, sub(1, 10));
    assert!(matches!(
        l.pop(),
        Some(Frame::Error {
            req: 1,
            code: ErrorCode::PermissionDenied,
            ..
        })
    ));
    assert_eq!(g.subscriber_count("/s"), 0);
    g.set_acl(
        "/s",
        Acl::new().allow(Principal::Gid(777), Rights::SUBSCRIBE),
    )
    .unwrap();
    g.link_frame(id, sub(2, 10));
    assert_eq!(l.pop(), Some(Frame::Ok { req: 2 }));
    assert_eq!(g.subscriber_count("/s"), 1);
    // The same edge id twice on one link is refused.
    g.link_frame(id, sub(3, 10));
    assert!(matches!(
        l.pop(),
        Some(Frame::Error {
            req: 3,
            code: ErrorCode::Malformed,
            ..
        })
    ));
    // Deliveries go out compact, with the consumer's edge id.
    g.write("/s", p(b"d"), m(5)).unwrap();
    match l.pop() {
        Some(Frame::Delivery {
            edge: 10,
            meta,
            suffix: None,
            payload,
        }) => {
            assert_eq!(meta.sequence, 5);
            assert_eq!(payload.as_ref(), b"d");
        }
        other => panic!("expected a delivery, got {other:?}"),
    }
    g.link_down(id);
    assert_eq!(g.subscriber_count("/s"), 0);
}

#[test]
fn ruling_incoming_write_to_missing_path_answers_not_found() {
    let g = graph("g");
    let v = g.create_value("/v").unwrap();
    let (l, id) = scripted(
        &g,
        "peer",
        g.owner().uid().unwrap(),
        g.owner().gid().unwrap(),
    );
    let w = |req, path: &str| Frame::Write {
        req,
        path: path.into(),
        meta: m(1),
        payload: p(b"x"),
    };
    g.link_frame(id, w(1, "/missing/deeper"));
    assert!(matches!(
        l.pop(),
        Some(Frame::Error {
            req: 1,
            code: ErrorCode::NotFound,
            ..
        })
    ));
    assert!(g.vertex("/missing").is_none());
    g.link_frame(id, w(2, "/v"));
    assert_eq!(l.pop(), Some(Frame::Ok { req: 2 }));
    assert_eq!(v.value().unwrap().origin.as_deref(), Some("peer"));
    g.link_frame(id, w(3, "bad//path"));
    assert!(matches!(
        l.pop(),
        Some(Frame::Error {
            req: 3,
            code: ErrorCode::Malformed,
            ..
        })
    ));
    // A stranger's write is refused by the ACL.
    let (l2, id2) = {
        g.link_down(id);
        scripted(&g, "peer", g.owner().uid().unwrap().wrapping_add(1), 1)
    };
    g.link_frame(id2, w(4, "/v"));
    assert!(matches!(
        l2.pop(),
        Some(Frame::Error {
            req: 4,
            code: ErrorCode::PermissionDenied,
            ..
        })
    ));
}

#[test]
fn ruling_a_remote_peer_is_the_principal_its_link_authenticated() {
    let g = graph("g");
    let v = g.create_value("/v").unwrap();
    g.create_stream("/topic", StreamOptions::default()).unwrap();
    let talker = Subject::Authenticated("CN=/talker".into());
    let (l, id) = common::scripted_remote(&g, "remote", talker);
    let w = |req| Frame::Write {
        req,
        path: "/v".into(),
        meta: m(1),
        payload: p(b"x"),
    };
    let sub = |req, source: &str| Frame::Subscribe {
        req,
        source: source.into(),
        edge: req,
        policy: 0,
        tag: None,
        window: None,
    };
    let refusal = |l: &common::Scripted| match l.pop() {
        Some(Frame::Error {
            code: ErrorCode::PermissionDenied,
            message,
            ..
        }) => message,
        other => panic!("expected a refusal, got {other:?}"),
    };
    // Same uid as the owner over there, and still nothing without an ACL: not the owner.
    g.link_frame(id, w(1));
    let why = refusal(&l);
    assert!(why.contains("WRITE on /v for peer CN=/talker"), "{why}");
    g.link_frame(id, sub(2, "/topic"));
    assert!(refusal(&l).contains("SUBSCRIBE on /topic for peer CN=/talker"));
    // An ACL naming the subject lets it in, for what it names only.
    g.set_acl(
        "/topic",
        Acl::new().allow(Principal::Subject("CN=/talker".into()), Rights::SUBSCRIBE),
    )
    .unwrap();
    g.link_frame(id, sub(3, "/topic"));
    assert_eq!(l.pop(), Some(Frame::Ok { req: 3 }));
    g.link_frame(id, w(4));
    refusal(&l);
    // Another subject and an anonymous peer are refused what CN=/talker may do.
    let (l2, id2) = common::scripted_remote(&g, "other", Subject::Authenticated("CN=/x".into()));
    g.link_frame(id2, sub(5, "/topic"));
    assert!(refusal(&l2).contains("for peer CN=/x"));
    let (l3, id3) = common::scripted_remote(&g, "anon", Subject::Anonymous);
    g.link_frame(id3, sub(6, "/topic"));
    assert!(refusal(&l3).contains("for an unauthenticated peer"));
    g.set_acl("/", Acl::new().allow(Principal::Anonymous, Rights::WRITE))
        .unwrap();
    g.link_frame(id3, w(7));
    assert_eq!(l3.pop(), Some(Frame::Ok { req: 7 }));
    assert_eq!(v.value().unwrap().origin.as_deref(), Some("anon"));
    // The owner's own writes stay free: no ACL above denies the owner.
    v.write(p(b"own"), m(2)).unwrap();
}

#[test]
fn ruling_discovery_host_links_graphs_of_one_domain() {
    let dir = std::env::temp_dir().join(format!(
        "tracer-graph-host-{}-{}",
        std::process::id(),
        Instant::now().elapsed().as_nanos()
    ));
    let cfg = |name: &str| common::host_config(&dir, name, 7);
    let a = Graph::new(cfg("ha")).unwrap();
    let b = Graph::new(cfg("hb")).unwrap();
    eventually(T, || a.peers() == ["hb"] && b.peers() == ["ha"]).expect("linked");
    let t = b.create_stream("/t", StreamOptions::default()).unwrap();
    let sub = a.create_stream("/sub", StreamOptions::default()).unwrap();
    a.subscribe("/net/hb/t", "/sub", DeliveryPolicy::default())
        .unwrap()
        .wait_established(T)
        .unwrap();
    t.write(p(&[1u8; 64]), m(1)).unwrap();
    eventually(T, || sub.len() == 1).expect("delivered over the socket");
    assert_eq!(sub.pop().unwrap().origin.as_deref(), Some("hb"));
    // The same name twice in one directory is refused.
    assert!(Graph::new(cfg("ha")).is_err());
    b.shutdown();
    eventually(T, || a.peers().is_empty()).expect("unmounted");
    // Every handle goes before the directory does: a transport's socket lives there.
    drop((t, sub, b));
    a.shutdown();
    drop(a);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `Graph::new_with` runs its setup before discovery: a graph already in the directory, which
/// mounts the newcomer as soon as the link is up, finds what the setup made (a subscription to
/// it is never refused with `NotFound` for having come too early).
#[test]
fn new_with_makes_its_vertices_before_any_peer_can_mount_it() {
    let dir = std::env::temp_dir().join(format!(
        "tracer-graph-new-with-{}-{}",
        std::process::id(),
        Instant::now().elapsed().as_nanos()
    ));
    let cfg = |name: &str| common::host_config(&dir, name, 7);
    let a = Graph::new(cfg("wa")).unwrap();
    let (b, peers_during_setup) = Graph::new_with(cfg("wb"), |g| {
        let v = g.create_value("/ready")?;
        v.write(p(b"here"), m(1))?;
        Ok::<_, libtracer_core::Error>(g.peers())
    })
    .unwrap();
    assert!(peers_during_setup.is_empty(), "{peers_during_setup:?}");
    eventually(T, || a.peers() == ["wb"]).expect("linked");
    let sub = a.create_stream("/sub", StreamOptions::default()).unwrap();
    a.subscribe("/net/wb/ready", "/sub", DeliveryPolicy::new(true, 0, true))
        .unwrap()
        .wait_established(T)
        .unwrap();
    eventually(T, || sub.len() == 1).expect("the retained value replayed");
    // A setup that fails leaves nothing behind: no socket, so the name is free again.
    let failed = Graph::new_with(cfg("wc"), |_| {
        Err::<(), _>(libtracer_core::Error::NotFound("/x".into()))
    });
    assert!(failed.is_err());
    assert!(!dir.join("wc.sock").exists());
    drop(sub);
    b.shutdown();
    a.shutdown();
    drop((a, b));
    let _ = std::fs::remove_dir_all(&dir);
}
