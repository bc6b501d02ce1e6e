//! Layer 2 (docs/serial.md section 2): packets to checked, COBS-encoded, 0x00-delimited frames
//! and back, with resynchronisation after garbage and a bound on what is collected.

use crate::cobs;
use crate::crc::{crc16, crc8};
use crate::error::FrameError;
use crate::frame::{kind, Packet, CDATA_MAX_BODY};

/// The largest decoded frame (packet + check).
pub const MAX_FRAME: usize = cobs::MAX_DECODED;

fn is_cdata(first: u8) -> bool {
    first & kind::CDATA != 0
}

/// Appends the frame of `packet` (its bytes) to `out`: an optional leading 0x00, COBS of
/// packet + check, the 0x00 delimiter.
pub fn encode_frame(packet: &[u8], lead_zero: bool, out: &mut Vec<u8>) {
    debug_assert!(!packet.is_empty());
    let mut f = [0u8; MAX_FRAME];
    let n = packet.len();
    f[..n].copy_from_slice(packet);
    let len = if is_cdata(packet[0]) {
        f[n] = crc8(packet);
        n + 1
    } else {
        f[n..n + 2].copy_from_slice(&crc16(packet).to_le_bytes());
        n + 2
    };
    if lead_zero {
        out.push(0);
    }
    cobs::encode(&f[..len], out);
    out.push(0);
}

/// Appends the frame of a packet to `out`.
pub fn encode_packet(p: &Packet<'_>, out: &mut Vec<u8>) {
    let mut b = Vec::with_capacity(MAX_FRAME);
    p.encode(&mut b);
    encode_frame(&b, p.leads_with_zero(), out);
}

/// Appends the frames of one message (body: the CDR after its 4-byte header) as a sender does
/// (section 3): CDATA when best effort, alias < 8 and at most 8 bytes; DATA when it fits a frame
/// of `max_frame` decoded bytes; else FRAGs. Returns the number of frames. The caller keeps
/// the body within 65535 bytes and 256 fragments.
pub fn encode_message(
    alias: u8,
    seq: u64,
    body: &[u8],
    reliable: bool,
    max_frame: usize,
    out: &mut Vec<u8>,
) -> usize {
    let seq8 = seq as u8;
    if !reliable && alias < 8 && body.len() <= CDATA_MAX_BODY {
        encode_packet(
            &Packet::CData {
                alias,
                seq: seq8 & 0x0F,
                body,
            },
            out,
        );
        return 1;
    }
    let max_packet = max_frame.min(MAX_FRAME) - 2;
    if body.len() + 3 <= max_packet {
        encode_packet(
            &Packet::Data {
                alias,
                seq: seq8,
                body,
            },
            out,
        );
        return 1;
    }
    let (mut off, mut index) = (0usize, 0u8);
    let mut frames = 0;
    while off < body.len() {
        let head = if index == 0 { 6 } else { 4 };
        let take = (body.len() - off).min(max_packet - head);
        let total = (index == 0).then_some(body.len() as u16);
        let bytes = &body[off..off + take];
        encode_packet(
            &Packet::Frag {
                alias,
                seq: seq8,
                index,
                total,
                bytes,
            },
            out,
        );
        off += take;
        index = index.wrapping_add(1);
        frames += 1;
    }
    frames
}

/// Checks a decoded frame and returns its packet (the frame without its check).
pub fn check_frame(frame: &[u8]) -> Result<&[u8], FrameError> {
    let first = *frame.first().ok_or(FrameError::TooShort)?;
    if is_cdata(first) {
        if frame.len() < 2 {
            return Err(FrameError::TooShort);
        }
        if frame.len() > 2 + CDATA_MAX_BODY {
            return Err(FrameError::TooLong);
        }
        let (p, c) = frame.split_at(frame.len() - 1);
        if crc8(p) != c[0] {
            return Err(FrameError::Check);
        }
        Ok(p)
    } else {
        if frame.len() < 3 {
            return Err(FrameError::TooShort);
        }
        let (p, c) = frame.split_at(frame.len() - 2);
        if crc16(p) != u16::from_le_bytes([c[0], c[1]]) {
            return Err(FrameError::Check);
        }
        Ok(p)
    }
}

/// Splits a byte stream into checked packets. Holds at most one encoded frame: bytes past the
/// maximum are dropped up to the next delimiter, so no input grows it.
#[derive(Debug)]
pub struct Deframer {
    collected: Vec<u8>,
    decoded: Vec<u8>,
    max_encoded: usize,
    skipping: bool,
}

impl Default for Deframer {
    fn default() -> Self {
        Self::new(MAX_FRAME)
    }
}

impl Deframer {
    /// `max_frame`: the largest decoded frame accepted (at most [`MAX_FRAME`]).
    pub fn new(max_frame: usize) -> Self {
        let max_encoded = max_frame.min(MAX_FRAME) + 1;
        Deframer {
            collected: Vec::with_capacity(max_encoded),
            decoded: Vec::with_capacity(max_encoded),
            max_encoded,
            skipping: false,
        }
    }

    /// Consumes `input` up to the end of the next frame and returns that frame's packet (or
    /// why it is not one); `None` when `input` ran out first (what it had is kept for the next
    /// call). Empty frames (two delimiters in a row) are skipped.
    pub fn next_packet(&mut self, input: &mut &[u8]) -> Option<Result<&[u8], FrameError>> {
        loop {
            let Some(end) = input.iter().position(|&b| b == 0) else {
                self.collect(input);
                *input = &[];
                return None;
            };
            self.collect(&input[..end]);
            *input = &input[end + 1..];
            if self.skipping {
                self.skipping = false;
                return Some(Err(FrameError::TooLong));
            }
            if self.collected.is_empty() {
                continue;
            }
            let ok = cobs::decode(&self.collected, &mut self.decoded).is_ok();
            self.collected.clear();
            if !ok {
                return Some(Err(FrameError::Cobs));
            }
            if self.decoded.len() > self.max_encoded - 1 {
                return Some(Err(FrameError::TooLong));
            }
            return Some(check_frame(&self.decoded));
        }
    }

    fn collect(&mut self, bytes: &[u8]) {
        if self.skipping {
            return;
        }
        if self.collected.len() + bytes.len() > self.max_encoded {
            self.collected.clear();
            self.skipping = true;
        } else {
            self.collected.extend_from_slice(bytes);
        }
    }

    /// Bytes of a frame collected so far (not yet ended by a delimiter).
    pub fn pending(&self) -> usize {
        self.collected.len()
    }

    /// Heap bytes held, for the memory bound of the fuzz test.
    pub fn heap_bytes(&self) -> usize {
        self.collected.capacity() + self.decoded.capacity()
    }
}
