//! The summary section, read from the footer backwards with one range read.

use std::collections::BTreeMap;

use crate::codec::{self, RecordIter};
use crate::error::{McapError, Result};
use crate::field::{FieldDef, FieldTable};
use crate::io::ReadAt;
use crate::linear::{read_record, ReadOptions};
use crate::records::*;

#[derive(Debug, Clone, Default)]
pub struct Summary {
    pub file_size: u64,
    pub header: Option<Header>,
    pub footer: Option<Footer>,
    pub schemas: BTreeMap<u16, Schema>,
    pub channels: BTreeMap<u16, Channel>,
    pub fields: FieldTable,
    pub statistics: Option<Statistics>,
    pub chunk_indexes: Vec<ChunkIndex>,
    pub field_chunk_indexes: Vec<FieldChunkIndex>,
    pub attachment_indexes: Vec<AttachmentIndex>,
    pub metadata_indexes: Vec<MetadataIndex>,
    pub summary_offsets: Vec<SummaryOffset>,
    /// Bytes of the summary section and summary offsets.
    pub summary_len: u64,
}

impl Summary {
    pub fn field_by_name(&self, name: &str) -> Option<&FieldDef> {
        let mut found: Vec<&FieldDef> = self
            .fields
            .values()
            .filter(|d| d.record.name == name)
            .collect();
        found.sort_by_key(|d| d.record.id);
        found.first().copied()
    }
    pub fn channel_by_topic(&self, topic: &str) -> Vec<u16> {
        self.channels
            .values()
            .filter(|c| c.topic == topic)
            .map(|c| c.id)
            .collect()
    }
    /// A field counts as indexed when its flag says so or index records exist for it.
    pub fn field_indexed(&self, id: u16) -> bool {
        self.fields.get(&id).is_some_and(|d| d.record.indexed())
            || self.field_chunk_indexes.iter().any(|f| f.field_id == id)
    }
}

/// Reads magic, header, footer and summary. A file without a footer is an error naming the
/// offset; a footer with `summary_start == 0` gives an empty summary (linear reading then).
pub fn read_summary<R: ReadAt + ?Sized>(src: &R, opts: &ReadOptions) -> Result<Summary> {
    let size = src.size()?;
    let mut s = Summary {
        file_size: size,
        ..Default::default()
    };
    if size < 8 {
        return Err(McapError::Truncated {
            offset: 0,
            needed: 8,
            available: size,
        });
    }
    let mut magic = [0u8; 8];
    src.read_exact_at(0, &mut magic)?;
    if magic != MAGIC {
        return Err(McapError::BadMagic { offset: 0 });
    }
    if let Ok((op::HEADER, content)) = read_record(src, 8, size) {
        s.header = Some(codec::dec_header(&content, 17)?);
    }
    if size < 8 + FOOTER_TAIL_LEN {
        return Err(McapError::Truncated {
            offset: size,
            needed: 8 + FOOTER_TAIL_LEN,
            available: size,
        });
    }
    let footer_at = size - FOOTER_TAIL_LEN;
    let mut tail = [0u8; FOOTER_TAIL_LEN as usize];
    src.read_exact_at(footer_at, &mut tail)?;
    if tail[29..] != MAGIC {
        return Err(McapError::Corrupt {
            offset: size - 8,
            reason: "no trailing magic: the file is truncated or its writer did not finish (try `tracer recover`)".into(),
        });
    }
    if tail[0] != op::FOOTER || u64::from_le_bytes(tail[1..9].try_into().expect("8")) != 20 {
        return Err(McapError::Corrupt {
            offset: footer_at,
            reason: "no Footer record before the trailing magic".into(),
        });
    }
    let footer = codec::dec_footer(&tail[9..29], footer_at + 9)?;
    s.footer = Some(footer);
    if footer.summary_start == 0 {
        return Ok(s);
    }
    if footer.summary_start < 8 || footer.summary_start > footer_at {
        return Err(McapError::Corrupt {
            offset: footer_at,
            reason: format!(
                "summary_start {} lies outside the file",
                footer.summary_start
            ),
        });
    }
    let len = footer_at - footer.summary_start;
    let mut buf = vec![0u8; len as usize];
    src.read_exact_at(footer.summary_start, &mut buf)?;
    s.summary_len = len;
    if opts.verify_crc && footer.summary_crc != 0 {
        let mut h = crc32fast::Hasher::new();
        h.update(&buf);
        h.update(&tail[..25]);
        let actual = h.finalize();
        if actual != footer.summary_crc {
            return Err(McapError::Crc {
                offset: footer.summary_start,
                what: "summary",
                expected: footer.summary_crc,
                actual,
            });
        }
    }
    for rec in RecordIter::new(&buf, footer.summary_start) {
        let rec = rec?;
        let c = footer.summary_start + rec.offset as u64 + 9;
        match rec.opcode {
            op::SCHEMA => {
                let x = codec::dec_schema(rec.content, c)?;
                if x.id != 0 {
                    s.schemas.insert(x.id, x);
                }
            }
            op::CHANNEL => {
                let x = codec::dec_channel(rec.content, c)?;
                s.channels.insert(x.id, x);
            }
            ext_op::FIELD => {
                let x = codec::dec_field(rec.content, c)?;
                if x.id != 0 {
                    s.fields.insert(x.id, FieldDef::new(x));
                }
            }
            op::STATISTICS => s.statistics = Some(codec::dec_statistics(rec.content, c)?),
            op::CHUNK_INDEX => s
                .chunk_indexes
                .push(codec::dec_chunk_index(rec.content, c)?),
            ext_op::FIELD_CHUNK_INDEX => s
                .field_chunk_indexes
                .push(codec::dec_field_chunk_index(rec.content, c)?),
            op::ATTACHMENT_INDEX => s
                .attachment_indexes
                .push(codec::dec_attachment_index(rec.content, c)?),
            op::METADATA_INDEX => s
                .metadata_indexes
                .push(codec::dec_metadata_index(rec.content, c)?),
            op::SUMMARY_OFFSET => s
                .summary_offsets
                .push(codec::dec_summary_offset(rec.content, c)?),
            _ => {}
        }
    }
    Ok(s)
}
