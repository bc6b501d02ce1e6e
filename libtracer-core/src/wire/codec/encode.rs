//! Frame encoding: a [`Frame`] to a head buffer plus its payload, left as a separate slice.

use bytes::Bytes;

use crate::payload::Payload;

use super::writer::Enc;
use super::{kind, tlv, LEN_PREFIX, MAX_MESSAGE, MAX_NODE, MAX_PATH, MAX_PERMISSIONS, MAX_TAG};
use crate::wire::error::EncodeError;
use crate::wire::frame::{Frame, MAX_FRAME, MAX_TOKENS, PROTOCOL_VERSION};

/// A frame encoded for a vectored write: `head` holds the length prefix, header and every TLV
/// but the payload's value, which follows in `payload` (not copied).
#[derive(Clone, Debug)]
pub struct EncodedFrame {
    pub head: Vec<u8>,
    pub payload: Option<Bytes>,
}

impl EncodedFrame {
    /// Total bytes on the wire, prefix included.
    pub fn len(&self) -> usize {
        self.head.len() + self.payload.as_ref().map_or(0, |p| p.len())
    }
    pub fn is_empty(&self) -> bool {
        false
    }
    /// Both parts joined (tests, small frames).
    pub fn to_vec(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(self.len());
        v.extend_from_slice(&self.head);
        if let Some(p) = &self.payload {
            v.extend_from_slice(p);
        }
        v
    }
}

/// Encode `frame` as head + payload slices. Fails when a string exceeds its limit or the frame
/// exceeds `max_frame` (the peer's announced bound), so an over-limit frame never leaves.
pub fn encode_parts(frame: &Frame, max_frame: u32) -> Result<EncodedFrame, EncodeError> {
    let mut head = Vec::with_capacity(64);
    let payload = encode_head(frame, max_frame, &mut head)?.map(Payload::to_bytes);
    Ok(EncodedFrame { head, payload })
}

/// [`encode_parts`] into `head` (cleared first; a link keeps one, so the steady path allocates
/// nothing): returns the payload, whose bytes follow the head on the wire.
pub fn encode_head<'f>(
    frame: &'f Frame,
    max_frame: u32,
    head: &mut Vec<u8>,
) -> Result<Option<&'f Payload>, EncodeError> {
    head.clear();
    let mut e = Enc {
        buf: std::mem::take(head),
    };
    let r = encode_into(frame, max_frame, &mut e);
    *head = e.buf;
    r
}

fn encode_into<'f>(
    frame: &'f Frame,
    max_frame: u32,
    e: &mut Enc,
) -> Result<Option<&'f Payload>, EncodeError> {
    e.buf.extend_from_slice(&[0; LEN_PREFIX]);
    e.buf.push(PROTOCOL_VERSION);
    e.buf.push(kind_of(frame));
    let mut payload = None;
    match frame {
        Frame::Hello {
            version,
            node,
            max_frame,
            shm,
            permissions,
            directory,
        } => {
            e.u8(tlv::VERSION, *version);
            e.str(tlv::NODE, "NODE", node, MAX_NODE)?;
            e.u32(tlv::MAX_FRAME, *max_frame);
            if shm.bits() != 0 {
                e.u8(tlv::SHM, shm.bits());
            }
            if let Some(p) = permissions {
                e.bytes(tlv::PERMISSIONS, "PERMISSIONS", p, MAX_PERMISSIONS)?;
            }
            if let Some(d) = directory {
                e.u16(tlv::DIRECTORY, *d);
            }
        }
        Frame::Write {
            req,
            path,
            meta,
            payload: p,
        } => {
            e.u64(tlv::REQ, *req);
            e.str(tlv::PATH, "PATH", path, MAX_PATH)?;
            e.meta(meta);
            e.payload_header(p.len());
            payload = Some(p);
        }
        Frame::Subscribe {
            req,
            source,
            edge,
            policy,
            tag,
            window,
        } => {
            e.u64(tlv::REQ, *req);
            e.str(tlv::PATH, "PATH", source, MAX_PATH)?;
            e.u64(tlv::EDGE, *edge);
            e.u16(tlv::POLICY, *policy);
            if let Some(t) = tag {
                e.bytes(tlv::TAG, "TAG", t, MAX_TAG)?;
            }
            if let Some(w) = window {
                e.window(w);
            }
        }
        Frame::Unsubscribe { edge } => e.u64(tlv::EDGE, *edge),
        Frame::Delivery {
            edge,
            meta,
            suffix,
            payload: p,
        } => {
            e.u64(tlv::EDGE, *edge);
            e.meta(meta);
            if let Some(s) = suffix {
                e.str(tlv::SUFFIX, "SUFFIX", s, MAX_PATH)?;
            }
            e.payload_header(p.len());
            payload = Some(p);
        }
        Frame::Structure { edge, event } => {
            e.u64(tlv::EDGE, *edge);
            e.event(event)?;
        }
        Frame::Read { req, path } => {
            e.u64(tlv::REQ, *req);
            e.str(tlv::PATH, "PATH", path, MAX_PATH)?;
        }
        Frame::ReadReply {
            req,
            role,
            schema,
            value,
        } => {
            e.u64(tlv::REQ, *req);
            e.u8(tlv::ROLE, *role as u8);
            if let Some(s) = schema {
                e.schema(s);
            }
            if let Some((m, p)) = value {
                e.meta(m);
                e.payload_header(p.len());
                payload = Some(p);
            }
        }
        Frame::Ok { req } => e.u64(tlv::REQ, *req),
        Frame::Error { req, code, message } => {
            e.u64(tlv::REQ, *req);
            e.u16(tlv::CODE, *code as u16);
            if !message.is_empty() {
                e.str(tlv::MESSAGE, "MESSAGE", message, MAX_MESSAGE)?;
            }
        }
        Frame::Ping { nonce } => e.u64(tlv::NONCE, *nonce),
        Frame::Pong { nonce } => e.u64(tlv::NONCE, *nonce),
        Frame::Segment { id, size } | Frame::Retire { id, size } => {
            let mut v = [0u8; 12];
            v[0..4].copy_from_slice(&id.to_le_bytes());
            v[4..12].copy_from_slice(&size.to_le_bytes());
            e.tlv(tlv::SEGMENT, &v);
        }
        Frame::ShmDelivery {
            edge,
            meta,
            suffix,
            shm,
        } => {
            e.u64(tlv::EDGE, *edge);
            e.meta(meta);
            if let Some(s) = suffix {
                e.str(tlv::SUFFIX, "SUFFIX", s, MAX_PATH)?;
            }
            let mut v = [0u8; 24];
            v[0..4].copy_from_slice(&shm.segment.to_le_bytes());
            v[4..12].copy_from_slice(&shm.offset.to_le_bytes());
            v[12..16].copy_from_slice(&shm.len.to_le_bytes());
            v[16..24].copy_from_slice(&shm.token.to_le_bytes());
            e.tlv(tlv::SHM_REF, &v);
        }
        Frame::Release { tokens } => {
            if tokens.is_empty() || tokens.len() > MAX_TOKENS {
                return Err(EncodeError::BadCount {
                    field: "TOKENS",
                    count: tokens.len(),
                    max: MAX_TOKENS,
                });
            }
            e.tokens(tlv::TOKENS, tokens);
        }
        Frame::Credit { edge, window } => {
            e.u64(tlv::EDGE, *edge);
            e.window(window);
        }
        Frame::DeliveryPart {
            edge,
            part,
            meta,
            suffix,
            chunk,
        } => {
            e.u64(tlv::EDGE, *edge);
            e.part(part);
            if let Some(m) = meta {
                e.meta(m);
            }
            if let Some(s) = suffix {
                e.str(tlv::SUFFIX, "SUFFIX", s, MAX_PATH)?;
            }
            e.payload_header(chunk.len());
            payload = Some(chunk);
        }
    }
    let body = (e.buf.len() - LEN_PREFIX) as u64 + payload.map_or(0, |p| p.len() as u64);
    if body > u64::from(max_frame) {
        return Err(EncodeError::FrameTooLarge {
            len: body,
            max: max_frame,
        });
    }
    e.buf[..LEN_PREFIX].copy_from_slice(&(body as u32).to_le_bytes());
    Ok(payload)
}

/// Encode `frame` into one buffer, bounded by [`MAX_FRAME`].
pub fn encode(frame: &Frame) -> Result<Vec<u8>, EncodeError> {
    encode_parts(frame, MAX_FRAME).map(|p| p.to_vec())
}

fn kind_of(frame: &Frame) -> u8 {
    match frame {
        Frame::Hello { .. } => kind::HELLO,
        Frame::Write { .. } => kind::WRITE,
        Frame::Subscribe { .. } => kind::SUBSCRIBE,
        Frame::Unsubscribe { .. } => kind::UNSUBSCRIBE,
        Frame::Delivery { .. } => kind::DELIVERY,
        Frame::Structure { .. } => kind::STRUCTURE,
        Frame::Read { .. } => kind::READ,
        Frame::ReadReply { .. } => kind::READ_REPLY,
        Frame::Ok { .. } => kind::OK,
        Frame::Error { .. } => kind::ERROR,
        Frame::Ping { .. } => kind::PING,
        Frame::Pong { .. } => kind::PONG,
        Frame::Segment { .. } => kind::SEGMENT,
        Frame::Retire { .. } => kind::RETIRE,
        Frame::ShmDelivery { .. } => kind::SHM_DELIVERY,
        Frame::Release { .. } => kind::RELEASE,
        Frame::Credit { .. } => kind::CREDIT,
        Frame::DeliveryPart { .. } => kind::DELIVERY_PART,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::payload::{Meta, Payload};
    use crate::wire::codec::decode;

    #[test]
    fn payload_is_last_and_not_copied() {
        let payload = Payload::from(vec![7u8; 100]);
        let f = Frame::Delivery {
            edge: 3,
            meta: Meta::default(),
            suffix: None,
            payload: payload.clone(),
        };
        let parts = encode_parts(&f, MAX_FRAME).unwrap();
        assert_eq!(
            parts.payload.as_ref().unwrap().as_ptr(),
            payload.as_ref().as_ptr()
        );
        let bytes = parts.to_vec();
        assert_eq!(&bytes[bytes.len() - 100..], &[7u8; 100][..]);
        assert_eq!(decode(&bytes, MAX_FRAME).unwrap(), (f, bytes.len()));
    }

    #[test]
    fn encode_refuses_frames_above_the_peer_bound() {
        let f = Frame::Write {
            req: 1,
            path: "/a".into(),
            meta: Meta::default(),
            payload: vec![0; 200].into(),
        };
        assert!(matches!(
            encode_parts(&f, 100),
            Err(EncodeError::FrameTooLarge { max: 100, .. })
        ));
    }
}
