//! Byte layouts of every record (spec 1.3, 2.3-2.10): encoders append to a `Vec<u8>`
//! (`encode`), decoders read a record's content and report errors with the file offset they
//! happened at (`decode`), and `RecordIter` walks framed records in a buffer.

mod decode;
mod encode;

pub use decode::*;
pub use encode::*;

use crate::error::{McapError, Result};

/// One framed record inside a byte slice (a decompressed chunk or a region read at once).
#[derive(Debug, Clone, Copy)]
pub struct RawRecord<'a> {
    pub opcode: u8,
    /// Offset of the opcode byte, relative to the slice start.
    pub offset: usize,
    pub content: &'a [u8],
}

/// Iterates records framed in `buf`; `base` is the file offset of `buf[0]` (for error
/// messages; for chunk contents it is 0: offsets inside the uncompressed records).
pub struct RecordIter<'a> {
    buf: &'a [u8],
    pos: usize,
    base: u64,
    failed: bool,
}

impl<'a> RecordIter<'a> {
    pub fn new(buf: &'a [u8], base: u64) -> Self {
        RecordIter {
            buf,
            pos: 0,
            base,
            failed: false,
        }
    }
    pub fn at(buf: &'a [u8], pos: usize, base: u64) -> Self {
        RecordIter {
            buf,
            pos,
            base,
            failed: false,
        }
    }
    pub fn position(&self) -> usize {
        self.pos
    }
}

impl<'a> Iterator for RecordIter<'a> {
    type Item = Result<RawRecord<'a>>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.pos >= self.buf.len() {
            return None;
        }
        let left = self.buf.len() - self.pos;
        let at = self.base + self.pos as u64;
        if left < 9 {
            self.failed = true;
            return Some(Err(McapError::Truncated {
                offset: at,
                needed: 9,
                available: left as u64,
            }));
        }
        let opcode = self.buf[self.pos];
        let len = u64::from_le_bytes(self.buf[self.pos + 1..self.pos + 9].try_into().expect("8"));
        if len > (left - 9) as u64 {
            self.failed = true;
            return Some(Err(McapError::Truncated {
                offset: at,
                needed: len.saturating_add(9),
                available: left as u64,
            }));
        }
        let start = self.pos + 9;
        let end = start + len as usize;
        let rec = RawRecord {
            opcode,
            offset: self.pos,
            content: &self.buf[start..end],
        };
        self.pos = end;
        Some(Ok(rec))
    }
}
