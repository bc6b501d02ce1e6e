//! Hostile clients for tests (the house's `exercise_*` habit): a flood of QUIC connections that
//! complete the TLS handshake and then never say HELLO, or send garbage instead; and the
//! decoders of what a peer host sends outside the wire codec (directory answers, certificate
//! subjects), for fuzzing.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use super::{new_endpoint, runtime, tls};

/// What a flood saw.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FloodReport {
    /// Connections that completed the QUIC handshake.
    pub established: usize,
    /// Connections the target refused before or during the handshake.
    pub refused: usize,
    /// Established connections the target closed by itself within `hold`.
    pub closed_by_target: usize,
}

/// Open `n` connections to the link endpoint at `addr` at once; with `garbage`, each sends
/// bytes that are not a frame on a stream, otherwise nothing. Waits up to `hold` for the target
/// to close them, then closes the rest.
pub fn exercise_flood(addr: SocketAddr, n: usize, garbage: bool, hold: Duration) -> FloodReport {
    let Ok(rt) = runtime::handle() else {
        return FloodReport::default();
    };
    let transport = tls::transport(Duration::from_secs(10), Duration::from_secs(1));
    let Ok(id) = tls::Identity::self_signed() else {
        return FloodReport::default();
    };
    let Ok(client) = tls::client_config(&id, tls::ALPN_LINK, transport) else {
        return FloodReport::default();
    };
    let bind = if addr.is_ipv4() {
        "127.0.0.1:0"
    } else {
        "[::1]:0"
    };
    let Ok(sock) = std::net::UdpSocket::bind(bind) else {
        return FloodReport::default();
    };
    let Ok(ep) = new_endpoint(&rt, None, sock) else {
        return FloodReport::default();
    };
    let fut = async move {
        let mut tasks = Vec::new();
        for _ in 0..n {
            let Ok(connecting) = ep.connect_with(client.clone(), addr, tls::SERVER_NAME) else {
                continue;
            };
            tasks.push(tokio::spawn(async move {
                let conn = match tokio::time::timeout(Duration::from_secs(5), connecting).await {
                    Ok(Ok(c)) => c,
                    _ => return (false, false),
                };
                if garbage {
                    if let Ok((mut s, _r)) = conn.open_bi().await {
                        let _ = s.write_all(&[0xff; 64]).await;
                    }
                }
                let deadline = Instant::now() + hold;
                let closed = tokio::time::timeout_at(deadline.into(), conn.closed())
                    .await
                    .is_ok();
                conn.close(0u32.into(), b"done");
                (true, closed)
            }));
        }
        let mut r = FloodReport::default();
        for t in tasks {
            match t.await {
                Ok((true, closed)) => {
                    r.established += 1;
                    r.closed_by_target += usize::from(closed);
                }
                _ => r.refused += 1,
            }
        }
        ep.close(0u32.into(), b"done");
        r
    };
    runtime::block_on(&rt, fut).unwrap_or_default()
}

/// Feed `bytes` to the decoders of the QUIC adapter's own exchanges (the fuzz targets and
/// `tests/quic_fuzz_corpus.rs` call this): the host directory's answer parser, and the
/// certificate-subject reader that names an authenticated peer. Never panics; returns how many
/// members the answer named (0 when it was refused). An accepted answer is checked to
/// round-trip: each member re-encoded as the holder writes it parses back to the same list.
pub fn exercise_directory_answer(bytes: &[u8]) -> usize {
    let _ = super::peer_cert::subject_of(bytes);
    match super::directory::parse_answer(bytes) {
        Ok(members) => {
            let mut text = String::new();
            for (name, port) in &members {
                text.push_str(&format!("{name} {port}\n"));
            }
            let again = super::directory::parse_answer(text.as_bytes());
            assert_eq!(again.as_ref(), Ok(&members), "re-encoded answer differs");
            members.len()
        }
        Err(_) => 0,
    }
}

/// One input as a datagram from a peer (the house's `exercise_*` habit; the fuzz target
/// `datagram` and `tests/link_quic_streams.rs` run it): it decodes to a DELIVERY or is an
/// error, never a panic; a DELIVERY re-encodes to a datagram that decodes to the same frame.
/// True when the input was accepted.
pub fn exercise_datagram(data: &[u8]) -> bool {
    use crate::wire::{encode_parts, MAX_FRAME};
    let Ok(frame) = super::decode_datagram(&bytes::Bytes::copy_from_slice(data)) else {
        return false;
    };
    let again = encode_parts(&frame, MAX_FRAME)
        .expect("a decoded DELIVERY re-encodes")
        .to_vec();
    assert_eq!(again.len(), data.len(), "a datagram's frame fills it");
    let back = super::decode_datagram(&again.into()).expect("a re-encoded DELIVERY decodes");
    assert_eq!(back, frame, "frame changed across re-encode");
    true
}
