//! Every read path of tracer-mcap over arbitrary bytes: no panic, no hang, bounded memory.
//! Seed corpus: `cargo run -p tracer-mcap --example write_fixtures mcap/fuzz/corpus/read`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    tracer_mcap::exercise_read(data);
});
