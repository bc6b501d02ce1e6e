//! Any text signed with the corpus CA's key verifies as itself (line endings made canonical),
//! and the signed file goes through every reader. The checks live in the library's
//! `exercise_sign_verify`, which tests/fuzz_corpus.rs also runs.
#![no_main]

use libfuzzer_sys::fuzz_target;

const CA_PEM: &str = include_str!("../seeds/ca.cert.pem");
const CA_KEY: &[u8] = include_bytes!("../seeds/ca.key.der");

fuzz_target!(|data: &[u8]| {
    tracer_sros2::exercise_sign_verify(data, CA_PEM, CA_KEY);
});
