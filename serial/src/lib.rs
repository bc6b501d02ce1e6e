//! Host side of the serial wire to microcontroller nodes (docs/serial.md), sans I/O.
//!
//! Layers, each its own module: [`crc`] and [`cobs`] (the checks and the byte stuffing),
//! [`codec`] (layer 2: packets to delimited, checked frames, resynchronisation), [`frame`]
//! (layer 3: the packets), [`session`] (the host's state machine for one line). A CAN transport
//! later replaces `codec` and feeds [`Session::handle_packet`] directly.
#![forbid(unsafe_code)]

pub mod cobs;
pub mod codec;
pub mod crc;
pub mod error;
pub mod frame;
pub mod session;
mod stream;
mod types;

pub use codec::{encode_message, encode_packet, Deframer, MAX_FRAME};
pub use error::{DecodeError, FrameError, SendError};
pub use frame::{Declare, Hello, Packet, CDR_HEADER};
pub use session::{
    gid, Endpoint, EndpointKind, Event, NodeInfo, Session, SessionConfig, Stats, MAX_UNDELIVERED,
    MAX_UNDELIVERED_BEST_EFFORT,
};

/// Bound on [`Session::heap_bytes`] for [`exercise_decoder`]'s configuration: the collected
/// frame and one reassembly per alias (64 aliases of `max_message` 1024 + header).
pub const EXERCISE_HEAP_BOUND: usize = 2 * 256 + 64 * 1032;

/// Feeds `bytes` to a fresh host session (all at once, then byte by byte to a second one),
/// draining what it produces, for fuzzing: must never panic, and the session's buffers stay
/// within [`EXERCISE_HEAP_BOUND`] (checked with an assertion, which a fuzzer reports).
pub fn exercise_decoder(bytes: &[u8]) {
    let cfg = SessionConfig {
        max_message: 1024,
        ..SessionConfig::default()
    };
    let mut whole = Session::new(cfg.clone(), 0);
    whole.handle_bytes(1, bytes);
    whole.handle_timeout(2);
    drain(&mut whole);
    let mut single = Session::new(cfg, 0);
    for (i, b) in bytes.iter().enumerate() {
        single.handle_bytes(i as u64, std::slice::from_ref(b));
        if i % 64 == 0 {
            single.handle_timeout(i as u64);
            drain(&mut single);
        }
    }
    drain(&mut single);
    // Whole frames are also fed straight to the packet decoder (a CAN transport's path).
    let mut d = Deframer::default();
    let mut input = bytes;
    while let Some(r) = d.next_packet(&mut input) {
        if let Ok(p) = r {
            let _ = Packet::decode(p);
        }
    }
}

fn drain(s: &mut Session) {
    assert!(
        s.heap_bytes() <= EXERCISE_HEAP_BOUND,
        "heap {} bytes",
        s.heap_bytes()
    );
    while s.poll_event().is_some() {}
    let _ = s.poll_transmit();
}
