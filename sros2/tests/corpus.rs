//! Every decoder of the crate (S/MIME reader, CMS, governance, permissions and policy XML) fed
//! a seeded corpus of random and mutated documents: never a panic, and a mutated signed file
//! never verifies as anything but the original document.

use tracer_sros2::{exercise_documents, governance, policy, smime};

fn ca() -> (String, Vec<u8>) {
    let key = rcgen::KeyPair::generate().unwrap();
    let mut p = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    p.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    p.distinguished_name
        .push(rcgen::DnType::CommonName, "corpus CA");
    let cert = p.self_signed(&key).unwrap();
    (cert.pem(), key.serialize_der())
}

#[test]
fn documents_from_garbage_never_panic_and_never_verify_changed() {
    let (pem, key) = ca();
    let perms = policy::permissions_xml(policy::DEFAULT_POLICY, "/e", 0, ("a", "b")).unwrap();
    let gov = governance::default_xml(0);
    let signed = smime::sign(&perms, &pem, &key).unwrap();
    let seeds: Vec<Vec<u8>> = vec![
        signed.clone().into_bytes(),
        smime::sign(&gov, &pem, &key).unwrap().into_bytes(),
        perms.clone().into_bytes(),
        gov.into_bytes(),
        policy::DEFAULT_POLICY.as_bytes().to_vec(),
    ];
    // xorshift64: deterministic, no dependency.
    let mut x: u64 = 0x5eed_5205_0000_0001;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut verified_changed = 0;
    for i in 0..3000 {
        let mut input = if i % 5 == 0 {
            (0..next() % 400).map(|_| next() as u8).collect()
        } else {
            seeds[(next() % seeds.len() as u64) as usize].clone()
        };
        for _ in 0..1 + next() % 3 {
            if input.is_empty() {
                break;
            }
            let at = (next() % input.len() as u64) as usize;
            match next() % 3 {
                0 => input[at] ^= 1 << (next() % 8),
                1 => input.insert(at, next() as u8),
                _ => input.truncate(at),
            }
        }
        exercise_documents(&input, &pem);
        if let Ok(doc) = smime::verify(&input, &pem) {
            if doc != perms && !doc.contains("domain_access_rules") {
                verified_changed += 1;
            }
        }
    }
    assert_eq!(verified_changed, 0);
    assert_eq!(smime::verify(signed.as_bytes(), &pem).unwrap(), perms);
}
