//! Rulings about edges over links: a remote subscribe delivers with suffix and origin (and
//! replays a transient-local history first), a remote children feed, edges bound to their link
//! and the clean-up when it drops or when either end is removed, and `sync_peers`, the barrier
//! on every earlier delivery. Runs over the in-process `MemoryFabric` (real codec) and, for a
//! peer that never answers, a scripted link that records what the graph sends.

mod common;
use common::net::{pair, T};
use common::poll::eventually;
use common::{drain, events, graph, m, p, scripted};

use std::time::{Duration, Instant};

use libtracer_core::wire::frame::Frame;
use libtracer_core::{
    DeliveryPolicy, Edge, EdgeState, Error, Graph, Role, StreamOptions, StructEvent, Vertex,
};

/// b's `/topic` and a's `/sub`, joined by an established edge a made over the link.
fn remote_edge(a: &Graph, b: &Graph) -> (Vertex, Edge) {
    b.create_stream("/topic", StreamOptions::default()).unwrap();
    let sub = a.create_stream("/sub", StreamOptions::default()).unwrap();
    let e = a
        .subscribe("/net/b/topic", "/sub", DeliveryPolicy::default())
        .unwrap();
    e.wait_established(T).unwrap();
    (sub, e)
}

#[test]
fn ruling_remote_subscribe_delivers_with_suffix_and_origin() {
    let (a, b, _na, _nb, _f) = pair();
    b.create_stream("/topic", StreamOptions::default()).unwrap();
    let sub = a.create_stream("/sub", StreamOptions::default()).unwrap();
    let e = a
        .subscribe("/net/b/topic", "/sub", DeliveryPolicy::new(true, 3, false))
        .unwrap();
    assert_eq!(e.peer(), Some("b"));
    e.wait_established(T).unwrap();
    // On the producer the edge is in :subscribers[], bound to the link to a.
    let subs = b.subscribers("/topic").unwrap();
    assert_eq!(subs.len(), 1);
    assert_eq!(subs[0].edge_id, e.id());
    assert_eq!(subs[0].target, "/net/a");
    assert_eq!(subs[0].peer.as_deref(), Some("a"));
    assert_eq!(subs[0].policy.priority(), 3);
    b.write("/topic", p(b"1"), m(1)).unwrap();
    b.write("/topic/deep/er", p(b"2"), m(2)).unwrap();
    eventually(T, || sub.len() == 2).expect("two deliveries");
    let s1 = sub.pop().unwrap();
    assert_eq!(
        (s1.meta.sequence, s1.suffix, s1.origin.as_deref()),
        (1, None, Some("b"))
    );
    let s2 = sub.pop().unwrap();
    assert_eq!(s2.suffix.as_deref(), Some("deep/er"));
    // Delivery terminates at the target on the consumer too.
    let further = a
        .create_stream("/further", StreamOptions::default())
        .unwrap();
    a.subscribe("/sub", "/further", DeliveryPolicy::default())
        .unwrap();
    b.write("/topic", p(b"3"), m(3)).unwrap();
    eventually(T, || sub.len() == 1).expect("third delivery");
    assert!(further.is_empty());
    // Unsubscribe removes the producer's entry.
    a.unsubscribe(&e).unwrap();
    eventually(T, || b.subscriber_count("/topic") == 0).expect("edge gone on b");
    // A subscribe to a missing remote source fails.
    let bad = a
        .subscribe("/net/b/none", "/sub", DeliveryPolicy::default())
        .unwrap();
    assert!(matches!(bad.wait_established(T), Err(Error::NotFound(_))));
}

#[test]
fn ruling_remote_transient_local_replays_before_live() {
    let (a, b, _na, _nb, _f) = pair();
    let t = b
        .create_stream("/latched", StreamOptions::keep_last(2))
        .unwrap();
    for i in 1..=3 {
        t.write(p(b"x"), m(i)).unwrap();
    }
    let sub = a.create_stream("/sub", StreamOptions::default()).unwrap();
    let e = a
        .subscribe(
            "/net/b/latched",
            "/sub",
            DeliveryPolicy::RELIABLE.with_transient_local(true),
        )
        .unwrap();
    e.wait_established(T).unwrap();
    // Established means the history has already landed.
    assert_eq!(drain(&sub), vec![(2, None), (3, None)]);
    t.write(p(b"x"), m(4)).unwrap();
    eventually(T, || sub.len() == 1).expect("live");
    assert_eq!(drain(&sub), vec![(4, None)]);
}

#[test]
fn ruling_remote_children_feed() {
    let (a, b, _na, _nb, _f) = pair();
    b.create_value("/w/x").unwrap();
    let feed = a.create_stream("/feed", StreamOptions::default()).unwrap();
    let e = a
        .subscribe("/net/b/w/:children[]", "/feed", DeliveryPolicy::default())
        .unwrap();
    e.wait_established(T).unwrap();
    assert!(e.is_structural());
    b.create_stream("/w/y", StreamOptions::default()).unwrap();
    eventually(T, || feed.len() == 2).expect("two events");
    let s = feed.pop().unwrap();
    assert_eq!(s.origin.as_deref(), Some("b"));
    assert_eq!(
        StructEvent::decode(s.payload.as_ref()).unwrap(),
        StructEvent::Created {
            path: "x".into(),
            role: Role::Value,
            schema: None
        }
    );
    assert_eq!(
        events(&feed),
        vec![StructEvent::Created {
            path: "y".into(),
            role: Role::Stream,
            schema: None
        }]
    );
    // The watched vertex goes on the producer: the consumer hears it and its edge closes.
    b.remove("/w").unwrap();
    eventually(T, || feed.len() == 3).expect("removal events");
    assert_eq!(
        events(&feed),
        vec![
            StructEvent::Removed { path: "x".into() },
            StructEvent::Removed { path: "y".into() },
            StructEvent::Removed { path: "".into() },
        ]
    );
    eventually(T, || matches!(e.state(), EdgeState::Closed)).expect("edge closed");
}

#[test]
fn ruling_edges_bound_to_a_link_go_with_it() {
    let (a, b, _na, nb, _f) = pair();
    let (sub, e) = remote_edge(&a, &b);
    a.create_stream("/mine", StreamOptions::default()).unwrap();
    // And b subscribes to a's vertex: a holds an edge bound to the link.
    let bsub = b.create_stream("/bsub", StreamOptions::default()).unwrap();
    b.subscribe("/net/a/mine", "/bsub", DeliveryPolicy::default())
        .unwrap()
        .wait_established(T)
        .unwrap();
    assert_eq!(a.subscriber_count("/mine"), 1);
    assert_eq!(b.subscriber_count("/topic"), 1);
    drop(nb);
    eventually(T, || a.peers().is_empty()).expect("a sees the link drop");
    // The link leaves the peer table first, then its edges are failed and unbound: on a loaded
    // machine a test thread can look in between (CI saw the edge still established).
    eventually(T, || a.subscriber_count("/mine") == 0).expect("b's edge went with the link");
    eventually(T, || {
        matches!(e.state(), EdgeState::Failed(Error::LinkDown(_)))
    })
    .expect("a's edge failed with the link");
    eventually(T, || b.subscriber_count("/topic") == 0).expect("a's edge unbound on b");
    a.write("/mine", p(b"x"), m(1)).unwrap();
    assert!(bsub.is_empty() && sub.is_empty());
    // A new subscribe to the gone peer is refused at once.
    assert!(matches!(
        a.subscribe("/net/b/topic", "/sub", DeliveryPolicy::default()),
        Err(Error::NotFound(_))
    ));
}

#[test]
fn ruling_removing_a_source_closes_the_remote_edge() {
    let (a, b, _na, _nb, _f) = pair();
    let (sub, e) = remote_edge(&a, &b);
    b.remove("/topic").unwrap();
    eventually(T, || matches!(e.state(), EdgeState::Closed)).expect("consumer edge closed");
    assert!(sub.is_empty(), "the notice is not data");
}

#[test]
fn ruling_removing_a_target_unsubscribes_on_the_peer() {
    let (a, b, _na, _nb, _f) = pair();
    let (_sub, e) = remote_edge(&a, &b);
    a.remove("/sub").unwrap();
    assert!(matches!(e.state(), EdgeState::Closed));
    eventually(T, || b.subscriber_count("/topic") == 0).expect("producer edge removed");
}

/// `Graph::sync_peers` is a barrier: when it returns, every delivery of a write made before it
/// has landed in the peer's target (no waiting afterwards), because the peer answers the READ
/// only after handling every earlier frame of the link.
#[test]
fn ruling_sync_peers_returns_once_every_earlier_delivery_has_landed() {
    let (a, b, _na, _nb, _f) = pair();
    let topic = a.create_stream("/topic", StreamOptions::default()).unwrap();
    let sub = b.create_stream("/sub", StreamOptions::default()).unwrap();
    b.subscribe("/net/a/topic", "/sub", DeliveryPolicy::new(true, 0, false))
        .unwrap()
        .wait_established(T)
        .unwrap();
    for round in 0..5u64 {
        for i in 0..200u64 {
            topic.write(p(&[7u8; 100]), m(round * 200 + i)).unwrap();
        }
        a.sync_peers(&["b".into()], Some(Instant::now() + T))
            .unwrap();
        assert_eq!(
            sub.len(),
            200,
            "round {round}: not all landed at the barrier"
        );
        drain(&sub);
        // Nothing sent since that barrier: the next needs no round trip, so even a deadline
        // already passed is met.
        a.sync_peers(&["b".into()], Some(Instant::now())).unwrap();
    }
    // A peer that is not mounted holds nothing of ours.
    a.sync_peers(&["nobody".into()], Some(Instant::now() + T))
        .unwrap();
    a.sync_peers(&[], None).unwrap();
}

/// A peer that never answers: `Timeout` at the deadline; with no deadline the wait ends when the
/// peer's link goes (a dead peer never holds the caller), without polling.
#[test]
fn sync_peers_times_out_on_a_silent_peer_and_ends_when_its_link_goes() {
    let g = graph("g");
    let (l, id) = scripted(
        &g,
        "peer",
        g.owner().uid().unwrap(),
        g.owner().gid().unwrap(),
    );
    // Nothing sent yet: nothing to wait for.
    g.sync_peers(&["peer".into()], Some(Instant::now()))
        .unwrap();
    assert!(l.pop().is_none());
    g.write("/net/peer/x", p(b"x"), m(1)).unwrap();
    assert!(matches!(l.pop(), Some(Frame::Write { .. })));
    let t0 = Instant::now();
    assert!(matches!(
        g.sync_peers(&["peer".into()], Some(t0 + Duration::from_millis(50))),
        Err(Error::Timeout)
    ));
    assert!(t0.elapsed() >= Duration::from_millis(50));
    assert!(matches!(l.pop(), Some(Frame::Read { path, .. }) if path == "/"));
    let waiting = {
        let g = g.clone();
        std::thread::spawn(move || g.sync_peers(&["peer".into()], None))
    };
    eventually(T, || l.sent.lock().unwrap().len() == 1).expect("the READ sent");
    g.link_down(id);
    assert!(waiting.join().unwrap().is_ok());
}

/// A write above the peer's frame bound crosses the link in parts and lands whole (docs/wire.md,
/// "Messages of any size"). One no receiver would join (above `MAX_JOINED`) is not dropped
/// silently: the writer gets `TooLarge` naming the size and the peer, the write is still stored
/// and delivered to every other edge, the link stays up and the next write crosses it (issue 33).
#[test]
fn a_write_too_large_for_a_link_is_an_error_for_the_writer() {
    let (a, b, _na, _nb, _f) = pair();
    let (sub, _e) = remote_edge(&a, &b);
    let local = b.create_stream("/local", StreamOptions::default()).unwrap();
    b.subscribe("/topic", "/local", DeliveryPolicy::default())
        .unwrap();
    let topic = b.vertex("/topic").unwrap();
    let above_frame: Vec<u8> = (0..libtracer_core::wire::MAX_FRAME as usize + 3)
        .map(|i| (i % 253) as u8)
        .collect();
    topic.write(p(&above_frame), m(1)).unwrap();
    eventually(T, || sub.len() == 1).expect("the message in parts crosses the link");
    let s = sub.pop().unwrap();
    assert!(s.payload.as_ref() == &above_frame[..], "whole");
    // Zeros from calloc: the pages are never touched, the test holds no 4 GiB.
    let n = libtracer_core::wire::parts::MAX_JOINED as usize + 1;
    let huge = libtracer_core::Payload::from(vec![0u8; n]);
    let err = topic.write(huge, m(2)).unwrap_err();
    match &err {
        Error::TooLarge(why) => {
            assert!(why.contains(&n.to_string()), "{why}");
            assert!(why.contains("to a"), "{why}");
        }
        other => panic!("expected TooLarge, got {other:?}"),
    }
    assert_eq!(local.len(), 2, "the local edge still got it");
    assert_eq!(topic.len(), 2, "stored at the source");
    topic.write(p(b"small"), m(3)).unwrap();
    eventually(T, || sub.len() == 1).expect("the next write crosses the link");
    assert_eq!(drain(&sub), vec![(3, None)]);
    assert_eq!(a.peers(), ["b"]);
}
