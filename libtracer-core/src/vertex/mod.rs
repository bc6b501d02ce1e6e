//! Vertices: the tree node behind a path, its store (value, ring or sink) and its out-edges
//! (`edge`: its `:subscribers[]` and `:children[]`). The public handle on a vertex is
//! `graph::Vertex`.

pub mod edge;
pub(crate) mod pacing;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::{Duration, Instant};

use parking_lot::{Mutex, RwLock};

use crate::acl::Acl;
use crate::error::Error;
use crate::path::relative;
use crate::payload::{Meta, Payload};
use crate::ready::{ChangeNotifier, ReadyCore};
use crate::ring::Ring;
use crate::sample::{now_ns, Sample};
use crate::structure::What;
use crate::wire::frame::{EdgeId, Role, SchemaInfo, StructEvent};
use edge::EdgeList;

/// The bounds of a stream's ring; 0 = unbounded for that bound.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StreamOptions {
    pub depth: usize,
    pub byte_budget: usize,
}

impl StreamOptions {
    /// Keep the last `depth` samples.
    pub fn keep_last(depth: usize) -> StreamOptions {
        StreamOptions {
            depth,
            byte_budget: 0,
        }
    }
}

/// A sink's logic: runs on the delivering thread, must not block.
pub type SinkFn = Arc<dyn Fn(&Sample) + Send + Sync>;

/// A stream's admission filter (`Graph::set_stream_filter`): called with each sample about to
/// land in the ring, under the ring's lock, on the delivering thread; `false` leaves the sample
/// out (not stored, not counted as dropped, nobody woken). It must not block nor call the graph.
pub type AdmitFn = Arc<dyn Fn(&Sample) -> bool + Send + Sync>;

/// A source's edge filter (`Graph::set_edge_filter`): asked, for each write about to be handed
/// to one of the source's edges that carries a tag (who subscribed: `Graph::subscribe_tagged`,
/// the SUBSCRIBE frame's TAG), whether that edge takes the write, from the tag and the write's
/// meta (its writer). `false`: nothing is handed to that edge, so nothing crosses its link. An
/// edge without a tag takes everything. Runs on the writing thread; it must not block nor call
/// the graph.
pub type EdgeFilterFn = Arc<dyn Fn(&[u8], &Meta) -> bool + Send + Sync>;

/// What a stream's arrival hook hears of one sample that landed in its ring.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Landed {
    /// The oldest samples that went to make room for this one (counted as dropped too).
    pub evicted: usize,
}

/// A stream's arrival hook (`Graph::set_on_land`): called once per sample that lands in the
/// ring (after the admission filter, never for one it refused), on the delivering thread, after
/// the ring's lock is released and its waiters were woken, so it may pop at once. It must not
/// block; it is how an owner hears of arrivals without polling (docs/libtracer.md, "Arrival").
pub type LandFn = Arc<dyn Fn(Landed) + Send + Sync>;

pub(crate) enum Kind {
    Value,
    Stream,
    Sink(SinkFn),
    /// `/net/<peer>`: everything below lives on the peer.
    Mount,
}

impl Kind {
    pub(crate) fn role(&self) -> Role {
        match self {
            Kind::Value => Role::Value,
            Kind::Stream => Role::Stream,
            Kind::Sink(_) => Role::Sink,
            Kind::Mount => Role::Mount,
        }
    }
}

#[derive(Default)]
pub(crate) struct Store {
    /// Bumped by every write that lands here; orders a transient-local snapshot against live
    /// deliveries (see `EdgeRec::finish_replay`).
    pub(crate) seq: u64,
    pub(crate) value: Option<Sample>,
    pub(crate) ring: Ring,
    /// A stream's admission filter, if its owner set one.
    pub(crate) admit: Option<AdmitFn>,
    /// A stream's arrival hook, if its owner set one.
    pub(crate) on_land: Option<LandFn>,
}

/// An edge that delivers into this vertex, so that removing the vertex can unhook it.
pub(crate) enum Incoming {
    Local {
        source: Weak<Node>,
        id: EdgeId,
    },
    Remote {
        link: Weak<dyn edge::Inlet>,
        edge: EdgeId,
    },
}

pub(crate) struct Node {
    pub(crate) path: Arc<str>,
    pub(crate) parent: Option<Arc<Node>>,
    /// Unset = an inner vertex made by mkdir -p; it becomes a value on its first write.
    pub(crate) kind: OnceLock<Kind>,
    pub(crate) store: Mutex<Store>,
    pub(crate) edges: EdgeList,
    pub(crate) struct_edges: EdgeList,
    pub(crate) incoming: Mutex<Vec<Incoming>>,
    pub(crate) children: Mutex<BTreeMap<Box<str>, Arc<Node>>>,
    pub(crate) acl: RwLock<Option<Arc<Acl>>>,
    pub(crate) schema: Mutex<Option<SchemaInfo>>,
    /// The owner's filter of this vertex's tagged edges (`EdgeFilterFn`).
    pub(crate) edge_filter: RwLock<Option<EdgeFilterFn>>,
    pub(crate) ready: Arc<ReadyCore>,
    pub(crate) change: ChangeNotifier,
    pub(crate) removed: AtomicBool,
}

impl Node {
    pub(crate) fn new(path: Arc<str>, parent: Option<Arc<Node>>) -> Node {
        Node {
            path,
            parent,
            kind: OnceLock::new(),
            store: Mutex::new(Store::default()),
            edges: EdgeList::default(),
            struct_edges: EdgeList::default(),
            incoming: Mutex::new(Vec::new()),
            children: Mutex::new(BTreeMap::new()),
            acl: RwLock::new(None),
            schema: Mutex::new(None),
            edge_filter: RwLock::new(None),
            ready: ReadyCore::new(),
            change: ChangeNotifier::default(),
            removed: AtomicBool::new(false),
        }
    }

    pub(crate) fn role(&self) -> Role {
        self.kind.get().map_or(Role::Inner, Kind::role)
    }

    /// Can a data write land here? Not on a removed vertex, a mount, or the root (a directory).
    pub(crate) fn writable(&self) -> Result<(), Error> {
        if self.is_removed() {
            return Err(Error::NotFound(self.path.to_string()));
        }
        if self.parent.is_none() || matches!(self.kind.get(), Some(Kind::Mount)) {
            return Err(Error::WrongRole {
                path: self.path.to_string(),
                role: self.role(),
                wanted: "a data write needs a vertex below the root, not a mount",
            });
        }
        Ok(())
    }

    pub(crate) fn is_removed(&self) -> bool {
        self.removed.load(Ordering::Acquire)
    }

    /// Give an inner vertex its role. Ok if it already has exactly this role.
    pub(crate) fn set_kind(&self, kind: Kind, opts: StreamOptions) -> Result<bool, Error> {
        let wanted = kind.role();
        if wanted == Role::Stream {
            let mut st = self.store.lock();
            if self.kind.get().is_none() {
                st.ring = Ring::new(opts.depth, opts.byte_budget);
            }
        }
        match self.kind.set(kind) {
            Ok(()) => Ok(true),
            Err(_) if self.role() == wanted && wanted != Role::Sink => Ok(false),
            Err(_) => Err(Error::WrongRole {
                path: self.path.to_string(),
                role: self.role(),
                wanted: match wanted {
                    Role::Stream => "wanted a stream",
                    Role::Value => "wanted a value",
                    Role::Sink => "wanted a new sink",
                    _ => "wanted another role",
                },
            }),
        }
    }

    /// Put a sample into this vertex's own store; returns the store sequence. Dispatch to edges
    /// is the caller's business (`dispatch`), and a delivery never does it (`land`).
    fn store_sample(&self, s: Sample) -> u64 {
        let kind = self.kind.get_or_init(|| Kind::Value);
        let seq;
        let mut wake = false;
        let mut landed = None;
        match kind {
            Kind::Value => {
                let mut st = self.store.lock();
                st.seq += 1;
                seq = st.seq;
                st.value = Some(s);
                wake = self.ready.set_quiet(true);
            }
            Kind::Stream => {
                let mut st = self.store.lock();
                if st.admit.as_ref().is_some_and(|f| !f(&s)) {
                    return st.seq;
                }
                st.seq += 1;
                seq = st.seq;
                let evicted = st.ring.push(s);
                wake = self.ready.set_quiet(true);
                landed = st.on_land.clone().map(|f| (f, Landed { evicted }));
            }
            Kind::Sink(f) => {
                seq = 0;
                f(&s);
            }
            Kind::Mount => seq = 0,
        }
        if wake {
            self.ready.wake();
        }
        self.change.bump();
        if let Some((f, l)) = landed {
            f(l);
        }
        seq
    }

    /// A delivery: an ordinary write to this target that terminates here.
    pub(crate) fn land(&self, s: Sample) {
        if !self.is_removed() {
            self.store_sample(s);
        }
    }

    /// The retained history, oldest first (a stream's ring, a value's stored value), and the
    /// store sequence it corresponds to.
    /// Whether edge `e` of this vertex takes a write with `meta` (its tag and this vertex's edge
    /// filter). `filter` caches the filter across the edges of one write: read once, and only
    /// when an edge has a tag.
    #[inline]
    pub(crate) fn edge_takes(
        &self,
        e: &edge::EdgeRec,
        meta: &Meta,
        filter: &mut Option<Option<EdgeFilterFn>>,
    ) -> bool {
        let Some(tag) = &e.tag else {
            return true;
        };
        match filter.get_or_insert_with(|| self.edge_filter.read().clone()) {
            Some(f) => f(tag, meta),
            None => true,
        }
    }

    pub(crate) fn history(&self) -> (u64, Vec<Sample>) {
        let st = self.store.lock();
        let v = match self.kind.get() {
            Some(Kind::Stream) => st.ring.iter().cloned().collect(),
            Some(Kind::Value) => st.value.iter().cloned().collect(),
            _ => Vec::new(),
        };
        (st.seq, v)
    }
}

/// The received timestamp of a write made in this graph: the writer's own source timestamp
/// when it set one (same clock, same moment: reading the clock again costs more than the rest
/// of the write), else the clock.
#[inline]
fn local_received(meta: &Meta) -> i64 {
    if meta.source_timestamp_ns != 0 {
        meta.source_timestamp_ns
    } else {
        now_ns()
    }
}

/// A local write at `node`: store it, then deliver it to the edges of `node` and to the subtree
/// edges of each ancestor (an exact edge takes writes at its source only: `DeliveryPolicy`). The
/// store comes first so that a transient-local snapshot taken after a new edge was inserted
/// always contains every write that did not see that edge; a write the snapshot holds that sees
/// the edge only after the replay is dropped by the edge (`EdgeRec::deliver`).
#[inline]
pub(crate) fn dispatch(node: &Arc<Node>, sample: Sample) -> Result<(), Error> {
    dispatch_within(node, sample, None)
}

/// Wait until every paced edge that takes `sample` (at `node` and the subtree edges above it)
/// has room for it, or `deadline` passes (`Err(Timeout)`: the write then goes nowhere, not to
/// some edges only). Free when no edge on the way is paced.
fn wait_for_room(node: &Arc<Node>, sample: &Sample, deadline: Instant) -> Result<(), Error> {
    let len = sample.payload.len() as u64;
    let mut cur = Some(node);
    let mut at_source = true;
    while let Some(n) = cur {
        if n.edges.has_paced() {
            if let Some(edges) = n.edges.snapshot() {
                let mut filter = None;
                for e in edges.iter().filter(|e| at_source || !e.policy.is_exact()) {
                    if let Some(p) = &e.pacing {
                        if n.edge_takes(e, &sample.meta, &mut filter) {
                            p.wait_room(len, deadline)?;
                        }
                    }
                }
            }
        }
        at_source = false;
        cur = n.parent.as_ref();
    }
    Ok(())
}

/// [`dispatch`], first waiting up to `deadline` for room on the paced edges it will reach
/// (`None`: no wait, as for a delivery that arrived over a link).
pub(crate) fn dispatch_within(
    node: &Arc<Node>,
    sample: Sample,
    deadline: Option<Instant>,
) -> Result<(), Error> {
    if let Some(d) = deadline {
        wait_for_room(node, &sample, d)?;
    }
    let from = Arc::as_ptr(node) as usize;
    let seq = node.store_sample(sample.clone());
    // Every edge gets the sample; the first that could not carry it is reported after.
    let mut refused = Ok(());
    let mut note = |r: Result<(), Error>| {
        if refused.is_ok() {
            refused = r;
        }
    };
    if let Some(edges) = node.edges.snapshot() {
        let mut filter = None;
        for e in edges.iter() {
            if node.edge_takes(e, &sample.meta, &mut filter) {
                note(e.deliver(sample.clone(), from, seq));
            }
        }
    }
    let mut cur = node.parent.as_ref();
    while let Some(n) = cur {
        if let Some(edges) = n.edges.snapshot() {
            // Made once per ancestor, and only when one of its edges takes the subtree.
            let mut suffix = None;
            let mut filter = None;
            for e in edges.iter().filter(|e| !e.policy.is_exact()) {
                if !n.edge_takes(e, &sample.meta, &mut filter) {
                    continue;
                }
                let suffix =
                    suffix.get_or_insert_with(|| relative(&node.path, &n.path).to_string());
                let mut s = sample.clone();
                s.suffix = Some(suffix.clone());
                note(e.deliver(s, from, seq));
            }
        }
        cur = n.parent.as_ref();
    }
    refused
}

/// A write made in this graph at `node` (no suffix, no origin), stored and delivered by
/// [`dispatch`] after waiting up to `max_wait` for room on paced edges: the one data path of
/// `Graph::write` and `Vertex::write`.
#[inline]
pub(crate) fn dispatch_write(
    node: &Arc<Node>,
    payload: Payload,
    meta: Meta,
    max_wait: Duration,
) -> Result<(), Error> {
    dispatch_within(
        node,
        Sample {
            payload,
            received_timestamp_ns: local_received(&meta),
            meta,
            ..Sample::default()
        },
        // A wait beyond a day is no bound anyone means: a day it is.
        Some(Instant::now() + max_wait.min(Duration::from_secs(86_400))),
    )
}

/// The structural feed of the vertices above and at a node (`structure`): the events are the
/// node's, so they are made here.
impl Node {
    /// The event `what` about this node, as a watcher at relative path `rel` sees it.
    pub(crate) fn struct_event(&self, rel: &str, what: What) -> StructEvent {
        let path = rel.to_string();
        match what {
            What::Created => StructEvent::Created {
                path,
                role: self.role(),
                schema: self.schema.lock().clone(),
            },
            What::Removed => StructEvent::Removed { path },
            What::SchemaSet => StructEvent::SchemaSet {
                path,
                schema: self.schema.lock().clone().unwrap_or_default(),
            },
        }
    }

    /// Tell every `:children[]` watcher above this node (strict ancestors). Called with the
    /// graph's structure lock held, so events reach each watcher in the order the tree changed.
    pub(crate) fn emit(&self, what: What) {
        let mut cur = self.parent.as_ref();
        while let Some(a) = cur {
            if let Some(edges) = a.struct_edges.snapshot() {
                let ev = self.struct_event(relative(&self.path, &a.path), what);
                for e in edges.iter() {
                    e.deliver_event(&ev);
                }
            }
            cur = a.parent.as_ref();
        }
    }

    /// Tell this node's own `:children[]` watchers about the node itself (path "").
    pub(crate) fn emit_self(&self, what: What) {
        if let Some(edges) = self.struct_edges.snapshot() {
            let ev = self.struct_event("", what);
            for e in edges.iter() {
                e.deliver_event(&ev);
            }
        }
    }
}
