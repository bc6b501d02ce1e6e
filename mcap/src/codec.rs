//! Byte layouts of every record (spec 1.3, 2.3-2.10): encoders append to a `Vec<u8>`, decoders
//! read a record's content and report errors with the file offset they happened at.

use std::collections::BTreeMap;

use crate::error::{McapError, Result};
use crate::records::*;

/// Appends `opcode, length, content` where `f` writes the content.
pub fn put_record(out: &mut Vec<u8>, opcode: u8, f: impl FnOnce(&mut Vec<u8>)) {
    out.push(opcode);
    let len_at = out.len();
    out.extend_from_slice(&[0; 8]);
    let start = out.len();
    f(out);
    let len = (out.len() - start) as u64;
    out[len_at..start].copy_from_slice(&len.to_le_bytes());
}

pub fn put_u16(out: &mut Vec<u8>, v: u16) {
    out.extend_from_slice(&v.to_le_bytes());
}
pub fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}
pub fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}
pub fn put_str(out: &mut Vec<u8>, s: &str) {
    put_u32(out, s.len() as u32);
    out.extend_from_slice(s.as_bytes());
}
pub fn put_bytes32(out: &mut Vec<u8>, b: &[u8]) {
    put_u32(out, b.len() as u32);
    out.extend_from_slice(b);
}
fn put_str_map(out: &mut Vec<u8>, m: &BTreeMap<String, String>) {
    let mut body = Vec::new();
    for (k, v) in m {
        put_str(&mut body, k);
        put_str(&mut body, v);
    }
    put_bytes32(out, &body);
}
fn put_u16_u64_map(out: &mut Vec<u8>, m: &BTreeMap<u16, u64>) {
    put_u32(out, (m.len() * 10) as u32);
    for (k, v) in m {
        put_u16(out, *k);
        put_u64(out, *v);
    }
}
fn put_pairs(out: &mut Vec<u8>, pairs: &[(u64, u64)]) {
    put_u32(out, (pairs.len() * 16) as u32);
    for (a, b) in pairs {
        put_u64(out, *a);
        put_u64(out, *b);
    }
}

pub fn header(out: &mut Vec<u8>, h: &Header) {
    put_record(out, op::HEADER, |o| {
        put_str(o, &h.profile);
        put_str(o, &h.library);
    })
}
/// The footer content only (the writer computes the CRC over its first bytes).
pub fn footer(out: &mut Vec<u8>, f: &Footer) {
    put_record(out, op::FOOTER, |o| {
        put_u64(o, f.summary_start);
        put_u64(o, f.summary_offset_start);
        put_u32(o, f.summary_crc);
    })
}
pub fn schema(out: &mut Vec<u8>, s: &Schema) {
    put_record(out, op::SCHEMA, |o| {
        put_u16(o, s.id);
        put_str(o, &s.name);
        put_str(o, &s.encoding);
        put_bytes32(o, &s.data);
    })
}
pub fn channel(out: &mut Vec<u8>, c: &Channel) {
    put_record(out, op::CHANNEL, |o| {
        put_u16(o, c.id);
        put_u16(o, c.schema_id);
        put_str(o, &c.topic);
        put_str(o, &c.message_encoding);
        put_str_map(o, &c.metadata);
    })
}
pub fn message(out: &mut Vec<u8>, m: &MessageHeader, data: &[u8]) {
    put_record(out, op::MESSAGE, |o| {
        put_u16(o, m.channel_id);
        put_u32(o, m.sequence);
        put_u64(o, m.log_time);
        put_u64(o, m.publish_time);
        o.extend_from_slice(data);
    })
}
pub fn chunk(out: &mut Vec<u8>, c: &ChunkHeader, records: &[u8]) {
    put_record(out, op::CHUNK, |o| {
        put_u64(o, c.message_start_time);
        put_u64(o, c.message_end_time);
        put_u64(o, c.uncompressed_size);
        put_u32(o, c.uncompressed_crc);
        put_str(o, &c.compression);
        put_u64(o, records.len() as u64);
        o.extend_from_slice(records);
    })
}
pub fn message_index(out: &mut Vec<u8>, m: &MessageIndex) {
    put_record(out, op::MESSAGE_INDEX, |o| {
        put_u16(o, m.channel_id);
        put_pairs(o, &m.records);
    })
}
pub fn chunk_index(out: &mut Vec<u8>, c: &ChunkIndex) {
    put_record(out, op::CHUNK_INDEX, |o| {
        put_u64(o, c.message_start_time);
        put_u64(o, c.message_end_time);
        put_u64(o, c.chunk_start_offset);
        put_u64(o, c.chunk_length);
        put_u16_u64_map(o, &c.message_index_offsets);
        put_u64(o, c.message_index_length);
        put_str(o, &c.compression);
        put_u64(o, c.compressed_size);
        put_u64(o, c.uncompressed_size);
    })
}
/// Attachment with its CRC over log_time..data (spec 1.5).
pub fn attachment(out: &mut Vec<u8>, a: &Attachment) {
    put_record(out, op::ATTACHMENT, |o| {
        let start = o.len();
        put_u64(o, a.log_time);
        put_u64(o, a.create_time);
        put_str(o, &a.name);
        put_str(o, &a.media_type);
        put_u64(o, a.data.len() as u64);
        o.extend_from_slice(&a.data);
        let crc = crc32fast::hash(&o[start..]);
        put_u32(o, crc);
    })
}
pub fn attachment_index(out: &mut Vec<u8>, a: &AttachmentIndex) {
    put_record(out, op::ATTACHMENT_INDEX, |o| {
        put_u64(o, a.offset);
        put_u64(o, a.length);
        put_u64(o, a.log_time);
        put_u64(o, a.create_time);
        put_u64(o, a.data_size);
        put_str(o, &a.name);
        put_str(o, &a.media_type);
    })
}
pub fn statistics(out: &mut Vec<u8>, s: &Statistics) {
    put_record(out, op::STATISTICS, |o| {
        put_u64(o, s.message_count);
        put_u16(o, s.schema_count);
        put_u32(o, s.channel_count);
        put_u32(o, s.attachment_count);
        put_u32(o, s.metadata_count);
        put_u32(o, s.chunk_count);
        put_u64(o, s.message_start_time);
        put_u64(o, s.message_end_time);
        put_u16_u64_map(o, &s.channel_message_counts);
        if let Some(bounds) = &s.field_value_bounds {
            put_u32(o, (bounds.len() * 18) as u32);
            for (id, (lo, hi)) in bounds {
                put_u16(o, *id);
                put_u64(o, *lo);
                put_u64(o, *hi);
            }
        }
    })
}
pub fn metadata(out: &mut Vec<u8>, m: &Metadata) {
    put_record(out, op::METADATA, |o| {
        put_str(o, &m.name);
        put_str_map(o, &m.metadata);
    })
}
pub fn metadata_index(out: &mut Vec<u8>, m: &MetadataIndex) {
    put_record(out, op::METADATA_INDEX, |o| {
        put_u64(o, m.offset);
        put_u64(o, m.length);
        put_str(o, &m.name);
    })
}
pub fn summary_offset(out: &mut Vec<u8>, s: &SummaryOffset) {
    put_record(out, op::SUMMARY_OFFSET, |o| {
        o.push(s.group_opcode);
        put_u64(o, s.group_start);
        put_u64(o, s.group_length);
    })
}
pub fn data_end(out: &mut Vec<u8>, d: &DataEnd) {
    put_record(out, op::DATA_END, |o| put_u32(o, d.data_section_crc))
}
pub fn field(out: &mut Vec<u8>, f: &Field) {
    put_record(out, ext_op::FIELD, |o| {
        put_u16(o, f.id);
        put_str(o, &f.name);
        put_str(o, &f.encoding);
        o.push(f.length);
        if let Some(flags) = f.flags {
            o.push(flags);
        }
    })
}
pub fn message_fields(out: &mut Vec<u8>, m: &MessageFields) {
    put_record(out, ext_op::MESSAGE_FIELDS, |o| {
        put_u16(o, m.channel_id);
        put_bytes32(o, &m.entries);
    })
}
pub fn field_index(out: &mut Vec<u8>, f: &FieldIndex) {
    put_record(out, ext_op::FIELD_INDEX, |o| {
        put_u16(o, f.channel_id);
        put_u16(o, f.field_id);
        put_pairs(o, &f.records);
    })
}
pub fn field_chunk_index(out: &mut Vec<u8>, f: &FieldChunkIndex) {
    put_record(out, ext_op::FIELD_CHUNK_INDEX, |o| {
        put_u16(o, f.field_id);
        put_u64(o, f.chunk_start_offset);
        put_u64(o, f.min_value);
        put_u64(o, f.max_value);
        put_u16_u64_map(o, &f.message_index_offsets);
        put_u64(o, f.message_index_length);
    })
}
pub fn attachment_fields(out: &mut Vec<u8>, a: &AttachmentFields) {
    put_record(out, ext_op::ATTACHMENT_FIELDS, |o| {
        put_bytes32(o, &a.entries)
    })
}

/// A cursor over one record's content; `base` is the file offset of `buf[0]` for errors.
pub struct Dec<'a> {
    buf: &'a [u8],
    pos: usize,
    base: u64,
    what: &'static str,
}

impl<'a> Dec<'a> {
    pub fn new(buf: &'a [u8], base: u64, what: &'static str) -> Self {
        Dec {
            buf,
            pos: 0,
            base,
            what,
        }
    }
    pub fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }
    pub fn rest(&mut self) -> &'a [u8] {
        let r = &self.buf[self.pos..];
        self.pos = self.buf.len();
        r
    }
    pub fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if self.remaining() < n {
            return Err(McapError::Corrupt {
                offset: self.offset(),
                reason: format!(
                    "{}: needs {n} bytes, {} left in the record",
                    self.what,
                    self.remaining()
                ),
            });
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
    pub fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }
    pub fn u16(&mut self) -> Result<u16> {
        Ok(u16::from_le_bytes(
            self.take(2)?.try_into().expect("2 bytes"),
        ))
    }
    pub fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(
            self.take(4)?.try_into().expect("4 bytes"),
        ))
    }
    pub fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }
    pub fn bytes32(&mut self) -> Result<&'a [u8]> {
        let n = self.u32()? as usize;
        self.take(n)
    }
    pub fn bytes64(&mut self) -> Result<&'a [u8]> {
        let n = self.u64()?;
        let n = usize::try_from(n).map_err(|_| self.corrupt("length does not fit in memory"))?;
        self.take(n)
    }
    pub fn string(&mut self) -> Result<String> {
        let at = self.offset();
        let b = self.bytes32()?;
        String::from_utf8(b.to_vec()).map_err(|_| McapError::Corrupt {
            offset: at,
            reason: format!("{}: string is not UTF-8", self.what),
        })
    }
    pub fn corrupt(&self, reason: &str) -> McapError {
        McapError::Corrupt {
            offset: self.offset(),
            reason: format!("{}: {reason}", self.what),
        }
    }
    fn str_map(&mut self) -> Result<BTreeMap<String, String>> {
        let at = self.offset();
        let body = self.bytes32()?;
        let mut d = Dec::new(body, at + 4, self.what);
        let mut m = BTreeMap::new();
        while d.remaining() > 0 {
            let k = d.string()?;
            let v = d.string()?;
            m.insert(k, v);
        }
        Ok(m)
    }
    fn u16_u64_map(&mut self) -> Result<BTreeMap<u16, u64>> {
        let at = self.offset();
        let body = self.bytes32()?;
        if body.len() % 10 != 0 {
            return Err(McapError::Corrupt {
                offset: at,
                reason: format!(
                    "{}: map length {} is not a multiple of 10",
                    self.what,
                    body.len()
                ),
            });
        }
        let mut d = Dec::new(body, at + 4, self.what);
        let mut m = BTreeMap::new();
        while d.remaining() > 0 {
            let k = d.u16()?;
            m.insert(k, d.u64()?);
        }
        Ok(m)
    }
    fn pairs(&mut self) -> Result<Vec<(u64, u64)>> {
        let at = self.offset();
        let body = self.bytes32()?;
        if body.len() % 16 != 0 {
            return Err(McapError::Corrupt {
                offset: at,
                reason: format!(
                    "{}: array length {} is not a multiple of 16",
                    self.what,
                    body.len()
                ),
            });
        }
        Ok(body
            .chunks_exact(16)
            .map(|c| {
                (
                    u64::from_le_bytes(c[..8].try_into().expect("8")),
                    u64::from_le_bytes(c[8..].try_into().expect("8")),
                )
            })
            .collect())
    }
}

// Decoders take the record content and the file offset of its first byte. Trailing bytes are
// ignored everywhere (record-extension rule, spec 1.1).

pub fn dec_header(c: &[u8], at: u64) -> Result<Header> {
    let mut d = Dec::new(c, at, "Header");
    Ok(Header {
        profile: d.string()?,
        library: d.string()?,
    })
}
pub fn dec_footer(c: &[u8], at: u64) -> Result<Footer> {
    let mut d = Dec::new(c, at, "Footer");
    Ok(Footer {
        summary_start: d.u64()?,
        summary_offset_start: d.u64()?,
        summary_crc: d.u32()?,
    })
}
pub fn dec_schema(c: &[u8], at: u64) -> Result<Schema> {
    let mut d = Dec::new(c, at, "Schema");
    Ok(Schema {
        id: d.u16()?,
        name: d.string()?,
        encoding: d.string()?,
        data: d.bytes32()?.to_vec(),
    })
}
pub fn dec_channel(c: &[u8], at: u64) -> Result<Channel> {
    let mut d = Dec::new(c, at, "Channel");
    Ok(Channel {
        id: d.u16()?,
        schema_id: d.u16()?,
        topic: d.string()?,
        message_encoding: d.string()?,
        metadata: d.str_map()?,
    })
}
/// The header and the payload slice of a Message.
pub fn dec_message(c: &[u8], at: u64) -> Result<(MessageHeader, &[u8])> {
    let mut d = Dec::new(c, at, "Message");
    let h = MessageHeader {
        channel_id: d.u16()?,
        sequence: d.u32()?,
        log_time: d.u64()?,
        publish_time: d.u64()?,
    };
    Ok((h, d.rest()))
}
/// The header and the compressed records slice of a Chunk.
pub fn dec_chunk(c: &[u8], at: u64) -> Result<(ChunkHeader, &[u8])> {
    let mut d = Dec::new(c, at, "Chunk");
    let message_start_time = d.u64()?;
    let message_end_time = d.u64()?;
    let uncompressed_size = d.u64()?;
    let uncompressed_crc = d.u32()?;
    let compression = d.string()?;
    let records = d.bytes64()?;
    Ok((
        ChunkHeader {
            message_start_time,
            message_end_time,
            uncompressed_size,
            uncompressed_crc,
            compression,
            compressed_size: records.len() as u64,
        },
        records,
    ))
}
pub fn dec_message_index(c: &[u8], at: u64) -> Result<MessageIndex> {
    let mut d = Dec::new(c, at, "MessageIndex");
    Ok(MessageIndex {
        channel_id: d.u16()?,
        records: d.pairs()?,
    })
}
pub fn dec_chunk_index(c: &[u8], at: u64) -> Result<ChunkIndex> {
    let mut d = Dec::new(c, at, "ChunkIndex");
    Ok(ChunkIndex {
        message_start_time: d.u64()?,
        message_end_time: d.u64()?,
        chunk_start_offset: d.u64()?,
        chunk_length: d.u64()?,
        message_index_offsets: d.u16_u64_map()?,
        message_index_length: d.u64()?,
        compression: d.string()?,
        compressed_size: d.u64()?,
        uncompressed_size: d.u64()?,
    })
}
/// Decodes an Attachment and checks its CRC when non-zero.
pub fn dec_attachment(c: &[u8], at: u64) -> Result<Attachment> {
    let mut d = Dec::new(c, at, "Attachment");
    let log_time = d.u64()?;
    let create_time = d.u64()?;
    let name = d.string()?;
    let media_type = d.string()?;
    let data = d.bytes64()?.to_vec();
    let covered = d.pos;
    let crc = d.u32()?;
    if crc != 0 {
        let actual = crc32fast::hash(&c[..covered]);
        if actual != crc {
            return Err(McapError::Crc {
                offset: at,
                what: "Attachment",
                expected: crc,
                actual,
            });
        }
    }
    Ok(Attachment {
        log_time,
        create_time,
        name,
        media_type,
        data,
    })
}
pub fn dec_attachment_index(c: &[u8], at: u64) -> Result<AttachmentIndex> {
    let mut d = Dec::new(c, at, "AttachmentIndex");
    Ok(AttachmentIndex {
        offset: d.u64()?,
        length: d.u64()?,
        log_time: d.u64()?,
        create_time: d.u64()?,
        data_size: d.u64()?,
        name: d.string()?,
        media_type: d.string()?,
    })
}
pub fn dec_statistics(c: &[u8], at: u64) -> Result<Statistics> {
    let mut d = Dec::new(c, at, "Statistics");
    let mut s = Statistics {
        message_count: d.u64()?,
        schema_count: d.u16()?,
        channel_count: d.u32()?,
        attachment_count: d.u32()?,
        metadata_count: d.u32()?,
        chunk_count: d.u32()?,
        message_start_time: d.u64()?,
        message_end_time: d.u64()?,
        channel_message_counts: d.u16_u64_map()?,
        field_value_bounds: None,
    };
    if d.remaining() >= 4 {
        let at = d.offset();
        let body = d.bytes32()?;
        if body.len() % 18 != 0 {
            return Err(McapError::Corrupt {
                offset: at,
                reason: "Statistics: field_value_bounds length is not a multiple of 18".into(),
            });
        }
        let mut b = Dec::new(body, at + 4, "Statistics");
        let mut m = BTreeMap::new();
        while b.remaining() > 0 {
            let id = b.u16()?;
            m.insert(id, (b.u64()?, b.u64()?));
        }
        s.field_value_bounds = Some(m);
    }
    Ok(s)
}
pub fn dec_metadata(c: &[u8], at: u64) -> Result<Metadata> {
    let mut d = Dec::new(c, at, "Metadata");
    Ok(Metadata {
        name: d.string()?,
        metadata: d.str_map()?,
    })
}
pub fn dec_metadata_index(c: &[u8], at: u64) -> Result<MetadataIndex> {
    let mut d = Dec::new(c, at, "MetadataIndex");
    Ok(MetadataIndex {
        offset: d.u64()?,
        length: d.u64()?,
        name: d.string()?,
    })
}
pub fn dec_summary_offset(c: &[u8], at: u64) -> Result<SummaryOffset> {
    let mut d = Dec::new(c, at, "SummaryOffset");
    Ok(SummaryOffset {
        group_opcode: d.u8()?,
        group_start: d.u64()?,
        group_length: d.u64()?,
    })
}
pub fn dec_data_end(c: &[u8], at: u64) -> Result<DataEnd> {
    let mut d = Dec::new(c, at, "DataEnd");
    Ok(DataEnd {
        data_section_crc: d.u32()?,
    })
}
/// Accepts a Field with or without the flags byte (spec 2.0).
pub fn dec_field(c: &[u8], at: u64) -> Result<Field> {
    let mut d = Dec::new(c, at, "Field");
    let id = d.u16()?;
    let name = d.string()?;
    let encoding = d.string()?;
    let length = d.u8()?;
    let flags = if d.remaining() > 0 {
        Some(d.u8()?)
    } else {
        None
    };
    Ok(Field {
        id,
        name,
        encoding,
        length,
        flags,
    })
}
pub fn dec_message_fields(c: &[u8], at: u64) -> Result<MessageFields> {
    let mut d = Dec::new(c, at, "MessageFields");
    Ok(MessageFields {
        channel_id: d.u16()?,
        entries: d.bytes32()?.to_vec(),
    })
}
pub fn dec_field_index(c: &[u8], at: u64) -> Result<FieldIndex> {
    let mut d = Dec::new(c, at, "FieldIndex");
    Ok(FieldIndex {
        channel_id: d.u16()?,
        field_id: d.u16()?,
        records: d.pairs()?,
    })
}
pub fn dec_field_chunk_index(c: &[u8], at: u64) -> Result<FieldChunkIndex> {
    let mut d = Dec::new(c, at, "FieldChunkIndex");
    Ok(FieldChunkIndex {
        field_id: d.u16()?,
        chunk_start_offset: d.u64()?,
        min_value: d.u64()?,
        max_value: d.u64()?,
        message_index_offsets: d.u16_u64_map()?,
        message_index_length: d.u64()?,
    })
}
pub fn dec_attachment_fields(c: &[u8], at: u64) -> Result<AttachmentFields> {
    let mut d = Dec::new(c, at, "AttachmentFields");
    Ok(AttachmentFields {
        entries: d.bytes32()?.to_vec(),
    })
}

/// One framed record inside a byte slice (a decompressed chunk or a region read at once).
#[derive(Debug, Clone, Copy)]
pub struct RawRecord<'a> {
    pub opcode: u8,
    /// Offset of the opcode byte, relative to the slice start.
    pub offset: usize,
    pub content: &'a [u8],
}

/// Iterates records framed in `buf`; `base` is the file offset of `buf[0]` (for error
/// messages; for chunk contents it is the offset inside the uncompressed records, see
/// `base_desc`).
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
