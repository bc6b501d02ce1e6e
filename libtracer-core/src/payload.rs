//! Payloads and their metadata. The core never parses a payload.

use bytes::Bytes;

/// Opaque payload bytes.
///
/// Cloning is cheap (reference counted). The bytes are a `bytes::Bytes` whichever memory holds
/// them: the heap, a pooled frame buffer, a slot of this process's shared-memory pool
/// ([`Payload::from_slot`]), or a read-only view of another process's slot
/// ([`Payload::from_view`]); `Bytes::from_owner` keeps that memory alive, so rings, edges,
/// recording and every consumer see one kind of sample. A payload from our own pool also
/// remembers its slot, which lets a Unix-socket link send a reference instead of the bytes
/// (docs/wire.md, SHM_DELIVERY). Nothing on the data path copies a payload between a writer and
/// the rings it is delivered to in one process.
#[derive(Clone, Default)]
pub struct Payload {
    bytes: Bytes,
    slot: Option<tracer_shm::Slot>,
}

impl Payload {
    pub fn new(bytes: Bytes) -> Self {
        Payload { bytes, slot: None }
    }
    pub fn copy_from_slice(data: &[u8]) -> Self {
        Payload::new(Bytes::copy_from_slice(data))
    }
    /// A filled slot of this process's shared-memory pool: the slot is free again when the
    /// last clone of the payload (and of any `Bytes` taken from it) is gone, and every peer that
    /// was sent a reference has released it.
    pub fn from_slot(slot: tracer_shm::Slot) -> Self {
        Payload {
            bytes: Bytes::from_owner(slot.clone()),
            slot: Some(slot),
        }
    }
    /// Bytes `range` of `v`, without a copy (a loan in ordinary memory starts where its struct is
    /// aligned, not at the start of its buffer).
    pub fn from_vec_range(v: Vec<u8>, range: std::ops::Range<usize>) -> Self {
        Payload::new(Bytes::from(v).slice(range))
    }
    /// A view of a peer's shared memory (made by the link that received the reference).
    pub fn from_view(view: tracer_shm::View) -> Self {
        Payload::new(Bytes::from_owner(view))
    }
    /// The pool slot holding these bytes, when they are in this process's shared-memory pool.
    pub fn slot(&self) -> Option<&tracer_shm::Slot> {
        self.slot.as_ref()
    }
    pub fn as_bytes(&self) -> &Bytes {
        &self.bytes
    }
    pub fn into_bytes(self) -> Bytes {
        self.bytes
    }
    pub fn len(&self) -> usize {
        self.bytes.len()
    }
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }
}

/// Equal bytes are equal payloads, wherever they live.
impl PartialEq for Payload {
    fn eq(&self, other: &Self) -> bool {
        self.bytes == other.bytes
    }
}
impl Eq for Payload {}

impl AsRef<[u8]> for Payload {
    fn as_ref(&self) -> &[u8] {
        &self.bytes
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
        match &self.slot {
            Some(s) => write!(f, "Payload({} bytes in {s:?})", self.bytes.len()),
            None => write!(f, "Payload({} bytes)", self.bytes.len()),
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
