//! Closing a chunk: compress, write the Chunk record, then its Message Index and Field Index
//! records (D7 layout), and record the Chunk Index and Field Chunk Index entries.

use std::collections::BTreeMap;
use std::io::Write;

use super::{State, Writer};
use crate::codec;
use crate::compression::Compression;
use crate::error::Result;
use crate::records::*;

impl<W: Write> Writer<W> {
    /// Writes the open chunk, its Message Index and Field Index records, and flushes.
    pub(super) fn close_chunk(&mut self) -> Result<()> {
        if self.chunk.records.is_empty() {
            return Ok(());
        }
        let c = std::mem::take(&mut self.chunk);
        let crc = crc32fast::hash(&c.records);
        let comp = self.opts.compression;
        let mut compressed = std::mem::take(&mut self.compressed);
        compressed.clear();
        // Uncompressed chunks are written from the records buffer itself, without a copy.
        if comp != Compression::None {
            if let Err(e) = comp.compress(&c.records, &mut compressed) {
                self.state = State::Failed;
                return Err(e.into());
            }
        }
        let body: &[u8] = if comp == Compression::None {
            &c.records
        } else {
            &compressed
        };
        let chunk_start = self.pos;
        // The chunk prefix is built apart so the compressed bytes are written without a copy.
        let mut prefix = Vec::with_capacity(64);
        prefix.push(op::CHUNK);
        let content_len = 8 + 8 + 8 + 4 + 4 + comp.name().len() as u64 + 8 + body.len() as u64;
        codec::put_u64(&mut prefix, content_len);
        let (start, end) = if c.messages == 0 {
            (0, 0)
        } else {
            (c.start, c.end)
        };
        codec::put_u64(&mut prefix, start);
        codec::put_u64(&mut prefix, end);
        codec::put_u64(&mut prefix, c.records.len() as u64);
        codec::put_u32(&mut prefix, crc);
        codec::put_str(&mut prefix, comp.name());
        codec::put_u64(&mut prefix, body.len() as u64);
        let compressed_size = body.len() as u64;
        self.emit(&prefix)?;
        self.emit(body)?;
        let chunk_length = self.pos - chunk_start;

        // D7: all Message Index records first, then Field Index grouped by field, by channel.
        let index_start = self.pos;
        let mut idx = Vec::new();
        let mut message_index_offsets = BTreeMap::new();
        for (ch, recs) in &c.msg_index {
            message_index_offsets.insert(*ch, index_start + idx.len() as u64);
            codec::message_index(
                &mut idx,
                &MessageIndex {
                    channel_id: *ch,
                    records: recs.clone(),
                },
            );
        }
        let mut fcis: Vec<FieldChunkIndex> = Vec::new();
        for ((fid, ch), recs) in &c.field_index {
            if fcis.last().map(|f| f.field_id) != Some(*fid) {
                let (lo, hi) = c.field_bounds[fid];
                fcis.push(FieldChunkIndex {
                    field_id: *fid,
                    chunk_start_offset: chunk_start,
                    min_value: lo,
                    max_value: hi,
                    message_index_offsets: BTreeMap::new(),
                    message_index_length: 0,
                });
            }
            let at = idx.len() as u64;
            codec::field_index(
                &mut idx,
                &FieldIndex {
                    channel_id: *ch,
                    field_id: *fid,
                    records: recs.clone(),
                },
            );
            let f = fcis.last_mut().expect("pushed above");
            f.message_index_offsets.insert(*ch, index_start + at);
            f.message_index_length += idx.len() as u64 - at;
        }
        self.emit(&idx)?;
        self.chunk_indexes.push(ChunkIndex {
            message_start_time: start,
            message_end_time: end,
            chunk_start_offset: chunk_start,
            chunk_length,
            message_index_offsets,
            message_index_length: idx.len() as u64,
            compression: comp.name().into(),
            compressed_size,
            uncompressed_size: c.records.len() as u64,
        });
        self.field_chunk_indexes.extend(fcis);
        self.compressed = compressed;
        // Reuse the big buffer for the next chunk.
        let mut records = c.records;
        records.clear();
        self.chunk.records = records;
        self.flush_out()
    }
}
