//! A host directory answer or a peer certificate from garbage: never a panic, and an accepted
//! answer re-encodes to itself. The checks live in the library's `exercise_directory_answer`,
//! which a normal test also runs over a random corpus (tests/quic_fuzz_corpus.rs).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    libtracer_core::link::quic::exercise_directory_answer(data);
});
