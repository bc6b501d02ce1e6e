//! Record decoders: each reads one record's content; errors carry the file offset.

use std::collections::BTreeMap;

use crate::error::{McapError, Result};
use crate::records::*;

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
