//! What a connection's peer proved with its certificates: the chain it presented and the role
//! we had, and the parsing and checking of certificates that the trust models of `tls.rs`
//! need.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use quinn_proto::Side;
use rustls::client::danger::ServerCertVerifier;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::server::WebPkiClientVerifier;
use rustls::RootCertStore;

use super::tls::{provider, server_verifier, SERVER_NAME};

/// The certificate chain a connection's peer presented in the handshake (`None`: none) and
/// which side of it we were.
pub(crate) struct PeerCerts {
    pub(super) side: Side,
    pub(super) chain: Option<Vec<CertificateDer<'static>>>,
}

impl PeerCerts {
    /// The peer of a connection (what quinn's `peer_identity` reads).
    pub(crate) fn of(conn: &quinn_proto::Connection) -> PeerCerts {
        PeerCerts {
            side: conn.side(),
            chain: chain_of(conn.crypto_session().peer_identity()),
        }
    }
}

/// quinn's rustls session gives the peer's chain as this type.
fn chain_of(identity: Option<Box<dyn std::any::Any>>) -> Option<Vec<CertificateDer<'static>>> {
    identity
        .and_then(|a| a.downcast::<Vec<CertificateDer<'static>>>().ok())
        .map(|c| *c)
}

/// When the first certificate of `chain` runs out: the second after its notAfter, the last
/// second it is valid (RFC 5280, as webpki checks it). `None` for an empty chain or one that
/// does not parse (the handshake's verifier has parsed every one it accepted).
pub(crate) fn chain_ends(chain: &[CertificateDer<'_>]) -> Option<SystemTime> {
    let last = chain.iter().map(|c| not_after_of(c).ok()).min().flatten()?;
    Some(last + Duration::from_secs(1))
}

/// A DER certificate's notAfter: the last moment it is valid.
pub fn not_after_of(der: &[u8]) -> Result<SystemTime, String> {
    use x509_cert::der::Decode;
    let cert = x509_cert::Certificate::from_der(der).map_err(|e| e.to_string())?;
    Ok(cert.tbs_certificate.validity.not_after.to_system_time())
}

/// Whether `end` (with `intermediates`) chains to `roots` for the role the peer had in the
/// handshake: a server's certificate when we were the client (`side`), else a client's.
pub(super) fn chains(
    roots: &Arc<RootCertStore>,
    side: Side,
    end: &CertificateDer<'_>,
    intermediates: &[CertificateDer<'_>],
) -> bool {
    let now = UnixTime::now();
    match side {
        Side::Client => server_verifier(roots, false)
            .map(|v| {
                let name = ServerName::try_from(SERVER_NAME).expect("a valid DNS name");
                v.verify_server_cert(end, intermediates, &name, &[], now)
                    .is_ok()
            })
            .unwrap_or(false),
        Side::Server => WebPkiClientVerifier::builder_with_provider(roots.clone(), provider())
            .build()
            .map(|v| v.verify_client_cert(end, intermediates, now).is_ok())
            .unwrap_or(false),
    }
}

/// The subject distinguished name of a DER certificate, as RFC 4514 text (`CN=/talker`).
pub fn subject_of(der: &[u8]) -> Result<String, String> {
    use x509_cert::der::Decode;
    let cert = x509_cert::Certificate::from_der(der).map_err(|e| e.to_string())?;
    Ok(cert.tbs_certificate.subject.to_string())
}
