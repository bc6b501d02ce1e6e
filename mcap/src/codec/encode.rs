//! Record encoders: each appends one framed record to a `Vec<u8>`.

use std::collections::BTreeMap;

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

/// Message Fields built straight from the values (no intermediate entries buffer): entries in
/// ascending field id (D5), `extra` merged in at its place.
pub fn message_fields_from(
    out: &mut Vec<u8>,
    channel_id: u16,
    fields: &[(u16, crate::field::FieldValue)],
    extra: Option<&(u16, crate::field::FieldValue)>,
) {
    put_record(out, ext_op::MESSAGE_FIELDS, |o| {
        put_u16(o, channel_id);
        let len_at = o.len();
        put_u32(o, 0);
        crate::field::encode_entries_into(o, fields, extra);
        let n = (o.len() - len_at - 4) as u32;
        o[len_at..len_at + 4].copy_from_slice(&n.to_le_bytes());
    })
}
