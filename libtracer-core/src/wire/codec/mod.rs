//! Encoder and decoder of wire protocol v1 frames. Pure: bytes in, frames out. The streaming
//! decoder for a byte stream is in `stream.rs`; the layout is drawn in docs/wire.md.
//!
//! ```text
//! frame  = length:u32 LE | version:u8 | kind:u8 | TLV*      length = bytes after the length field
//! TLV    = type:u8 | length:varint | value                  varint = LEB128, shortest form, <= 5 bytes
//!          type & 0x80: mandatory (unknown -> reject)      else optional (unknown -> skip)
//! ```
//!
//! Integers inside TLVs are fixed-width little endian, so a value's length is checked exactly.
//! The encoder always writes PAYLOAD last, which lets a link send the header and the payload as
//! two slices of one vectored write without copying the payload.
//!
//! The pieces: the TLV writer (`writer`) and reader (`reader`), the frame encoder (`encode`) and
//! decoder (`decode`), and structural events, in frames and as sample payloads (`event`).

mod decode;
mod encode;
mod event;
mod reader;
mod writer;

pub(crate) use decode::{check_frame_len, frame_len};
pub use decode::{decode, decode_body, decode_payload};
pub use encode::{encode, encode_head, encode_parts, EncodedFrame};
pub use event::{decode_struct_event, encode_struct_event};

/// Bytes of the length prefix.
pub const LEN_PREFIX: usize = 4;
/// Longest path or suffix on the wire (the graph's own path bound).
pub const MAX_PATH: usize = 1024;
/// Longest node name (one path segment).
pub const MAX_NODE: usize = 255;
/// Longest error message.
pub const MAX_MESSAGE: usize = 4096;
/// Longest PERMISSIONS value in HELLO (a signed permissions document).
pub const MAX_PERMISSIONS: usize = 64 * 1024;
/// Longest TAG value in SUBSCRIBE (who subscribes, opaque: rmw_tracer's is a 16-byte gid).
pub const MAX_TAG: usize = 64;

/// TLV type numbers. Bit 7 set = mandatory.
pub mod tlv {
    pub const REQ: u8 = 0x81;
    pub const PATH: u8 = 0x82;
    pub const META: u8 = 0x83;
    pub const PAYLOAD: u8 = 0x84;
    pub const EDGE: u8 = 0x85;
    pub const POLICY: u8 = 0x86;
    pub const NODE: u8 = 0x87;
    pub const VERSION: u8 = 0x88;
    pub const MAX_FRAME: u8 = 0x89;
    pub const CODE: u8 = 0x8A;
    pub const NONCE: u8 = 0x8B;
    pub const ROLE: u8 = 0x8C;
    pub const EVENT: u8 = 0x8D;
    pub const SUFFIX: u8 = 0x8E;
    pub const SCHEMA: u8 = 0x8F;
    pub const SEGMENT: u8 = 0x90;
    pub const SHM_REF: u8 = 0x91;
    pub const TOKENS: u8 = 0x92;
    /// DELIVERY_PART: u32 index, u32 count, u64 total.
    pub const PART: u8 = 0x93;
    /// Optional: human-readable error text.
    pub const MESSAGE: u8 = 0x01;
    /// Optional, in HELLO: u8 flags, bit 0 = maps shared-memory segments, bit 1 = takes RETIRE.
    pub const SHM: u8 = 0x02;
    /// Optional, in HELLO: the sender's signed permissions document, opaque.
    pub const PERMISSIONS: u8 = 0x03;
    /// Optional, in HELLO on QUIC links: u16 UDP port of the sender's host directory.
    pub const DIRECTORY: u8 = 0x04;
    /// Optional, in SUBSCRIBE: who subscribes, opaque bytes the producer's edge filter reads.
    pub const TAG: u8 = 0x05;
    /// Optional, in SUBSCRIBE of a paced edge; mandatory in CREDIT: u32 messages, u64 bytes.
    pub const WINDOW: u8 = 0x06;
    pub const MANDATORY: u8 = 0x80;
}

/// Frame kind numbers.
pub mod kind {
    pub const HELLO: u8 = 0x01;
    pub const WRITE: u8 = 0x02;
    pub const SUBSCRIBE: u8 = 0x03;
    pub const UNSUBSCRIBE: u8 = 0x04;
    pub const DELIVERY: u8 = 0x05;
    pub const STRUCTURE: u8 = 0x06;
    pub const READ: u8 = 0x07;
    pub const READ_REPLY: u8 = 0x08;
    pub const OK: u8 = 0x09;
    pub const ERROR: u8 = 0x0A;
    pub const PING: u8 = 0x0B;
    pub const PONG: u8 = 0x0C;
    pub const SEGMENT: u8 = 0x0D;
    pub const SHM_DELIVERY: u8 = 0x0E;
    pub const RELEASE: u8 = 0x0F;
    pub const CREDIT: u8 = 0x10;
    pub const DELIVERY_PART: u8 = 0x11;
    pub const RETIRE: u8 = 0x12;
}

/// Bytes of a META value: source timestamp, sequence, writer id.
const META_LEN: usize = 32;

/// The name of a frame kind, for errors and logs.
pub fn kind_name(k: u8) -> &'static str {
    match k {
        kind::HELLO => "HELLO",
        kind::WRITE => "WRITE",
        kind::SUBSCRIBE => "SUBSCRIBE",
        kind::UNSUBSCRIBE => "UNSUBSCRIBE",
        kind::DELIVERY => "DELIVERY",
        kind::STRUCTURE => "STRUCTURE",
        kind::READ => "READ",
        kind::READ_REPLY => "READ_REPLY",
        kind::OK => "OK",
        kind::ERROR => "ERROR",
        kind::PING => "PING",
        kind::PONG => "PONG",
        kind::SEGMENT => "SEGMENT",
        kind::SHM_DELIVERY => "SHM_DELIVERY",
        kind::RELEASE => "RELEASE",
        kind::CREDIT => "CREDIT",
        kind::DELIVERY_PART => "DELIVERY_PART",
        kind::RETIRE => "RETIRE",
        _ => "unknown frame",
    }
}
