//! Local write-to-delivery latency, 64 B: into a sink, and into a stream ring then popped.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use libtracer_core::{
    DeliveryPolicy, Discovery, Graph, GraphConfig, Meta, Payload, Sample, StreamOptions,
};

use crate::measure::{stats, Stats};

/// Writes left out of the statistics at the start of each loop.
const WARMUP: usize = 1000;

pub struct Local {
    pub sink: Stats,
    pub stream: Stats,
}

/// Time `write(meta)` for sequence numbers `0..WARMUP + n`, keeping the last `n`. `check` sees
/// each sequence number and what `write` returned, outside the timed span.
fn timed_writes<R>(
    n: usize,
    mut write: impl FnMut(Meta) -> R,
    mut check: impl FnMut(u64, R),
) -> Stats {
    let mut samples = Vec::with_capacity(n);
    for i in 0..(n + WARMUP) as u64 {
        let meta = Meta {
            sequence: i,
            ..Meta::default()
        };
        let t0 = Instant::now();
        let r = write(meta);
        let dt = t0.elapsed().as_nanos() as u64;
        check(i, r);
        if i >= WARMUP as u64 {
            samples.push(dt);
        }
    }
    stats(samples)
}

pub fn latency(n: usize) -> Local {
    let g = Graph::new(GraphConfig {
        name: Some("bench".into()),
        discovery: Discovery::Off,
        ..Default::default()
    })
    .expect("graph");
    let src = g
        .create_stream("/bench/src", StreamOptions::keep_last(1))
        .expect("source");
    let hits = Arc::new(AtomicU64::new(0));
    let h = hits.clone();
    g.create_sink(
        "/bench/sink",
        Arc::new(move |_s: &Sample| {
            h.fetch_add(1, Ordering::Relaxed);
        }),
    )
    .expect("sink");
    let target = g
        .create_stream("/bench/ring", StreamOptions::keep_last(1024))
        .expect("ring");
    let payload = Payload::from(vec![0xabu8; 64]);

    // Write into a sink: the delivery is done when `write` returns (the sink runs inline).
    let edge = g
        .subscribe("/bench/src", "/bench/sink", DeliveryPolicy::RELIABLE)
        .expect("subscribe");
    let sink = timed_writes(
        n,
        |meta| src.write(payload.clone(), meta).expect("write"),
        |_, ()| {},
    );
    assert_eq!(
        hits.load(Ordering::Relaxed),
        (n + WARMUP) as u64,
        "every write delivered"
    );
    g.unsubscribe(&edge).expect("unsubscribe");

    // Write into a stream ring and pop it on the reader side.
    let _edge = g
        .subscribe("/bench/src", "/bench/ring", DeliveryPolicy::RELIABLE)
        .expect("subscribe");
    let stream = timed_writes(
        n,
        |meta| {
            src.write(payload.clone(), meta).expect("write");
            target.pop().expect("delivered")
        },
        |i, s| assert_eq!(s.meta.sequence, i),
    );
    Local { sink, stream }
}
