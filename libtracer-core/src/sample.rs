//! `Sample`: what arrives at a target or is popped from a ring, and the clock it is stamped
//! with.

use std::sync::Arc;

use crate::payload::{Meta, Payload};

/// What arrives at a target (or is popped from a ring).
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    pub payload: Payload,
    pub meta: Meta,
    /// When the sample landed in this graph (ns since the Unix epoch). For a write made in this
    /// graph with a source timestamp, that timestamp (same clock, same moment).
    pub received_timestamp_ns: i64,
    /// `Some("b/c")` when the write happened at `<source>/b/c` (subtree delivery).
    pub suffix: Option<String>,
    /// `None` = written in this graph; `Some(peer)` = arrived over the link to `<peer>` (one
    /// name per link, shared by its samples: no allocation per sample).
    pub origin: Option<Arc<str>>,
}

/// Now, in ns since the Unix epoch (the clock of `received_timestamp_ns`).
pub(crate) fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}
