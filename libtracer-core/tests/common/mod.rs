//! Helpers shared by the graph tests.
#![allow(dead_code)]

use libtracer_core::{Graph, GraphConfig, Meta, Payload, Sample};

pub fn graph(name: &str) -> Graph {
    Graph::new(GraphConfig {
        name: Some(name.into()),
        ..GraphConfig::default()
    })
    .unwrap()
}

pub fn p(b: &[u8]) -> Payload {
    Payload::copy_from_slice(b)
}

pub fn m(seq: u64) -> Meta {
    Meta {
        sequence: seq,
        ..Meta::default()
    }
}

/// Pop everything, as (sequence, suffix).
pub fn drain(v: &libtracer_core::Vertex) -> Vec<(u64, Option<String>)> {
    std::iter::from_fn(|| v.pop())
        .map(|s: Sample| (s.meta.sequence, s.suffix))
        .collect()
}
