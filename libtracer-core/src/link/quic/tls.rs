//! TLS for QUIC links: a fresh self-signed certificate per process, and the verifier of the
//! "encrypted, not authenticated" trust model (docs/network.md section 5): the peer's handshake
//! signature is checked against the key of its certificate, the certificate itself against
//! nothing. SROS2 authentication (a keystore CA) replaces this verifier; it is not built yet.

use std::sync::Arc;
use std::time::Duration;

use quinn::crypto::rustls::{QuicClientConfig, QuicServerConfig};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};

/// ALPN of a libtracer link.
pub(crate) const ALPN_LINK: &[u8] = b"libtracer/1";
/// ALPN of a host directory query.
pub(crate) const ALPN_DIR: &[u8] = b"libtracer-dir/1";
/// The server name every certificate carries and every client asks for.
pub(crate) const SERVER_NAME: &str = "libtracer";

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// This process's certificate and key (DER), made once per transport.
pub(crate) struct Identity {
    cert: CertificateDer<'static>,
    key: PrivatePkcs8KeyDer<'static>,
}

impl Identity {
    pub(crate) fn self_signed() -> Result<Identity, String> {
        let ck = rcgen::generate_simple_self_signed(vec![SERVER_NAME.to_owned()])
            .map_err(|e| format!("cannot make a certificate: {e}"))?;
        Ok(Identity {
            cert: ck.cert.der().clone(),
            key: PrivatePkcs8KeyDer::from(ck.key_pair.serialize_der()),
        })
    }
}

/// Limits and timing of every QUIC connection (links and directory queries).
pub(crate) fn transport(idle: Duration, keep_alive: Duration) -> Arc<quinn::TransportConfig> {
    let mut t = quinn::TransportConfig::default();
    // A link is one bidirectional stream opened by the initiator; a directory query too.
    t.max_concurrent_bidi_streams(1u32.into());
    t.max_concurrent_uni_streams(0u32.into());
    t.max_idle_timeout(idle.try_into().ok());
    t.keep_alive_interval(Some(keep_alive));
    // Room for a few 1 MiB frames in flight on a fast path; bounded per connection.
    t.stream_receive_window((8u32 << 20).into());
    t.receive_window((8u32 << 20).into());
    t.send_window(8 << 20);
    t.datagram_receive_buffer_size(None);
    Arc::new(t)
}

pub(crate) fn server_config(
    id: &Identity,
    alpn: &[u8],
    transport: Arc<quinn::TransportConfig>,
) -> Result<quinn::ServerConfig, String> {
    let mut tls = rustls::ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_single_cert(
            vec![id.cert.clone()],
            PrivateKeyDer::Pkcs8(id.key.clone_key()),
        )
        .map_err(|e| e.to_string())?;
    tls.alpn_protocols = vec![alpn.to_vec()];
    let crypto = QuicServerConfig::try_from(tls).map_err(|e| e.to_string())?;
    let mut sc = quinn::ServerConfig::with_crypto(Arc::new(crypto));
    sc.transport_config(transport);
    // Address validation only under load (a flood): a Retry costs the legitimate peer one RTT.
    Ok(sc)
}

pub(crate) fn client_config(
    alpn: &[u8],
    transport: Arc<quinn::TransportConfig>,
) -> Result<quinn::ClientConfig, String> {
    let p = provider();
    let mut tls = rustls::ClientConfig::builder_with_provider(p.clone())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| e.to_string())?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(Unauthenticated(p)))
        .with_no_client_auth();
    tls.alpn_protocols = vec![alpn.to_vec()];
    let crypto = QuicClientConfig::try_from(tls).map_err(|e| e.to_string())?;
    let mut cc = quinn::ClientConfig::new(Arc::new(crypto));
    cc.transport_config(transport);
    Ok(cc)
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
