//! Rulings: history rings (depth, bytes, drops), await on a vertex's own store, readiness.

mod common;
use common::{drain, graph, m, p};

use std::time::{Duration, Instant};

use libtracer_core::{DeliveryPolicy, Error, Signal, StreamOptions, Waiter};

#[test]
fn ruling_ring_bounded_by_depth_drops_oldest_and_counts() {
    let g = graph("g");
    let s = g.create_stream("/s", StreamOptions::keep_last(4)).unwrap();
    for i in 0..10 {
        s.write(p(b"x"), m(i)).unwrap();
    }
    assert_eq!(s.take_dropped(), 6);
    assert_eq!(s.take_dropped(), 0);
    g.set_history_depth("/s", 2).unwrap();
    assert_eq!(s.take_dropped(), 2);
    assert_eq!(drain(&s), vec![(8, None), (9, None)]);
    // A consumer's ring is the consumer's: drops there count there, not at the source.
    let src = g
        .create_stream("/src", StreamOptions::keep_last(100))
        .unwrap();
    g.subscribe("/src", "/s", DeliveryPolicy::default())
        .unwrap();
    for i in 0..5 {
        src.write(p(b"x"), m(i)).unwrap();
    }
    assert_eq!(s.take_dropped(), 3);
    assert_eq!(src.take_dropped(), 0);
    assert!(matches!(
        g.set_history_depth("/nope", 1),
        Err(Error::NotFound(_))
    ));
    g.create_value("/v").unwrap();
    assert!(matches!(
        g.set_history_depth("/v", 1),
        Err(Error::WrongRole { .. })
    ));
}

#[test]
fn ruling_ring_bounded_by_bytes() {
    let g = graph("g");
    let s = g.create_stream("/s", StreamOptions::default()).unwrap();
    g.set_ring_source("/s", 100).unwrap();
    for i in 0..10 {
        s.write(p(&[0u8; 30]), m(i)).unwrap();
    }
    assert_eq!(s.len(), 3);
    assert_eq!(s.bytes(), 90);
    assert_eq!(s.take_dropped(), 7);
    let both = g
        .create_stream(
            "/b",
            StreamOptions {
                depth: 2,
                byte_budget: 1000,
            },
        )
        .unwrap();
    for i in 0..5 {
        both.write(p(&[0u8; 10]), m(i)).unwrap();
    }
    assert_eq!(both.len(), 2);
}

#[test]
fn ruling_one_writer_many_readers_share_no_global_lock() {
    // Each subscriber ring has its own lock; readers popping their rings while one writer
    // writes must see every sample exactly once per ring, in order.
    let g = graph("g");
    let src = g
        .create_stream("/src", StreamOptions::keep_last(1))
        .unwrap();
    let readers: Vec<_> = (0..3)
        .map(|i| {
            let path = format!("/r{i}");
            let v = g.create_stream(&path, StreamOptions::default()).unwrap();
            g.subscribe("/src", &path, DeliveryPolicy::default())
                .unwrap();
            v
        })
        .collect();
    let n = 20_000u64;
    let handles: Vec<_> = readers
        .into_iter()
        .map(|v| {
            std::thread::spawn(move || {
                let w = Waiter::new();
                w.attach(&v.readiness());
                let mut next = 0;
                while next < n {
                    w.wait(Some(Duration::from_secs(5)));
                    while let Some(s) = v.pop() {
                        assert_eq!(s.meta.sequence, next);
                        next += 1;
                    }
                }
                next
            })
        })
        .collect();
    for i in 0..n {
        src.write(p(b"x"), m(i)).unwrap();
    }
    for h in handles {
        assert_eq!(h.join().unwrap(), n);
    }
}

#[test]
fn ruling_await_change_sees_own_store_only_with_timeout() {
    let g = graph("g");
    let a = g.create_value("/a").unwrap();
    g.create_value("/a/child").unwrap();
    let t0 = Instant::now();
    assert!(!a.await_change(Some(Duration::from_millis(20))));
    assert!(t0.elapsed() >= Duration::from_millis(20));
    // A write below /a is not a change of /a's store.
    let g2 = g.clone();
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(10));
        g2.write("/a/child", p(b"c"), m(1)).unwrap();
    });
    assert!(!a.await_change(Some(Duration::from_millis(100))));
    t.join().unwrap();
    let a2 = a.clone();
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(10));
        a2.write(p(b"v"), m(2)).unwrap();
    });
    assert!(a.await_change(Some(Duration::from_secs(10))));
    t.join().unwrap();
    // A delivery into the store is a change too.
    let src = g.create_stream("/src", StreamOptions::default()).unwrap();
    g.subscribe("/src", "/a", DeliveryPolicy::default())
        .unwrap();
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(10));
        src.write(p(b"d"), m(3)).unwrap();
    });
    assert!(a.await_change(None));
    t.join().unwrap();
    assert_eq!(a.value().unwrap().meta.sequence, 3);
}

#[test]
fn ruling_one_waiter_blocks_on_many_rings_and_signals() {
    let g = graph("g");
    let rings: Vec<_> = (0..8)
        .map(|i| {
            g.create_stream(&format!("/r{i}"), StreamOptions::default())
                .unwrap()
        })
        .collect();
    let guard = Signal::new();
    let w = Waiter::new();
    for r in &rings {
        w.attach(&r.readiness());
    }
    w.attach(&guard.readiness());
    assert!(!w.wait(Some(Duration::from_millis(5))));
    let r5 = rings[5].clone();
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(10));
        r5.write(p(b"x"), m(1)).unwrap();
    });
    assert!(w.wait(Some(Duration::from_secs(10))));
    t.join().unwrap();
    let ready: Vec<bool> = rings.iter().map(|r| r.readiness().is_ready()).collect();
    assert_eq!(ready.iter().filter(|x| **x).count(), 1);
    assert!(ready[5]);
    rings[5].pop().unwrap();
    assert!(!rings[5].readiness().is_ready());
    assert!(!w.wait(Some(Duration::ZERO)));
    let g2 = guard.clone();
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(10));
        g2.raise();
    });
    assert!(w.wait(None));
    t.join().unwrap();
    assert!(guard.is_raised());
    guard.clear();
    assert!(!w.wait(Some(Duration::ZERO)));
}

#[test]
fn ruling_a_stream_filter_decides_what_lands_and_drops_count_nothing() {
    let g = graph("g");
    let s = g.create_stream("/s", StreamOptions::keep_last(3)).unwrap();
    let src = g
        .create_stream("/src", StreamOptions::keep_last(10))
        .unwrap();
    g.subscribe("/src", "/s", DeliveryPolicy::default())
        .unwrap();
    // Odd sequences only, whether written here or delivered by an edge.
    g.set_stream_filter(
        "/s",
        Some(std::sync::Arc::new(|x| x.meta.sequence % 2 == 1)),
    )
    .unwrap();
    for i in 0..4 {
        s.write(p(b"x"), m(i)).unwrap();
        src.write(p(b"y"), m(10 + i)).unwrap();
    }
    // Left out is not overflow: nothing is counted lost, and the ring keeps its own depth.
    assert_eq!(s.take_dropped(), 1);
    assert_eq!(drain(&s), vec![(11, None), (3, None), (13, None)]);
    g.set_stream_filter("/s", None).unwrap();
    s.write(p(b"x"), m(4)).unwrap();
    assert_eq!(drain(&s), vec![(4, None)]);
    assert!(matches!(
        g.set_stream_filter("/nope", None),
        Err(Error::NotFound(_))
    ));
}
