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

use std::path::{Path, PathBuf};

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

/// At most this many enclaves' permissions are read from a keystore, this deep.
const MAX_ENCLAVES: usize = 4096;
const MAX_DEPTH: usize = 16;

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

/// What an enclave's process enforces (docs/network.md section 5).
#[derive(Clone, Debug)]
pub struct Loaded {
    /// The certificate subject of this enclave (`CN=/talker`).
    pub subject: String,
    /// The governance rule of the domain.
    pub domain: DomainRule,
    /// This enclave's own grant.
    pub own: Grant,
    /// The valid grants of the keystore's other enclaves (each from its own signed
    /// permissions file), the rules this process applies to their requests. Their files
    /// must be on this host: see docs/network.md section 5.
    pub peers: Vec<Grant>,
    /// Files of other enclaves that were skipped, and why (for a warning).
    pub skipped: Vec<String>,
}

/// The keystore root above an enclave directory (`<keystore>/enclaves/<enclave>`).
pub fn keystore_of(enclave_dir: &Path) -> Option<PathBuf> {
    let mut cur = enclave_dir.parent();
    while let Some(d) = cur {
        if d.file_name().is_some_and(|n| n == "enclaves") {
            return d.parent().map(Path::to_path_buf);
        }
        cur = d.parent();
    }
    None
}

/// Every `permissions.p7s` below `dir` (bounded).
fn permission_files(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
    if depth > MAX_DEPTH || out.len() >= MAX_ENCLAVES {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.filter_map(|e| e.ok()).collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let p = e.path();
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            permission_files(&p, depth + 1, out);
        } else if e.file_name() == PERMISSIONS && out.len() < MAX_ENCLAVES {
            out.push(p);
        }
    }
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
    let (mut peers, mut skipped) = (Vec::new(), Vec::new());
    let mut files = Vec::new();
    if let Some(ks) = keystore_of(enclave_dir) {
        permission_files(&ks.join("enclaves"), 0, &mut files);
    }
    for f in files {
        let grants =
            read_signed(&f, &ca).and_then(|t| Permissions::parse(&t).map_err(|e| e.in_file(&f)));
        match grants {
            Ok(p) => {
                for g in p.grants {
                    if g.valid_at(&now) {
                        peers.push(g);
                    } else {
                        skipped.push(format!(
                            "{}: grant {} is not valid now",
                            f.display(),
                            g.name
                        ));
                    }
                }
            }
            Err(e) => skipped.push(e.to_string()),
        }
    }
    Ok(Loaded {
        subject,
        domain: rule,
        own,
        peers,
        skipped,
    })
}
