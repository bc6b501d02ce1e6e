//! CDR bytes taken into C and C++ messages of real types (the first byte picks one of
//! `EXERCISE_TYPES`), as `rmw_take` writes what a peer sent into the user's message: a message
//! or an error about the bytes, never a write out of bounds (AddressSanitizer watches), a crash
//! or an allocation beyond a small multiple of the input. The checks live in the library's
//! `exercise_deserialize`, which tests/cdr_fuzz_corpus.rs also runs.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = rmw_tracer::cdr::exercise::exercise_deserialize(data);
});
