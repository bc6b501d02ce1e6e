//! `tracer keystore`: SROS2-layout keystores for rmw_tracer's authenticated QUIC links
//! (docs/network.md section 5), since `ros2 security` is not in the wheels.
//!
//! ```text
//! <keystore>/public/identity_ca.cert.pem      the identity CA (and permissions_ca.cert.pem, ca.cert.pem)
//! <keystore>/private/identity_ca.key.pem      its key (mode 0600; and permissions_ca.key.pem, ca.key.pem)
//! <keystore>/enclaves/<enclave>/cert.pem      the enclave's certificate, signed by the identity CA
//! <keystore>/enclaves/<enclave>/key.pem       its key (mode 0600)
//! <keystore>/enclaves/<enclave>/identity_ca.cert.pem, permissions_ca.cert.pem   copies of the CA
//! <keystore>/enclaves/governance.xml, governance.p7s   the domain's governance (sros2's default),
//!                                                      S/MIME-signed by the permissions CA
//! <keystore>/enclaves/<enclave>/governance.p7s         a copy of it
//! <keystore>/enclaves/<enclave>/permissions.xml, permissions.p7s   the enclave's grant, signed
//! ```
//!
//! One CA serves as identity and permissions CA, as `ros2 security create_keystore` does. A new
//! enclave gets the allow-all permissions `ros2 security create_enclave` gives;
//! `tracer keystore permission` replaces them from an SROS2 policy, as `ros2 security
//! create_permission` does. The documents are for `ROS_DOMAIN_ID` (0 when unset), as sros2's
//! are. rmw_tracer enforces them through the libtracer ACL (docs/network.md section 5).

use std::fs;
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use clap::Subcommand;
use rcgen::{
    BasicConstraints, Certificate, CertificateParams, DistinguishedName, DnType,
    ExtendedKeyUsagePurpose, IsCa, KeyPair, KeyUsagePurpose,
};

/// The identity CA's subject: `enclave` re-creates the issuer from it and the CA's key.
const CA_NAME: &str = "rmw_tracer keystore CA";

#[derive(Subcommand)]
pub enum Cmd {
    /// Make a keystore: the identity (and permissions) CA, in the SROS2 layout.
    Create {
        /// The keystore directory (made if missing; refused if it already holds a CA).
        keystore: PathBuf,
    },
    /// Make an enclave's certificate and key, signed by the keystore's identity CA, and its
    /// allow-all permissions.
    Enclave {
        keystore: PathBuf,
        /// The enclave name, as rcl takes it: `/talker` or `/robot/camera`.
        enclave: String,
        /// The last second (UTC, `YYYY-MM-DDTHH:MM:SS`) the certificate and the permissions
        /// are valid; links that stand on them close then (default: 2099-12-31T23:59:59).
        #[arg(long, value_name = "UTC", value_parser = valid_until)]
        not_after: Option<String>,
    },
    /// Replace the keystore's governance with a governance.xml of your own (unauthenticated
    /// participants allowed, topics without access control, ...): it is checked, copied to
    /// enclaves/governance.xml, signed as enclaves/governance.p7s, and that copied into every
    /// enclave of the keystore.
    Governance {
        keystore: PathBuf,
        /// The DDS Security governance document (`<dds><domain_access_rules>...`).
        governance: PathBuf,
    },
    /// Replace an enclave's permissions from an SROS2 policy file (`ros2 security
    /// create_permission`): permissions.xml, signed as permissions.p7s.
    Permission {
        keystore: PathBuf,
        enclave: String,
        /// The policy (`<policy><enclaves><enclave path=...><profiles>...`).
        policy: PathBuf,
        /// The last second (UTC, `YYYY-MM-DDTHH:MM:SS`) the permissions are valid (default:
        /// 2099-12-31T23:59:59).
        #[arg(long, value_name = "UTC", value_parser = valid_until)]
        not_after: Option<String>,
    },
}

/// The last second credentials are valid when no `--not-after` is given.
const FOREVER: &str = "2099-12-31T23:59:59";

/// A `--not-after` date, as certificates and permissions name the last valid second.
fn valid_until(text: &str) -> Result<String, String> {
    match tracer_sros2::permissions::epoch_secs(text) {
        Some(_) if text.len() == 19 => Ok(text.to_owned()),
        _ => Err(format!(
            "`{text}`: expected a UTC date and time as YYYY-MM-DDTHH:MM:SS"
        )),
    }
}

pub fn run(cmd: Cmd) -> Result<(), String> {
    match cmd {
        Cmd::Create { keystore } => create(&keystore),
        Cmd::Enclave {
            keystore,
            enclave,
            not_after,
        } => {
            let dir = enclave_dir(&keystore, &enclave)?;
            make_enclave(
                &keystore,
                &enclave,
                &dir,
                not_after.as_deref().unwrap_or(FOREVER),
            )?;
            println!("{}", dir.display());
            Ok(())
        }
        Cmd::Governance {
            keystore,
            governance,
        } => {
            let n = set_governance(&keystore, &governance)?;
            println!(
                "{} (and {n} enclaves)",
                keystore.join("enclaves").join("governance.p7s").display()
            );
            Ok(())
        }
        Cmd::Permission {
            keystore,
            enclave,
            policy,
            not_after,
        } => {
            let dir = enclave_dir(&keystore, &enclave)?;
            if !dir.join("cert.pem").is_file() {
                return Err(format!(
                    "{}: no such enclave (make it first: tracer keystore enclave)",
                    dir.display()
                ));
            }
            let text = fs::read_to_string(&policy).map_err(ctx(policy.display()))?;
            let until = not_after.as_deref().unwrap_or(FOREVER);
            write_permissions(&keystore, &enclave, &dir, &text, until)?;
            println!("{}", dir.join("permissions.p7s").display());
            Ok(())
        }
    }
}

/// The domain the documents are for: `ROS_DOMAIN_ID`, else 0 (as sros2 does).
fn domain_id() -> Result<u32, String> {
    match std::env::var("ROS_DOMAIN_ID") {
        Ok(v) if !v.trim().is_empty() => v
            .trim()
            .parse()
            .map_err(|_| format!("ROS_DOMAIN_ID={v:?} is not a domain id")),
        _ => Ok(0),
    }
}

/// The enclave's permissions.xml from `policy`, and its signed permissions.p7s (replacing
/// both), valid through `not_after`.
fn write_permissions(
    keystore: &Path,
    enclave: &str,
    dir: &Path,
    policy: &str,
    not_after: &str,
) -> Result<(), String> {
    let xml = tracer_sros2::policy::permissions_xml(
        policy,
        enclave,
        domain_id()?,
        ("2020-01-01T00:00:00", not_after),
    )
    .map_err(|e| e.to_string())?;
    let (x, p) = (dir.join("permissions.xml"), dir.join("permissions.p7s"));
    fs::write(&x, xml).map_err(ctx(x.display()))?;
    tracer_sros2::keystore::sign_file(keystore, &x, &p).map_err(|e| e.to_string())
}

fn ctx<E: std::fmt::Display>(what: impl std::fmt::Display) -> impl FnOnce(E) -> String {
    move |e| format!("{what}: {e}")
}

fn ca_params() -> Result<CertificateParams, String> {
    let mut p = CertificateParams::new(Vec::<String>::new()).map_err(ctx("CA parameters"))?;
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, CA_NAME);
    p.distinguished_name = dn;
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    p.not_before = rcgen::date_time_ymd(2020, 1, 1);
    p.not_after = rcgen::date_time_ymd(2099, 12, 31);
    Ok(p)
}

fn write_file(path: &Path, text: &str, private: bool) -> Result<(), String> {
    let mut o = fs::OpenOptions::new();
    o.write(true).create_new(true);
    if private {
        o.mode(0o600);
    }
    let mut f = o.open(path).map_err(ctx(path.display()))?;
    f.write_all(text.as_bytes()).map_err(ctx(path.display()))
}

fn create(keystore: &Path) -> Result<(), String> {
    let public = keystore.join("public");
    let private = keystore.join("private");
    if public.join("identity_ca.cert.pem").exists() {
        return Err(format!(
            "{}: already a keystore (it has an identity CA)",
            keystore.display()
        ));
    }
    for d in [&public, &private, &keystore.join("enclaves")] {
        fs::create_dir_all(d).map_err(ctx(d.display()))?;
    }
    fs::set_permissions(&private, fs::Permissions::from_mode(0o700))
        .map_err(ctx(private.display()))?;
    let key = KeyPair::generate().map_err(ctx("CA key"))?;
    let cert = ca_params()?
        .self_signed(&key)
        .map_err(ctx("CA certificate"))?;
    for name in ["ca", "identity_ca", "permissions_ca"] {
        write_file(&public.join(format!("{name}.cert.pem")), &cert.pem(), false)?;
        write_file(
            &private.join(format!("{name}.key.pem")),
            &key.serialize_pem(),
            true,
        )?;
    }
    let enclaves = keystore.join("enclaves");
    let gov = enclaves.join("governance.xml");
    write_file(
        &gov,
        &tracer_sros2::governance::default_xml(domain_id()?),
        false,
    )?;
    tracer_sros2::keystore::sign_file(keystore, &gov, &enclaves.join("governance.p7s"))
        .map_err(|e| e.to_string())?;
    println!("{}", keystore.display());
    Ok(())
}

/// `tracer keystore governance`: the document at `file` (which must parse as a governance and
/// have a rule for `ROS_DOMAIN_ID`, as rmw_init will ask) becomes the keystore's, signed, and
/// every enclave's `governance.p7s` (below `enclaves/`, at most 16 deep) is replaced by it.
/// Returns how many enclaves were updated.
fn set_governance(keystore: &Path, file: &Path) -> Result<usize, String> {
    let text = fs::read_to_string(file).map_err(ctx(file.display()))?;
    let gov = tracer_sros2::governance::Governance::parse(&text)
        .map_err(|e| format!("{}: {e}", file.display()))?;
    let domain = domain_id()?;
    if gov.for_domain(domain).is_none() {
        return Err(format!(
            "{}: no domain rule for domain {domain} (ROS_DOMAIN_ID)",
            file.display()
        ));
    }
    let enclaves = keystore.join("enclaves");
    if !keystore
        .join("public")
        .join("identity_ca.cert.pem")
        .is_file()
    {
        return Err(format!(
            "{}: not a keystore (make it first: tracer keystore create)",
            keystore.display()
        ));
    }
    let xml = enclaves.join("governance.xml");
    let p7s = enclaves.join("governance.p7s");
    fs::write(&xml, &text).map_err(ctx(xml.display()))?;
    tracer_sros2::keystore::sign_file(keystore, &xml, &p7s).map_err(|e| e.to_string())?;
    let signed = fs::read_to_string(&p7s).map_err(ctx(p7s.display()))?;
    let mut copies = Vec::new();
    enclave_governance_files(&enclaves, 0, &mut copies);
    for c in &copies {
        fs::write(c, &signed).map_err(ctx(c.display()))?;
    }
    Ok(copies.len())
}

/// The `governance.p7s` of every enclave below `dir` (not `dir`'s own).
fn enclave_governance_files(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
    if depth > 16 {
        return;
    }
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for e in entries.filter_map(|e| e.ok()) {
        let p = e.path();
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            if p.join("cert.pem").is_file() && p.join("governance.p7s").is_file() {
                out.push(p.join("governance.p7s"));
            }
            enclave_governance_files(&p, depth + 1, out);
        }
    }
}

/// `<keystore>/enclaves/<enclave>`: each segment of the name a plain directory name.
fn enclave_dir(keystore: &Path, enclave: &str) -> Result<PathBuf, String> {
    let segs: Vec<&str> = enclave.trim_start_matches('/').split('/').collect();
    if !enclave.starts_with('/') || segs.iter().any(|s| s.is_empty() || *s == "." || *s == "..") {
        return Err(format!(
            "enclave `{enclave}`: expected an absolute name such as /talker or /robot/camera"
        ));
    }
    let mut dir = keystore.join("enclaves");
    for s in segs {
        dir.push(s);
    }
    Ok(dir)
}

fn make_enclave(keystore: &Path, enclave: &str, dir: &Path, not_after: &str) -> Result<(), String> {
    let ca_key_path = keystore.join("private").join("identity_ca.key.pem");
    let ca_cert_path = keystore.join("public").join("identity_ca.cert.pem");
    let ca_key_pem = fs::read_to_string(&ca_key_path).map_err(ctx(format!(
        "{} (make the keystore first: tracer keystore create)",
        ca_key_path.display()
    )))?;
    let ca_pem = fs::read_to_string(&ca_cert_path).map_err(ctx(ca_cert_path.display()))?;
    let ca_key = KeyPair::from_pem(&ca_key_pem).map_err(ctx(ca_key_path.display()))?;
    // The issuer for signing: the CA's subject and key (what a certificate names of its issuer).
    let issuer: Certificate = ca_params()?.self_signed(&ca_key).map_err(ctx("CA"))?;
    if dir.join("cert.pem").exists() {
        return Err(format!(
            "{}: the enclave already has a certificate",
            dir.display()
        ));
    }
    fs::create_dir_all(dir).map_err(ctx(dir.display()))?;
    let mut p = CertificateParams::new(Vec::<String>::new()).map_err(ctx("enclave parameters"))?;
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, enclave);
    p.distinguished_name = dn;
    p.is_ca = IsCa::ExplicitNoCa;
    p.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    p.extended_key_usages = vec![
        ExtendedKeyUsagePurpose::ServerAuth,
        ExtendedKeyUsagePurpose::ClientAuth,
    ];
    p.not_before = rcgen::date_time_ymd(2020, 1, 1);
    let secs = tracer_sros2::permissions::epoch_secs(not_after)
        .ok_or_else(|| format!("`{not_after}`: not a UTC date and time"))?;
    // rcgen takes `time`'s date type: the epoch's date plus the seconds since.
    p.not_after = rcgen::date_time_ymd(1970, 1, 1) + std::time::Duration::from_secs(secs);
    let key = KeyPair::generate().map_err(ctx("enclave key"))?;
    let cert = p
        .signed_by(&key, &issuer, &ca_key)
        .map_err(ctx("enclave certificate"))?;
    write_file(&dir.join("cert.pem"), &cert.pem(), false)?;
    write_file(&dir.join("key.pem"), &key.serialize_pem(), true)?;
    for name in ["identity_ca", "permissions_ca"] {
        write_file(&dir.join(format!("{name}.cert.pem")), &ca_pem, false)?;
    }
    let gov = keystore.join("enclaves").join("governance.p7s");
    let gov_text = fs::read_to_string(&gov).map_err(ctx(format!(
        "{} (a keystore of an older tracer: make it again with tracer keystore create)",
        gov.display()
    )))?;
    write_file(&dir.join("governance.p7s"), &gov_text, false)?;
    write_permissions(
        keystore,
        enclave,
        dir,
        tracer_sros2::policy::DEFAULT_POLICY,
        not_after,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enclave_names_map_to_directories() {
        let ks = Path::new("/k");
        assert_eq!(
            enclave_dir(ks, "/robot/camera").unwrap(),
            PathBuf::from("/k/enclaves/robot/camera")
        );
        for bad in ["talker", "/", "/a//b", "/../x", "/a/./b"] {
            assert!(enclave_dir(ks, bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_keystore_and_an_enclave_in_the_sros2_layout() {
        let tmp = tempfile::tempdir().unwrap();
        let ks = tmp.path().join("ks");
        create(&ks).unwrap();
        assert!(create(&ks).is_err());
        let dir = enclave_dir(&ks, "/talker").unwrap();
        make_enclave(&ks, "/talker", &dir, FOREVER).unwrap();
        for f in tracer_sros2::keystore::REQUIRED {
            assert!(dir.join(f).is_file(), "{f}");
        }
        let d = domain_id().unwrap();
        // What rmw_tracer reads at init: verified, with an allow-all grant for the enclave.
        let l = tracer_sros2::keystore::load(&dir, d).unwrap();
        assert_eq!(l.subject, "CN=/talker");
        use tracer_sros2::Action;
        assert!(l.own.decide(d, Action::Publish, "rt/chatter"));
        let policy = tmp.path().join("policy.xml");
        fs::write(
            &policy,
            r#"<policy version="0.2.0"><enclaves><enclave path="/talker"><profiles>
            <profile ns="/" node="talker"><topics publish="ALLOW"><topic>chatter</topic></topics>
            <topics publish="DENY"><topic>secret</topic></topics></profile>
            </profiles></enclave></enclaves></policy>"#,
        )
        .unwrap();
        run(Cmd::Permission {
            keystore: ks.clone(),
            enclave: "/talker".into(),
            policy,
            not_after: None,
        })
        .unwrap();
        let l = tracer_sros2::keystore::load(&dir, d).unwrap();
        assert!(l.own.decide(d, Action::Publish, "rt/chatter"));
        assert!(!l.own.decide(d, Action::Publish, "rt/secret"));
        assert!(!l.own.decide(d, Action::Subscribe, "rt/chatter"));
        let mode = fs::metadata(dir.join("key.pem"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o077, 0);
        assert!(make_enclave(&ks, "/talker", &dir, FOREVER).is_err());
    }

    #[test]
    fn not_after_bounds_the_certificate_and_the_permissions() {
        let tmp = tempfile::tempdir().unwrap();
        let ks = tmp.path().join("ks");
        create(&ks).unwrap();
        let dir = enclave_dir(&ks, "/talker").unwrap();
        let until = valid_until("2030-06-01T12:34:56").unwrap();
        make_enclave(&ks, "/talker", &dir, &until).unwrap();
        let pem = fs::read_to_string(dir.join("cert.pem")).unwrap();
        let cert = tracer_sros2::smime::parse_pem_cert(&pem).unwrap();
        let secs = cert.tbs_certificate.validity.not_after.to_unix_duration();
        assert_eq!(
            Some(secs.as_secs()),
            tracer_sros2::permissions::epoch_secs(&until)
        );
        let d = domain_id().unwrap();
        let l = tracer_sros2::keystore::load(&dir, d).unwrap();
        assert_eq!(l.own.not_after, until);
        // `permission` keeps a date of its own, or the far default.
        let policy = tmp.path().join("policy.xml");
        fs::write(&policy, tracer_sros2::policy::DEFAULT_POLICY).unwrap();
        let permission = |not_after: Option<&str>| {
            run(Cmd::Permission {
                keystore: ks.clone(),
                enclave: "/talker".into(),
                policy: policy.clone(),
                not_after: not_after.map(str::to_owned),
            })
            .unwrap();
            tracer_sros2::keystore::load(&dir, d).unwrap().own.not_after
        };
        assert_eq!(
            permission(Some("2029-01-01T00:00:00")),
            "2029-01-01T00:00:00"
        );
        assert_eq!(permission(None), FOREVER);
        for bad in [
            "2030-06-01",
            "2030-06-01T12:34:56Z",
            "soon",
            "2030-13-01T00:00:00",
        ] {
            let e = valid_until(bad).unwrap_err();
            assert!(e.contains("YYYY-MM-DDTHH:MM:SS"), "{e}");
        }
    }

    #[test]
    fn a_governance_of_ones_own_is_signed_into_the_keystore_and_its_enclaves() {
        let tmp = tempfile::tempdir().unwrap();
        let ks = tmp.path().join("ks");
        create(&ks).unwrap();
        let dir = enclave_dir(&ks, "/robot/talker").unwrap();
        make_enclave(&ks, "/robot/talker", &dir, FOREVER).unwrap();
        let d = domain_id().unwrap();
        let xml = tracer_sros2::governance::default_xml(d).replace(
            "<allow_unauthenticated_participants>false",
            "<allow_unauthenticated_participants>true",
        );
        let file = tmp.path().join("governance.xml");
        fs::write(&file, &xml).unwrap();
        assert_eq!(set_governance(&ks, &file).unwrap(), 1);
        // What rmw_tracer reads at init: the enclave's copy, verified against the CA.
        let l = tracer_sros2::keystore::load(&dir, d).unwrap();
        assert!(l.domain.allow_unauthenticated_participants);
        // A document that is not a governance, or has no rule for the domain, is refused and
        // changes nothing.
        fs::write(&file, "<dds/>").unwrap();
        assert!(set_governance(&ks, &file).is_err());
        fs::write(&file, tracer_sros2::governance::default_xml(d + 1)).unwrap();
        let e = set_governance(&ks, &file).unwrap_err();
        assert!(e.contains("no domain rule"), "{e}");
        assert!(
            tracer_sros2::keystore::load(&dir, d)
                .unwrap()
                .domain
                .allow_unauthenticated_participants
        );
        fs::write(&file, &xml).unwrap();
        let e = set_governance(&tmp.path().join("nope"), &file).unwrap_err();
        assert!(e.contains("not a keystore"), "{e}");
    }
}
