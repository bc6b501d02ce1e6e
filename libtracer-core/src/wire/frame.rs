//! The frames of wire protocol v1 as plain data. The codec is in `codec/`; the byte layout and the
//! rules are in docs/wire.md.
//!
//! ```text
//! frame   = length:u32 LE (bytes after this field) | version:u8 | kind:u8 | TLV*
//! TLV     = type:u8 | length:varint | value
//!           type bit 7 set = mandatory: a receiver that does not know it rejects the frame
//!           type bit 7 clear = optional: skipped when unknown
//! ```

use crate::payload::{Meta, Payload};
use crate::wire::policy::Window;

/// Protocol version carried in every frame header and in HELLO.
pub const PROTOCOL_VERSION: u8 = 1;

/// Default and largest accepted frame size (header excluded): 64 MiB. A peer may announce a
/// smaller limit in HELLO; nothing larger is ever allocated for one frame.
pub const MAX_FRAME: u32 = 64 * 1024 * 1024;

/// Request id. 0 means "no reply wanted".
pub type ReqId = u64;

/// Edge id, chosen by the consumer, unique per link and direction.
pub type EdgeId = u64;

/// Error codes carried on the wire (stable numbers).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    NotFound = 1,
    PermissionDenied = 2,
    SchemaNotFound = 3,
    Malformed = 4,
    Unsupported = 5,
    TooLarge = 6,
    WrongRole = 7,
    Internal = 8,
}

/// A structural event of a subtree (the `:children[]` feed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StructEvent {
    /// `path` is relative to the watched vertex ("" is the vertex itself).
    Created {
        path: String,
        role: Role,
        schema: Option<SchemaInfo>,
    },
    Removed {
        path: String,
    },
    SchemaSet {
        path: String,
        schema: SchemaInfo,
    },
}

impl StructEvent {
    /// The schema this event gives a vertex, with the vertex's relative path: what a tool that
    /// keeps the peers' `:schema`s (a recorder, `tracer`, the C API) learns from a `:children[]`
    /// feed. `None` for a removal or a creation without a schema.
    pub fn into_schema_set(self) -> Option<(String, SchemaInfo)> {
        match self {
            StructEvent::Created {
                path,
                schema: Some(schema),
                ..
            }
            | StructEvent::SchemaSet { path, schema } => Some((path, schema)),
            _ => None,
        }
    }
}

/// What a vertex stores.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    /// A write overwrites the stored value.
    Value = 1,
    /// A write appends to a bounded ring.
    Stream = 2,
    /// A write runs the logic behind the vertex (local only; shown to peers as a stream).
    Sink = 3,
    /// A directory-like vertex with no store of its own (made by mkdir -p).
    Inner = 4,
    /// A transport mount, `/net/<peer>`.
    Mount = 5,
}

/// `:schema`: for tools and introspection only, never for parsing payloads.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SchemaInfo {
    pub type_name: String,
    pub encoding: String,
    pub type_hash: String,
    pub definition: String,
    /// How a sample sits in memory: `plain <n>` when the n-byte C struct is the CDR body (a
    /// loanable type, docs/loans.md); empty otherwise. Sent only when not empty.
    pub layout: String,
}

/// Where a shared-memory payload is: `len` bytes at `offset` of the sender's segment `segment`,
/// out under `token` until the receiver releases it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShmRef {
    pub segment: u32,
    pub offset: u64,
    pub len: u32,
    pub token: u64,
}

/// HELLO's SHM flags: what the sender does with shared-memory segments sent to it (docs/wire.md,
/// HELLO). Other bits are ignored.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ShmCaps {
    /// Bit 0: it maps segments (SEGMENT, SHM_DELIVERY and RELEASE may be sent to it).
    pub maps: bool,
    /// Bit 1: it takes RETIRE, so a segment made for one message may be sent to it.
    pub retire: bool,
}

impl ShmCaps {
    pub const NONE: ShmCaps = ShmCaps {
        maps: false,
        retire: false,
    };
    /// What this version does when it maps at all.
    pub const ALL: ShmCaps = ShmCaps {
        maps: true,
        retire: true,
    };

    pub fn bits(self) -> u8 {
        u8::from(self.maps) | u8::from(self.retire) << 1
    }

    pub fn from_bits(b: u8) -> ShmCaps {
        ShmCaps {
            maps: b & 1 != 0,
            retire: b & 2 != 0,
        }
    }
}

/// Most tokens in one RELEASE.
pub const MAX_TOKENS: usize = 1024;

/// One frame of wire protocol v1.
#[derive(Clone, Debug, PartialEq)]
pub enum Frame {
    /// First frame on a link, each way.
    Hello {
        version: u8,
        node: String,
        max_frame: u32,
        /// What the sender does with shared memory sent to it (the optional SHM TLV).
        shm: ShmCaps,
        /// The sender's signed SROS2 permissions document (the optional PERMISSIONS TLV, at
        /// most [`MAX_PERMISSIONS`](crate::wire::MAX_PERMISSIONS) bytes; QUIC links with SROS2
        /// only, docs/wire.md section 2). Opaque here.
        permissions: Option<bytes::Bytes>,
        /// The UDP port of the sender's host directory (the optional DIRECTORY TLV, never 0;
        /// QUIC links only, docs/wire.md section 2).
        directory: Option<u16>,
    },
    /// A write addressed to `path` on the receiver (a forwarded write: the sender stripped its
    /// `/net/<peer>` prefix). Never creates on the receiver.
    Write {
        req: ReqId,
        path: String,
        meta: Meta,
        payload: Payload,
    },
    /// Add a SUBSCRIBER edge on the receiver's `source` (may end in `/:children[]`); deliveries come
    /// back as DELIVERY / STRUCTURE frames with this `edge`.
    Subscribe {
        req: ReqId,
        source: String,
        edge: EdgeId,
        policy: u16,
        /// Who subscribes (the optional TAG TLV, at most
        /// [`MAX_TAG`](crate::wire::MAX_TAG) bytes): opaque to the wire, read by the producer's
        /// edge filter (docs/wire.md, SUBSCRIBE).
        tag: Option<bytes::Bytes>,
        /// A paced edge's credit (the optional WINDOW TLV; docs/wire.md, "Flow control").
        window: Option<Window>,
    },
    Unsubscribe {
        edge: EdgeId,
    },
    /// Compact delivery: no paths, unless the write happened below the edge's source (`suffix`).
    Delivery {
        edge: EdgeId,
        meta: Meta,
        suffix: Option<String>,
        payload: Payload,
    },
    /// A structural event for a `:children[]` edge.
    Structure {
        edge: EdgeId,
        event: StructEvent,
    },
    /// Read the stored value (or newest ring entry) and schema of `path`.
    Read {
        req: ReqId,
        path: String,
    },
    ReadReply {
        req: ReqId,
        role: Role,
        schema: Option<SchemaInfo>,
        value: Option<(Meta, Payload)>,
    },
    /// The request `req` succeeded.
    Ok {
        req: ReqId,
    },
    /// The request `req` failed (req 0: a frame-level error, e.g. malformed).
    Error {
        req: ReqId,
        code: ErrorCode,
        message: String,
    },
    Ping {
        nonce: u64,
    },
    /// A shared-memory segment of the sender, once per link; its descriptor travels with the
    /// frame's first byte (SCM_RIGHTS). Link-level: never reaches a handler.
    Segment {
        id: u32,
        size: u64,
    },
    /// A DELIVERY whose payload stays in the sender's shared memory. Link-level: the receiving
    /// link hands its handler a `Delivery` whose payload is a view of that memory.
    ShmDelivery {
        edge: EdgeId,
        meta: Meta,
        suffix: Option<String>,
        shm: ShmRef,
    },
    /// A segment announced by SEGMENT and made for one message is gone from the sender: no
    /// reference into it is out. The receiver drops it from its table (its mapping goes with its
    /// last view). Link-level.
    Retire {
        id: u32,
        size: u64,
    },
    /// References the receiver of SHM_DELIVERY frames no longer holds. Link-level.
    Release {
        tokens: Tokens,
    },
    Pong {
        nonce: u64,
    },
    /// Credit back to the producer of a paced edge: samples of it left the consumer's target.
    /// The first, right after the OK to the SUBSCRIBE and empty, says that the producer paces.
    Credit {
        edge: EdgeId,
        window: Window,
    },
    /// One part of a DELIVERY too large for one frame (docs/wire.md, "Messages of any size"):
    /// part 0 carries the META and the SUFFIX. Link-level: the receiving link joins the parts
    /// (`wire::parts`) and hands its handler one `Delivery`.
    DeliveryPart {
        edge: EdgeId,
        part: Part,
        meta: Option<Meta>,
        suffix: Option<String>,
        chunk: Payload,
    },
}

/// Where a DELIVERY_PART is in its message: part `index` of `count`, which join into `total`
/// bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Part {
    pub index: u32,
    pub count: u32,
    pub total: u64,
}

/// The tokens of a RELEASE: a few inline (a link releases one at a time), more on the heap, so
/// the frame that returns each shared-memory sample costs no allocation to make or decode.
#[derive(Clone, Default)]
pub struct Tokens {
    inline: [u64; Tokens::INLINE],
    len: usize,
    heap: Vec<u64>,
}

impl Tokens {
    const INLINE: usize = 4;

    pub fn one(token: u64) -> Tokens {
        let mut t = Tokens::default();
        t.inline[0] = token;
        t.len = 1;
        t
    }
    pub fn as_slice(&self) -> &[u64] {
        if self.len <= Tokens::INLINE {
            &self.inline[..self.len]
        } else {
            &self.heap
        }
    }
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl From<Vec<u64>> for Tokens {
    fn from(v: Vec<u64>) -> Tokens {
        v.as_slice().into()
    }
}

impl From<&[u64]> for Tokens {
    fn from(v: &[u64]) -> Tokens {
        let mut t = Tokens {
            len: v.len(),
            ..Tokens::default()
        };
        if v.len() <= Tokens::INLINE {
            t.inline[..v.len()].copy_from_slice(v);
        } else {
            t.heap = v.to_vec();
        }
        t
    }
}

impl std::ops::Deref for Tokens {
    type Target = [u64];
    fn deref(&self) -> &[u64] {
        self.as_slice()
    }
}

impl PartialEq for Tokens {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}
impl Eq for Tokens {}

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.as_slice().fmt(f)
    }
}
