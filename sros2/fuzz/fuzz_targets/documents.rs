//! Any bytes as a signed file (S/MIME, CMS, verified against the corpus CA), a governance or
//! permissions document, and an SROS2 policy: a document or an error, never a panic or a hang;
//! a policy's permissions parse. The checks live in the library's `exercise_documents`, which
//! tests/fuzz_corpus.rs also runs.
#![no_main]

use libfuzzer_sys::fuzz_target;

const CA_PEM: &str = include_str!("../seeds/ca.cert.pem");

fuzz_target!(|data: &[u8]| {
    tracer_sros2::exercise_documents(data, CA_PEM);
});
