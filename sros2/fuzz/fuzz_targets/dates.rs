//! Validity dates (`|`-separated texts, and the bytes as seconds): what reads as seconds prints
//! and reads back the same, and a grant's string comparison agrees with its start and end.
//! The checks live in the library's `exercise_dates`, which tests/fuzz_corpus.rs also runs.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    tracer_sros2::exercise_dates(data);
});
