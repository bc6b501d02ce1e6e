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

/// Exercise every decoder of this crate on `bytes` (fuzzing and `tests/corpus.rs`): the S/MIME
/// reader, the governance and permissions parsers and the policy parser. Never panics.
pub fn exercise_documents(bytes: &[u8], ca_pem: &str) {
    let _ = smime::verify(bytes, ca_pem);
    if let Ok(text) = std::str::from_utf8(bytes) {
        let _ = Governance::parse(text);
        if let Ok(p) = Permissions::parse(text) {
            for g in &p.grants {
                let _ = g.decide(0, Action::Publish, "rt/chatter");
                let _ = g.ends();
            }
        }
        let _ = permissions::epoch_secs(text);
        let _ = policy::permissions_xml(
            text,
            "/e",
            0,
            ("2020-01-01T00:00:00", "2030-01-01T00:00:00"),
        );
    }
}
