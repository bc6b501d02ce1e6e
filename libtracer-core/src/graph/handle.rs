//! `Vertex`: the public handle on a local vertex, which writes and reads without any path
//! lookup.

use std::sync::Arc;
use std::time::Duration;

use crate::acl::Rights;
use crate::error::Error;
use crate::payload::{Meta, Payload};
use crate::ready::Readiness;
use crate::sample::Sample;
use crate::state::GraphInner;
use crate::vertex::pacing::DEFAULT_MAX_BLOCKING;
use crate::vertex::{dispatch_write, Kind, Node};
use crate::wire::frame::{Role, SchemaInfo};

/// A handle on a local vertex. Cheap `Clone`; the hot path does no path lookup.
#[derive(Clone)]
pub struct Vertex {
    pub(crate) node: Arc<Node>,
    pub(crate) graph: Arc<GraphInner>,
}

impl Vertex {
    pub fn path(&self) -> &str {
        &self.node.path
    }

    pub fn role(&self) -> Role {
        self.node.role()
    }

    /// False once the vertex was removed from the graph (the handle then refuses writes).
    pub fn exists(&self) -> bool {
        !self.node.is_removed()
    }

    /// Store the write here and deliver it to the edges of this vertex and of every ancestor.
    /// `Err(TooLarge)` when an edge's link cannot carry the payload, as for `Graph::write`.
    pub fn write(&self, payload: Payload, meta: Meta) -> Result<(), Error> {
        self.write_within(payload, meta, DEFAULT_MAX_BLOCKING)
    }

    /// `write`, waiting at most `max_wait` for room on the paced edges it goes to (docs/wire.md
    /// section 2, "Flow control"); past it, `Err(Timeout)` and the write went nowhere: not
    /// stored, not delivered. Free when no edge is paced.
    pub fn write_within(
        &self,
        payload: Payload,
        meta: Meta,
        max_wait: Duration,
    ) -> Result<(), Error> {
        self.node.writable()?;
        self.graph.check_owner(&self.node, Rights::WRITE)?;
        dispatch_write(&self.node, payload, meta, max_wait)
    }

    /// Stream role: the oldest sample, removed from the ring.
    pub fn pop(&self) -> Option<Sample> {
        if !matches!(self.node.kind.get(), Some(Kind::Stream)) {
            return None;
        }
        let mut st = self.node.store.lock();
        let s = st.ring.pop();
        if st.ring.is_empty() {
            self.node.ready.set(false);
        }
        s
    }

    /// Stream role: keep only the samples `keep` accepts (the owner's admission rules changed,
    /// e.g. a new content filter); returns how many went. They are not counted as dropped, and
    /// the readiness falls when the ring is left empty.
    pub fn retain(&self, keep: impl FnMut(&Sample) -> bool) -> usize {
        if !matches!(self.node.kind.get(), Some(Kind::Stream)) {
            return 0;
        }
        let mut st = self.node.store.lock();
        let gone = st.ring.retain(keep);
        if st.ring.is_empty() {
            self.node.ready.set(false);
        }
        gone
    }

    /// Samples in the ring (stream), 1 or 0 (value).
    pub fn len(&self) -> usize {
        let st = self.node.store.lock();
        match self.node.kind.get() {
            Some(Kind::Stream) => st.ring.len(),
            Some(Kind::Value) => usize::from(st.value.is_some()),
            _ => 0,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Payload bytes held by a stream's ring.
    pub fn bytes(&self) -> usize {
        self.node.store.lock().ring.bytes()
    }

    /// Overflow drops since the last call.
    pub fn take_dropped(&self) -> u64 {
        self.node.store.lock().ring.take_dropped()
    }

    /// Value role: the stored value (reading it clears readiness). Stream role: the newest
    /// sample, left in the ring.
    pub fn value(&self) -> Option<Sample> {
        let st = self.node.store.lock();
        match self.node.kind.get() {
            Some(Kind::Value) => {
                self.node.ready.set(false);
                st.value.clone()
            }
            Some(Kind::Stream) => st.ring.newest().cloned(),
            _ => None,
        }
    }

    /// Ready while a stream's ring is non-empty, or while a value has changed since the last
    /// `value()`. A sink or inner vertex never becomes ready.
    pub fn readiness(&self) -> Readiness {
        Readiness(self.node.ready.clone())
    }

    /// Block until this vertex's own store changes (not its subtree); false on timeout.
    pub fn await_change(&self, timeout: Option<Duration>) -> bool {
        self.node.change.wait(timeout)
    }

    /// Edges in this vertex's `:subscribers[]`.
    pub fn subscriber_count(&self) -> usize {
        self.node.edges.live_len()
    }

    /// The version of this vertex's `:subscribers[]`: it goes up with every edge made or
    /// removed there. Read it, look at the edges, then [`await_edges`](Self::await_edges) past
    /// it: no change in between is missed.
    pub fn edges_version(&self) -> u64 {
        self.node.edges.changed.version()
    }

    /// Block until `:subscribers[]` changed after `version`, or until `deadline` (`None`: no
    /// limit); true when it did. How a reader waits for a subscriber without polling.
    pub fn await_edges(&self, version: u64, deadline: Option<std::time::Instant>) -> bool {
        self.node.edges.changed.wait_past(version, deadline)
    }

    pub fn schema(&self) -> Option<SchemaInfo> {
        self.node.schema.lock().clone()
    }
}

impl std::fmt::Debug for Vertex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Vertex({} {:?})", self.node.path, self.node.role())
    }
}
