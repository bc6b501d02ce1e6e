//! Local write-to-delivery latency of the in-process graph (64 B payloads).
//!
//! `cargo run --release -p libtracer-core --example graph_latency [iterations]`
//!
//! Writes carry a source timestamp, as the rmw layer's do (a write without one costs one clock
//! read more, about 25-75 ns here). Reports, per write: a write with no edges, a write delivered through one edge into a
//! stream (then popped), the same with the write at a descendant (subtree delivery, suffix),
//! and the cross-thread one-way latency (write -> waiter wakes -> pop) from a ping-pong.

use std::sync::Arc;
use std::time::{Duration, Instant};

use libtracer_core::{DeliveryPolicy, Graph, GraphConfig, Meta, Payload, StreamOptions, Waiter};

fn graph() -> Graph {
    Graph::new(GraphConfig::default()).expect("graph")
}

/// Best of five runs of `n` calls: on a shared machine the minimum is the figure that does not
/// measure the neighbours.
fn per_op(n: u64, f: impl FnMut(u64)) -> f64 {
    let mut f = f;
    for i in 0..n / 10 {
        f(i);
    }
    (0..5)
        .map(|_| {
            let t = Instant::now();
            for i in 0..n / 5 {
                f(i);
            }
            t.elapsed().as_nanos() as f64 / (n / 5) as f64
        })
        .fold(f64::INFINITY, f64::min)
}

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let payload = Payload::from(vec![0x5au8; 64]);
    // Stamped like the rmw publisher does (its clock read is the publisher's, not the graph's).
    let meta = |i: u64| Meta {
        sequence: i,
        source_timestamp_ns: 1_700_000_000_000_000_000 + i as i64,
        ..Meta::default()
    };

    let g = graph();
    let lone = g
        .create_stream("/lone", StreamOptions::keep_last(1))
        .unwrap();
    let t0 = per_op(n, |i| lone.write(payload.clone(), meta(i)).unwrap());

    let src = g
        .create_stream("/src", StreamOptions::keep_last(1))
        .unwrap();
    let dst = g.create_stream("/dst", StreamOptions::default()).unwrap();
    g.subscribe("/src", "/dst", DeliveryPolicy::default())
        .unwrap();
    let t1 = per_op(n, |i| {
        src.write(payload.clone(), meta(i)).unwrap();
        dst.pop().unwrap();
    });

    let deep = g
        .create_stream("/src/a/b", StreamOptions::keep_last(1))
        .unwrap();
    let t2 = per_op(n, |i| {
        deep.write(payload.clone(), meta(i)).unwrap();
        dst.pop().unwrap();
    });

    // Ping-pong between two threads through two edges, each side blocked on a Waiter.
    let ping = g
        .create_stream("/ping", StreamOptions::keep_last(1))
        .unwrap();
    let pong = g
        .create_stream("/pong", StreamOptions::keep_last(1))
        .unwrap();
    let at_b = g.create_stream("/at_b", StreamOptions::default()).unwrap();
    let at_a = g.create_stream("/at_a", StreamOptions::default()).unwrap();
    g.subscribe("/ping", "/at_b", DeliveryPolicy::default())
        .unwrap();
    g.subscribe("/pong", "/at_a", DeliveryPolicy::default())
        .unwrap();
    let rounds = (n / 20).max(1000);
    let p2 = payload.clone();
    let echo = std::thread::spawn(move || {
        let w = Waiter::new();
        w.attach(&at_b.readiness());
        for _ in 0..rounds + rounds / 10 {
            while !w.wait(Some(Duration::from_secs(5))) {}
            let s = at_b.pop().unwrap();
            pong.write(p2.clone(), s.meta).unwrap();
        }
    });
    let w = Waiter::new();
    w.attach(&at_a.readiness());
    let mut rtt = Vec::with_capacity(rounds as usize);
    for i in 0..rounds + rounds / 10 {
        let t = Instant::now();
        ping.write(payload.clone(), meta(i)).unwrap();
        while !w.wait(Some(Duration::from_secs(5))) {}
        at_a.pop().unwrap();
        if i >= rounds / 10 {
            rtt.push(t.elapsed().as_nanos() as f64);
        }
    }
    echo.join().unwrap();
    rtt.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let med = rtt[rtt.len() / 2] / 2.0;
    let p99 = rtt[rtt.len() * 99 / 100] / 2.0;
    let _keep = Arc::new(g);

    println!("local write, no edges (64 B):                 {t0:8.1} ns");
    println!("write -> delivered into a stream + pop (64 B): {t1:8.1} ns");
    println!("same, write 2 levels below the source:         {t2:8.1} ns");
    println!("cross-thread one-way (write -> wake -> pop):   {med:8.1} ns median, {p99:.1} ns p99");
}
