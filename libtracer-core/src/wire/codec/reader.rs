//! The TLV reader: varints, the walk over a body's TLVs ([`Fields`]), and the typed reads of
//! their values. Every fault is a [`DecodeError`] naming the frame and the TLV.

use super::{tlv, META_LEN};
use crate::payload::{Meta, Payload};
use crate::wire::error::DecodeError;
use crate::wire::frame::{ErrorCode, Part, Role, SchemaInfo, ShmCaps, ShmRef, Tokens, MAX_TOKENS};
use crate::wire::policy::Window;

/// Read a LEB128 varint at `*pos`, advancing it. Bounded to 5 bytes and u32, shortest form only.
pub(super) fn read_varint(buf: &[u8], pos: &mut usize) -> Result<u32, DecodeError> {
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

/// Read a varint length at `*pos` and the range of that many bytes after it, advancing `pos`
/// past them: a TLV's value, or one part of a SCHEMA value. `tlv` names the TLV on an overrun.
fn read_sized(buf: &[u8], pos: &mut usize, tlv: u8) -> Result<(usize, usize), DecodeError> {
    let len = read_varint(buf, pos)? as usize;
    let left = buf.len() - *pos;
    if len > left {
        return Err(DecodeError::TlvOverrun {
            tlv,
            len: len as u64,
            left,
        });
    }
    let range = (*pos, *pos + len);
    *pos += len;
    Ok(range)
}

/// Slot indices of the known TLVs in [`Fields`].
const KNOWN: [(u8, &str); 25] = [
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
    (tlv::SEGMENT, "SEGMENT"),
    (tlv::SHM_REF, "SHM_REF"),
    (tlv::TOKENS, "TOKENS"),
    (tlv::SHM, "SHM"),
    (tlv::PERMISSIONS, "PERMISSIONS"),
    (tlv::DIRECTORY, "DIRECTORY"),
    (tlv::TAG, "TAG"),
    (tlv::WINDOW, "WINDOW"),
    (tlv::PART, "PART"),
];

fn slot(t: u8) -> Option<usize> {
    KNOWN.iter().position(|(k, _)| *k == t)
}

/// The bit of TLV `t` in an allowed set (0 for an unknown TLV).
pub(super) fn bit(t: u8) -> u32 {
    slot(t).map_or(0, |i| 1 << i)
}

pub(super) fn tlv_name(t: u8) -> &'static str {
    slot(t).map_or("unknown", |i| KNOWN[i].1)
}

/// The known TLVs of one frame body, as byte ranges into it.
pub(super) struct Fields<'a> {
    body: &'a [u8],
    frame: &'static str,
    at: [Option<(usize, usize)>; KNOWN.len()],
}

impl<'a> Fields<'a> {
    /// Walk `body[start..]` as TLVs, keeping those in `allow`.
    pub(super) fn parse(
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
            let range = read_sized(body, &mut pos, t)?;
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

    /// The error for a TLV this frame must carry and lacks.
    pub(super) fn missing(&self, t: u8) -> DecodeError {
        DecodeError::MissingTlv {
            frame: self.frame,
            tlv: tlv_name(t),
        }
    }
    /// The error for a TLV this frame carries and must not.
    pub(super) fn unexpected(&self, t: u8) -> DecodeError {
        DecodeError::UnexpectedTlv {
            frame: self.frame,
            tlv: tlv_name(t),
        }
    }
    pub(super) fn range(&self, t: u8) -> Option<(usize, usize)> {
        self.at[slot(t).expect("known TLV")]
    }
    fn opt(&self, t: u8) -> Option<&'a [u8]> {
        self.range(t).map(|(a, b)| &self.body[a..b])
    }
    fn req(&self, t: u8) -> Result<&'a [u8], DecodeError> {
        self.opt(t).ok_or_else(|| self.missing(t))
    }
    fn fixed<const N: usize>(&self, t: u8) -> Result<[u8; N], DecodeError> {
        let v = self.req(t)?;
        v.try_into().map_err(|_| DecodeError::BadLength {
            tlv: tlv_name(t),
            len: v.len(),
            expected: N,
        })
    }
    pub(super) fn u8(&self, t: u8) -> Result<u8, DecodeError> {
        Ok(self.fixed::<1>(t)?[0])
    }
    pub(super) fn u16(&self, t: u8) -> Result<u16, DecodeError> {
        Ok(u16::from_le_bytes(self.fixed(t)?))
    }
    pub(super) fn u32(&self, t: u8) -> Result<u32, DecodeError> {
        Ok(u32::from_le_bytes(self.fixed(t)?))
    }
    pub(super) fn u64(&self, t: u8) -> Result<u64, DecodeError> {
        Ok(u64::from_le_bytes(self.fixed(t)?))
    }
    pub(super) fn string(&self, t: u8, max: usize) -> Result<String, DecodeError> {
        str_of(self.req(t)?, tlv_name(t), max)
    }
    pub(super) fn opt_string(&self, t: u8, max: usize) -> Result<Option<String>, DecodeError> {
        self.opt(t).map(|v| str_of(v, tlv_name(t), max)).transpose()
    }
    /// An optional opaque value of at most `max` bytes (copied: HELLO only, once per link).
    pub(super) fn opt_bytes(&self, t: u8, max: usize) -> Result<Option<bytes::Bytes>, DecodeError> {
        let Some((a, b)) = self.range(t) else {
            return Ok(None);
        };
        if b - a > max {
            return Err(DecodeError::StringTooLong {
                field: tlv_name(t),
                len: b - a,
                max,
            });
        }
        Ok(Some(bytes::Bytes::copy_from_slice(&self.body[a..b])))
    }
    pub(super) fn meta(&self) -> Result<Meta, DecodeError> {
        let v: [u8; META_LEN] = self.fixed(tlv::META)?;
        let mut writer = [0u8; 16];
        writer.copy_from_slice(&v[16..32]);
        Ok(Meta {
            source_timestamp_ns: i64::from_le_bytes(v[0..8].try_into().expect("8 bytes")),
            sequence: u64::from_le_bytes(v[8..16].try_into().expect("8 bytes")),
            writer,
        })
    }
    pub(super) fn role(&self) -> Result<Role, DecodeError> {
        let v = self.u8(tlv::ROLE)?;
        role_of(v).ok_or(DecodeError::BadValue {
            field: "ROLE",
            value: u64::from(v),
        })
    }
    pub(super) fn code(&self) -> Result<ErrorCode, DecodeError> {
        Ok(code_of(self.u16(tlv::CODE)?))
    }
    pub(super) fn schema(&self) -> Result<Option<SchemaInfo>, DecodeError> {
        self.opt(tlv::SCHEMA).map(schema_of).transpose()
    }
    /// HELLO's optional DIRECTORY port: exactly 2 bytes, never 0.
    pub(super) fn directory(&self) -> Result<Option<u16>, DecodeError> {
        if self.opt(tlv::DIRECTORY).is_none() {
            return Ok(None);
        }
        match self.u16(tlv::DIRECTORY)? {
            0 => Err(DecodeError::BadValue {
                field: "DIRECTORY",
                value: 0,
            }),
            port => Ok(Some(port)),
        }
    }
    /// WINDOW: u32 messages, u64 bytes.
    pub(super) fn window(&self) -> Result<Window, DecodeError> {
        let v: [u8; 12] = self.fixed(tlv::WINDOW)?;
        Ok(Window {
            messages: u32::from_le_bytes(v[0..4].try_into().expect("4 bytes")),
            bytes: u64::from_le_bytes(v[4..12].try_into().expect("8 bytes")),
        })
    }
    /// DELIVERY_PART's place: index below count, count at least 2 (one part is a DELIVERY).
    pub(super) fn part(&self) -> Result<Part, DecodeError> {
        let v: [u8; 16] = self.fixed(tlv::PART)?;
        let p = Part {
            index: u32::from_le_bytes(v[0..4].try_into().expect("4 bytes")),
            count: u32::from_le_bytes(v[4..8].try_into().expect("4 bytes")),
            total: u64::from_le_bytes(v[8..16].try_into().expect("8 bytes")),
        };
        if p.count < 2 || p.index >= p.count {
            return Err(DecodeError::BadValue {
                field: "PART",
                value: u64::from(p.index),
            });
        }
        Ok(p)
    }
    pub(super) fn opt_window(&self) -> Result<Option<Window>, DecodeError> {
        match self.opt(tlv::WINDOW) {
            None => Ok(None),
            Some(_) => self.window().map(Some),
        }
    }
    /// HELLO's optional SHM flags: bits 0 and 1 (others are ignored); absent is 0.
    pub(super) fn shm_caps(&self) -> Result<ShmCaps, DecodeError> {
        match self.opt(tlv::SHM) {
            None => Ok(ShmCaps::NONE),
            Some(_) => Ok(ShmCaps::from_bits(self.u8(tlv::SHM)?)),
        }
    }
    /// SEGMENT: id and size.
    pub(super) fn segment(&self) -> Result<(u32, u64), DecodeError> {
        let v: [u8; 12] = self.fixed(tlv::SEGMENT)?;
        Ok((
            u32::from_le_bytes(v[0..4].try_into().expect("4 bytes")),
            u64::from_le_bytes(v[4..12].try_into().expect("8 bytes")),
        ))
    }
    pub(super) fn shm_ref(&self) -> Result<ShmRef, DecodeError> {
        let v: [u8; 24] = self.fixed(tlv::SHM_REF)?;
        Ok(ShmRef {
            segment: u32::from_le_bytes(v[0..4].try_into().expect("4 bytes")),
            offset: u64::from_le_bytes(v[4..12].try_into().expect("8 bytes")),
            len: u32::from_le_bytes(v[12..16].try_into().expect("4 bytes")),
            token: u64::from_le_bytes(v[16..24].try_into().expect("8 bytes")),
        })
    }
    /// TOKENS: 1..=MAX_TOKENS u64s.
    pub(super) fn tokens(&self) -> Result<Tokens, DecodeError> {
        let v = self.req(tlv::TOKENS)?;
        if v.is_empty() || v.len() % 8 != 0 || v.len() > 8 * MAX_TOKENS {
            return Err(DecodeError::BadLength {
                tlv: "TOKENS",
                len: v.len(),
                expected: 8,
            });
        }
        let token = |c: &[u8]| u64::from_le_bytes(c.try_into().expect("8 bytes"));
        if v.len() == 8 {
            // The common RELEASE: one token, no allocation.
            return Ok(Tokens::one(token(v)));
        }
        Ok(v.chunks_exact(8).map(token).collect::<Vec<u64>>().into())
    }
    /// The PAYLOAD as a slice of `body` (the payload these fields were parsed from): no copy.
    pub(super) fn payload(&self, body: &Payload) -> Result<Payload, DecodeError> {
        let (a, b) = self
            .range(tlv::PAYLOAD)
            .ok_or_else(|| self.missing(tlv::PAYLOAD))?;
        Ok(body.slice(a..b))
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
        let (a, b) = read_sized(v, &mut pos, tlv::SCHEMA)?;
        *part = str_of(&v[a..b], field, usize::MAX)?;
    }
    let mut layout = String::new();
    if pos < v.len() {
        let (a, b) = read_sized(v, &mut pos, tlv::SCHEMA)?;
        layout = str_of(&v[a..b], "SCHEMA.layout", usize::MAX)?;
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
        layout,
    })
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
}
