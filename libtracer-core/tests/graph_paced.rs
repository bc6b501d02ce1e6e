//! Paced edges (docs/wire.md section 2, "Flow control"): a writer is held back by its
//! consumer's window of credit instead of the consumer losing what it cannot hold, in this
//! process and over a link (the in-process `MemoryFabric`, real codec); a write that finds no
//! room within its deadline goes nowhere; a slow reader gets everything, in order; an edge that
//! goes releases its writer.

mod common;
use common::net::{pair, T};
use common::poll::eventually;
use common::{graph, m, p};

use std::time::{Duration, Instant};

use libtracer_core::{DeliveryPolicy, Error, Graph, StreamOptions, Vertex, Window};

const SHORT: Duration = Duration::from_millis(30);

fn window(messages: u32, bytes: u64) -> Window {
    Window { messages, bytes }
}

/// `/topic` (a stream that keeps nothing but the newest sample) and `/sub`, KEEP_ALL.
fn streams(g: &Graph) -> (Vertex, Vertex) {
    let topic = g
        .create_stream("/topic", StreamOptions::keep_last(1))
        .unwrap();
    let sub = g.create_stream("/sub", StreamOptions::default()).unwrap();
    (topic, sub)
}

/// `/topic` -> `/sub` in `g`, reliable, paced by `w`.
fn paced(g: &Graph, w: Window) -> libtracer_core::Edge {
    g.subscribe_paced("/topic", "/sub", DeliveryPolicy::RELIABLE, b"s", w)
        .unwrap()
}

fn sequences(v: &Vertex) -> Vec<u64> {
    std::iter::from_fn(|| v.pop())
        .map(|s| s.meta.sequence)
        .collect()
}

#[test]
fn a_writer_waits_for_room_and_a_write_past_its_deadline_goes_nowhere() {
    let g = graph("g");
    let (topic, sub) = streams(&g);
    paced(&g, window(3, 1 << 20));
    for i in 1..=3 {
        topic.write_within(p(b"x"), m(i), SHORT).unwrap();
    }
    let t0 = Instant::now();
    assert!(matches!(
        topic.write_within(p(b"x"), m(4), SHORT),
        Err(Error::Timeout)
    ));
    assert!(t0.elapsed() >= SHORT);
    // Gone nowhere: not delivered, not even stored at the source.
    assert_eq!(sub.len(), 3);
    assert_eq!(topic.value().unwrap().meta.sequence, 3);
    // A sample let go gives its credit back.
    drop(sub.pop());
    topic.write_within(p(b"x"), m(5), SHORT).unwrap();
    assert_eq!(sequences(&sub), vec![2, 3, 5]);
    assert_eq!(sub.take_dropped(), 0);
}

#[test]
fn a_sample_holds_its_credit_until_its_last_copy_goes() {
    let g = graph("g");
    let (topic, sub) = streams(&g);
    paced(&g, window(1, 1 << 20));
    topic.write_within(p(b"x"), m(1), SHORT).unwrap();
    let held = sub.pop().unwrap();
    assert!(held.credit.is_held());
    let copy = held.clone();
    drop(held);
    assert!(matches!(
        topic.write_within(p(b"x"), m(2), SHORT),
        Err(Error::Timeout)
    ));
    drop(copy);
    topic.write_within(p(b"x"), m(3), SHORT).unwrap();
}

#[test]
fn a_sample_larger_than_the_byte_window_goes_alone() {
    let g = graph("g");
    let (topic, sub) = streams(&g);
    paced(&g, window(8, 100));
    topic.write_within(p(&[1; 500]), m(1), SHORT).unwrap();
    assert!(matches!(
        topic.write_within(p(b"x"), m(2), SHORT),
        Err(Error::Timeout)
    ));
    drop(sub.pop());
    topic.write_within(p(b"x"), m(3), SHORT).unwrap();
}

#[test]
fn best_effort_and_unpaced_edges_never_hold_a_writer_back() {
    let g = graph("g");
    let (topic, sub) = streams(&g);
    g.subscribe_paced(
        "/topic",
        "/sub",
        DeliveryPolicy::BEST_EFFORT,
        b"s",
        window(1, 1),
    )
    .unwrap();
    let other = g
        .create_stream("/other", StreamOptions::keep_last(1))
        .unwrap();
    g.subscribe("/topic", "/other", DeliveryPolicy::RELIABLE)
        .unwrap();
    for i in 1..=100 {
        topic.write_within(p(b"x"), m(i), Duration::ZERO).unwrap();
    }
    assert_eq!(sub.len(), 100);
    assert_eq!(other.len(), 1);
}

#[test]
fn removing_the_edge_releases_a_waiting_writer() {
    let g = graph("g");
    let (topic, _sub) = streams(&g);
    let e = g
        .subscribe_paced(
            "/topic",
            "/sub",
            DeliveryPolicy::RELIABLE,
            b"s",
            window(1, 1 << 20),
        )
        .unwrap();
    topic.write_within(p(b"x"), m(1), SHORT).unwrap();
    let t = {
        let topic = topic.clone();
        std::thread::spawn(move || topic.write_within(p(b"x"), m(2), T))
    };
    std::thread::sleep(SHORT);
    let t0 = Instant::now();
    g.unsubscribe(&e).unwrap();
    assert!(t.join().unwrap().is_ok());
    assert!(t0.elapsed() < T / 2);
}

/// A writer thread writes `n` samples as fast as its credit allows while this thread takes
/// them slowly: every one arrives, in order, none evicted, and no more than the window ever
/// waits at the reader.
fn slow_reader_gets_everything(topic: &Vertex, sub: &Vertex, window: usize, n: u64) {
    let writer = {
        let topic = topic.clone();
        std::thread::spawn(move || {
            for i in 1..=n {
                topic.write_within(p(&i.to_le_bytes()), m(i), T).unwrap();
            }
        })
    };
    let mut got = Vec::new();
    let end = Instant::now() + 3 * T;
    while (got.len() as u64) < n && Instant::now() < end {
        match sub.pop() {
            Some(s) => got.push(s.meta.sequence),
            None => std::thread::sleep(Duration::from_micros(100)),
        }
        assert!(
            sub.len() <= window,
            "the window bounds what waits at the reader"
        );
    }
    writer.join().unwrap();
    assert_eq!(got, (1..=n).collect::<Vec<_>>());
    assert_eq!(sub.take_dropped(), 0);
}

#[test]
fn a_slow_reader_in_this_process_gets_everything_in_order() {
    let g = graph("g");
    let (topic, sub) = streams(&g);
    paced(&g, window(16, 1 << 20));
    slow_reader_gets_everything(&topic, &sub, 16, 5_000);
}

/// b's `/topic` and a's `/sub`, joined by a paced edge a made over the link, established and
/// confirmed (b has said that it paces).
fn remote_paced(a: &Graph, b: &Graph, w: Window) -> (Vertex, Vertex) {
    let topic = b
        .create_stream("/topic", StreamOptions::keep_last(1))
        .unwrap();
    let sub = a.create_stream("/sub", StreamOptions::default()).unwrap();
    let e = a
        .subscribe_paced("/net/b/topic", "/sub", DeliveryPolicy::RELIABLE, b"s", w)
        .unwrap();
    e.wait_established(T).unwrap();
    (topic, sub)
}

#[test]
fn over_a_link_the_writer_waits_for_the_readers_credit() {
    let (a, b, _na, _nb, _f) = pair();
    let (topic, sub) = remote_paced(&a, &b, window(4, 1 << 20));
    for i in 1..=4 {
        topic.write_within(p(b"x"), m(i), SHORT).unwrap();
    }
    assert!(matches!(
        topic.write_within(p(b"x"), m(5), SHORT),
        Err(Error::Timeout)
    ));
    eventually(T, || sub.len() == 4).expect("four deliveries");
    // Taking them all sends the credit back (nothing of the edge is held any more).
    assert_eq!(sequences(&sub), vec![1, 2, 3, 4]);
    topic.write_within(p(b"x"), m(6), T).unwrap();
    eventually(T, || sub.len() == 1).expect("the sixth");
    assert_eq!(sequences(&sub), vec![6]);
}

#[test]
fn over_a_link_a_slow_reader_gets_everything_in_order() {
    let (a, b, _na, _nb, _f) = pair();
    let (topic, sub) = remote_paced(&a, &b, window(64, 1 << 20));
    slow_reader_gets_everything(&topic, &sub, 64, 5_000);
}

#[test]
fn a_link_that_drops_releases_its_writers() {
    let (a, b, na, _nb, _f) = pair();
    let (topic, _sub) = remote_paced(&a, &b, window(1, 1 << 20));
    topic.write_within(p(b"x"), m(1), SHORT).unwrap();
    let t = {
        let topic = topic.clone();
        std::thread::spawn(move || topic.write_within(p(b"x"), m(2), T))
    };
    std::thread::sleep(SHORT);
    let t0 = Instant::now();
    drop(na);
    drop(a);
    assert!(t.join().unwrap().is_ok());
    assert!(t0.elapsed() < T / 2);
}
