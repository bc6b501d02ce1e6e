//! Encoder and decoder of wire protocol v1 frames. Pure: bytes in, frames out. The streaming
//! decoder for a byte stream is in `stream.rs`; the layout is drawn in docs/wire.md.
//!
//! ```text
//! frame  = length:u32 LE | version:u8 | kind:u8 | TLV*      length = bytes after the length field
//! TLV    = type:u8 | length:varint | value                  varint = LEB128, shortest form, <= 5 bytes
//!          type & 0x80: mandatory (unknown -> reject)      else optional (unknown -> skip)
//! ```
//!
//! Integers inside TLVs are fixed-width little endian, so a value's length is checked exactly.
//! The encoder always writes PAYLOAD last, which lets a link send the header and the payload as
//! two slices of one vectored write without copying the payload.

use bytes::Bytes;

use super::error::{DecodeError, EncodeError};
use super::frame::*;
use crate::payload::{Meta, Payload};

/// Bytes of the length prefix.
pub const LEN_PREFIX: usize = 4;
/// Longest path or suffix on the wire (the graph's own path bound).
pub const MAX_PATH: usize = 1024;
/// Longest node name (one path segment).
pub const MAX_NODE: usize = 255;
/// Longest error message.
pub const MAX_MESSAGE: usize = 4096;

/// TLV type numbers. Bit 7 set = mandatory.
pub mod tlv {
    pub const REQ: u8 = 0x81;
    pub const PATH: u8 = 0x82;
    pub const META: u8 = 0x83;
    pub const PAYLOAD: u8 = 0x84;
    pub const EDGE: u8 = 0x85;
    pub const POLICY: u8 = 0x86;
    pub const NODE: u8 = 0x87;
    pub const VERSION: u8 = 0x88;
    pub const MAX_FRAME: u8 = 0x89;
    pub const CODE: u8 = 0x8A;
    pub const NONCE: u8 = 0x8B;
    pub const ROLE: u8 = 0x8C;
    pub const EVENT: u8 = 0x8D;
    pub const SUFFIX: u8 = 0x8E;
    pub const SCHEMA: u8 = 0x8F;
    /// Optional: human-readable error text.
    pub const MESSAGE: u8 = 0x01;
    pub const MANDATORY: u8 = 0x80;
}

/// Frame kind numbers.
pub mod kind {
    pub const HELLO: u8 = 0x01;
    pub const WRITE: u8 = 0x02;
    pub const SUBSCRIBE: u8 = 0x03;
    pub const UNSUBSCRIBE: u8 = 0x04;
    pub const DELIVERY: u8 = 0x05;
    pub const STRUCTURE: u8 = 0x06;
    pub const READ: u8 = 0x07;
    pub const READ_REPLY: u8 = 0x08;
    pub const OK: u8 = 0x09;
    pub const ERROR: u8 = 0x0A;
    pub const PING: u8 = 0x0B;
    pub const PONG: u8 = 0x0C;
}

const META_LEN: usize = 32;

// ---------------------------------------------------------------------------------------------
// Encoding

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

struct Enc {
    buf: Vec<u8>,
}

impl Enc {
    fn varint(&mut self, mut v: u64) {
        loop {
            let b = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                self.buf.push(b);
                return;
            }
            self.buf.push(b | 0x80);
        }
    }
    fn tlv(&mut self, t: u8, value: &[u8]) {
        self.buf.push(t);
        self.varint(value.len() as u64);
        self.buf.extend_from_slice(value);
    }
    fn u8(&mut self, t: u8, v: u8) {
        self.tlv(t, &[v]);
    }
    fn u16(&mut self, t: u8, v: u16) {
        self.tlv(t, &v.to_le_bytes());
    }
    fn u32(&mut self, t: u8, v: u32) {
        self.tlv(t, &v.to_le_bytes());
    }
    fn u64(&mut self, t: u8, v: u64) {
        self.tlv(t, &v.to_le_bytes());
    }
    fn str(&mut self, t: u8, field: &'static str, s: &str, max: usize) -> Result<(), EncodeError> {
        check_len(field, s.len(), max)?;
        self.tlv(t, s.as_bytes());
        Ok(())
    }
    fn meta(&mut self, m: &Meta) {
        let mut v = [0u8; META_LEN];
        v[0..8].copy_from_slice(&m.source_timestamp_ns.to_le_bytes());
        v[8..16].copy_from_slice(&m.sequence.to_le_bytes());
        v[16..32].copy_from_slice(&m.writer);
        self.tlv(tlv::META, &v);
    }
    fn schema(&mut self, s: &SchemaInfo) {
        let mut inner = Enc {
            buf: Vec::with_capacity(s.definition.len() + 64),
        };
        for part in [&s.type_name, &s.encoding, &s.type_hash, &s.definition] {
            inner.varint(part.len() as u64);
            inner.buf.extend_from_slice(part.as_bytes());
        }
        self.tlv(tlv::SCHEMA, &inner.buf);
    }
    /// The PAYLOAD TLV's type and length; the value itself goes out as a separate slice.
    fn payload_header(&mut self, len: usize) {
        self.buf.push(tlv::PAYLOAD);
        self.varint(len as u64);
    }
    fn event(&mut self, e: &StructEvent) -> Result<(), EncodeError> {
        match e {
            StructEvent::Created { path, role, schema } => {
                self.u8(tlv::EVENT, EVENT_CREATED);
                self.str(tlv::PATH, "PATH", path, MAX_PATH)?;
                self.u8(tlv::ROLE, *role as u8);
                if let Some(s) = schema {
                    self.schema(s);
                }
            }
            StructEvent::Removed { path } => {
                self.u8(tlv::EVENT, EVENT_REMOVED);
                self.str(tlv::PATH, "PATH", path, MAX_PATH)?;
            }
            StructEvent::SchemaSet { path, schema } => {
                self.u8(tlv::EVENT, EVENT_SCHEMA_SET);
                self.str(tlv::PATH, "PATH", path, MAX_PATH)?;
                self.schema(schema);
            }
        }
        Ok(())
    }
}

fn check_len(field: &'static str, len: usize, max: usize) -> Result<(), EncodeError> {
    if len > max {
        return Err(EncodeError::StringTooLong { field, len, max });
    }
    Ok(())
}

const EVENT_CREATED: u8 = 1;
const EVENT_REMOVED: u8 = 2;
const EVENT_SCHEMA_SET: u8 = 3;

/// Encode `frame` as head + payload slices. Fails when a string exceeds its limit or the frame
/// exceeds `max_frame` (the peer's announced bound), so an over-limit frame never leaves.
pub fn encode_parts(frame: &Frame, max_frame: u32) -> Result<EncodedFrame, EncodeError> {
    let mut e = Enc {
        buf: Vec::with_capacity(64),
    };
    e.buf.extend_from_slice(&[0; LEN_PREFIX]);
    e.buf.push(PROTOCOL_VERSION);
    e.buf.push(kind_of(frame));
    let mut payload = None;
    match frame {
        Frame::Hello {
            version,
            node,
            max_frame,
        } => {
            e.u8(tlv::VERSION, *version);
            e.str(tlv::NODE, "NODE", node, MAX_NODE)?;
            e.u32(tlv::MAX_FRAME, *max_frame);
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
            payload = Some(p.as_bytes().clone());
        }
        Frame::Subscribe {
            req,
            source,
            edge,
            policy,
        } => {
            e.u64(tlv::REQ, *req);
            e.str(tlv::PATH, "PATH", source, MAX_PATH)?;
            e.u64(tlv::EDGE, *edge);
            e.u16(tlv::POLICY, *policy);
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
            payload = Some(p.as_bytes().clone());
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
                payload = Some(p.as_bytes().clone());
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
    }
    let body = (e.buf.len() - LEN_PREFIX) as u64 + payload.as_ref().map_or(0, |p| p.len() as u64);
    if body > u64::from(max_frame) {
        return Err(EncodeError::FrameTooLarge {
            len: body,
            max: max_frame,
        });
    }
    e.buf[..LEN_PREFIX].copy_from_slice(&(body as u32).to_le_bytes());
    Ok(EncodedFrame {
        head: e.buf,
        payload,
    })
}

/// Encode `frame` into one buffer, bounded by [`MAX_FRAME`].
pub fn encode(frame: &Frame) -> Result<Vec<u8>, EncodeError> {
    encode_parts(frame, MAX_FRAME).map(|p| p.to_vec())
}

/// A structural event as a sample payload: `version:u8 | TLV*` with the EVENT, PATH, ROLE and
/// SCHEMA TLVs of a STRUCTURE frame. A path over [`MAX_PATH`] (which the graph never makes) is
/// encoded anyway and rejected by [`decode_struct_event`].
pub fn encode_struct_event(event: &StructEvent) -> Vec<u8> {
    let mut e = Enc {
        buf: Vec::with_capacity(32),
    };
    e.buf.push(PROTOCOL_VERSION);
    if e.event(event).is_err() {
        // Only a path over the limit fails; write it unchecked so the payload still says what
        // happened and the decoder names the problem.
        e.buf.truncate(1);
        let (code, path) = match event {
            StructEvent::Created { path, .. } => (EVENT_CREATED, path),
            StructEvent::Removed { path } => (EVENT_REMOVED, path),
            StructEvent::SchemaSet { path, .. } => (EVENT_SCHEMA_SET, path),
        };
        e.u8(tlv::EVENT, code);
        e.tlv(tlv::PATH, path.as_bytes());
    }
    e.buf
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
    }
}

/// The name of a frame kind, for errors and logs.
pub fn kind_name(k: u8) -> &'static str {
    match k {
        kind::HELLO => "HELLO",
        kind::WRITE => "WRITE",
        kind::SUBSCRIBE => "SUBSCRIBE",
        kind::UNSUBSCRIBE => "UNSUBSCRIBE",
        kind::DELIVERY => "DELIVERY",
        kind::STRUCTURE => "STRUCTURE",
        kind::READ => "READ",
        kind::READ_REPLY => "READ_REPLY",
        kind::OK => "OK",
        kind::ERROR => "ERROR",
        kind::PING => "PING",
        kind::PONG => "PONG",
        _ => "unknown frame",
    }
}

// ---------------------------------------------------------------------------------------------
// Decoding

/// Read a LEB128 varint at `*pos`, advancing it. Bounded to 5 bytes and u32, shortest form only.
pub(crate) fn read_varint(buf: &[u8], pos: &mut usize) -> Result<u32, DecodeError> {
    let start = *pos;
    let mut v: u64 = 0;
    for i in 0..5 {
        let Some(&b) = buf.get(*pos) else {
            return Err(DecodeError::TruncatedTlv { at: start });
        };
        *pos += 1;
        v |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            if i > 0 && b == 0 {
                return Err(DecodeError::VarintNotCanonical { at: start });
            }
            return u32::try_from(v).map_err(|_| DecodeError::VarintOverflow { at: start });
        }
    }
    Err(DecodeError::VarintOverflow { at: start })
}

/// Slot indices of the known TLVs in [`Fields`].
const KNOWN: [(u8, &str); 16] = [
    (tlv::REQ, "REQ"),
    (tlv::PATH, "PATH"),
    (tlv::META, "META"),
    (tlv::PAYLOAD, "PAYLOAD"),
    (tlv::EDGE, "EDGE"),
    (tlv::POLICY, "POLICY"),
    (tlv::NODE, "NODE"),
    (tlv::VERSION, "VERSION"),
    (tlv::MAX_FRAME, "MAX_FRAME"),
    (tlv::CODE, "CODE"),
    (tlv::NONCE, "NONCE"),
    (tlv::ROLE, "ROLE"),
    (tlv::EVENT, "EVENT"),
    (tlv::SUFFIX, "SUFFIX"),
    (tlv::SCHEMA, "SCHEMA"),
    (tlv::MESSAGE, "MESSAGE"),
];

fn slot(t: u8) -> Option<usize> {
    KNOWN.iter().position(|(k, _)| *k == t)
}

fn bit(t: u8) -> u32 {
    slot(t).map_or(0, |i| 1 << i)
}

fn tlv_name(t: u8) -> &'static str {
    slot(t).map_or("unknown", |i| KNOWN[i].1)
}

/// The TLVs each kind may carry.
fn allowed(k: u8) -> u32 {
    use tlv::*;
    let set = |ts: &[u8]| ts.iter().fold(0, |acc, t| acc | bit(*t));
    match k {
        kind::HELLO => set(&[VERSION, NODE, MAX_FRAME]),
        kind::WRITE => set(&[REQ, PATH, META, PAYLOAD]),
        kind::SUBSCRIBE => set(&[REQ, PATH, EDGE, POLICY]),
        kind::UNSUBSCRIBE => set(&[EDGE]),
        kind::DELIVERY => set(&[EDGE, META, SUFFIX, PAYLOAD]),
        kind::STRUCTURE => set(&[EDGE, EVENT, PATH, ROLE, SCHEMA]),
        kind::READ => set(&[REQ, PATH]),
        kind::READ_REPLY => set(&[REQ, ROLE, SCHEMA, META, PAYLOAD]),
        kind::OK => set(&[REQ]),
        kind::ERROR => set(&[REQ, CODE, MESSAGE]),
        kind::PING | kind::PONG => set(&[NONCE]),
        _ => 0,
    }
}

/// The known TLVs of one frame body, as byte ranges into it.
struct Fields<'a> {
    body: &'a [u8],
    frame: &'static str,
    at: [Option<(usize, usize)>; KNOWN.len()],
}

impl<'a> Fields<'a> {
    /// Walk `body[start..]` as TLVs, keeping those in `allow`.
    fn parse(
        body: &'a [u8],
        start: usize,
        frame: &'static str,
        allow: u32,
    ) -> Result<Self, DecodeError> {
        let mut f = Fields {
            body,
            frame,
            at: [None; KNOWN.len()],
        };
        let mut pos = start;
        while pos < body.len() {
            let t = body[pos];
            pos += 1;
            let len = read_varint(body, &mut pos)? as usize;
            let left = body.len() - pos;
            if len > left {
                return Err(DecodeError::TlvOverrun {
                    tlv: t,
                    len: len as u64,
                    left,
                });
            }
            let range = (pos, pos + len);
            pos += len;
            match slot(t) {
                Some(i) if allow & (1 << i) != 0 => {
                    if f.at[i].is_some() {
                        return Err(DecodeError::DuplicateTlv {
                            frame,
                            tlv: KNOWN[i].1,
                        });
                    }
                    f.at[i] = Some(range);
                }
                Some(i) if t & tlv::MANDATORY != 0 => {
                    return Err(DecodeError::UnexpectedTlv {
                        frame,
                        tlv: KNOWN[i].1,
                    });
                }
                None if t & tlv::MANDATORY != 0 => {
                    return Err(DecodeError::UnknownMandatoryTlv { frame, tlv: t });
                }
                // Optional and unknown here: skipped, so a later version can add optional TLVs.
                _ => {}
            }
        }
        Ok(f)
    }

    fn range(&self, t: u8) -> Option<(usize, usize)> {
        self.at[slot(t).expect("known TLV")]
    }
    fn opt(&self, t: u8) -> Option<&'a [u8]> {
        self.range(t).map(|(a, b)| &self.body[a..b])
    }
    fn req(&self, t: u8) -> Result<&'a [u8], DecodeError> {
        self.opt(t).ok_or(DecodeError::MissingTlv {
            frame: self.frame,
            tlv: tlv_name(t),
        })
    }
    fn fixed<const N: usize>(&self, t: u8) -> Result<[u8; N], DecodeError> {
        let v = self.req(t)?;
        v.try_into().map_err(|_| DecodeError::BadLength {
            tlv: tlv_name(t),
            len: v.len(),
            expected: N,
        })
    }
    fn u8(&self, t: u8) -> Result<u8, DecodeError> {
        Ok(self.fixed::<1>(t)?[0])
    }
    fn u16(&self, t: u8) -> Result<u16, DecodeError> {
        Ok(u16::from_le_bytes(self.fixed(t)?))
    }
    fn u32(&self, t: u8) -> Result<u32, DecodeError> {
        Ok(u32::from_le_bytes(self.fixed(t)?))
    }
    fn u64(&self, t: u8) -> Result<u64, DecodeError> {
        Ok(u64::from_le_bytes(self.fixed(t)?))
    }
    fn string(&self, t: u8, max: usize) -> Result<String, DecodeError> {
        str_of(self.req(t)?, tlv_name(t), max)
    }
    fn opt_string(&self, t: u8, max: usize) -> Result<Option<String>, DecodeError> {
        self.opt(t).map(|v| str_of(v, tlv_name(t), max)).transpose()
    }
    fn meta(&self) -> Result<Meta, DecodeError> {
        let v: [u8; META_LEN] = self.fixed(tlv::META)?;
        let mut writer = [0u8; 16];
        writer.copy_from_slice(&v[16..32]);
        Ok(Meta {
            source_timestamp_ns: i64::from_le_bytes(v[0..8].try_into().expect("8 bytes")),
            sequence: u64::from_le_bytes(v[8..16].try_into().expect("8 bytes")),
            writer,
        })
    }
    fn role(&self) -> Result<Role, DecodeError> {
        let v = self.u8(tlv::ROLE)?;
        role_of(v).ok_or(DecodeError::BadValue {
            field: "ROLE",
            value: u64::from(v),
        })
    }
    fn schema(&self) -> Result<Option<SchemaInfo>, DecodeError> {
        self.opt(tlv::SCHEMA).map(schema_of).transpose()
    }
    fn payload(&self, body: &Bytes) -> Result<Payload, DecodeError> {
        let (a, b) = self.range(tlv::PAYLOAD).ok_or(DecodeError::MissingTlv {
            frame: self.frame,
            tlv: "PAYLOAD",
        })?;
        Ok(Payload::new(body.slice(a..b)))
    }
    fn event(&self) -> Result<StructEvent, DecodeError> {
        let code = self.u8(tlv::EVENT)?;
        let path = self.string(tlv::PATH, MAX_PATH)?;
        let forbid = |t: u8| match self.range(t) {
            Some(_) => Err(DecodeError::UnexpectedTlv {
                frame: self.frame,
                tlv: tlv_name(t),
            }),
            None => Ok(()),
        };
        match code {
            EVENT_CREATED => Ok(StructEvent::Created {
                path,
                role: self.role()?,
                schema: self.schema()?,
            }),
            EVENT_REMOVED => {
                forbid(tlv::ROLE)?;
                forbid(tlv::SCHEMA)?;
                Ok(StructEvent::Removed { path })
            }
            EVENT_SCHEMA_SET => {
                forbid(tlv::ROLE)?;
                let schema = self.schema()?.ok_or(DecodeError::MissingTlv {
                    frame: self.frame,
                    tlv: "SCHEMA",
                })?;
                Ok(StructEvent::SchemaSet { path, schema })
            }
            v => Err(DecodeError::BadValue {
                field: "EVENT",
                value: u64::from(v),
            }),
        }
    }
}

fn str_of(v: &[u8], field: &'static str, max: usize) -> Result<String, DecodeError> {
    if v.len() > max {
        return Err(DecodeError::StringTooLong {
            field,
            len: v.len(),
            max,
        });
    }
    std::str::from_utf8(v)
        .map(str::to_owned)
        .map_err(|_| DecodeError::BadUtf8 { field })
}

fn role_of(v: u8) -> Option<Role> {
    Some(match v {
        1 => Role::Value,
        2 => Role::Stream,
        3 => Role::Sink,
        4 => Role::Inner,
        5 => Role::Mount,
        _ => return None,
    })
}

fn code_of(v: u16) -> ErrorCode {
    match v {
        1 => ErrorCode::NotFound,
        2 => ErrorCode::PermissionDenied,
        3 => ErrorCode::SchemaNotFound,
        4 => ErrorCode::Malformed,
        5 => ErrorCode::Unsupported,
        6 => ErrorCode::TooLarge,
        7 => ErrorCode::WrongRole,
        // A code from a later version still reads as a failure of the request.
        _ => ErrorCode::Internal,
    }
}

fn schema_of(v: &[u8]) -> Result<SchemaInfo, DecodeError> {
    const NAMES: [&str; 4] = [
        "SCHEMA.type_name",
        "SCHEMA.encoding",
        "SCHEMA.type_hash",
        "SCHEMA.definition",
    ];
    let mut pos = 0;
    let mut parts: [String; 4] = Default::default();
    for (part, field) in parts.iter_mut().zip(NAMES) {
        let len = read_varint(v, &mut pos)? as usize;
        let left = v.len() - pos;
        if len > left {
            return Err(DecodeError::TlvOverrun {
                tlv: tlv::SCHEMA,
                len: len as u64,
                left,
            });
        }
        *part = str_of(&v[pos..pos + len], field, usize::MAX)?;
        pos += len;
    }
    if pos != v.len() {
        return Err(DecodeError::TrailingBytes {
            field: "SCHEMA",
            extra: v.len() - pos,
        });
    }
    let [type_name, encoding, type_hash, definition] = parts;
    Ok(SchemaInfo {
        type_name,
        encoding,
        type_hash,
        definition,
    })
}

/// Decode one frame body (`version | kind | TLV*`, the bytes after the length prefix). Payloads
/// are slices of `body`, not copies.
pub fn decode_body(body: &Bytes) -> Result<Frame, DecodeError> {
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
        },
        kind::WRITE => Frame::Write {
            req: f.u64(tlv::REQ)?,
            path: f.string(tlv::PATH, MAX_PATH)?,
            meta: f.meta()?,
            payload: f.payload(body)?,
        },
        kind::SUBSCRIBE => Frame::Subscribe {
            req: f.u64(tlv::REQ)?,
            source: f.string(tlv::PATH, MAX_PATH)?,
            edge: f.u64(tlv::EDGE)?,
            policy: f.u16(tlv::POLICY)?,
        },
        kind::UNSUBSCRIBE => Frame::Unsubscribe {
            edge: f.u64(tlv::EDGE)?,
        },
        kind::DELIVERY => Frame::Delivery {
            edge: f.u64(tlv::EDGE)?,
            meta: f.meta()?,
            suffix: f.opt_string(tlv::SUFFIX, MAX_PATH)?,
            payload: f.payload(body)?,
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
            let value = match (f.range(tlv::META), f.range(tlv::PAYLOAD)) {
                (Some(_), Some(_)) => Some((f.meta()?, f.payload(body)?)),
                (None, None) => None,
                (Some(_), None) => {
                    return Err(DecodeError::MissingTlv {
                        frame: f.frame,
                        tlv: "PAYLOAD",
                    })
                }
                (None, Some(_)) => {
                    return Err(DecodeError::MissingTlv {
                        frame: f.frame,
                        tlv: "META",
                    })
                }
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
            code: code_of(f.u16(tlv::CODE)?),
            message: f.opt_string(tlv::MESSAGE, MAX_MESSAGE)?.unwrap_or_default(),
        },
        kind::PING => Frame::Ping {
            nonce: f.u64(tlv::NONCE)?,
        },
        kind::PONG => Frame::Pong {
            nonce: f.u64(tlv::NONCE)?,
        },
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

/// Decode a structural event payload made by [`encode_struct_event`].
pub fn decode_struct_event(buf: &[u8]) -> Result<StructEvent, DecodeError> {
    let Some(&version) = buf.first() else {
        return Err(DecodeError::Incomplete { have: 0, need: 1 });
    };
    if version != PROTOCOL_VERSION {
        return Err(DecodeError::UnsupportedVersion(version));
    }
    let allow = bit(tlv::EVENT) | bit(tlv::PATH) | bit(tlv::ROLE) | bit(tlv::SCHEMA);
    Fields::parse(buf, 1, "structural event", allow)?.event()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varint_bounds() {
        let mut p = 0;
        assert_eq!(
            read_varint(&[0xff, 0xff, 0xff, 0xff, 0x0f], &mut p),
            Ok(u32::MAX)
        );
        p = 0;
        assert_eq!(
            read_varint(&[0xff, 0xff, 0xff, 0xff, 0x1f], &mut p),
            Err(DecodeError::VarintOverflow { at: 0 })
        );
        p = 0;
        assert_eq!(
            read_varint(&[0x80, 0x80, 0x80, 0x80, 0x80, 0x01], &mut p),
            Err(DecodeError::VarintOverflow { at: 0 })
        );
        p = 0;
        assert_eq!(
            read_varint(&[0x81, 0x00], &mut p),
            Err(DecodeError::VarintNotCanonical { at: 0 })
        );
        p = 0;
        assert_eq!(
            read_varint(&[0x80], &mut p),
            Err(DecodeError::TruncatedTlv { at: 0 })
        );
    }

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
            payload.as_bytes().as_ptr()
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
