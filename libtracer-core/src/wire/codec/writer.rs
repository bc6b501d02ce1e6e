//! The TLV writer: varints, fixed-width integers, bounded strings, META and SCHEMA values.

use super::{tlv, META_LEN};
use crate::payload::Meta;
use crate::wire::error::EncodeError;
use crate::wire::frame::{Part, SchemaInfo};
use crate::wire::policy::Window;

/// A growing frame (or event payload) buffer.
pub(super) struct Enc {
    pub(super) buf: Vec<u8>,
}

impl Enc {
    pub(super) fn with_capacity(n: usize) -> Self {
        Enc {
            buf: Vec::with_capacity(n),
        }
    }
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
    /// `value` after its varint length: the shape of a TLV's value and of each SCHEMA part.
    fn sized(&mut self, value: &[u8]) {
        self.varint(value.len() as u64);
        self.buf.extend_from_slice(value);
    }
    /// One TLV, unchecked.
    pub(super) fn tlv(&mut self, t: u8, value: &[u8]) {
        self.buf.push(t);
        self.sized(value);
    }
    pub(super) fn u8(&mut self, t: u8, v: u8) {
        self.tlv(t, &[v]);
    }
    pub(super) fn u16(&mut self, t: u8, v: u16) {
        self.tlv(t, &v.to_le_bytes());
    }
    pub(super) fn u32(&mut self, t: u8, v: u32) {
        self.tlv(t, &v.to_le_bytes());
    }
    pub(super) fn u64(&mut self, t: u8, v: u64) {
        self.tlv(t, &v.to_le_bytes());
    }
    /// A string TLV, refused when it is longer than `max` (named `field` in the error).
    pub(super) fn str(
        &mut self,
        t: u8,
        field: &'static str,
        s: &str,
        max: usize,
    ) -> Result<(), EncodeError> {
        self.bytes(t, field, s.as_bytes(), max)
    }
    /// A bytes TLV, refused when it is longer than `max` (named `field` in the error).
    pub(super) fn bytes(
        &mut self,
        t: u8,
        field: &'static str,
        v: &[u8],
        max: usize,
    ) -> Result<(), EncodeError> {
        if v.len() > max {
            return Err(EncodeError::StringTooLong {
                field,
                len: v.len(),
                max,
            });
        }
        self.tlv(t, v);
        Ok(())
    }
    pub(super) fn meta(&mut self, m: &Meta) {
        let mut v = [0u8; META_LEN];
        v[0..8].copy_from_slice(&m.source_timestamp_ns.to_le_bytes());
        v[8..16].copy_from_slice(&m.sequence.to_le_bytes());
        v[16..32].copy_from_slice(&m.writer);
        self.tlv(tlv::META, &v);
    }
    pub(super) fn schema(&mut self, s: &SchemaInfo) {
        let mut inner = Enc::with_capacity(s.definition.len() + 64);
        for part in [&s.type_name, &s.encoding, &s.type_hash, &s.definition] {
            inner.sized(part.as_bytes());
        }
        if !s.layout.is_empty() {
            inner.sized(s.layout.as_bytes());
        }
        self.tlv(tlv::SCHEMA, &inner.buf);
    }
    /// WINDOW: u32 messages, u64 bytes.
    pub(super) fn window(&mut self, w: &Window) {
        let mut v = [0u8; 12];
        v[0..4].copy_from_slice(&w.messages.to_le_bytes());
        v[4..12].copy_from_slice(&w.bytes.to_le_bytes());
        self.tlv(tlv::WINDOW, &v);
    }
    pub(super) fn part(&mut self, p: &Part) {
        let mut v = [0u8; 16];
        v[0..4].copy_from_slice(&p.index.to_le_bytes());
        v[4..8].copy_from_slice(&p.count.to_le_bytes());
        v[8..16].copy_from_slice(&p.total.to_le_bytes());
        self.tlv(tlv::PART, &v);
    }
    /// A TLV whose value is `values`, each u64 little endian (written in place, no buffer).
    pub(super) fn tokens(&mut self, t: u8, values: &[u64]) {
        self.buf.push(t);
        self.varint((values.len() * 8) as u64);
        for v in values {
            self.buf.extend_from_slice(&v.to_le_bytes());
        }
    }
    /// The PAYLOAD TLV's type and length; the value itself goes out as a separate slice.
    pub(super) fn payload_header(&mut self, len: usize) {
        self.buf.push(tlv::PAYLOAD);
        self.varint(len as u64);
    }
}
