//! CDR bytes against a few fixed definitions (the first byte picks one): a value or an error,
//! never a panic, a hang or an allocation beyond the payload; a value re-encodes to the same.
//! The checks live in the library's `exercise_cdr`, which tests/fuzz_corpus.rs also runs.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    ros2msg::exercise_cdr(data);
});
