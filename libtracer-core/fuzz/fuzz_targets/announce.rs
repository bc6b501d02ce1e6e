//! Any datagram on the SUBNET announcement port yields an announcement that re-encodes to
//! itself, or an error, never a panic. The checks live in the library's `exercise_announce`, which
//! tests/link_quic_subnet.rs also runs over a seeded random corpus in every `cargo test`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    libtracer_core::link::quic::exercise_announce(data);
});
