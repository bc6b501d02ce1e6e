//! Ruling 8: any byte string yields a frame or an error, never a panic, a hang or an allocation
//! beyond the frame bound. The checks live in the library's `exercise_decode`, which a normal
//! test also runs over a random corpus (tests/wire_fuzz_corpus.rs).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    libtracer_core::wire::exercise_decode(data);
});
