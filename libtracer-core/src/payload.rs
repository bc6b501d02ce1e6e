//! Payloads and their metadata. The core never parses a payload.

use bytes::Bytes;

/// Opaque payload bytes.
///
/// Cloning is cheap (reference counted). It wraps `bytes::Bytes` so that a later shared-memory
/// transport can hand out a borrowed view into a segment (`Bytes::from_owner` keeps the segment
/// mapping alive) instead of a copy: the seed's `view_t`. Nothing on the data path copies a payload
/// between a writer and the rings it is delivered to in one process.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Payload(Bytes);

impl Payload {
    pub fn new(bytes: Bytes) -> Self {
        Payload(bytes)
    }
    pub fn copy_from_slice(data: &[u8]) -> Self {
        Payload(Bytes::copy_from_slice(data))
    }
    pub fn as_bytes(&self) -> &Bytes {
        &self.0
    }
    pub fn into_bytes(self) -> Bytes {
        self.0
    }
    pub fn len(&self) -> usize {
        self.0.len()
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl AsRef<[u8]> for Payload {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl From<Vec<u8>> for Payload {
    fn from(v: Vec<u8>) -> Self {
        Payload(Bytes::from(v))
    }
}

impl From<Bytes> for Payload {
    fn from(b: Bytes) -> Self {
        Payload(b)
    }
}

impl std::fmt::Debug for Payload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Payload({} bytes)", self.0.len())
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
