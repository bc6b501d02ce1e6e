//! A content-filter expression and its parameters (user text, through rcl) compiled against a
//! fixed message type (the first byte picks one): a filter or an error, never a panic or a
//! hang; a filter evaluates on any message of its type. The checks live in the library's
//! `exercise_filter`, which tests/fuzz_corpus.rs also runs.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    content_filter::exercise_filter(data);
});
