//! Frame decoding: a body (or a length-prefixed buffer) to a [`Frame`], with the TLVs each kind
//! may carry checked before any is read.

use bytes::Bytes;

use crate::payload::Payload;

use super::reader::{bit, Fields};
use super::{
    kind, kind_name, tlv, LEN_PREFIX, MAX_MESSAGE, MAX_NODE, MAX_PATH, MAX_PERMISSIONS, MAX_TAG,
};
use crate::wire::error::DecodeError;
use crate::wire::frame::{Frame, PROTOCOL_VERSION};

/// The TLVs each kind may carry.
fn allowed(k: u8) -> u32 {
    use tlv::*;
    let set = |ts: &[u8]| ts.iter().fold(0, |acc, t| acc | bit(*t));
    match k {
        kind::HELLO => set(&[VERSION, NODE, MAX_FRAME, SHM, PERMISSIONS, DIRECTORY]),
        kind::WRITE => set(&[REQ, PATH, META, PAYLOAD]),
        kind::SUBSCRIBE => set(&[REQ, PATH, EDGE, POLICY, TAG, WINDOW]),
        kind::UNSUBSCRIBE => set(&[EDGE]),
        kind::DELIVERY => set(&[EDGE, META, SUFFIX, PAYLOAD]),
        kind::STRUCTURE => set(&[EDGE, EVENT, PATH, ROLE, SCHEMA]),
        kind::READ => set(&[REQ, PATH]),
        kind::READ_REPLY => set(&[REQ, ROLE, SCHEMA, META, PAYLOAD]),
        kind::OK => set(&[REQ]),
        kind::ERROR => set(&[REQ, CODE, MESSAGE]),
        kind::PING | kind::PONG => set(&[NONCE]),
        kind::SEGMENT | kind::RETIRE => set(&[SEGMENT]),
        kind::SHM_DELIVERY => set(&[EDGE, META, SUFFIX, SHM_REF]),
        kind::RELEASE => set(&[TOKENS]),
        kind::CREDIT => set(&[EDGE, WINDOW]),
        kind::DELIVERY_PART => set(&[EDGE, PART, META, SUFFIX, PAYLOAD]),
        _ => 0,
    }
}

/// Decode one frame body (`version | kind | TLV*`, the bytes after the length prefix). Payloads
/// are slices of `body`, not copies.
pub fn decode_body(body: &Bytes) -> Result<Frame, DecodeError> {
    decode_payload(&Payload::new(body.clone()))
}

/// [`decode_body`] of a body in a [`Payload`] (a pool block a link read into): payloads are
/// slices of it, sharing its memory.
pub fn decode_payload(whole: &Payload) -> Result<Frame, DecodeError> {
    let body: &[u8] = whole.as_ref();
    if body.len() < 2 {
        return Err(DecodeError::FrameTooShort {
            len: body.len() as u32,
        });
    }
    if body[0] != PROTOCOL_VERSION {
        return Err(DecodeError::UnsupportedVersion(body[0]));
    }
    let k = body[1];
    let allow = allowed(k);
    if allow == 0 {
        return Err(DecodeError::UnknownKind(k));
    }
    let f = Fields::parse(body, 2, kind_name(k), allow)?;
    Ok(match k {
        kind::HELLO => Frame::Hello {
            version: f.u8(tlv::VERSION)?,
            node: f.string(tlv::NODE, MAX_NODE)?,
            max_frame: f.u32(tlv::MAX_FRAME)?,
            shm: f.shm_caps()?,
            permissions: f.opt_bytes(tlv::PERMISSIONS, MAX_PERMISSIONS)?,
            directory: f.directory()?,
        },
        kind::WRITE => Frame::Write {
            req: f.u64(tlv::REQ)?,
            path: f.string(tlv::PATH, MAX_PATH)?,
            meta: f.meta()?,
            payload: f.payload(whole)?,
        },
        kind::SUBSCRIBE => Frame::Subscribe {
            req: f.u64(tlv::REQ)?,
            source: f.string(tlv::PATH, MAX_PATH)?,
            edge: f.u64(tlv::EDGE)?,
            policy: f.u16(tlv::POLICY)?,
            tag: f.opt_bytes(tlv::TAG, MAX_TAG)?,
            window: f.opt_window()?,
        },
        kind::UNSUBSCRIBE => Frame::Unsubscribe {
            edge: f.u64(tlv::EDGE)?,
        },
        kind::DELIVERY => Frame::Delivery {
            edge: f.u64(tlv::EDGE)?,
            meta: f.meta()?,
            suffix: f.opt_string(tlv::SUFFIX, MAX_PATH)?,
            payload: f.payload(whole)?,
        },
        kind::STRUCTURE => Frame::Structure {
            edge: f.u64(tlv::EDGE)?,
            event: f.event()?,
        },
        kind::READ => Frame::Read {
            req: f.u64(tlv::REQ)?,
            path: f.string(tlv::PATH, MAX_PATH)?,
        },
        kind::READ_REPLY => {
            // META and PAYLOAD come together or not at all.
            let value = match (f.range(tlv::META), f.range(tlv::PAYLOAD)) {
                (Some(_), Some(_)) => Some((f.meta()?, f.payload(whole)?)),
                (None, None) => None,
                (Some(_), None) => return Err(f.missing(tlv::PAYLOAD)),
                (None, Some(_)) => return Err(f.missing(tlv::META)),
            };
            Frame::ReadReply {
                req: f.u64(tlv::REQ)?,
                role: f.role()?,
                schema: f.schema()?,
                value,
            }
        }
        kind::OK => Frame::Ok {
            req: f.u64(tlv::REQ)?,
        },
        kind::ERROR => Frame::Error {
            req: f.u64(tlv::REQ)?,
            code: f.code()?,
            message: f.opt_string(tlv::MESSAGE, MAX_MESSAGE)?.unwrap_or_default(),
        },
        kind::PING => Frame::Ping {
            nonce: f.u64(tlv::NONCE)?,
        },
        kind::PONG => Frame::Pong {
            nonce: f.u64(tlv::NONCE)?,
        },
        kind::SEGMENT => {
            let (id, size) = f.segment()?;
            Frame::Segment { id, size }
        }
        kind::RETIRE => {
            let (id, size) = f.segment()?;
            Frame::Retire { id, size }
        }
        kind::SHM_DELIVERY => Frame::ShmDelivery {
            edge: f.u64(tlv::EDGE)?,
            meta: f.meta()?,
            suffix: f.opt_string(tlv::SUFFIX, MAX_PATH)?,
            shm: f.shm_ref()?,
        },
        kind::RELEASE => Frame::Release {
            tokens: f.tokens()?,
        },
        kind::CREDIT => Frame::Credit {
            edge: f.u64(tlv::EDGE)?,
            window: f.window()?,
        },
        kind::DELIVERY_PART => {
            // Part 0 carries the META (and the SUFFIX, if any); the others neither.
            let part = f.part()?;
            let first = part.index == 0;
            let meta = match (first, f.range(tlv::META)) {
                (true, _) => Some(f.meta()?),
                (false, None) => None,
                (false, Some(_)) => {
                    return Err(DecodeError::UnexpectedTlv {
                        frame: "DELIVERY_PART",
                        tlv: "META",
                    })
                }
            };
            let suffix = f.opt_string(tlv::SUFFIX, MAX_PATH)?;
            if !first && suffix.is_some() {
                return Err(DecodeError::UnexpectedTlv {
                    frame: "DELIVERY_PART",
                    tlv: "SUFFIX",
                });
            }
            Frame::DeliveryPart {
                edge: f.u64(tlv::EDGE)?,
                part,
                meta,
                suffix,
                chunk: f.payload(whole)?,
            }
        }
        _ => return Err(DecodeError::UnknownKind(k)),
    })
}

/// Decode the first complete frame of `buf` (length prefix included), bounded by `max_frame`.
/// Returns the frame and the bytes it took. The payload is copied out of `buf` once.
pub fn decode(buf: &[u8], max_frame: u32) -> Result<(Frame, usize), DecodeError> {
    let len = frame_len(buf, max_frame)?;
    let total = LEN_PREFIX + len as usize;
    if buf.len() < total {
        return Err(DecodeError::Incomplete {
            have: buf.len(),
            need: total,
        });
    }
    let body = Bytes::copy_from_slice(&buf[LEN_PREFIX..total]);
    Ok((decode_body(&body)?, total))
}

/// The announced body length of the frame at the start of `buf`, checked against the bound.
pub(crate) fn frame_len(buf: &[u8], max_frame: u32) -> Result<u32, DecodeError> {
    let Some(prefix) = buf.get(..LEN_PREFIX) else {
        return Err(DecodeError::Incomplete {
            have: buf.len(),
            need: LEN_PREFIX,
        });
    };
    check_frame_len(
        u32::from_le_bytes(prefix.try_into().expect("4 bytes")),
        max_frame,
    )
}

/// A length prefix's value checked against the bound and the 2-byte header.
pub(crate) fn check_frame_len(len: u32, max_frame: u32) -> Result<u32, DecodeError> {
    if len > max_frame {
        return Err(DecodeError::FrameTooLarge {
            len: u64::from(len),
            max: max_frame,
        });
    }
    if len < 2 {
        return Err(DecodeError::FrameTooShort { len });
    }
    Ok(len)
}
