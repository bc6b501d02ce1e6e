//! SROS2's security documents without ROS (docs/network.md section 5): the S/MIME signatures
//! of `governance.p7s` and `permissions.p7s` (`smime`), the DDS Security governance
//! (`governance`) and permissions (`permissions`) documents and how they decide, the SROS2
//! policy format `ros2 security create_permission` takes (`policy`), and the keystore layout
//! (`keystore`). `tracer keystore` writes these documents; rmw_tracer reads and enforces them.
#![forbid(unsafe_code)]

pub mod fnmatch;
pub mod governance;
pub mod keystore;
pub mod permissions;
pub mod policy;
pub mod smime;
mod xml;

pub use governance::{DomainRule, Governance, TopicRule};
pub use permissions::{Action, Grant, Permissions};

/// Everything that can be wrong with a security document.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Error {
    #[error("signature: {0}")]
    Signature(String),
    #[error("XML: {0}")]
    Xml(String),
    #[error("{0}")]
    Invalid(String),
    /// A peer's document verified and holds its grant, whose validity does not cover now.
    #[error("{why}")]
    NotValidNow { why: String, grant: Box<Grant> },
    #[error("{path}: {why}")]
    File { path: String, why: String },
}

impl Error {
    /// The same error, naming the file it is about.
    pub fn in_file(self, path: &std::path::Path) -> Error {
        Error::File {
            path: path.display().to_string(),
            why: self.to_string(),
        }
    }
}

/// Exercise every decoder of this crate on `bytes` (fuzzing and `tests/corpus.rs`,
/// `tests/fuzz_corpus.rs`): the S/MIME reader, the governance and permissions parsers and the
/// policy parser. Never panics but on a broken invariant: what the policy parser writes is a
/// permissions document that parses, with the one grant it wrote.
pub fn exercise_documents(bytes: &[u8], ca_pem: &str) {
    if let Ok(doc) = smime::verify(bytes, ca_pem) {
        // A verified document is text the XML parsers take (or refuse) like any other.
        let _ = Governance::parse(&doc);
        let _ = Permissions::parse(&doc);
    }
    let Ok(text) = std::str::from_utf8(bytes) else {
        return;
    };
    if let Ok(g) = Governance::parse(text) {
        for d in [0, 1, 230, u32::MAX] {
            if let Some(r) = g.for_domain(d) {
                let _ = r.controlled("rt/chatter", true);
                let _ = r.controlled("rq/a/b/cRequest", false);
            }
        }
    }
    if let Ok(p) = Permissions::parse(text) {
        for g in &p.grants {
            let _ = g.decide(0, Action::Publish, "rt/chatter");
            let _ = g.decide(u32::MAX, Action::Subscribe, "rt/a/b");
            let _ = g.covers_domain(0);
            let _ = g.is_for("CN=/e");
            let _ = g.is_for(&g.subject_name);
            let _ = g.valid_at("2025-06-01T00:00:00");
            let _ = (g.starts(), g.ends());
        }
    }
    let _ = permissions::epoch_secs(text);
    let validity = ("2020-01-01T00:00:00", "2030-01-01T00:00:00");
    if let Ok(xml) = policy::permissions_xml(text, "/e", 7, validity) {
        let p = Permissions::parse(&xml)
            .unwrap_or_else(|e| panic!("the policy's permissions do not parse: {e}\n{xml}"));
        let [g] = p.grants.as_slice() else {
            panic!("the policy's permissions have {} grants", p.grants.len());
        };
        assert_eq!((g.not_before.as_str(), g.not_after.as_str()), validity);
        assert!(g.is_for("CN=/e"), "{xml}");
    }
}

/// Signs `bytes` (when UTF-8) with the CA's key and verifies the file: the document must come
/// back as signed, line endings aside (the canonical form is CRLF; verify gives LF); the same
/// file with one signature byte changed must not verify.
pub fn exercise_sign_verify(bytes: &[u8], ca_pem: &str, ca_key_pkcs8: &[u8]) {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return;
    };
    let file = smime::sign(text, ca_pem, ca_key_pkcs8).expect("any text signs");
    let back = smime::verify(file.as_bytes(), ca_pem)
        .unwrap_or_else(|e| panic!("a signed document does not verify: {e}"));
    // The canonical form (CRLF for each LF, a CR before it dropped), then verify's LF form.
    let lines: Vec<&str> = text.split('\n').collect();
    let canonical = lines
        .iter()
        .enumerate()
        .map(|(i, l)| match l.strip_suffix('\r') {
            Some(s) if i + 1 < lines.len() => s,
            _ => l,
        })
        .collect::<Vec<_>>()
        .join("\r\n")
        .replace("\r\n", "\n");
    assert_eq!(
        back, canonical,
        "the document changed across sign and verify"
    );
    exercise_documents(file.as_bytes(), ca_pem);
}

/// Validity dates (`YYYY-MM-DDTHH:MM:SS`, from any permissions document): a date that reads
/// as seconds prints as a date that reads as the same seconds; any second from 1970 to 9999
/// prints and reads back; the string comparison of [`Grant::valid_at`] agrees with
/// [`Grant::starts`] and [`Grant::ends`] on dates in their printed form.
pub fn exercise_dates(bytes: &[u8]) {
    const LAST: u64 = permissions::LAST_SECOND;
    let text = String::from_utf8_lossy(bytes);
    let mut secs = Vec::new();
    for part in text.split('|') {
        if let Some(n) = permissions::epoch_secs(part) {
            assert!(n <= LAST, "{part:?} reads as {n}");
            let again = permissions::utc(n);
            assert_eq!(
                permissions::epoch_secs(&again),
                Some(n),
                "{part:?} -> {again}"
            );
            secs.push(n);
        }
    }
    for chunk in bytes.chunks(8) {
        let mut b = [0u8; 8];
        b[..chunk.len()].copy_from_slice(chunk);
        let n = u64::from_le_bytes(b) % (LAST + 1);
        let t = permissions::utc(n);
        assert_eq!(permissions::epoch_secs(&t), Some(n), "{n} -> {t}");
        secs.push(n);
    }
    if let [a, b, now, ..] = secs[..] {
        let xml = format!(
            "<dds><permissions><grant name=\"g\"><subject_name>CN=x</subject_name><validity>\
             <not_before>{}</not_before><not_after>{}</not_after></validity>\
             <default>DENY</default></grant></permissions></dds>",
            permissions::utc(a),
            permissions::utc(b)
        );
        let p = Permissions::parse(&xml).expect("a grant of two printed dates parses");
        let grant = &p.grants[0];
        let start = std::time::UNIX_EPOCH + std::time::Duration::from_secs(a);
        let end = std::time::UNIX_EPOCH + std::time::Duration::from_secs(b + 1);
        assert_eq!((grant.starts(), grant.ends()), (Some(start), Some(end)));
        let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(now);
        assert_eq!(
            grant.valid_at(&permissions::utc(now)),
            start <= t && t < end,
            "{grant:?} at {now}"
        );
    }
}
