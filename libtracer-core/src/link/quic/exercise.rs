//! Hostile clients for tests (the house's `exercise_*` habit): a flood of QUIC connections that
//! complete the TLS handshake and then never say HELLO, or send garbage instead; and the
//! decoders of what a peer host sends outside the wire codec (directory answers, certificate
//! subjects), for fuzzing.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use quinn_proto::{Connection, Dir, Event};

use super::engine::{Engine, Watcher};
use super::tls;

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

/// How long a flood's connection may take to complete its handshake.
const HANDSHAKE: Duration = Duration::from_secs(5);

/// One connection of the flood: whether it came up and whether it went, and (with `garbage`)
/// a stream of bytes that are not a frame, written as soon as it is up.
struct Flooder {
    garbage: bool,
    /// (connected, lost)
    seen: Mutex<(bool, bool)>,
    changed: Condvar,
}

impl Watcher for Flooder {
    fn progress(&self, conn: &mut Connection) {
        let mut seen = self.seen.lock();
        while let Some(ev) = conn.poll() {
            match ev {
                Event::Connected => {
                    seen.0 = true;
                    if self.garbage {
                        if let Some(id) = conn.streams().open(Dir::Bi) {
                            let _ = conn.send_stream(id).write(&[0xff; 64]);
                        }
                    }
                }
                Event::ConnectionLost { .. } => seen.1 = true,
                _ => {}
            }
        }
        self.changed.notify_all();
    }
}

impl Flooder {
    /// Wait until `done` holds or `deadline` passes; whether it holds.
    fn wait_until(&self, deadline: Instant, done: impl Fn(&(bool, bool)) -> bool) -> bool {
        let mut seen = self.seen.lock();
        while !done(&seen) {
            if self.changed.wait_until(&mut seen, deadline).timed_out() {
                break;
            }
        }
        done(&seen)
    }
}

/// Open `n` connections to the link endpoint at `addr` at once, from an engine of their own;
/// with `garbage`, each sends bytes that are not a frame on a stream, otherwise nothing. Waits
/// up to `hold` (from when every handshake has ended) for the target to close them, then
/// closes the rest.
pub fn exercise_flood(addr: SocketAddr, n: usize, garbage: bool, hold: Duration) -> FloodReport {
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
    let Ok(bind) = bind.parse() else {
        return FloodReport::default();
    };
    let Ok(engine) = Engine::bind(bind, None, 0, Box::new(|_| None)) else {
        return FloodReport::default();
    };
    let mut conns = Vec::new();
    for _ in 0..n {
        let f = Arc::new(Flooder {
            garbage,
            seen: Mutex::default(),
            changed: Condvar::new(),
        });
        if let Ok(c) = engine.connect(client.clone(), addr, tls::SERVER_NAME, f.clone()) {
            conns.push((c, f));
        }
    }
    let mut r = FloodReport {
        refused: n - conns.len(),
        ..FloodReport::default()
    };
    let deadline = Instant::now() + HANDSHAKE;
    let mut up = Vec::new();
    for (c, f) in conns {
        if f.wait_until(deadline, |s| s.0 || s.1) && f.seen.lock().0 {
            up.push((c, f));
        } else {
            r.refused += 1;
        }
    }
    r.established = up.len();
    let deadline = Instant::now() + hold;
    r.closed_by_target = up
        .iter()
        .filter(|(_, f)| f.wait_until(deadline, |s| s.1))
        .count();
    // The rest are closed as the engine goes, on return (its drop sends each a
    // CONNECTION_CLOSE).
    r
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
