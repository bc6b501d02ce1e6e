//! A QUIC link's datagram decoding (docs/network.md section 7): any byte string is one DELIVERY
//! or an error, never a panic. The checks live in the library's `exercise_datagram`, which a
//! normal test also runs over a random corpus (tests/link_quic_streams.rs).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    libtracer_core::link::quic::exercise_datagram(data);
});
