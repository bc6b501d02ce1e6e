//! S/MIME signed documents as `ros2 security` writes them (`governance.p7s`,
//! `permissions.p7s`): a `multipart/signed` message whose first part is the document as
//! `text/plain` and whose second is a detached CMS SignedData (RFC 5652), made with the
//! permissions CA's key. This is what OpenSSL's `PKCS7_sign(..., PKCS7_TEXT | PKCS7_DETACHED)`
//! and `SMIME_write_PKCS7` produce (sros2 signs through the `cryptography` package with the
//! `Text` and `DetachedSignature` options), and what Fast DDS reads with `SMIME_read_PKCS7` and
//! `PKCS7_verify`.
//!
//! ```text
//! MIME-Version: 1.0
//! Content-Type: multipart/signed; protocol="application/x-pkcs7-signature"; micalg="sha-256"; boundary="----B"
//!
//! This is an S/MIME signed message
//!
//! ------B
//! Content-Type: text/plain                 <- the signed content starts here: this header,
//!                                             a blank line, then the document, every line
//! <?xml ...?><dds>...</dds>                   ending in CRLF (canonical form)
//! ------B
//! Content-Type: application/x-pkcs7-signature; name="smime.p7s"
//! Content-Transfer-Encoding: base64
//! Content-Disposition: attachment; filename="smime.p7s"
//!
//! MIIG...                                  <- ContentInfo { SignedData } in DER, base64
//! ------B--
//! ```
//!
//! What [`verify`] checks, and what it does not:
//! - the signature is by the **trusted CA's own key** (the `permissions_ca.cert.pem` given, not
//!   a certificate the file carries): its one SignerInfo names that CA (issuer and serial), and
//!   the signature over the signed attributes verifies with the CA's public key (ECDSA P-256 or
//!   P-384 with SHA-256/384, or RSA PKCS#1 v1.5 with SHA-256). `ros2 security` always signs with
//!   the CA itself; a document signed by another certificate that chains to the CA is refused
//!   (OpenSSL would accept it);
//! - the signed `messageDigest` attribute equals the SHA-256 of the canonical first part, and
//!   the `contentType` attribute is `id-data`, so not one byte of the document can change;
//! - **not checked**: the signing time, certificate validity dates and revocation (the DDS
//!   document carries its own validity, which the caller checks), and S/MIME parts beyond the
//!   first two.

use std::time::SystemTime;

use base64::Engine as _;
use cms::cert::IssuerAndSerialNumber;
use cms::content_info::{CmsVersion, ContentInfo};
use cms::signed_data::{
    EncapsulatedContentInfo, SignedData, SignerIdentifier, SignerInfo, SignerInfos,
};
use x509_cert::attr::Attribute;
use x509_cert::der::asn1::{ObjectIdentifier, OctetString, SetOfVec, UtcTime};
use x509_cert::der::{Any, Decode, Encode};
use x509_cert::spki::AlgorithmIdentifierOwned;
use x509_cert::Certificate;

use crate::Error;

const ID_DATA: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.7.1");
const ID_SIGNED_DATA: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.7.2");
const ID_CONTENT_TYPE: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.9.3");
const ID_MESSAGE_DIGEST: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.9.4");
const ID_SIGNING_TIME: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.9.5");
const ID_SHA256: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.16.840.1.101.3.4.2.1");
const ID_SHA384: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.16.840.1.101.3.4.2.2");
const ECDSA_SHA256: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.4.3.2");
const ECDSA_SHA384: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.4.3.3");
const RSA_ENCRYPTION: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.1");
const RSA_SHA256: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.11");
const EC_PUBLIC_KEY: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.2.1");
const P256: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.3.1.7");
const P384: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.132.0.34");

/// Longest MIME boundary taken (RFC 2046).
pub const MAX_BOUNDARY: usize = 70;

/// Largest signed file read (a permissions document for thousands of topics fits).
pub const MAX_FILE: usize = 4 << 20;

fn bad(why: impl Into<String>) -> Error {
    Error::Signature(why.into())
}

/// Every line ending made CRLF: the canonical form S/MIME signs a text part in. A CR ends a
/// line only before an LF: a CR at the very end is text (stripping it made the form change
/// again when the signed part was read back, and a document ending in CR CR never verified).
fn canonical(text: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len() + text.len() / 16);
    let mut lines = text.split(|b| *b == b'\n').peekable();
    while let Some(line) = lines.next() {
        if lines.peek().is_some() {
            out.extend_from_slice(line.strip_suffix(b"\r").unwrap_or(line));
            out.extend_from_slice(b"\r\n");
        } else {
            out.extend_from_slice(line);
        }
    }
    out
}

fn sha256(b: &[u8]) -> Vec<u8> {
    ring::digest::digest(&ring::digest::SHA256, b)
        .as_ref()
        .to_vec()
}

fn attribute(oid: ObjectIdentifier, value: Any) -> Result<Attribute, Error> {
    Ok(Attribute {
        oid,
        values: SetOfVec::try_from(vec![value]).map_err(der)?,
    })
}

fn der(e: x509_cert::der::Error) -> Error {
    bad(format!("DER: {e}"))
}

/// Sign `document` (the XML text) as `ros2 security` does: S/MIME, text part, detached
/// SHA-256 / ECDSA signature by `ca_cert_pem`'s key `ca_key_pkcs8` (a P-256 key, PKCS#8 DER).
pub fn sign(document: &str, ca_cert_pem: &str, ca_key_pkcs8: &[u8]) -> Result<String, Error> {
    let ca = parse_pem_cert(ca_cert_pem)?;
    let rng = ring::rand::SystemRandom::new();
    let key = ring::signature::EcdsaKeyPair::from_pkcs8(
        &ring::signature::ECDSA_P256_SHA256_ASN1_SIGNING,
        ca_key_pkcs8,
        &rng,
    )
    .map_err(|e| bad(format!("the CA key is not a P-256 PKCS#8 key: {e}")))?;
    let mut part = b"Content-Type: text/plain\r\n\r\n".to_vec();
    part.extend_from_slice(&canonical(document.as_bytes()));
    let now = UtcTime::from_system_time(SystemTime::now()).map_err(der)?;
    let attrs: SetOfVec<Attribute> = SetOfVec::try_from(vec![
        attribute(ID_CONTENT_TYPE, Any::encode_from(&ID_DATA).map_err(der)?)?,
        attribute(ID_SIGNING_TIME, Any::encode_from(&now).map_err(der)?)?,
        attribute(
            ID_MESSAGE_DIGEST,
            Any::encode_from(&OctetString::new(sha256(&part)).map_err(der)?).map_err(der)?,
        )?,
    ])
    .map_err(der)?;
    let signature = key
        .sign(&rng, &attrs.to_der().map_err(der)?)
        .map_err(|_| bad("signing failed"))?;
    let alg = |oid| AlgorithmIdentifierOwned {
        oid,
        parameters: None,
    };
    let signer = SignerInfo {
        version: CmsVersion::V1,
        sid: SignerIdentifier::IssuerAndSerialNumber(IssuerAndSerialNumber {
            issuer: ca.tbs_certificate.issuer.clone(),
            serial_number: ca.tbs_certificate.serial_number.clone(),
        }),
        digest_alg: alg(ID_SHA256),
        signed_attrs: Some(attrs),
        signature_algorithm: alg(ECDSA_SHA256),
        signature: OctetString::new(signature.as_ref()).map_err(der)?,
        unsigned_attrs: None,
    };
    let sd = SignedData {
        version: CmsVersion::V1,
        digest_algorithms: SetOfVec::try_from(vec![alg(ID_SHA256)]).map_err(der)?,
        encap_content_info: EncapsulatedContentInfo {
            econtent_type: ID_DATA,
            econtent: None,
        },
        certificates: Some(cms::signed_data::CertificateSet::from(
            SetOfVec::try_from(vec![cms::cert::CertificateChoices::Certificate(ca)])
                .map_err(der)?,
        )),
        crls: None,
        signer_infos: SignerInfos::from(SetOfVec::try_from(vec![signer]).map_err(der)?),
    };
    let ci = ContentInfo {
        content_type: ID_SIGNED_DATA,
        content: Any::encode_from(&sd).map_err(der)?,
    };
    let p7 = base64::engine::general_purpose::STANDARD.encode(ci.to_der().map_err(der)?);
    let boundary = format!("----{}", hex(&sha256(&part)[..16]).to_ascii_uppercase());
    let mut out = String::new();
    out.push_str("MIME-Version: 1.0\n");
    out.push_str(&format!(
        "Content-Type: multipart/signed; protocol=\"application/x-pkcs7-signature\"; micalg=\"sha-256\"; boundary=\"{boundary}\"\n\n"
    ));
    out.push_str("This is an S/MIME signed message\n\n");
    out.push_str(&format!("--{boundary}\n"));
    // The part exactly as signed (CRLF line endings), then the boundary on a line of its own.
    out.push_str(std::str::from_utf8(&part).map_err(|_| bad("document is not UTF-8"))?);
    // CRLF before the delimiter (it belongs to the delimiter, RFC 2046): with a lone LF, a
    // part ending in CR lost that CR when read back and no longer matched its signature.
    out.push_str(&format!("\r\n--{boundary}\n"));
    out.push_str("Content-Type: application/x-pkcs7-signature; name=\"smime.p7s\"\n");
    out.push_str("Content-Transfer-Encoding: base64\n");
    out.push_str("Content-Disposition: attachment; filename=\"smime.p7s\"\n\n");
    for chunk in p7.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(chunk).unwrap_or_default());
        out.push('\n');
    }
    out.push_str(&format!("\n--{boundary}--\n\n"));
    Ok(out)
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The first certificate of a PEM text.
pub fn parse_pem_cert(pem: &str) -> Result<Certificate, Error> {
    let body = pem_block(pem, "CERTIFICATE").ok_or_else(|| bad("no PEM CERTIFICATE in it"))?;
    Certificate::from_der(&body).map_err(|e| bad(format!("certificate: {e}")))
}

/// The DER of the first `-----BEGIN <label>-----` block.
pub fn pem_block(pem: &str, label: &str) -> Option<Vec<u8>> {
    let begin = format!("-----BEGIN {label}-----");
    let end = format!("-----END {label}-----");
    let start = pem.find(&begin)? + begin.len();
    let stop = start + pem[start..].find(&end)?;
    let b64: String = pem[start..stop]
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    base64::engine::general_purpose::STANDARD.decode(b64).ok()
}

/// Header value `name` of a MIME header block (case-insensitive name; folded lines joined).
fn header<'a>(headers: &'a str, name: &str) -> Option<&'a str> {
    headers.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim().eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

/// A parameter (`boundary="..."`) of a header value.
fn param<'a>(value: &'a str, name: &str) -> Option<&'a str> {
    value.split(';').skip(1).find_map(|p| {
        let (k, v) = p.split_once('=')?;
        k.trim()
            .eq_ignore_ascii_case(name)
            .then(|| v.trim().trim_matches('"'))
    })
}

/// Split a MIME entity into its header block and body (at the first empty line).
fn split_entity(b: &[u8]) -> Option<(&[u8], &[u8])> {
    let crlf = find(b, b"\r\n\r\n").map(|i| (i, 4));
    let lf = find(b, b"\n\n").map(|i| (i, 2));
    let (i, n) = match (crlf, lf) {
        (Some(a), Some(b)) => {
            if a.0 < b.0 {
                a
            } else {
                b
            }
        }
        (a, b) => a.or(b)?,
    };
    Some((&b[..i], &b[i + n..]))
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The parts of a multipart body between `--boundary` lines (each without the line ending that
/// precedes the next boundary, which belongs to the boundary).
fn parts<'a>(body: &'a [u8], boundary: &str) -> Vec<&'a [u8]> {
    let delim = format!("--{boundary}");
    let mut out = Vec::new();
    let mut starts = Vec::new();
    let mut i = 0;
    while let Some(j) = find(&body[i..], delim.as_bytes()) {
        let at = i + j;
        // A delimiter starts a line.
        if at == 0 || body[at - 1] == b'\n' {
            starts.push(at);
        }
        i = at + delim.len();
    }
    for w in starts.windows(2) {
        let (a, b) = (w[0], w[1]);
        let mut s = a + delim.len();
        // The rest of the delimiter line (transport padding, then the line ending).
        match body[s..b].iter().position(|c| *c == b'\n') {
            Some(k) => s += k + 1,
            None => continue,
        }
        let mut e = b;
        if e > s && body[e - 1] == b'\n' {
            e -= 1;
            if e > s && body[e - 1] == b'\r' {
                e -= 1;
            }
        }
        out.push(&body[s..e.max(s)]);
    }
    out
}

/// Verify a signed file made by `sign` (or by `ros2 security`) against the trusted CA
/// certificate (PEM) and return the document: the first part's content without its MIME
/// headers, line endings as signed (CRLF) turned back into LF.
pub fn verify(file: &[u8], ca_cert_pem: &str) -> Result<String, Error> {
    if file.len() > MAX_FILE {
        return Err(bad(format!("{} bytes (at most {MAX_FILE})", file.len())));
    }
    let ca = parse_pem_cert(ca_cert_pem)?;
    let (headers, body) = split_entity(file).ok_or_else(|| bad("no MIME header block"))?;
    let headers = std::str::from_utf8(headers).map_err(|_| bad("MIME headers are not UTF-8"))?;
    let ctype = header(headers, "Content-Type").ok_or_else(|| bad("no Content-Type"))?;
    if !ctype.to_ascii_lowercase().starts_with("multipart/signed") {
        return Err(bad(format!("not multipart/signed but {ctype:?}")));
    }
    let boundary = param(ctype, "boundary").ok_or_else(|| bad("no boundary"))?;
    // RFC 2046: 1 to 70 characters. A longer one made finding the parts quadratic (a 4 MiB
    // file with a boundary of a million dashes took a minute).
    if boundary.is_empty() || boundary.len() > MAX_BOUNDARY {
        return Err(bad(format!(
            "a boundary of {} bytes (1 to {MAX_BOUNDARY})",
            boundary.len()
        )));
    }
    let ps = parts(body, boundary);
    let [content, sig, ..] = ps.as_slice() else {
        return Err(bad("not two MIME parts"));
    };
    let (sig_headers, sig_body) = split_entity(sig).ok_or_else(|| bad("signature part"))?;
    let sig_headers = std::str::from_utf8(sig_headers).map_err(|_| bad("signature headers"))?;
    let b64: String = std::str::from_utf8(sig_body)
        .map_err(|_| bad("signature is not base64"))?
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    let p7 = if header(sig_headers, "Content-Transfer-Encoding")
        .is_some_and(|e| e.eq_ignore_ascii_case("base64"))
    {
        base64::engine::general_purpose::STANDARD
            .decode(b64)
            .map_err(|e| bad(format!("signature base64: {e}")))?
    } else {
        sig_body.to_vec()
    };
    let canon = canonical(content);
    check_signature(&p7, &canon, &ca)?;
    let (_, doc) = split_entity(&canon).ok_or_else(|| bad("signed part has no header block"))?;
    let doc = std::str::from_utf8(doc).map_err(|_| bad("document is not UTF-8"))?;
    Ok(doc.replace("\r\n", "\n"))
}

/// The CMS check itself: `p7` (DER ContentInfo) signs `content` by `ca`'s key.
fn check_signature(p7: &[u8], content: &[u8], ca: &Certificate) -> Result<(), Error> {
    let ci = ContentInfo::from_der(p7).map_err(|e| bad(format!("CMS: {e}")))?;
    if ci.content_type != ID_SIGNED_DATA {
        return Err(bad("CMS content is not SignedData"));
    }
    let sd: SignedData = ci
        .content
        .decode_as()
        .map_err(|e| bad(format!("SignedData: {e}")))?;
    if sd.encap_content_info.econtent_type != ID_DATA || sd.encap_content_info.econtent.is_some() {
        return Err(bad("not a detached signature of data"));
    }
    let [si] = sd.signer_infos.0.as_slice() else {
        return Err(bad("not exactly one signer"));
    };
    match &si.sid {
        SignerIdentifier::IssuerAndSerialNumber(ias)
            if ias.issuer == ca.tbs_certificate.issuer
                && ias.serial_number == ca.tbs_certificate.serial_number => {}
        _ => return Err(bad("signed by a certificate other than the permissions CA")),
    }
    let attrs = si
        .signed_attrs
        .as_ref()
        .ok_or_else(|| bad("no signed attributes"))?;
    let value = |oid| {
        attrs
            .iter()
            .find(|a| a.oid == oid)
            .and_then(|a| a.values.iter().next())
    };
    let digest_alg = &si.digest_alg.oid;
    let digest = match *digest_alg {
        ID_SHA256 => ring::digest::digest(&ring::digest::SHA256, content),
        ID_SHA384 => ring::digest::digest(&ring::digest::SHA384, content),
        _ => return Err(bad(format!("digest algorithm {digest_alg} not supported"))),
    };
    let md: OctetString = value(ID_MESSAGE_DIGEST)
        .ok_or_else(|| bad("no messageDigest attribute"))?
        .decode_as()
        .map_err(|e| bad(format!("messageDigest: {e}")))?;
    if md.as_bytes() != digest.as_ref() {
        return Err(bad(
            "the document does not match its signature (digest differs)",
        ));
    }
    let ct: ObjectIdentifier = value(ID_CONTENT_TYPE)
        .ok_or_else(|| bad("no contentType attribute"))?
        .decode_as()
        .map_err(|e| bad(format!("contentType: {e}")))?;
    if ct != ID_DATA {
        return Err(bad("contentType attribute is not data"));
    }
    let signed = attrs.to_der().map_err(der)?;
    let spki = &ca.tbs_certificate.subject_public_key_info;
    let key = spki.subject_public_key.raw_bytes();
    let curve = spki
        .algorithm
        .parameters
        .as_ref()
        .and_then(|p| p.decode_as::<ObjectIdentifier>().ok());
    let alg: &dyn ring::signature::VerificationAlgorithm = match (
        si.signature_algorithm.oid,
        spki.algorithm.oid,
        curve,
        *digest_alg,
    ) {
        (ECDSA_SHA256, EC_PUBLIC_KEY, Some(P256), _) => &ring::signature::ECDSA_P256_SHA256_ASN1,
        (ECDSA_SHA384, EC_PUBLIC_KEY, Some(P384), _) => &ring::signature::ECDSA_P384_SHA384_ASN1,
        (ECDSA_SHA256, EC_PUBLIC_KEY, Some(P384), _) => &ring::signature::ECDSA_P384_SHA256_ASN1,
        (RSA_ENCRYPTION | RSA_SHA256, RSA_ENCRYPTION, _, ID_SHA256) => {
            &ring::signature::RSA_PKCS1_2048_8192_SHA256
        }
        (s, k, _, _) => {
            return Err(bad(format!(
                "signature algorithm {s} with a {k} key is not supported"
            )))
        }
    };
    ring::signature::UnparsedPublicKey::new(alg, key)
        .verify(&signed, si.signature.as_bytes())
        .map_err(|_| bad("the signature does not verify with the permissions CA's key"))
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn ca() -> (String, Vec<u8>) {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut p = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        p.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        p.distinguished_name
            .push(rcgen::DnType::CommonName, "test permissions CA");
        let cert = p.self_signed(&key).unwrap();
        (cert.pem(), key.serialize_der())
    }

    #[test]
    fn signed_documents_verify_and_one_changed_byte_does_not() {
        let (pem, key) = ca();
        let doc = "<?xml version=\"1.0\"?>\n<dds>\n  <x>1</x>\n</dds>\n";
        let file = sign(doc, &pem, &key).unwrap();
        assert_eq!(verify(file.as_bytes(), &pem).unwrap(), doc);
        let tampered = file.replace("<x>1</x>", "<x>2</x>");
        let e = verify(tampered.as_bytes(), &pem).unwrap_err().to_string();
        assert!(e.contains("digest differs"), "{e}");
        let (other, _) = ca();
        assert!(verify(file.as_bytes(), &other).is_err());
        // Line endings changed in transit (CRLF to LF) still verify: the canonical form is
        // what is signed.
        assert_eq!(
            verify(file.replace("\r\n", "\n").as_bytes(), &pem).unwrap(),
            doc
        );
    }

    #[test]
    fn openssl_accepts_what_we_sign() {
        let Ok(out) = std::process::Command::new("openssl")
            .arg("version")
            .output()
        else {
            return; // no openssl binary: the in-crate check above still ran
        };
        assert!(out.status.success());
        let (pem, key) = ca();
        let dir = std::env::temp_dir().join(format!("sros2-smime-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let doc = "<dds>\n<permissions/>\n</dds>\n";
        std::fs::write(dir.join("ca.pem"), &pem).unwrap();
        std::fs::write(dir.join("doc.p7s"), sign(doc, &pem, &key).unwrap()).unwrap();
        let out = std::process::Command::new("openssl")
            .args(["smime", "-verify", "-text", "-in"])
            .arg(dir.join("doc.p7s"))
            .arg("-CAfile")
            .arg(dir.join("ca.pem"))
            .output()
            .unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).replace("\r\n", "\n"),
            doc
        );
    }
}
