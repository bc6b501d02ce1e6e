//! A waiting thread leads the links' loop (`Waiter::wait_leading`, link/lead.rs): samples over a
//! real Unix link arrive whole and in order whether the waiter or the loop thread reads them,
//! every other source still wakes a leader (a signal raised on another thread), a second waiter
//! meanwhile waits on its futex, a timed wait never ends early, and once the leader stops
//! waiting the loop thread reads the links again.

mod common;
mod link_support;

use std::time::{Duration, Instant};

use common::poll::eventually;
use libtracer_core::{DeliveryPolicy, Graph, Meta, Payload, Signal, StreamOptions, Vertex, Waiter};
use link_support::TempDir;

const T: Duration = Duration::from_secs(20);

/// Graph `b` subscribes ring `/in` to `a`'s `/topic` over a Unix link.
fn linked(dir: &TempDir, tag: &str) -> (Graph, Graph, Vertex, Vertex) {
    let (na, nb) = (format!("lead-{tag}-a"), format!("lead-{tag}-b"));
    let a = Graph::new(common::host_config(dir.path(), &na, 0)).unwrap();
    let b = Graph::new(common::host_config(dir.path(), &nb, 0)).unwrap();
    eventually(T, || a.peers() == [nb.clone()]).expect("linked");
    let topic = a
        .create_stream("/topic", StreamOptions::keep_last(8192))
        .unwrap();
    let ring = b
        .create_stream("/in", StreamOptions::keep_last(8192))
        .unwrap();
    let edge = b
        .subscribe(
            &format!("/net/{na}/topic"),
            "/in",
            DeliveryPolicy::default(),
        )
        .unwrap();
    edge.wait_established(T).unwrap();
    std::mem::forget(edge);
    (a, b, topic, ring)
}

fn meta(seq: u64) -> Meta {
    Meta {
        sequence: seq,
        ..Meta::default()
    }
}

/// Pops what `ring` has, waiting with `wait_leading`, until `n` samples came or `T` passed.
fn take_leading(w: &Waiter, ring: &Vertex, n: u64) -> Vec<u64> {
    let end = Instant::now() + T;
    let mut got = Vec::new();
    while (got.len() as u64) < n && Instant::now() < end {
        w.wait_leading(Some(Duration::from_secs(1)));
        while let Some(s) = ring.pop() {
            got.push(s.meta.sequence);
        }
    }
    got
}

#[test]
fn a_leading_waiter_gets_every_sample_in_order_and_any_other_source_wakes_it() {
    let dir = TempDir::new("lead");
    let (_a, _b, topic, ring) = linked(&dir, "one");
    let w = Waiter::new();
    w.attach(&ring.readiness());
    const N: u64 = 5000;
    let writer = std::thread::spawn(move || {
        for i in 0..N {
            topic
                .write(Payload::from(vec![i as u8; 64]), meta(i))
                .unwrap();
            if i % 500 == 0 {
                // Now and then the leader catches up and waits in the loop's epoll.
                std::thread::sleep(Duration::from_millis(5));
            }
        }
    });
    let got = take_leading(&w, &ring, N);
    writer.join().unwrap();
    assert_eq!(got, (0..N).collect::<Vec<_>>(), "every sample, in order");

    // A source the links do not bring: raised on another thread while the waiter leads.
    let s = Signal::new();
    w.attach(&s.readiness());
    let raiser = {
        let s = s.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            s.raise();
        })
    };
    let start = Instant::now();
    assert!(w.wait_leading(Some(T)), "the signal woke the leader");
    assert!(start.elapsed() < T);
    raiser.join().unwrap();
}

#[test]
fn a_second_waiter_waits_on_its_futex_while_one_leads() {
    // Two domains' directories: each pair finds only its own peer.
    let (dir1, dir2) = (TempDir::new("lead"), TempDir::new("lead"));
    let (_a1, _b1, topic1, ring1) = linked(&dir1, "first");
    let (_a2, _b2, topic2, ring2) = linked(&dir2, "second");
    const N: u64 = 2000;
    let take = |ring: Vertex| {
        std::thread::spawn(move || {
            let w = Waiter::new();
            w.attach(&ring.readiness());
            take_leading(&w, &ring, N)
        })
    };
    let (t1, t2) = (take(ring1), take(ring2));
    for i in 0..N {
        topic1.write(Payload::from(vec![1u8; 64]), meta(i)).unwrap();
        topic2.write(Payload::from(vec![2u8; 64]), meta(i)).unwrap();
    }
    let all: Vec<u64> = (0..N).collect();
    assert_eq!(t1.join().unwrap(), all);
    assert_eq!(t2.join().unwrap(), all);
}

#[test]
fn a_timed_leading_wait_never_ends_early() {
    let dir = TempDir::new("lead");
    let (_a, _b, _topic, ring) = linked(&dir, "timed");
    let w = Waiter::new();
    w.attach(&ring.readiness());
    // Whole milliseconds in the loop's epoll, the rest on the futex.
    for us in [300u64, 1000, 2500] {
        let t = Duration::from_micros(us);
        let start = Instant::now();
        assert!(!w.wait_leading(Some(t)));
        assert!(start.elapsed() >= t, "{:?} < {t:?}", start.elapsed());
    }
}

#[test]
fn when_the_leader_stops_waiting_the_loop_thread_reads_the_links() {
    let dir = TempDir::new("lead");
    let (_a, _b, topic, ring) = linked(&dir, "back");
    let w = Waiter::new();
    w.attach(&ring.readiness());
    topic.write(Payload::from(vec![0u8; 8]), meta(0)).unwrap();
    assert_eq!(take_leading(&w, &ring, 1), [0]);
    // Nobody waits now: what comes is the loop thread's to read.
    for i in 1..=100 {
        topic.write(Payload::from(vec![0u8; 8]), meta(i)).unwrap();
    }
    let mut got = Vec::new();
    eventually(T, || {
        while let Some(s) = ring.pop() {
            got.push(s.meta.sequence);
        }
        got.len() == 100
    })
    .expect("the loop thread read them");
    assert_eq!(got, (1..=100).collect::<Vec<_>>());
}
