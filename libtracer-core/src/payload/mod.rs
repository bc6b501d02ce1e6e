//! Payloads and their metadata. The core never parses a payload.

pub mod buffer;

use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;

use buffer::Block;

/// Opaque payload bytes.
///
/// Cloning is cheap (reference counted, no allocation). The bytes live in one of:
/// - a block of the process's buffer pool (`buffer.rs`): what the rmw serializes into and a
///   Unix-socket link reads into, recycled when the last holder drops it;
/// - a `bytes::Bytes` (the heap, or any owner `Bytes::from_owner` keeps alive);
/// - a slot of this process's shared-memory pool ([`Payload::from_slot`]), or a read-only view of
///   another process's slot ([`Payload::from_view`]).
///
/// Rings, edges, recording and every consumer see one kind of sample. A payload from our own
/// shared-memory pool also remembers its slot, which lets a Unix-socket link send a reference
/// instead of the bytes (docs/wire.md, SHM_DELIVERY). Nothing on the data path copies a payload
/// between a writer and the rings it is delivered to in one process.
#[derive(Clone, Default)]
pub struct Payload {
    repr: Repr,
}

#[derive(Clone)]
enum Repr {
    Bytes(Bytes),
    /// A whole slot of our shared-memory pool.
    Slot(tracer_shm::Slot),
    /// A view of a peer's slot.
    View(tracer_shm::View),
    /// `range` of a pool block.
    Block {
        block: Arc<Block>,
        start: usize,
        end: usize,
    },
}

impl Default for Repr {
    fn default() -> Self {
        Repr::Bytes(Bytes::new())
    }
}

impl Payload {
    pub fn new(bytes: Bytes) -> Self {
        Payload {
            repr: Repr::Bytes(bytes),
        }
    }
    pub fn copy_from_slice(data: &[u8]) -> Self {
        Payload::new(Bytes::copy_from_slice(data))
    }
    /// `range` of a block of the buffer pool (made by `BufMut::freeze`).
    pub(crate) fn from_block(block: Arc<Block>, range: Range<usize>) -> Self {
        Payload {
            repr: Repr::Block {
                block,
                start: range.start,
                end: range.end,
            },
        }
    }
    /// A filled slot of this process's shared-memory pool: the slot is free again when the
    /// last clone of the payload (and of any `Bytes` taken from it) is gone, and every peer that
    /// was sent a reference has released it.
    pub fn from_slot(slot: tracer_shm::Slot) -> Self {
        Payload {
            repr: Repr::Slot(slot),
        }
    }
    /// Bytes `range` of `v`, without a copy (a loan in ordinary memory starts where its struct is
    /// aligned, not at the start of its buffer).
    pub fn from_vec_range(v: Vec<u8>, range: Range<usize>) -> Self {
        Payload::new(Bytes::from(v).slice(range))
    }
    /// A view of a peer's shared memory (made by the link that received the reference).
    pub fn from_view(view: tracer_shm::View) -> Self {
        Payload {
            repr: Repr::View(view),
        }
    }
    /// The pool slot holding these bytes, when they are in this process's shared-memory pool.
    pub fn slot(&self) -> Option<&tracer_shm::Slot> {
        match &self.repr {
            Repr::Slot(s) => Some(s),
            _ => None,
        }
    }
    /// Bytes `range` of this payload, sharing its memory (panics when out of bounds, as slicing
    /// does). The slice of a shared-memory slot is not that slot's sample: it forgets the slot.
    pub fn slice(&self, range: Range<usize>) -> Payload {
        assert!(range.start <= range.end && range.end <= self.len());
        let repr = match &self.repr {
            Repr::Bytes(b) => Repr::Bytes(b.slice(range)),
            Repr::Block { block, start, .. } => Repr::Block {
                block: block.clone(),
                start: start + range.start,
                end: start + range.end,
            },
            // Not on the data path (links slice the bodies they read, never shared memory).
            Repr::Slot(_) | Repr::View(_) => Repr::Bytes(self.to_bytes().slice(range)),
        };
        Payload { repr }
    }
    /// The bytes as a `Bytes` sharing this payload's memory (a pool block is wrapped, which
    /// allocates once: for consumers that need a `Bytes`, such as the QUIC link).
    pub fn to_bytes(&self) -> Bytes {
        match &self.repr {
            Repr::Bytes(b) => b.clone(),
            Repr::Block { .. } => Bytes::from_owner(self.clone()),
            Repr::Slot(s) => Bytes::from_owner(s.clone()),
            Repr::View(v) => Bytes::from_owner(v.clone()),
        }
    }
    /// Whether the bytes are a view of another process's shared memory.
    pub fn is_view(&self) -> bool {
        matches!(self.repr, Repr::View(_))
    }
    /// Whether the bytes are in a block of the buffer pool.
    pub fn is_pooled(&self) -> bool {
        matches!(self.repr, Repr::Block { .. })
    }
    pub fn len(&self) -> usize {
        self.as_ref().len()
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Equal bytes are equal payloads, wherever they live.
impl PartialEq for Payload {
    fn eq(&self, other: &Self) -> bool {
        self.as_ref() == other.as_ref()
    }
}
impl Eq for Payload {}

impl AsRef<[u8]> for Payload {
    fn as_ref(&self) -> &[u8] {
        match &self.repr {
            Repr::Bytes(b) => b,
            Repr::Block { block, start, end } => &block.bytes()[*start..*end],
            Repr::Slot(s) => s.as_ref(),
            Repr::View(v) => v.as_ref(),
        }
    }
}

impl From<Vec<u8>> for Payload {
    fn from(v: Vec<u8>) -> Self {
        Payload::new(Bytes::from(v))
    }
}

impl From<Bytes> for Payload {
    fn from(b: Bytes) -> Self {
        Payload::new(b)
    }
}

impl std::fmt::Debug for Payload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.repr {
            Repr::Slot(s) => write!(f, "Payload({} bytes in {s:?})", self.len()),
            Repr::View(_) => write!(f, "Payload({} bytes, a peer's shared memory)", self.len()),
            Repr::Block { .. } => write!(f, "Payload({} bytes, pooled)", self.len()),
            Repr::Bytes(_) => write!(f, "Payload({} bytes)", self.len()),
        }
    }
}

/// Writer identity: 16 opaque bytes (the rmw layer puts the publisher gid here).
pub type WriterId = [u8; 16];

/// Metadata that travels with every write, end to end, unchanged.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Meta {
    /// Nanoseconds since the Unix epoch, stamped by the writer.
    pub source_timestamp_ns: i64,
    /// The writer's own sequence number for this write.
    pub sequence: u64,
    pub writer: WriterId,
}
