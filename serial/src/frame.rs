//! The packets of layer 3 (docs/serial.md section 3): what a frame says, without its check or
//! its COBS. Decoding borrows from the frame, so a packet costs no allocation.

use crate::error::DecodeError;

/// Packet kinds (first byte); CDATA is any first byte with bit 7 set.
pub mod kind {
    pub const HELLO: u8 = 0x01;
    pub const DECLARE: u8 = 0x02;
    pub const READY: u8 = 0x03;
    pub const SYNC: u8 = 0x04;
    pub const HEARTBEAT: u8 = 0x05;
    pub const ACK: u8 = 0x06;
    pub const NACK: u8 = 0x07;
    pub const DATA: u8 = 0x10;
    pub const FRAG: u8 = 0x11;
    pub const CDATA: u8 = 0x80;
}

/// The only protocol version.
pub const VERSION: u8 = 1;
/// `encap` of a DECLARE: the elided CDR header is `00 01 00 00`.
pub const ENCAP_CDR_LE: u8 = 1;
/// The elided CDR encapsulation header of `ENCAP_CDR_LE`.
pub const CDR_HEADER: [u8; 4] = [0x00, 0x01, 0x00, 0x00];
/// The largest packet: a 254-byte frame less a CRC-16.
pub const MAX_PACKET: usize = 252;
/// The largest CDATA body.
pub const CDATA_MAX_BODY: usize = 8;
/// DECLARE flags.
pub const FLAG_SUBSCRIPTION: u8 = 0x01;
pub const FLAG_RELIABLE: u8 = 0x02;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hello<'a> {
    pub session: u32,
    pub uptime_ms: u32,
    pub max_frame: u8,
    /// No READY since this boot.
    pub boot: bool,
    pub n_endpoints: u8,
    pub max_msg: u16,
    pub namespace: &'a str,
    pub name: &'a str,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Declare<'a> {
    pub alias: u8,
    pub flags: u8,
    pub depth: u8,
    pub encap: u8,
    pub seq: u32,
    pub topic: &'a str,
    pub type_name: &'a str,
    pub type_hash: &'a str,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Packet<'a> {
    Hello(Hello<'a>),
    Declare(Declare<'a>),
    Ready {
        session: u32,
        n_endpoints: u8,
    },
    Sync,
    Heartbeat,
    Ack {
        alias: u8,
        seq: u8,
    },
    Nack {
        alias: u8,
        seq: u8,
    },
    Data {
        alias: u8,
        seq: u8,
        body: &'a [u8],
    },
    /// `total` is present on fragment 0 only.
    Frag {
        alias: u8,
        seq: u8,
        index: u8,
        total: Option<u16>,
        bytes: &'a [u8],
    },
    /// Alias 0..7, the low 4 bits of the sequence, at most 8 body bytes.
    CData {
        alias: u8,
        seq: u8,
        body: &'a [u8],
    },
}

/// Reads fields front to back; every read checks the length.
struct Reader<'a> {
    b: &'a [u8],
    kind: u8,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        if self.b.len() < n {
            return Err(DecodeError::Truncated { kind: self.kind });
        }
        let (head, rest) = self.b.split_at(n);
        self.b = rest;
        Ok(head)
    }
    fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> Result<u16, DecodeError> {
        let b = self.take(2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }
    fn u32(&mut self) -> Result<u32, DecodeError> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn str(&mut self) -> Result<&'a str, DecodeError> {
        let n = self.u8()? as usize;
        std::str::from_utf8(self.take(n)?).map_err(|_| DecodeError::BadUtf8 { kind: self.kind })
    }
    fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.b)
    }
    fn end(&self) -> Result<(), DecodeError> {
        if self.b.is_empty() {
            Ok(())
        } else {
            Err(DecodeError::TrailingBytes { kind: self.kind })
        }
    }
}

impl<'a> Packet<'a> {
    /// Decodes one packet (a frame without its check).
    pub fn decode(p: &'a [u8]) -> Result<Packet<'a>, DecodeError> {
        let (&k, rest) = p.split_first().ok_or(DecodeError::Empty)?;
        let mut r = Reader { b: rest, kind: k };
        if k & kind::CDATA != 0 {
            let body = r.rest();
            if body.len() > CDATA_MAX_BODY {
                return Err(DecodeError::TooLong { kind: k });
            }
            return Ok(Packet::CData {
                alias: (k >> 4) & 7,
                seq: k & 0x0F,
                body,
            });
        }
        let packet = match k {
            kind::HELLO => {
                let version = r.u8()?;
                if version != VERSION {
                    return Err(DecodeError::Version(version));
                }
                Packet::Hello(Hello {
                    session: r.u32()?,
                    uptime_ms: r.u32()?,
                    max_frame: r.u8()?,
                    boot: r.u8()? & 1 != 0,
                    n_endpoints: r.u8()?,
                    max_msg: r.u16()?,
                    namespace: r.str()?,
                    name: r.str()?,
                })
            }
            kind::DECLARE => Packet::Declare(Declare {
                alias: r.u8()?,
                flags: r.u8()?,
                depth: r.u8()?,
                encap: r.u8()?,
                seq: r.u32()?,
                topic: r.str()?,
                type_name: r.str()?,
                type_hash: r.str()?,
            }),
            kind::READY => Packet::Ready {
                session: r.u32()?,
                n_endpoints: r.u8()?,
            },
            kind::SYNC => Packet::Sync,
            kind::HEARTBEAT => Packet::Heartbeat,
            kind::ACK => Packet::Ack {
                alias: r.u8()?,
                seq: r.u8()?,
            },
            kind::NACK => Packet::Nack {
                alias: r.u8()?,
                seq: r.u8()?,
            },
            kind::DATA => Packet::Data {
                alias: r.u8()?,
                seq: r.u8()?,
                body: r.rest(),
            },
            kind::FRAG => {
                let (alias, seq, index) = (r.u8()?, r.u8()?, r.u8()?);
                let total = if index == 0 { Some(r.u16()?) } else { None };
                let bytes = r.rest();
                if bytes.is_empty() {
                    return Err(DecodeError::Truncated { kind: k });
                }
                Packet::Frag {
                    alias,
                    seq,
                    index,
                    total,
                    bytes,
                }
            }
            other => return Err(DecodeError::UnknownKind(other)),
        };
        r.end()?;
        Ok(packet)
    }

    /// Appends the packet's bytes to `out`. Strings longer than 255 bytes and bodies that
    /// break the packet's bounds are the caller's error (debug-asserted); the session never
    /// builds them.
    pub fn encode(&self, out: &mut Vec<u8>) {
        fn s(out: &mut Vec<u8>, v: &str) {
            debug_assert!(v.len() <= 255);
            out.push(v.len() as u8);
            out.extend_from_slice(v.as_bytes());
        }
        match self {
            Packet::Hello(h) => {
                out.extend_from_slice(&[kind::HELLO, VERSION]);
                out.extend_from_slice(&h.session.to_le_bytes());
                out.extend_from_slice(&h.uptime_ms.to_le_bytes());
                out.extend_from_slice(&[h.max_frame, u8::from(h.boot), h.n_endpoints]);
                out.extend_from_slice(&h.max_msg.to_le_bytes());
                s(out, h.namespace);
                s(out, h.name);
            }
            Packet::Declare(d) => {
                out.extend_from_slice(&[kind::DECLARE, d.alias, d.flags, d.depth, d.encap]);
                out.extend_from_slice(&d.seq.to_le_bytes());
                s(out, d.topic);
                s(out, d.type_name);
                s(out, d.type_hash);
            }
            Packet::Ready {
                session,
                n_endpoints,
            } => {
                out.push(kind::READY);
                out.extend_from_slice(&session.to_le_bytes());
                out.push(*n_endpoints);
            }
            Packet::Sync => out.push(kind::SYNC),
            Packet::Heartbeat => out.push(kind::HEARTBEAT),
            Packet::Ack { alias, seq } => out.extend_from_slice(&[kind::ACK, *alias, *seq]),
            Packet::Nack { alias, seq } => out.extend_from_slice(&[kind::NACK, *alias, *seq]),
            Packet::Data { alias, seq, body } => {
                out.extend_from_slice(&[kind::DATA, *alias, *seq]);
                out.extend_from_slice(body);
            }
            Packet::Frag {
                alias,
                seq,
                index,
                total,
                bytes,
            } => {
                out.extend_from_slice(&[kind::FRAG, *alias, *seq, *index]);
                if let Some(t) = total {
                    out.extend_from_slice(&t.to_le_bytes());
                }
                out.extend_from_slice(bytes);
            }
            Packet::CData { alias, seq, body } => {
                debug_assert!(*alias < 8 && body.len() <= CDATA_MAX_BODY);
                out.push(kind::CDATA | (alias & 7) << 4 | (seq & 0x0F));
                out.extend_from_slice(body);
            }
        }
    }

    /// Frames that follow a silence start with an extra 0x00 (docs/serial.md section 2).
    pub fn leads_with_zero(&self) -> bool {
        matches!(self, Packet::Hello(_) | Packet::Sync | Packet::Heartbeat)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn samples() -> Vec<Packet<'static>> {
        vec![
            Packet::Hello(Hello {
                session: 0xDEAD_BEEF,
                uptime_ms: 1234,
                max_frame: 96,
                boot: true,
                n_endpoints: 3,
                max_msg: 64,
                namespace: "/",
                name: "mcu",
            }),
            Packet::Declare(Declare {
                alias: 2,
                flags: FLAG_SUBSCRIPTION | FLAG_RELIABLE,
                depth: 10,
                encap: ENCAP_CDR_LE,
                seq: 77,
                topic: "/mcu/led",
                type_name: "std_msgs/msg/Int32",
                type_hash: "RIHS01_00",
            }),
            Packet::Ready {
                session: 5,
                n_endpoints: 3,
            },
            Packet::Sync,
            Packet::Heartbeat,
            Packet::Ack { alias: 1, seq: 255 },
            Packet::Nack { alias: 0, seq: 3 },
            Packet::Data {
                alias: 9,
                seq: 200,
                body: &[1, 0, 0, 0],
            },
            Packet::Data {
                alias: 9,
                seq: 200,
                body: &[],
            },
            Packet::Frag {
                alias: 1,
                seq: 2,
                index: 0,
                total: Some(1000),
                bytes: &[0; 10],
            },
            Packet::Frag {
                alias: 1,
                seq: 2,
                index: 3,
                total: None,
                bytes: &[7],
            },
            Packet::CData {
                alias: 7,
                seq: 15,
                body: &[1, 2, 3, 4],
            },
            Packet::CData {
                alias: 0,
                seq: 0,
                body: &[],
            },
        ]
    }

    #[test]
    fn round_trip() {
        for p in samples() {
            let mut b = Vec::new();
            p.encode(&mut b);
            assert_eq!(Packet::decode(&b).unwrap(), p, "{b:?}");
            // Every strict prefix of a fixed-layout packet is refused, never misread.
            if !matches!(
                p,
                Packet::Data { .. } | Packet::CData { .. } | Packet::Frag { .. }
            ) {
                for cut in 0..b.len() {
                    assert!(Packet::decode(&b[..cut]).is_err(), "{p:?} cut at {cut}");
                }
                let mut long = b.clone();
                long.push(0);
                assert!(Packet::decode(&long).is_err());
            }
        }
    }

    #[test]
    fn refuses_unknown_and_bad() {
        assert_eq!(Packet::decode(&[0x42]), Err(DecodeError::UnknownKind(0x42)));
        assert_eq!(Packet::decode(&[]), Err(DecodeError::Empty));
        assert!(Packet::decode(&[kind::HELLO, 2]).is_err());
        assert!(Packet::decode(&[0x80, 1, 2, 3, 4, 5, 6, 7, 8, 9]).is_err());
        assert!(Packet::decode(&[kind::FRAG, 1, 1, 1]).is_err());
        let bad_utf8 = [kind::DECLARE, 0, 0, 1, 1, 0, 0, 0, 0, 1, 0xFF, 0, 0];
        assert_eq!(
            Packet::decode(&bad_utf8),
            Err(DecodeError::BadUtf8 {
                kind: kind::DECLARE
            })
        );
    }
}
