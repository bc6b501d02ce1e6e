//! A ros2msg definition text (up to the first NUL; also split as a ros2srv) and CDR bytes
//! decoded against it: a schema, a value or an error, never a panic, a hang or an allocation
//! beyond the input. The checks live in the library's `exercise_schema`, which
//! tests/fuzz_corpus.rs also runs.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    ros2msg::exercise_schema(data);
});
