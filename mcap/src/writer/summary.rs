//! The summary section, summary offsets and footer the writer appends at `finish` (order
//! D11: Schema, Channel, Field, Statistics, Chunk Index, Field Chunk Index, Attachment Index,
//! Metadata Index; each group gets a Summary Offset record).

use std::io::Write;

use super::Writer;
use crate::codec;
use crate::records::*;

impl<W: Write> Writer<W> {
    /// Everything after Data End: summary, summary offsets, footer (with the summary CRC) and
    /// the trailing magic. `summary_start` is the file offset of its first byte.
    pub(super) fn summary_bytes(&self, summary_start: u64) -> Vec<u8> {
        let mut s = Vec::new();
        let mut offsets: Vec<SummaryOffset> = Vec::new();
        let mut group = |s: &mut Vec<u8>, opcode: u8, f: &mut dyn FnMut(&mut Vec<u8>)| {
            let start = s.len();
            f(s);
            if s.len() > start {
                offsets.push(SummaryOffset {
                    group_opcode: opcode,
                    group_start: summary_start + start as u64,
                    group_length: (s.len() - start) as u64,
                });
            }
        };
        group(&mut s, op::SCHEMA, &mut |o| {
            self.schemas.iter().for_each(|x| codec::schema(o, x))
        });
        group(&mut s, op::CHANNEL, &mut |o| {
            self.channels.values().for_each(|x| codec::channel(o, x))
        });
        group(&mut s, ext_op::FIELD, &mut |o| {
            self.fields.values().for_each(|(x, _)| codec::field(o, x))
        });
        let mut stats = self.stats.clone();
        stats.schema_count = self.schemas.len() as u16;
        stats.channel_count = self.channels.len() as u32;
        stats.attachment_count = self.attachment_indexes.len() as u32;
        stats.metadata_count = self.metadata_indexes.len() as u32;
        stats.chunk_count = self.chunk_indexes.len() as u32;
        if self.fields.values().any(|(f, _)| f.indexed()) {
            stats.field_value_bounds = Some(self.field_bounds.clone());
        }
        group(&mut s, op::STATISTICS, &mut |o| {
            codec::statistics(o, &stats)
        });
        group(&mut s, op::CHUNK_INDEX, &mut |o| {
            self.chunk_indexes
                .iter()
                .for_each(|x| codec::chunk_index(o, x))
        });
        let mut fcis = self.field_chunk_indexes.clone();
        fcis.sort_by_key(|f| (f.field_id, f.chunk_start_offset));
        group(&mut s, ext_op::FIELD_CHUNK_INDEX, &mut |o| {
            fcis.iter().for_each(|x| codec::field_chunk_index(o, x))
        });
        group(&mut s, op::ATTACHMENT_INDEX, &mut |o| {
            self.attachment_indexes
                .iter()
                .for_each(|x| codec::attachment_index(o, x))
        });
        group(&mut s, op::METADATA_INDEX, &mut |o| {
            self.metadata_indexes
                .iter()
                .for_each(|x| codec::metadata_index(o, x))
        });
        let summary_offset_start = summary_start + s.len() as u64;
        for so in &offsets {
            codec::summary_offset(&mut s, so);
        }
        let mut footer = Vec::new();
        codec::footer(
            &mut footer,
            &Footer {
                summary_start,
                summary_offset_start,
                summary_crc: 0,
            },
        );
        let mut h = crc32fast::Hasher::new();
        h.update(&s);
        h.update(&footer[..footer.len() - 4]);
        let summary_crc = h.finalize();
        let n = footer.len();
        footer[n - 4..].copy_from_slice(&summary_crc.to_le_bytes());
        s.extend_from_slice(&footer);
        s.extend_from_slice(&MAGIC);
        s
    }
}
