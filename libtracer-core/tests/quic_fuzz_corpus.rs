#![cfg(feature = "quic")]
//! What a peer host sends outside the wire codec, fed garbage: the host directory's answer
//! (`link/quic/directory.rs`) and the certificate a peer presents (whose subject is its ACL
//! principal). `exercise_directory_answer` never panics and accepts only answers that
//! re-encode to themselves; this runs it over a seeded corpus of random and mutated inputs in
//! every `cargo test` (no nightly needed).

#[path = "common/corpus.rs"]
mod corpus;

use corpus::Rng;
use libtracer_core::link::quic::exercise_directory_answer;
use libtracer_core::link::subject_of;

fn certificate(cn: &str) -> Vec<u8> {
    let key = rcgen::KeyPair::generate().unwrap();
    let mut p = rcgen::CertificateParams::new(vec!["libtracer".to_owned()]).unwrap();
    p.distinguished_name.push(rcgen::DnType::CommonName, cn);
    p.self_signed(&key).unwrap().der().to_vec()
}

fn seeds() -> Vec<Vec<u8>> {
    let mut s: Vec<Vec<u8>> = vec![
        b"host-1-0 40001\n".to_vec(),
        b"a 1\nb 65535\nc.d~e_f-g 24650\n".to_vec(),
        b"solo 7".to_vec(),
        Vec::new(),
    ];
    let many: String = (0..200)
        .map(|i| format!("member-{i} {}\n", 1000 + i))
        .collect();
    s.push(many.into_bytes());
    s.push(certificate("/talker_listener/talker"));
    s
}

#[test]
fn directory_answers_and_certificates_from_garbage_never_panic() {
    let seeds = seeds();
    let mut rng = Rng(0x5eed_d1ec_7042_0007);
    let (mut accepted, mut members) = (0usize, 0usize);
    for i in 0..20_000 {
        let input = corpus::input(&mut rng, i, &seeds, 300, corpus::FEW);
        let n = exercise_directory_answer(&input);
        members += n;
        accepted += usize::from(n > 0);
    }
    // Both outcomes were reached, so the corpus was not vacuous.
    assert!(accepted > 1000 && members > 10_000, "{accepted} {members}");
}

#[test]
fn an_answer_above_the_bound_is_refused_whole() {
    let line = b"m 1\n";
    let big: Vec<u8> = line.iter().copied().cycle().take(300 * 1024).collect();
    assert_eq!(exercise_directory_answer(&big), 0);
    let fits: Vec<u8> = line.iter().copied().cycle().take(256 * 1024).collect();
    assert_eq!(exercise_directory_answer(&fits), 64 * 1024);
}

#[test]
fn a_certificate_names_its_subject_in_rfc4514_form() {
    assert_eq!(
        subject_of(&certificate("/talker_listener/talker")).unwrap(),
        "CN=/talker_listener/talker"
    );
    let der = certificate("/a,b");
    assert_eq!(subject_of(&der).unwrap(), "CN=/a\\,b");
    let mut rng = Rng(3);
    for n in 0..der.len() {
        assert!(subject_of(&der[..n]).is_err());
        let mut bad = der.clone();
        bad[rng.below(der.len())] ^= 0x80;
        let _ = subject_of(&bad);
    }
}
