//! The streams and datagrams of a QUIC link (docs/network.md section 7, wire.md section 5):
//! which carries what (each frame's route: `routes.rs`), their tags and priorities, the
//! barrier markers, and what the sending side counts. The sending side is `send/`, the
//! receiving side `inbound.rs` with `receive.rs`.
//!
//! ```text
//! control stream (bidi, HELLO)   requests, answers, everything not of an edge      priority 100
//! reliable stream of class c     DELIVERY / STRUCTURE of reliable edges of class c   2c + 1
//!                                and the answer to their SUBSCRIBE; in class 3 (the
//!                                default) also every WRITE (service calls, replies)
//! best-effort stream of class c  best-effort DELIVERY too large for a datagram      2c
//! datagram                       best-effort DELIVERY that fits (one frame each)    (before streams)
//! ```
//!
//! Each unidirectional stream starts with one tag byte (the adapter's framing): `c` for the
//! reliable stream of class `c`, `8 + c` for a best-effort one. Then frames, as on the control
//! stream. A reliable stream is opened once per link and class; a best-effort sample has a
//! stream of its own, finished once written, or reset (abandoned) when a newer sample of its
//! class is waiting while it is half written. A reset drops all its stream holds that is not yet
//! acknowledged, so a shared stream would lose whole samples uncounted.
//!
//! A delivery never waits for the network: the frame is staged on its stream, and what the stream's
//! credit does not take yet waits in its queue. A reliable stream's queue is bounded (`queue.rs`):
//! a delivery that does not fit drops the oldest queued deliveries (counted; the subscriber sees
//! the sequence gap as lost messages), and only frames that are never dropped (a WRITE, an answer,
//! a marker) wait for room. A best-effort send never waits: the newest sample of a class replaces
//! one still waiting.
//!
//! **The write timeout bounds a stall, not a transfer.** A stream, and a send waiting for room,
//! give up (and the link closes) only when the stream has taken no byte for the whole write
//! timeout: the peer stopped reading, or the path is gone. A large frame on a slow but live path
//! takes as long as it takes, as a Unix socket's `SO_SNDTIMEO` bounds each write call, not a
//! frame. (Bounding the whole frame cut a 4 MiB image at 10 s on any path slower than
//! 0.4 MB/s; the link came back, the resend window sent the image again from its first byte,
//! and it never arrived: docs/network.md section 9.)

use std::sync::atomic::AtomicU64;

use crate::wire::{EncodedFrame, Frame};

/// Priority classes of the delivery policy.
pub(crate) const CLASSES: usize = 8;
/// Tag of the first best-effort stream; tags at or above `2 * CLASSES` are malformed.
pub(crate) const BEST_EFFORT_TAG: u8 = CLASSES as u8;
/// quinn priority of the control stream: above every edge stream.
pub(crate) const CONTROL_PRIORITY: i32 = 100;
/// Top 16 bits of a barrier PING's nonce on the control stream (wire.md section 5).
const BARRIER_MAGIC: u64 = 0xB1A7;

/// A barrier PING's nonce: `0xB1A7 | number (40 bits) | class set (8 bits)`.
pub(crate) fn barrier_nonce(number: u64, classes: u8) -> u64 {
    (BARRIER_MAGIC << 48) | ((number & 0xFF_FFFF_FFFF) << 8) | u64::from(classes)
}

/// The barrier a control-stream PING stands for, if it is one: (number, class set).
pub(crate) fn parse_barrier(nonce: u64) -> Option<(u64, u8)> {
    (nonce >> 48 == BARRIER_MAGIC).then_some(((nonce >> 8) & 0xFF_FFFF_FFFF, nonce as u8))
}

/// Counters of the frames a link's sending side gave up.
#[derive(Default)]
pub(crate) struct Shed {
    /// Reliable deliveries dropped, oldest first, from a full stream queue.
    pub dropped: AtomicU64,
    /// Best-effort samples replaced by a newer one of their class before they were written.
    pub replaced: AtomicU64,
    /// Best-effort streams reset with a sample half written (a newer one was waiting).
    pub abandoned: AtomicU64,
    /// Best-effort samples sent as datagrams.
    pub datagrams: AtomicU64,
}

/// Why a send failed: the caller closes the link.
#[derive(Debug)]
pub(crate) enum SendFail {
    Closed,
    Blocked,
}

pub(crate) fn ping(nonce: u64) -> EncodedFrame {
    crate::wire::encode_parts(&Frame::Ping { nonce }, crate::wire::MAX_FRAME)
        .expect("a PING always encodes")
}
