//! TLS for QUIC links (docs/network.md section 5), in one of two trust models:
//! - **unauthenticated** (no SROS2): a fresh self-signed certificate per process, and a verifier
//!   that checks the peer's handshake signature against the key of its certificate and the
//!   certificate itself against nothing: encrypted, not authenticated;
//! - **authenticated** ([`QuicSecurity`]): the enclave's certificate, and both ends require the
//!   peer's certificate to chain to the keystore's identity CA (a client certificate too). The
//!   name in the certificate is the enclave's, not a host name, so the server name is not
//!   checked; the chain is. With the governance's `allow_unauthenticated_participants`
//!   ([`QuicSecurity::allow_unauthenticated`]) a peer whose certificate does not chain (another
//!   CA's, a self-signed one) or that sends none is let in all the same, as
//!   [`Subject::Anonymous`], and the ACL gives it only what is not access controlled; one that
//!   chains is authenticated as without it.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use quinn_proto::crypto::rustls::{QuicClientConfig, QuicServerConfig};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::server::WebPkiClientVerifier;
use rustls::{
    CertificateError, DigitallySignedStruct, DistinguishedName, RootCertStore, SignatureScheme,
};

use super::expiry::{first, Credential, Expiry};
use super::peer_cert::{chain_ends, chains, subject_of, PeerCerts};
use crate::acl::Subject;

/// ALPN of a libtracer link.
pub(crate) const ALPN_LINK: &[u8] = b"libtracer/1";
/// ALPN of a host directory query.
pub(crate) const ALPN_DIR: &[u8] = b"libtracer-dir/1";
/// The server name every certificate carries and every client asks for.
pub(crate) const SERVER_NAME: &str = "libtracer";

pub(super) fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// SROS2 authentication for QUIC links (docs/network.md section 5): this process's enclave
/// certificate chain and key, and the keystore's identity CA that every peer's certificate must
/// chain to. Cheap `Clone`.
#[derive(Clone)]
pub struct QuicSecurity(Arc<Secured>);

struct Secured {
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
    roots: Arc<RootCertStore>,
    /// Peers that fail authentication are let in as anonymous (the governance's
    /// `allow_unauthenticated_participants`).
    anonymous: bool,
}

impl std::fmt::Debug for QuicSecurity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QuicSecurity")
            .field("chain", &self.0.chain.len())
            .field("anonymous", &self.0.anonymous)
            .finish_non_exhaustive()
    }
}

impl QuicSecurity {
    /// From PEM files: the enclave's certificate (`cert.pem`, the chain if it holds several),
    /// its key (`key.pem`, PKCS#8, SEC1 or PKCS#1) and the identity CA
    /// (`identity_ca.cert.pem`). Errors name the file and what is wrong with it.
    pub fn from_pem_files(cert: &Path, key: &Path, ca: &Path) -> Result<QuicSecurity, String> {
        let read_certs = |p: &Path| -> Result<Vec<CertificateDer<'static>>, String> {
            let certs = CertificateDer::pem_file_iter(p)
                .map_err(|e| format!("{}: {e}", p.display()))?
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| format!("{}: {e}", p.display()))?;
            if certs.is_empty() {
                return Err(format!("{}: no certificate in it", p.display()));
            }
            Ok(certs)
        };
        let chain = read_certs(cert)?;
        let key =
            PrivateKeyDer::from_pem_file(key).map_err(|e| format!("{}: {e}", key.display()))?;
        let mut roots = RootCertStore::empty();
        for c in read_certs(ca)? {
            roots
                .add(c)
                .map_err(|e| format!("{}: not a usable CA certificate: {e}", ca.display()))?;
        }
        Ok(QuicSecurity(Arc::new(Secured {
            chain,
            key,
            roots: Arc::new(roots),
            anonymous: false,
        })))
    }

    /// The same identity, letting in (`allow`) or refusing peers that fail authentication: a
    /// certificate that does not chain to the identity CA, or none. Let in, such a peer is
    /// [`Subject::Anonymous`] (DDS Security's `allow_unauthenticated_participants`, read from
    /// the governance by the caller); its handshake signature is still checked against the key
    /// of the certificate it sent. A peer whose certificate chains is authenticated either way.
    pub fn allow_unauthenticated(&self, allow: bool) -> QuicSecurity {
        let s = &self.0;
        QuicSecurity(Arc::new(Secured {
            chain: s.chain.clone(),
            key: s.key.clone_key(),
            roots: s.roots.clone(),
            anonymous: allow,
        }))
    }
}

/// This process's certificate chain and key (DER), and the CA peers must chain to (`None`:
/// unauthenticated). Made once per transport.
pub(crate) struct Identity {
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
    roots: Option<Arc<RootCertStore>>,
    /// With `roots`: peers that do not chain to them are let in as anonymous.
    anonymous: bool,
    /// With `roots`: when the first certificate of `chain` runs out.
    chain_ends: Option<SystemTime>,
}

impl Identity {
    /// The enclave's identity with `security`, else a fresh self-signed certificate.
    pub(crate) fn new(security: Option<&QuicSecurity>) -> Result<Identity, String> {
        match security {
            Some(s) => Ok(Identity {
                chain: s.0.chain.clone(),
                key: s.0.key.clone_key(),
                roots: Some(s.0.roots.clone()),
                anonymous: s.0.anonymous,
                chain_ends: chain_ends(&s.0.chain),
            }),
            None => Identity::self_signed(),
        }
    }

    pub(crate) fn self_signed() -> Result<Identity, String> {
        let ck = rcgen::generate_simple_self_signed(vec![SERVER_NAME.to_owned()])
            .map_err(|e| format!("cannot make a certificate: {e}"))?;
        Ok(Identity {
            chain: vec![ck.cert.der().clone()],
            key: PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(ck.key_pair.serialize_der())),
            roots: None,
            anonymous: false,
            chain_ends: None,
        })
    }

    /// This process presents a certificate of the keystore's CA and authenticates its peers
    /// against it (SROS2 on).
    pub(crate) fn authenticated(&self) -> bool {
        self.roots.is_some()
    }

    /// Peers must present a certificate of the keystore's CA to be let in at all (SROS2 on, and
    /// the governance does not allow unauthenticated participants).
    pub(crate) fn requires_certificates(&self) -> bool {
        self.roots.is_some() && !self.anonymous
    }

    /// What the handshake of a connection proved about its `peer`, its ACL principal: with
    /// authentication, the subject of the certificate the verifier accepted; without, nothing
    /// (a certificate nobody checked names no one). When unauthenticated peers are let in, the
    /// verifier accepted every certificate, so the chain is checked again here, by the same
    /// webpki verifier the handshake used for this side: a peer whose certificate chains is
    /// authenticated, one whose does not (or that sent none) is anonymous.
    pub(crate) fn peer_subject(&self, peer: &PeerCerts) -> Subject {
        let Some(roots) = &self.roots else {
            return Subject::Anonymous;
        };
        let Some((end, intermediates)) = peer.chain.as_deref().and_then(|c| c.split_first()) else {
            return Subject::Anonymous;
        };
        if self.anonymous && !chains(roots, peer.side, end, intermediates) {
            return Subject::Anonymous;
        }
        match subject_of(end) {
            Ok(s) => Subject::Authenticated(s.into()),
            // The verifier parsed it, so this does not happen; a peer we cannot name gets
            // what an anonymous one gets.
            Err(_) => Subject::Anonymous,
        }
    }
}

impl Identity {
    /// When the certificates of a link (its `peer`'s) stop being valid, and whose runs out first
    /// (docs/network.md section 5, "When credentials end"): this process's chain or the one
    /// the peer presented. Only with authentication (a certificate nobody checked proves
    /// nothing that could end); for a peer let in as anonymous, only ours.
    pub(crate) fn certificates_end(&self, certs: &PeerCerts, peer: &Subject) -> Option<Expiry> {
        self.roots.as_ref()?;
        let ours = self.chain_ends.map(|at| Expiry {
            at,
            what: Credential::OurCertificate,
        });
        let theirs = match peer {
            Subject::Authenticated(_) => {
                certs
                    .chain
                    .as_deref()
                    .and_then(chain_ends)
                    .map(|at| Expiry {
                        at,
                        what: Credential::PeerCertificate,
                    })
            }
            Subject::Anonymous => None,
        };
        first([ours, theirs])
    }
}

/// Limits and timing of every QUIC connection (links and directory queries).
pub(crate) fn transport(idle: Duration, keep_alive: Duration) -> Arc<quinn_proto::TransportConfig> {
    let mut t = quinn_proto::TransportConfig::default();
    // A link's control stream is one bidirectional stream opened by the initiator (a directory
    // query too); its edge streams are unidirectional, one per class each way and reliability,
    // plus best-effort streams reset and opened again (docs/network.md section 7).
    t.max_concurrent_bidi_streams(1u32.into());
    t.max_concurrent_uni_streams(64u32.into());
    t.max_idle_timeout(idle.try_into().ok());
    t.keep_alive_interval(Some(keep_alive));
    // BBR with a window floor, not quinn's Cubic: why in `tuning.rs`.
    t.congestion_controller_factory(Arc::new(super::tuning::FlooredBbrConfig::default()));
    // Room for a few 1 MiB frames in flight on a fast path; bounded per connection. The
    // connection's windows are twice a stream's: quinn counts buffered data against them, so a
    // bulk stream of a low class can take at most half, and a higher class always finds room
    // at once instead of waiting for acknowledgements (docs/network.md section 7; measured:
    // a 64 B class-7 delivery behind 4 MiB class-0 ones overtook all but the 1 already landed,
    // against 2-3 more with all three windows at 8 MiB).
    t.stream_receive_window((8u32 << 20).into());
    t.receive_window((16u32 << 20).into());
    t.send_window(16 << 20);
    // Best-effort deliveries that fit go as datagrams. Both buffers are small on purpose: a
    // datagram waiting behind a full path is stale, and quinn drops the oldest first, so the
    // freshest sample wins (and memory stays bounded).
    t.datagram_receive_buffer_size(Some(256 * 1024));
    t.datagram_send_buffer_size(64 * 1024);
    Arc::new(t)
}

pub(crate) fn server_config(
    id: &Identity,
    alpn: &[u8],
    transport: Arc<quinn_proto::TransportConfig>,
) -> Result<quinn_proto::ServerConfig, String> {
    let builder = rustls::ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| e.to_string())?;
    let builder = match &id.roots {
        Some(roots) => {
            let chain = WebPkiClientVerifier::builder_with_provider(roots.clone(), provider())
                .build()
                .map_err(|e| e.to_string())?;
            if id.anonymous {
                builder.with_client_cert_verifier(Arc::new(ChainOrAnonymous(chain)))
            } else {
                builder.with_client_cert_verifier(chain)
            }
        }
        None => builder.with_no_client_auth(),
    };
    let mut tls = builder
        .with_single_cert(id.chain.clone(), id.key.clone_key())
        .map_err(|e| e.to_string())?;
    tls.alpn_protocols = vec![alpn.to_vec()];
    let crypto = QuicServerConfig::try_from(tls).map_err(|e| e.to_string())?;
    let mut sc = quinn_proto::ServerConfig::with_crypto(Arc::new(crypto));
    sc.transport_config(transport);
    // Address validation only under load (a flood): a Retry costs the legitimate peer one RTT.
    Ok(sc)
}

pub(crate) fn client_config(
    id: &Identity,
    alpn: &[u8],
    transport: Arc<quinn_proto::TransportConfig>,
) -> Result<quinn_proto::ClientConfig, String> {
    let p = provider();
    let builder = rustls::ClientConfig::builder_with_provider(p.clone())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| e.to_string())?
        .dangerous();
    let mut tls = match &id.roots {
        Some(roots) => {
            let chain = server_verifier(roots, id.anonymous)?;
            builder
                .with_custom_certificate_verifier(chain)
                .with_client_auth_cert(id.chain.clone(), id.key.clone_key())
                .map_err(|e| e.to_string())?
        }
        None => builder
            .with_custom_certificate_verifier(Arc::new(Unauthenticated(p)))
            .with_no_client_auth(),
    };
    tls.alpn_protocols = vec![alpn.to_vec()];
    let crypto = QuicClientConfig::try_from(tls).map_err(|e| e.to_string())?;
    let mut cc = quinn_proto::ClientConfig::new(Arc::new(crypto));
    cc.transport_config(transport);
    Ok(cc)
}

/// The server-certificate verifier of the authenticated model: the CA's chain, and with
/// `anonymous` any other certificate too (its handshake signature still checked).
pub(super) fn server_verifier(
    roots: &Arc<RootCertStore>,
    anonymous: bool,
) -> Result<Arc<ChainOnly>, String> {
    let chain = WebPkiServerVerifier::builder_with_provider(roots.clone(), provider())
        .build()
        .map_err(|e| e.to_string())?;
    Ok(Arc::new(ChainOnly { chain, anonymous }))
}

/// Accepts any certificate, checks the handshake signature made with its key: the connection
/// is encrypted to whoever holds that key, who is not authenticated (docs/network.md).
#[derive(Debug)]
struct Unauthenticated(Arc<CryptoProvider>);

impl ServerCertVerifier for Unauthenticated {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// The authenticated model's server verifier: the keystore CA's own (chain, validity, usage,
/// handshake signature), except that a name mismatch is accepted: an enclave certificate names
/// the enclave, and every peer is asked for the same fixed name (webpki checks the chain before
/// the name, so a certificate that fails the chain never reaches that exception). With
/// `anonymous` (unauthenticated participants allowed), a certificate the chain refuses is
/// accepted too: the handshake signature is still checked with its key, and
/// [`Identity::peer_subject`] names such a peer anonymous.
#[derive(Debug)]
pub(super) struct ChainOnly {
    chain: Arc<WebPkiServerVerifier>,
    anonymous: bool,
}

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self.chain.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        ) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            Err(rustls::Error::InvalidCertificate(_)) if self.anonymous => {
                Ok(ServerCertVerified::assertion())
            }
            r => r,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.chain.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.chain.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.chain.supported_verify_schemes()
    }
}

/// The client-certificate verifier when unauthenticated participants are allowed: the CA's
/// webpki verifier decides who is authenticated; a certificate it refuses is accepted all the
/// same (the handshake signature is still checked with its key, by the same verifier), and a
/// client may send none (a process without SROS2 sends none: rustls clients answer a
/// certificate request with an empty list when they have no certificate). Both are named
/// anonymous by [`Identity::peer_subject`].
#[derive(Debug)]
struct ChainOrAnonymous(Arc<dyn ClientCertVerifier>);

impl ClientCertVerifier for ChainOrAnonymous {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        false
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        self.0.root_hint_subjects()
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        match self.0.verify_client_cert(end_entity, intermediates, now) {
            Err(rustls::Error::InvalidCertificate(_)) => Ok(ClientCertVerified::assertion()),
            r => r,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn security_loads_pem_files_and_names_the_bad_one() {
        let dir = std::env::temp_dir().join(format!("net-tls-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let ca_key = rcgen::KeyPair::generate().unwrap();
        let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let ca = ca.self_signed(&ca_key).unwrap();
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(Vec::<String>::new())
            .unwrap()
            .signed_by(&key, &ca, &ca_key)
            .unwrap();
        let c = write(&dir, "cert.pem", &cert.pem());
        let k = write(&dir, "key.pem", &key.serialize_pem());
        let a = write(&dir, "identity_ca.cert.pem", &ca.pem());
        let s = QuicSecurity::from_pem_files(&c, &k, &a).unwrap();
        let id = Identity::new(Some(&s)).unwrap();
        assert!(id.authenticated() && id.requires_certificates());
        assert!(!Identity::new(None).unwrap().authenticated());
        // Unauthenticated participants allowed: still authenticating, no longer requiring.
        let open = Identity::new(Some(&s.allow_unauthenticated(true))).unwrap();
        assert!(open.authenticated() && !open.requires_certificates());
        let t = transport(Duration::from_secs(2), Duration::from_millis(300));
        assert!(server_config(&open, ALPN_LINK, t.clone()).is_ok());
        assert!(client_config(&open, ALPN_LINK, t).is_ok());
        let t = transport(Duration::from_secs(2), Duration::from_millis(300));
        assert!(server_config(&id, ALPN_LINK, t.clone()).is_ok());
        assert!(client_config(&id, ALPN_LINK, t).is_ok());
        let missing = dir.join("nope.pem");
        let e = QuicSecurity::from_pem_files(&c, &missing, &a).unwrap_err();
        assert!(e.contains("nope.pem"), "{e}");
        let empty = write(&dir, "empty.pem", "not a certificate\n");
        let e = QuicSecurity::from_pem_files(&empty, &k, &a).unwrap_err();
        assert!(e.contains("empty.pem"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
