//! Keystores for the QUIC tests: one CA and an enclave certificate per name, as PEM files.

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use libtracer_core::link::QuicSecurity;

/// A keystore of one CA and an enclave per name, as PEM files in `dir`.
pub fn enclaves(dir: &Path, names: &[&str]) -> Vec<QuicSecurity> {
    let forever: Vec<(&str, Option<SystemTime>)> = names.iter().map(|n| (*n, None)).collect();
    enclaves_until(dir, &forever)
}

/// As [`enclaves`], each certificate valid until the second it names (`None`: rcgen's far
/// future), from 2020 on.
pub fn enclaves_until(dir: &Path, names: &[(&str, Option<SystemTime>)]) -> Vec<QuicSecurity> {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(rcgen::DnType::CommonName, "test CA");
    let ca = ca.self_signed(&ca_key).unwrap();
    let ca_file = dir.join("ca.pem");
    std::fs::write(&ca_file, ca.pem()).unwrap();
    names
        .iter()
        .map(|(n, until)| {
            let key = rcgen::KeyPair::generate().unwrap();
            let mut p = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
            p.distinguished_name.push(rcgen::DnType::CommonName, *n);
            p.extended_key_usages = vec![
                rcgen::ExtendedKeyUsagePurpose::ServerAuth,
                rcgen::ExtendedKeyUsagePurpose::ClientAuth,
            ];
            p.not_before = rcgen::date_time_ymd(2020, 1, 1);
            if let Some(t) = until {
                // rcgen takes `time`'s date type: the epoch's date plus the seconds since.
                let secs = t.duration_since(UNIX_EPOCH).unwrap().as_secs();
                p.not_after = rcgen::date_time_ymd(1970, 1, 1) + Duration::from_secs(secs);
            }
            let cert = p.signed_by(&key, &ca, &ca_key).unwrap();
            let stem = n.trim_start_matches('/').replace('/', "_");
            let (c, k) = (
                dir.join(format!("{stem}.pem")),
                dir.join(format!("{stem}.key")),
            );
            std::fs::write(&c, cert.pem()).unwrap();
            std::fs::write(&k, key.serialize_pem()).unwrap();
            QuicSecurity::from_pem_files(&c, &k, &ca_file).unwrap()
        })
        .collect()
}
