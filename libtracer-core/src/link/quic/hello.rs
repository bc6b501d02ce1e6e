//! The peer's side of the HELLO exchange on a link's control stream (docs/network.md section
//! 3, wire.md section 6), fed chunk by chunk whoever reads the stream (the handshake's tasks
//! today, the engine's handshake watcher in stage 2 of section 4a): the first frame must be
//! HELLO, or ERROR when the peer refuses us, within the handshake's frame bound.

use bytes::{Buf, Bytes};

use crate::wire::{Frame, FrameDecoder, MAX_FRAME};

/// Frame bound before the HELLO exchange: the Unix transport's 8 KiB, plus room for the
/// PERMISSIONS a peer with SROS2 sends in it (docs/wire.md section 2).
pub(crate) const HANDSHAKE_FRAME: u32 = 8 * 1024 + crate::wire::MAX_PERMISSIONS as u32;

pub(crate) struct PeerHello {
    pub node: String,
    pub max_frame: u32,
    /// The peer's signed permissions document, if it sent one.
    pub permissions: Option<Bytes>,
    /// The UDP port of the peer's host directory, if it said (older nodes do not).
    pub directory: Option<u16>,
}

pub(crate) enum HelloOutcome {
    /// The peer's HELLO, the decoder (now at the full frame bound) and the bytes read past it.
    Hello(PeerHello, FrameDecoder, Bytes),
    /// The peer answered ERROR: it refused this connection.
    Refused(String),
}

/// The control stream until the peer's first frame.
pub(crate) struct HelloRx {
    dec: Option<FrameDecoder>,
}

impl Default for HelloRx {
    fn default() -> HelloRx {
        HelloRx {
            dec: Some(FrameDecoder::new(HANDSHAKE_FRAME)),
        }
    }
}

impl HelloRx {
    /// Take the next chunk of the stream: `Ok(None)` until the first frame is whole, then its
    /// outcome (once; the decoder goes with a HELLO to the link). `Err`: not a HELLO, or one
    /// this side does not speak with.
    pub(crate) fn push(&mut self, chunk: Bytes) -> Result<Option<HelloOutcome>, String> {
        let Some(dec) = self.dec.as_mut() else {
            return Err("the HELLO exchange is over".into());
        };
        let mut rest = chunk;
        let taken = dec.push(&rest);
        rest.advance(taken);
        match dec.pop() {
            Ok(None) => Ok(None),
            Ok(Some(Frame::Hello {
                version,
                node,
                max_frame,
                permissions,
                directory,
                ..
            })) => {
                if version < 1 {
                    return Err(format!("peer speaks protocol version {version}"));
                }
                if max_frame < 1024 {
                    return Err(format!(
                        "peer frame bound {max_frame} is below the 1 KiB minimum"
                    ));
                }
                let mut dec = self.dec.take().expect("checked above");
                dec.set_max_frame(MAX_FRAME);
                let hello = PeerHello {
                    node,
                    max_frame,
                    permissions,
                    directory,
                };
                Ok(Some(HelloOutcome::Hello(hello, dec, rest)))
            }
            Ok(Some(Frame::Error { message, .. })) => Ok(Some(HelloOutcome::Refused(message))),
            Ok(Some(other)) => Err(format!("first frame is not HELLO: {other:?}")),
            Err(e) => Err(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::encode_parts;

    fn bytes_of(f: &Frame) -> Vec<u8> {
        let e = encode_parts(f, MAX_FRAME).unwrap();
        let mut v = e.head;
        if let Some(p) = e.payload {
            v.extend_from_slice(&p);
        }
        v
    }

    #[test]
    fn a_hello_in_pieces_then_what_follows_it() {
        let mut stream = bytes_of(&super::super::link::hello("peer", None, 7400));
        stream.extend(bytes_of(&Frame::Ok { req: 1 }));
        let mut rx = HelloRx::default();
        let mut outcome = None;
        for piece in stream.chunks(5) {
            if let Some(o) = rx.push(Bytes::copy_from_slice(piece)).unwrap() {
                outcome = Some(o);
                break;
            }
        }
        let Some(HelloOutcome::Hello(h, _, _)) = outcome else {
            panic!("no HELLO");
        };
        assert_eq!((h.node.as_str(), h.directory), ("peer", Some(7400)));
        assert!(rx.push(Bytes::new()).is_err());
    }

    #[test]
    fn a_refusal_or_another_first_frame() {
        let refusal = crate::link::refusal(crate::wire::ErrorCode::Malformed, "no");
        let mut rx = HelloRx::default();
        let got = rx.push(Bytes::from(bytes_of(&refusal))).unwrap();
        assert!(matches!(got, Some(HelloOutcome::Refused(m)) if m == "no"));
        let mut rx = HelloRx::default();
        assert!(rx
            .push(Bytes::from(bytes_of(&Frame::Ok { req: 1 })))
            .is_err());
    }
}
