//! Messages of any size between two graphs over a real Unix-socket link (docs/wire.md,
//! "Messages of any size"): a sample above the 64 MiB frame bound goes in parts and lands
//! whole, in its place among the small samples written after it, with the link still up.

mod common;
mod link_support;
use common::poll::eventually;
use link_support::TempDir;

use std::time::{Duration, Instant};

use libtracer_core::{DeliveryPolicy, Graph, Meta, Payload, StreamOptions};

const T: Duration = Duration::from_secs(60);

fn pattern(seed: u8, n: usize) -> Payload {
    (0..n)
        .map(|k| ((seed as usize + k) % 251) as u8)
        .collect::<Vec<u8>>()
        .into()
}

#[test]
fn samples_of_100_and_300_mb_land_whole_over_a_unix_link() {
    let dir = TempDir::new("big");
    let a = Graph::new(common::host_config(dir.path(), "big-a", 0)).unwrap();
    let b = Graph::new(common::host_config(dir.path(), "big-b", 0)).unwrap();
    eventually(T, || a.peers() == ["big-b"]).expect("linked");
    let topic = a
        .create_stream("/big", StreamOptions::keep_last(1))
        .unwrap();
    let ring = b
        .create_stream("/in", StreamOptions::keep_last(64))
        .unwrap();
    let edge = b
        .subscribe("/net/big-a/big", "/in", DeliveryPolicy::default())
        .unwrap();
    edge.wait_established(T).unwrap();
    let sizes = [100_000_000usize, 300_000_000, 10, 10];
    let sent: Vec<Payload> = sizes
        .iter()
        .enumerate()
        .map(|(i, &n)| pattern(i as u8 + 1, n))
        .collect();
    for (i, p) in sent.iter().enumerate() {
        let meta = Meta {
            sequence: i as u64,
            ..Meta::default()
        };
        topic.write(p.clone(), meta).expect("write");
    }
    let end = Instant::now() + T;
    let mut got = Vec::new();
    while got.len() < sent.len() && Instant::now() < end {
        match ring.pop() {
            Some(s) => got.push(s),
            None => std::thread::sleep(Duration::from_millis(10)),
        }
    }
    let seqs: Vec<u64> = got.iter().map(|s| s.meta.sequence).collect();
    assert_eq!(seqs, [0, 1, 2, 3], "every sample, in order");
    for (s, p) in got.iter().zip(&sent) {
        assert!(s.payload == *p, "sample {} whole", s.meta.sequence);
    }
    assert_eq!(a.peers(), ["big-b"], "the link stayed up");
}
