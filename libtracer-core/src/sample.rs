//! `Sample`: what arrives at a target or is popped from a ring, and the clock it is stamped
//! with.

use std::sync::Arc;

use crate::payload::{Meta, Payload};

/// What arrives at a target (or is popped from a ring).
#[derive(Clone, Debug, Default, PartialEq)]
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
    /// The credit this sample holds of the paced edge it came by (docs/wire.md, "Flow
    /// control"): given back when the last copy of the sample goes (taken and dropped, refused
    /// on arrival, evicted). Empty for every other sample; opaque outside the core.
    pub credit: Credit,
}

/// Where a paced edge's credit goes back to: the producer's own edge (in-process) or the
/// consumer end of a link, which returns it in CREDIT frames.
pub(crate) trait CreditSink: Send + Sync {
    fn give_back(&self, messages: u32, bytes: u64);
}

/// A sample's hold on its edge's credit: one message and its payload bytes, given back once,
/// when the last clone of the sample is dropped. Compares equal to any other (it is not part
/// of what a sample says).
#[derive(Clone, Default)]
pub struct Credit(Option<Arc<Held>>);

struct Held {
    sink: Arc<dyn CreditSink>,
    bytes: u64,
}

impl Drop for Held {
    fn drop(&mut self) {
        self.sink.give_back(1, self.bytes);
    }
}

impl Credit {
    pub(crate) fn held(sink: Arc<dyn CreditSink>, bytes: u64) -> Credit {
        Credit(Some(Arc::new(Held { sink, bytes })))
    }
    /// True when the sample holds credit of a paced edge.
    pub fn is_held(&self) -> bool {
        self.0.is_some()
    }
}

impl PartialEq for Credit {
    fn eq(&self, _: &Credit) -> bool {
        true
    }
}

impl std::fmt::Debug for Credit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Some(h) => write!(f, "Credit({} bytes)", h.bytes),
            None => f.write_str("Credit(none)"),
        }
    }
}

/// Now, in ns since the Unix epoch (the clock of `received_timestamp_ns`).
pub(crate) fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}
