//! The SROS2 keystore layout, and what an enclave's process reads of it at init:
//!
//! ```text
//! <keystore>/public/{identity_ca,permissions_ca}.cert.pem
//! <keystore>/private/{identity_ca,permissions_ca}.key.pem
//! <keystore>/enclaves/governance.xml, governance.p7s        the domain's governance, signed
//! <keystore>/enclaves/<enclave>/cert.pem, key.pem           the enclave's identity
//! <keystore>/enclaves/<enclave>/identity_ca.cert.pem, permissions_ca.cert.pem, governance.p7s
//! <keystore>/enclaves/<enclave>/permissions.xml, permissions.p7s   its grant, signed
//! ```

use std::path::Path;

use crate::governance::{DomainRule, Governance};
use crate::permissions::{now_utc, Grant, Permissions};
use crate::smime;
use crate::Error;

pub const CERT: &str = "cert.pem";
pub const KEY: &str = "key.pem";
pub const IDENTITY_CA: &str = "identity_ca.cert.pem";
pub const PERMISSIONS_CA: &str = "permissions_ca.cert.pem";
pub const GOVERNANCE: &str = "governance.p7s";
pub const PERMISSIONS: &str = "permissions.p7s";

/// The files an enclave must hold for security to be on (what Fast DDS's rmw requires too).
pub const REQUIRED: [&str; 6] = [
    IDENTITY_CA,
    CERT,
    KEY,
    PERMISSIONS_CA,
    GOVERNANCE,
    PERMISSIONS,
];

fn read(path: &Path) -> Result<Vec<u8>, Error> {
    let meta = std::fs::metadata(path).map_err(|e| Error::Invalid(e.to_string()).in_file(path))?;
    if meta.len() > smime::MAX_FILE as u64 {
        return Err(Error::Invalid(format!("{} bytes: too large", meta.len())).in_file(path));
    }
    std::fs::read(path).map_err(|e| Error::Invalid(e.to_string()).in_file(path))
}

fn read_text(path: &Path) -> Result<String, Error> {
    String::from_utf8(read(path)?).map_err(|_| Error::Invalid("not UTF-8".into()).in_file(path))
}

/// Sign the document at `xml` with the permissions CA of `keystore`, into `p7s`.
pub fn sign_file(keystore: &Path, xml: &Path, p7s: &Path) -> Result<(), Error> {
    let ca_cert = keystore.join("public").join(PERMISSIONS_CA);
    let ca_key = keystore.join("private").join("permissions_ca.key.pem");
    let cert = read_text(&ca_cert)?;
    let key_pem = read_text(&ca_key)?;
    let key = smime::pem_block(&key_pem, "PRIVATE KEY")
        .ok_or_else(|| Error::Invalid("no PKCS#8 PRIVATE KEY in it".into()).in_file(&ca_key))?;
    let doc = read_text(xml)?;
    let signed = smime::sign(&doc, &cert, &key).map_err(|e| e.in_file(&ca_key))?;
    std::fs::write(p7s, signed).map_err(|e| Error::Invalid(e.to_string()).in_file(p7s))
}

/// A signed document of `path`, verified against the permissions CA (PEM).
pub fn read_signed(path: &Path, ca_pem: &str) -> Result<String, Error> {
    smime::verify(&read(path)?, ca_pem).map_err(|e| e.in_file(path))
}

/// Largest permissions document a peer may send (docs/wire.md, HELLO: PERMISSIONS).
pub const MAX_PEER_DOCUMENT: usize = 64 * 1024;

/// The grant a peer sent for itself (docs/network.md section 5), as DDS Security's
/// `validate_remote_permissions` takes it: `document` (its `permissions.p7s`) must be at most
/// [`MAX_PEER_DOCUMENT`] bytes, verify against our permissions CA (`ca_pem`), and hold a grant
/// whose `subject_name` is `subject`, the certificate subject its link proved, valid at `now`
/// (UTC, as [`now_utc`]). Every failure says which; one of validity alone
/// ([`Error::NotValidNow`]) carries the grant.
pub fn peer_grant(document: &[u8], ca_pem: &str, subject: &str, now: &str) -> Result<Grant, Error> {
    if document.len() > MAX_PEER_DOCUMENT {
        return Err(Error::Invalid(format!(
            "{} bytes (at most {MAX_PEER_DOCUMENT})",
            document.len()
        )));
    }
    let text = smime::verify(document, ca_pem)?;
    let p = Permissions::parse(&text)?;
    let grant = p.grant_for(subject).ok_or_else(|| {
        let named: Vec<&str> = p.grants.iter().map(|g| g.subject_name.as_str()).collect();
        Error::Invalid(format!(
            "no grant for {subject} (it names {})",
            if named.is_empty() {
                "no subject".to_owned()
            } else {
                named.join("; ")
            }
        ))
    })?;
    if !grant.valid_at(now) {
        // The grant goes with the refusal: one that starts later may be taken then.
        return Err(Error::NotValidNow {
            why: format!(
                "the grant for {subject} is valid from {} to {}, not now ({now} UTC)",
                grant.not_before, grant.not_after
            ),
            grant: Box::new(grant.clone()),
        });
    }
    Ok(grant.clone())
}

/// What an enclave's process enforces (docs/network.md section 5).
#[derive(Clone, Debug)]
pub struct Loaded {
    /// The certificate subject of this enclave (`CN=/talker`).
    pub subject: String,
    /// The governance rule of the domain.
    pub domain: DomainRule,
    /// This enclave's own grant.
    pub own: Grant,
}

/// Load and verify an enclave's governance and permissions for `domain`: every file missing,
/// unsigned by the permissions CA, invalid, or without a grant for the enclave's certificate
/// subject is an error naming the file.
pub fn load(enclave_dir: &Path, domain: u32) -> Result<Loaded, Error> {
    for f in REQUIRED {
        let p = enclave_dir.join(f);
        if !p.is_file() {
            return Err(Error::Invalid("missing".into()).in_file(&p));
        }
    }
    let ca = read_text(&enclave_dir.join(PERMISSIONS_CA))?;
    let cert_path = enclave_dir.join(CERT);
    let subject = smime::parse_pem_cert(&read_text(&cert_path)?)
        .map_err(|e| e.in_file(&cert_path))?
        .tbs_certificate
        .subject
        .to_string();
    let gov_path = enclave_dir.join(GOVERNANCE);
    let gov = Governance::parse(&read_signed(&gov_path, &ca)?).map_err(|e| e.in_file(&gov_path))?;
    let rule = gov.for_domain(domain).cloned().ok_or_else(|| {
        Error::Invalid(format!("no domain rule for domain {domain}")).in_file(&gov_path)
    })?;
    let now = now_utc();
    let own_path = enclave_dir.join(PERMISSIONS);
    let own =
        Permissions::parse(&read_signed(&own_path, &ca)?).map_err(|e| e.in_file(&own_path))?;
    let own = own
        .grant_for(&subject)
        .cloned()
        .ok_or_else(|| Error::Invalid(format!("no grant for {subject}")).in_file(&own_path))?;
    if !own.valid_at(&now) {
        return Err(Error::Invalid(format!(
            "the grant for {subject} is valid from {} to {}, not now ({now} UTC)",
            own.not_before, own.not_after
        ))
        .in_file(&own_path));
    }
    Ok(Loaded {
        subject,
        domain: rule,
        own,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ca() -> (String, Vec<u8>) {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut p = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        p.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        p.distinguished_name
            .push(rcgen::DnType::CommonName, "peer grant CA");
        let cert = p.self_signed(&key).unwrap();
        (cert.pem(), key.serialize_der())
    }

    fn doc(subject: &str, not_after: &str) -> String {
        format!(
            r#"<?xml version="1.0" encoding="UTF-8"?>
<dds><permissions><grant name="g"><subject_name>{subject}</subject_name>
<validity><not_before>2020-01-01T00:00:00</not_before><not_after>{not_after}</not_after></validity>
<allow_rule><domains><id>0</id></domains><publish><topics><topic>rt/chatter</topic></topics></publish></allow_rule>
<default>DENY</default></grant></permissions></dds>
"#
        )
    }

    const NOW: &str = "2026-12-03T12:00:00";

    #[test]
    fn a_peer_grant_for_its_own_subject_is_taken() {
        let (pem, key) = ca();
        let file = smime::sign(&doc("CN=/net/a", "2099-01-01T00:00:00"), &pem, &key).unwrap();
        let g = peer_grant(file.as_bytes(), &pem, "CN=/net/a", NOW).unwrap();
        assert!(g.decide(0, crate::Action::Publish, "rt/chatter"));
        assert!(!g.decide(0, crate::Action::Publish, "rt/secret"));
    }

    #[test]
    fn a_changed_byte_another_ca_another_subject_or_an_old_grant_is_refused() {
        let (pem, key) = ca();
        let file = smime::sign(&doc("CN=/net/a", "2099-01-01T00:00:00"), &pem, &key).unwrap();
        let tampered = file.replace("rt/chatter", "rt/chatteR");
        let e = peer_grant(tampered.as_bytes(), &pem, "CN=/net/a", NOW).unwrap_err();
        assert!(e.to_string().starts_with("signature:"), "{e}");
        let (other, _) = ca();
        let e = peer_grant(file.as_bytes(), &other, "CN=/net/a", NOW).unwrap_err();
        assert!(e.to_string().starts_with("signature:"), "{e}");
        // A document signed by our CA for another enclave: not this peer's grant.
        let e = peer_grant(file.as_bytes(), &pem, "CN=/net/b", NOW).unwrap_err();
        assert_eq!(e.to_string(), "no grant for CN=/net/b (it names CN=/net/a)");
        let old = smime::sign(&doc("CN=/net/a", "2021-01-01T00:00:00"), &pem, &key).unwrap();
        let e = peer_grant(old.as_bytes(), &pem, "CN=/net/a", NOW).unwrap_err();
        assert!(e.to_string().contains("not now"), "{e}");
    }

    #[test]
    fn a_document_past_the_bound_is_refused_before_it_is_read() {
        let (pem, _) = ca();
        let big = vec![b'x'; MAX_PEER_DOCUMENT + 1];
        let e = peer_grant(&big, &pem, "CN=/net/a", NOW).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("{} bytes (at most 65536)", MAX_PEER_DOCUMENT + 1)
        );
        let e = peer_grant(&big[..MAX_PEER_DOCUMENT], &pem, "CN=/net/a", NOW).unwrap_err();
        assert!(e.to_string().starts_with("signature:"), "{e}");
    }
}
