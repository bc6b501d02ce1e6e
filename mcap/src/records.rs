//! The MCAP records as plain data, with their opcodes. The byte layouts live in `codec`.
//!
//! ```text
//! file   = MAGIC Header <data section> DataEnd [<summary>] [<summary offsets>] Footer MAGIC
//! record = opcode:u8 content_length:u64le content
//! ```

use std::collections::BTreeMap;

/// `0x89 M C A P 0 \r \n`: major version 0.
pub const MAGIC: [u8; 8] = [0x89, b'M', b'C', b'A', b'P', 0x30, b'\r', b'\n'];
/// Size of the file tail: the Footer record (1 + 8 + 20) and the trailing magic.
pub const FOOTER_TAIL_LEN: u64 = 29 + 8;
/// Reserved `publish_time` / `create_time`: "a fields record follows" (spec 2.6).
pub const SENTINEL: u64 = u64::MAX;

/// Standard opcodes (spec 1.3).
pub mod op {
    pub const HEADER: u8 = 0x01;
    pub const FOOTER: u8 = 0x02;
    pub const SCHEMA: u8 = 0x03;
    pub const CHANNEL: u8 = 0x04;
    pub const MESSAGE: u8 = 0x05;
    pub const CHUNK: u8 = 0x06;
    pub const MESSAGE_INDEX: u8 = 0x07;
    pub const CHUNK_INDEX: u8 = 0x08;
    pub const ATTACHMENT: u8 = 0x09;
    pub const ATTACHMENT_INDEX: u8 = 0x0A;
    pub const STATISTICS: u8 = 0x0B;
    pub const METADATA: u8 = 0x0C;
    pub const METADATA_INDEX: u8 = 0x0D;
    pub const SUMMARY_OFFSET: u8 = 0x0E;
    pub const DATA_END: u8 = 0x0F;
}

/// The message-fields extension (foxglove/mcap PR #1752). These opcodes are proposed, not
/// allocated: this module is the only place that names them, so a final allocation is a
/// one-line change here.
pub mod ext_op {
    pub const FIELD: u8 = 0x10;
    pub const MESSAGE_FIELDS: u8 = 0x11;
    pub const FIELD_INDEX: u8 = 0x12;
    pub const FIELD_CHUNK_INDEX: u8 = 0x13;
    pub const ATTACHMENT_FIELDS: u8 = 0x14;
}

/// Field flag bit 0 (seed revision of the proposal, spec 2.0): the field is indexed.
pub const FIELD_FLAG_INDEXED: u8 = 0x01;
/// `Field.length` high bit: variable-length value (uint32 byte count + bytes).
pub const FIELD_LENGTH_VARIABLE: u8 = 0x80;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    pub profile: String,
    pub library: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Footer {
    pub summary_start: u64,
    pub summary_offset_start: u64,
    pub summary_crc: u32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schema {
    pub id: u16,
    pub name: String,
    pub encoding: String,
    pub data: Vec<u8>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Channel {
    pub id: u16,
    pub schema_id: u16,
    pub topic: String,
    pub message_encoding: String,
    pub metadata: BTreeMap<String, String>,
}

/// The 22 fixed bytes of a Message; the payload follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MessageHeader {
    pub channel_id: u16,
    pub sequence: u32,
    pub log_time: u64,
    pub publish_time: u64,
}

/// A Chunk without its `records` bytes (those are borrowed or read separately).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkHeader {
    pub message_start_time: u64,
    pub message_end_time: u64,
    pub uncompressed_size: u64,
    pub uncompressed_crc: u32,
    pub compression: String,
    pub compressed_size: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageIndex {
    pub channel_id: u16,
    /// (log_time, offset of the Message opcode in the uncompressed chunk records).
    pub records: Vec<(u64, u64)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkIndex {
    pub message_start_time: u64,
    pub message_end_time: u64,
    pub chunk_start_offset: u64,
    pub chunk_length: u64,
    pub message_index_offsets: BTreeMap<u16, u64>,
    pub message_index_length: u64,
    pub compression: String,
    pub compressed_size: u64,
    pub uncompressed_size: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attachment {
    pub log_time: u64,
    pub create_time: u64,
    pub name: String,
    pub media_type: String,
    pub data: Vec<u8>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttachmentIndex {
    pub offset: u64,
    pub length: u64,
    pub log_time: u64,
    pub create_time: u64,
    pub data_size: u64,
    pub name: String,
    pub media_type: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Statistics {
    pub message_count: u64,
    pub schema_count: u16,
    pub channel_count: u32,
    pub attachment_count: u32,
    pub metadata_count: u32,
    pub chunk_count: u32,
    pub message_start_time: u64,
    pub message_end_time: u64,
    pub channel_message_counts: BTreeMap<u16, u64>,
    /// Extension (spec 2.10): None = the field is absent, keeping the record standard (D18).
    pub field_value_bounds: Option<BTreeMap<u16, (u64, u64)>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Metadata {
    pub name: String,
    pub metadata: BTreeMap<String, String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetadataIndex {
    pub offset: u64,
    pub length: u64,
    pub name: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SummaryOffset {
    pub group_opcode: u8,
    pub group_start: u64,
    pub group_length: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DataEnd {
    pub data_section_crc: u32,
}

/// Field declaration (0x10). `flags` is `None` when the record had no flags byte (final PR
/// revision); we always write it (spec 2.0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    pub id: u16,
    pub name: String,
    pub encoding: String,
    pub length: u8,
    pub flags: Option<u8>,
}

impl Field {
    pub fn indexed(&self) -> bool {
        self.flags.unwrap_or(0) & FIELD_FLAG_INDEXED != 0
    }
}

/// Message Fields (0x11): the entries stay raw until resolved against the Field table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageFields {
    pub channel_id: u16,
    pub entries: Vec<u8>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldIndex {
    pub channel_id: u16,
    pub field_id: u16,
    /// (raw 8-byte value, offset of the Message in the uncompressed chunk records).
    pub records: Vec<(u64, u64)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldChunkIndex {
    pub field_id: u16,
    pub chunk_start_offset: u64,
    pub min_value: u64,
    pub max_value: u64,
    pub message_index_offsets: BTreeMap<u16, u64>,
    pub message_index_length: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttachmentFields {
    pub entries: Vec<u8>,
}
