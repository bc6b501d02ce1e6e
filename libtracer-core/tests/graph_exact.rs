//! Rulings: exact edges (POLICY bit 5, docs/wire.md SUBSCRIBE). An exact edge takes the writes at
//! its source and nothing below it, in-process and over a link, where the producer never sends a
//! nested write for it; its transient-local replay holds the source's history only; a peer that
//! predates the bit and sends nested writes anyway is refused before any ring. Subtree edges on the
//! same source keep hearing everything.

mod common;
use common::net::{pair, T};
use common::poll::eventually;
use common::{drain, graph, m, p, scripted};

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use libtracer_core::wire::frame::Frame;
use libtracer_core::{DeliveryPolicy, Landed, Meta, Payload, StreamOptions};

fn exact() -> DeliveryPolicy {
    DeliveryPolicy::RELIABLE.with_exact(true)
}

#[test]
fn ruling_an_exact_edge_takes_its_source_only_a_subtree_edge_everything() {
    let g = graph("g");
    g.create_stream("/camera/image", StreamOptions::default())
        .unwrap();
    let only = g
        .create_stream("/only", StreamOptions::keep_last(1))
        .unwrap();
    let all = g.create_stream("/all", StreamOptions::default()).unwrap();
    let e = g.subscribe("/camera/image", "/only", exact()).unwrap();
    assert!(e.policy().is_exact());
    assert!(g.subscribers("/camera/image").unwrap()[0].policy.is_exact());
    g.subscribe("/camera/image", "/all", DeliveryPolicy::RELIABLE)
        .unwrap();
    for i in 0..100 {
        g.write("/camera/image", p(b"img"), m(i)).unwrap();
        // Twenty nested writes per image: before exact edges they evicted the image from a
        // KEEP_LAST(1) ring and counted as lost.
        for j in 0..20 {
            g.write("/camera/image/compressed", p(b"jpg"), m(1000 + j))
                .unwrap();
        }
        let s = only.pop().expect("the image itself");
        assert_eq!((s.meta.sequence, s.suffix), (i, None));
        assert!(only.pop().is_none());
    }
    assert_eq!(only.take_dropped(), 0, "nothing evicted, nothing lost");
    let got = drain(&all);
    assert_eq!(got.len(), 100 * 21, "the subtree edge hears everything");
    assert!(got
        .iter()
        .any(|(_, suffix)| suffix.as_deref() == Some("compressed")));
}

#[test]
fn ruling_an_exact_transient_local_edge_replays_its_source_only() {
    let g = graph("g");
    g.create_stream("/t", StreamOptions::keep_last(5)).unwrap();
    g.create_stream("/t/nested", StreamOptions::keep_last(5))
        .unwrap();
    for i in 0..3 {
        g.write("/t", p(b"t"), m(i)).unwrap();
        g.write("/t/nested", p(b"n"), m(100 + i)).unwrap();
    }
    let late = g.create_stream("/late", StreamOptions::default()).unwrap();
    g.subscribe("/t", "/late", exact().with_transient_local(true))
        .unwrap();
    let seqs: Vec<u64> = drain(&late).iter().map(|(seq, _)| *seq).collect();
    assert_eq!(seqs, vec![0, 1, 2]);
}

#[test]
fn ruling_no_nested_write_crosses_a_link_for_an_exact_edge() {
    let (a, b, _na, _nb, _f) = pair();
    b.create_stream("/img", StreamOptions::default()).unwrap();
    let sub = a
        .create_stream("/sub", StreamOptions::keep_last(1))
        .unwrap();
    let e = a.subscribe("/net/b/img", "/sub", exact()).unwrap();
    e.wait_established(T).unwrap();
    // The producer holds the edge as exact.
    assert!(b.subscribers("/img").unwrap()[0].policy.is_exact());
    for i in 0..50 {
        b.write("/img/compressed", p(&[7; 1000]), m(1000 + i))
            .unwrap();
    }
    b.write("/img", p(b"img"), m(1)).unwrap();
    b.sync_peers(&["a".into()], None).unwrap();
    let s = sub.pop().expect("the write at the source");
    assert_eq!((s.meta.sequence, s.suffix), (1, None));
    assert!(sub.pop().is_none());
    assert_eq!(sub.take_dropped(), 0);
    assert_eq!(a.nested_refused(), 0, "b never sent one: it knows the bit");
}

/// A producer that predates the bit reads it as reserved and sends its subtree: a scripted link
/// plays it. Its nested DELIVERY is refused on arrival (no ring, no wake-up, no hook), counted;
/// its write at the source lands.
#[test]
fn ruling_nested_deliveries_from_an_old_producer_are_refused_on_arrival() {
    let g = graph("g");
    let (l, id) = scripted(
        &g,
        "old",
        g.owner().uid().unwrap(),
        g.owner().gid().unwrap(),
    );
    let sub = g
        .create_stream("/sub", StreamOptions::keep_last(1))
        .unwrap();
    let heard = Arc::new(AtomicUsize::new(0));
    let h = heard.clone();
    g.set_on_land(
        "/sub",
        Some(Arc::new(move |_: Landed| {
            h.fetch_add(1, Ordering::SeqCst);
        })),
    )
    .unwrap();
    let e = g.subscribe("/net/old/img", "/sub", exact()).unwrap();
    let Some(Frame::Subscribe {
        req, edge, policy, ..
    }) = l.pop()
    else {
        panic!("a SUBSCRIBE went out")
    };
    assert_eq!(policy, exact().bits(), "the bit is on the wire");
    g.link_frame(id, Frame::Ok { req });
    e.wait_established(T).unwrap();
    let delivery = |suffix: Option<&str>, seq| Frame::Delivery {
        edge,
        meta: Meta {
            sequence: seq,
            ..Meta::default()
        },
        suffix: suffix.map(str::to_owned),
        payload: Payload::from(b"x".to_vec()),
    };
    g.link_frame(id, delivery(Some("compressed"), 1));
    assert!(sub.is_empty() && !sub.readiness().is_ready());
    assert_eq!(heard.load(Ordering::SeqCst), 0);
    assert_eq!(g.nested_refused(), 1);
    g.link_frame(id, delivery(None, 2));
    eventually(T, || sub.len() == 1).expect("the write at the source lands");
    assert_eq!(sub.pop().unwrap().meta.sequence, 2);
    assert_eq!(heard.load(Ordering::SeqCst), 1);
}

/// The arrival hook: once per sample that lands, told how many old samples made room for it
/// (a full KEEP_LAST ring still calls back for every arrival); never for a sample the
/// admission filter refused; cleared, never again.
#[test]
fn ruling_the_arrival_hook_runs_once_per_landed_sample() {
    let g = graph("g");
    g.create_stream("/src", StreamOptions::default()).unwrap();
    let ring = g.create_stream("/r", StreamOptions::keep_last(2)).unwrap();
    g.subscribe("/src", "/r", exact()).unwrap();
    let calls = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let c = calls.clone();
    let r2 = ring.clone();
    g.set_on_land(
        "/r",
        Some(Arc::new(move |l: Landed| {
            // Called after the lock is released: the ring can be read from the hook.
            c.lock().push((l.evicted, r2.len()));
        })),
    )
    .unwrap();
    g.set_stream_filter("/r", Some(Arc::new(|s| s.meta.sequence != 99)))
        .unwrap();
    for i in 0..5 {
        g.write("/src", p(b"x"), m(i)).unwrap();
    }
    g.write("/src", p(b"x"), m(99)).unwrap();
    assert_eq!(
        *calls.lock(),
        vec![(0, 1), (0, 2), (1, 2), (1, 2), (1, 2)],
        "five arrivals, the last three each evicting one; the refused one unheard"
    );
    assert_eq!(ring.take_dropped(), 3);
    g.set_on_land("/r", None).unwrap();
    g.write("/src", p(b"x"), m(6)).unwrap();
    assert_eq!(calls.lock().len(), 5);
    // Only streams have rings to land in.
    g.create_value("/v").unwrap();
    assert!(g.set_on_land("/v", None).is_err());
}

/// The source's edge filter judges each write for each tagged edge by the tag and the writer,
/// locally, over a link (the tag travels in SUBSCRIBE; a refused write is never sent) and in a
/// transient-local replay; an untagged edge takes everything.
#[test]
fn ruling_the_edge_filter_keeps_refused_writes_off_the_edge_and_the_link() {
    let (a, b, _na, _nb, _f) = pair();
    b.create_stream("/t", StreamOptions::keep_last(10)).unwrap();
    let writer = |w: u8, seq| Meta {
        sequence: seq,
        writer: [w; 16],
        ..Meta::default()
    };
    // Tag "even" takes writers with an even first byte; "all" everything.
    b.set_edge_filter(
        "/t",
        Some(Arc::new(|tag: &[u8], m: &Meta| {
            tag != b"even" || m.writer[0].is_multiple_of(2)
        })),
    )
    .unwrap();
    b.write("/t", p(b"h"), writer(1, 1)).unwrap();
    b.write("/t", p(b"h"), writer(2, 2)).unwrap();
    let local = b.create_stream("/local", StreamOptions::default()).unwrap();
    let untagged = b
        .create_stream("/untagged", StreamOptions::default())
        .unwrap();
    b.subscribe_tagged("/t", "/local", exact().with_transient_local(true), b"even")
        .unwrap();
    b.subscribe("/t", "/untagged", exact()).unwrap();
    let remote = a
        .create_stream("/remote", StreamOptions::default())
        .unwrap();
    let e = a
        .subscribe_tagged(
            "/net/b/t",
            "/remote",
            exact().with_transient_local(true),
            b"even",
        )
        .unwrap();
    e.wait_established(T).unwrap();
    assert_eq!(
        b.subscribers("/t")
            .unwrap()
            .iter()
            .filter_map(|s| s.tag.as_deref().map(<[u8]>::to_vec))
            .collect::<Vec<_>>(),
        vec![b"even".to_vec(), b"even".to_vec()],
        "the tag is on the edge, the remote one too"
    );
    for i in 3..9 {
        b.write("/t", p(b"x"), writer(i as u8, i)).unwrap();
    }
    b.sync_peers(&["a".into()], None).unwrap();
    let evens = vec![(2, None), (4, None), (6, None), (8, None)];
    assert_eq!(
        drain(&local),
        evens,
        "replay and live, writer 1, 3, 5, 7 refused"
    );
    assert_eq!(drain(&remote), evens, "over the link the same");
    assert_eq!(drain(&untagged).len(), 6);
    // Too long a tag is refused before anything is made.
    assert!(a
        .subscribe_tagged("/net/b/t", "/remote", exact(), &[0; 65])
        .is_err());
}

/// A reader waits for a subscriber without polling: `await_edges` past the version it read
/// returns when an edge is made there (from another graph over a link, here), at once when one
/// was made since the read, and at its deadline when none comes.
#[test]
fn ruling_await_edges_wakes_when_a_subscriber_comes() {
    let (a, b, _na, _nb, _f) = pair();
    let t = b
        .create_stream("/watched", StreamOptions::default())
        .unwrap();
    let v0 = t.edges_version();
    let soon = std::time::Instant::now() + std::time::Duration::from_millis(20);
    assert!(!t.await_edges(v0, Some(soon)), "nothing came: the deadline");
    a.create_stream("/sub", StreamOptions::default()).unwrap();
    let a2 = a.clone();
    let sub = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(30));
        a2.subscribe("/net/b/watched", "/sub", exact()).unwrap()
    });
    assert!(t.await_edges(v0, Some(std::time::Instant::now() + T)));
    assert_eq!(t.subscriber_count(), 1);
    sub.join().unwrap();
    // A change before the wait starts is not missed.
    let v1 = t.edges_version();
    assert!(v1 > v0);
    a.remove("/sub").unwrap();
    eventually(T, || t.subscriber_count() == 0).expect("the edge went");
    assert!(t.await_edges(v1, Some(std::time::Instant::now())));
}
