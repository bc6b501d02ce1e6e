//! Linear reading: the record stream of a decompressed chunk, and the data section of a file
//! read front to back (no summary needed: the fallback for unfinished files and `recover`).
//! Each Message is paired with the Message Fields record right after it (spec 2.12).

use std::collections::VecDeque;

use crate::codec::{self, RawRecord, RecordIter};
use crate::compression::decompress;
use crate::error::{McapError, Result};
use crate::field::{decode_entries, FieldDef, FieldTable, FieldValue};
use crate::io::ReadAt;
use crate::records::*;

/// A message as read, with its fields resolved (D16).
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    pub channel_id: u16,
    pub sequence: u32,
    pub log_time: u64,
    /// The value in the Message record (the sentinel when fields follow).
    pub raw_publish_time: u64,
    /// Effective publish time: the `publish_time` field, else the literal value, else log_time.
    pub publish_time: u64,
    pub fields: Vec<(u16, FieldValue)>,
    pub data: Vec<u8>,
}

impl Message {
    pub fn field(&self, id: u16) -> Option<&FieldValue> {
        self.fields.iter().find(|(i, _)| *i == id).map(|(_, v)| v)
    }
}

/// Limits that keep a hostile file from exhausting memory.
#[derive(Debug, Clone, Copy)]
pub struct ReadOptions {
    /// Largest `uncompressed_size` of a chunk that will be decompressed.
    pub max_chunk_bytes: u64,
    /// Check chunk, attachment, data and summary CRCs when present.
    pub verify_crc: bool,
    /// Largest total uncompressed size of a cluster of time-overlapping chunks held at once
    /// to merge them in log-time order; past it, order is kept only within each chunk.
    pub max_cluster_bytes: u64,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            max_chunk_bytes: 1 << 30,
            verify_crc: true,
            max_cluster_bytes: 1 << 30,
        }
    }
}

pub(crate) fn publish_time_field(table: &FieldTable) -> Option<u16> {
    let mut ids: Vec<u16> = table
        .values()
        .filter(|d| d.record.name == "publish_time")
        .map(|d| d.record.id)
        .collect();
    ids.sort_unstable();
    ids.first().copied()
}

/// Builds a Message from its record and the record that follows it in the same stream.
/// Returns whether `next` was consumed as this message's fields record.
pub(crate) fn pair_fields(
    h: MessageHeader,
    data: &[u8],
    at: u64,
    next: Option<(u8, &[u8], u64)>,
    table: &FieldTable,
    warnings: &mut Vec<String>,
) -> (Message, bool) {
    let mut m = Message {
        channel_id: h.channel_id,
        sequence: h.sequence,
        log_time: h.log_time,
        raw_publish_time: h.publish_time,
        publish_time: h.publish_time,
        fields: Vec::new(),
        data: data.to_vec(),
    };
    if h.publish_time != SENTINEL {
        return (m, false);
    }
    m.publish_time = h.log_time;
    match next {
        Some((ext_op::MESSAGE_FIELDS, content, nat)) => {
            match codec::dec_message_fields(content, nat) {
                Ok(mf) if mf.channel_id == h.channel_id => {
                    m.fields = decode_entries(&mf.entries, table, warnings);
                    if let Some(FieldValue::Timestamp(t)) =
                        publish_time_field(table).and_then(|id| m.field(id))
                    {
                        m.publish_time = *t;
                    }
                    (m, true)
                }
                Ok(mf) => {
                    warnings.push(format!(
                    "offset {nat}: Message Fields for channel {} after a message on channel {}; ignored",
                    mf.channel_id, h.channel_id
                ));
                    (m, true)
                }
                Err(e) => {
                    warnings.push(format!("{e}; fields of the message at {at} dropped"));
                    (m, true)
                }
            }
        }
        _ => {
            warnings.push(format!(
                "offset {at}: message has the fields sentinel but no Message Fields record follows (fields lost); publish time falls back to log time"
            ));
            (m, false)
        }
    }
}

/// What a decompressed chunk holds, in order.
pub(crate) enum ChunkItem {
    Schema(Schema),
    Channel(Channel),
    Field(Field),
    /// Offset of the Message inside the uncompressed records, and the message.
    Message(u64, Message),
}

/// Walks a decompressed chunk. `table` gains the Field records met on the way.
pub(crate) fn scan_chunk(
    records: &[u8],
    table: &mut FieldTable,
    warnings: &mut Vec<String>,
    mut f: impl FnMut(ChunkItem),
) -> Result<()> {
    let mut it = RecordIter::new(records, 0);
    let mut pending: Option<RawRecord> = None;
    loop {
        let rec = match pending.take() {
            Some(r) => r,
            None => match it.next() {
                Some(r) => r?,
                None => break,
            },
        };
        let at = rec.offset as u64;
        match rec.opcode {
            op::SCHEMA => f(ChunkItem::Schema(codec::dec_schema(rec.content, at + 9)?)),
            op::CHANNEL => f(ChunkItem::Channel(codec::dec_channel(rec.content, at + 9)?)),
            ext_op::FIELD => {
                let fld = codec::dec_field(rec.content, at + 9)?;
                if fld.id != 0 {
                    table.insert(fld.id, FieldDef::new(fld.clone()));
                }
                f(ChunkItem::Field(fld));
            }
            op::MESSAGE => {
                let (h, data) = codec::dec_message(rec.content, at + 9)?;
                let next = if h.publish_time == SENTINEL {
                    it.next().transpose()?
                } else {
                    None
                };
                let (m, used) = pair_fields(
                    h,
                    data,
                    at,
                    next.map(|n| (n.opcode, n.content, n.offset as u64 + 9)),
                    table,
                    warnings,
                );
                if !used {
                    pending = next;
                }
                f(ChunkItem::Message(at, m));
            }
            ext_op::MESSAGE_FIELDS => warnings.push(format!(
                "chunk offset {at}: Message Fields without a sentinel message before it; ignored"
            )),
            _ => {} // unknown and private opcodes are skipped
        }
    }
    Ok(())
}

/// Reads one framed record at `pos`, checking its length against the source size before
/// allocating. Returns (opcode, content).
pub(crate) fn read_record<R: ReadAt + ?Sized>(
    src: &R,
    pos: u64,
    size: u64,
) -> Result<(u8, Vec<u8>)> {
    let avail = size.saturating_sub(pos);
    if avail < 9 {
        return Err(McapError::Truncated {
            offset: pos,
            needed: 9,
            available: avail,
        });
    }
    let mut head = [0u8; 9];
    src.read_exact_at(pos, &mut head)?;
    let len = u64::from_le_bytes(head[1..].try_into().expect("8"));
    if len > avail - 9 {
        return Err(McapError::Truncated {
            offset: pos,
            needed: len.saturating_add(9),
            available: avail,
        });
    }
    let mut content = vec![0u8; len as usize];
    src.read_exact_at(pos + 9, &mut content)?;
    Ok((head[0], content))
}

/// Decompresses a Chunk record's content and checks its CRC.
pub(crate) fn open_chunk(
    content: &[u8],
    chunk_offset: u64,
    opts: &ReadOptions,
) -> Result<(ChunkHeader, Vec<u8>)> {
    let (h, data) = codec::dec_chunk(content, chunk_offset + 9)?;
    if h.uncompressed_size > opts.max_chunk_bytes {
        return Err(McapError::Corrupt {
            offset: chunk_offset,
            reason: format!(
                "chunk claims {} uncompressed bytes, over the {} limit",
                h.uncompressed_size, opts.max_chunk_bytes
            ),
        });
    }
    let records = decompress(&h.compression, data, h.uncompressed_size, chunk_offset)?;
    if opts.verify_crc && h.uncompressed_crc != 0 {
        let actual = crc32fast::hash(&records);
        if actual != h.uncompressed_crc {
            return Err(McapError::Crc {
                offset: chunk_offset,
                what: "Chunk",
                expected: h.uncompressed_crc,
                actual,
            });
        }
    }
    Ok((h, records))
}

/// One thing found by a linear read.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    Header(Header),
    Schema(Schema),
    Channel(Channel),
    Field(Field),
    Message(Message),
    /// File offset of the Attachment record, the attachment, and its fields.
    Attachment(u64, Attachment, Vec<(u16, FieldValue)>),
    Metadata(Metadata),
    /// A chunk was read completely (file offset, header).
    ChunkEnd(u64, ChunkHeader),
    DataEnd(DataEnd),
    Warning(String),
}

/// Reads a file's data section front to back. Stops after Data End, or at the first error,
/// which names the offset; everything before it has been returned.
pub struct LinearReader<R> {
    src: R,
    size: u64,
    pos: u64,
    opts: ReadOptions,
    table: FieldTable,
    pending: VecDeque<Item>,
    state: u8, // 0 = before magic, 1 = reading, 2 = done
    data_crc: Option<crc32fast::Hasher>,
}

impl<R: ReadAt> LinearReader<R> {
    pub fn new(src: R, opts: ReadOptions) -> Result<Self> {
        let size = src.size()?;
        Ok(LinearReader {
            src,
            size,
            pos: 0,
            opts,
            table: FieldTable::new(),
            pending: VecDeque::new(),
            state: 0,
            data_crc: None,
        })
    }

    /// Offset of the next record to read (after an error: where the readable part ends).
    pub fn position(&self) -> u64 {
        self.pos
    }

    pub fn fields(&self) -> &FieldTable {
        &self.table
    }

    fn step(&mut self) -> Result<()> {
        if self.state == 0 {
            let mut magic = [0u8; 8];
            if self.size < 8 {
                return Err(McapError::Truncated {
                    offset: 0,
                    needed: 8,
                    available: self.size,
                });
            }
            self.src.read_exact_at(0, &mut magic)?;
            if magic != MAGIC {
                return Err(McapError::BadMagic { offset: 0 });
            }
            self.pos = 8;
            self.state = 1;
            // Hashing the data section costs a full pass; only do it when asked to verify.
            if self.opts.verify_crc {
                let mut h = crc32fast::Hasher::new();
                h.update(&magic);
                self.data_crc = Some(h);
            }
        }
        if self.pos == self.size {
            self.state = 2;
            self.pending.push_back(Item::Warning(format!(
                "file ends at offset {} without a Data End record (writer did not finish)",
                self.pos
            )));
            return Ok(());
        }
        let at = self.pos;
        let (opcode, content) = read_record(&self.src, at, self.size)?;
        let mut next_pos = at + 9 + content.len() as u64;
        let feed = |h: &mut Option<crc32fast::Hasher>, opcode: u8, content: &[u8]| {
            if let Some(h) = h {
                h.update(&[opcode]);
                h.update(&(content.len() as u64).to_le_bytes());
                h.update(content);
            }
        };
        if opcode != op::DATA_END {
            feed(&mut self.data_crc, opcode, &content);
        }
        let c = at + 9;
        match opcode {
            op::HEADER => self
                .pending
                .push_back(Item::Header(codec::dec_header(&content, c)?)),
            op::SCHEMA => self
                .pending
                .push_back(Item::Schema(codec::dec_schema(&content, c)?)),
            op::CHANNEL => self
                .pending
                .push_back(Item::Channel(codec::dec_channel(&content, c)?)),
            ext_op::FIELD => {
                let f = codec::dec_field(&content, c)?;
                if f.id != 0 {
                    self.table.insert(f.id, FieldDef::new(f.clone()));
                }
                self.pending.push_back(Item::Field(f));
            }
            op::MESSAGE => {
                let (h, data) = codec::dec_message(&content, c)?;
                let mut next = None;
                if h.publish_time == SENTINEL && next_pos < self.size {
                    if let Ok((nop, ncontent)) = read_record(&self.src, next_pos, self.size) {
                        next = Some((nop, ncontent));
                    }
                }
                let mut warnings = Vec::new();
                let (m, used) = pair_fields(
                    h,
                    data,
                    at,
                    next.as_ref().map(|(o, b)| (*o, b.as_slice(), next_pos + 9)),
                    &self.table,
                    &mut warnings,
                );
                if used {
                    let (nop, ncontent) = next.expect("used implies present");
                    feed(&mut self.data_crc, nop, &ncontent);
                    next_pos += 9 + ncontent.len() as u64;
                }
                self.pending.extend(warnings.into_iter().map(Item::Warning));
                self.pending.push_back(Item::Message(m));
            }
            op::CHUNK => {
                let (h, records) = open_chunk(&content, at, &self.opts)?;
                let mut warnings = Vec::new();
                let mut items = Vec::new();
                scan_chunk(&records, &mut self.table, &mut warnings, |it| {
                    items.push(match it {
                        ChunkItem::Schema(s) => Item::Schema(s),
                        ChunkItem::Channel(ch) => Item::Channel(ch),
                        ChunkItem::Field(f) => Item::Field(f),
                        ChunkItem::Message(_, m) => Item::Message(m),
                    })
                })
                .map_err(|e| McapError::Corrupt {
                    offset: at,
                    reason: format!("inside the chunk: {e}"),
                })?;
                self.pending.extend(
                    warnings
                        .into_iter()
                        .map(|w| Item::Warning(format!("chunk at {at}: {w}"))),
                );
                self.pending.extend(items);
                self.pending.push_back(Item::ChunkEnd(at, h));
            }
            op::ATTACHMENT => {
                let a = codec::dec_attachment(&content, c)?;
                let mut fields = Vec::new();
                if a.create_time == SENTINEL {
                    match read_record(&self.src, next_pos, self.size) {
                        Ok((ext_op::ATTACHMENT_FIELDS, nc)) => {
                            let af = codec::dec_attachment_fields(&nc, next_pos + 9)?;
                            let mut w = Vec::new();
                            fields = decode_entries(&af.entries, &self.table, &mut w);
                            self.pending.extend(w.into_iter().map(Item::Warning));
                            feed(&mut self.data_crc, ext_op::ATTACHMENT_FIELDS, &nc);
                            next_pos += 9 + nc.len() as u64;
                        }
                        _ => self.pending.push_back(Item::Warning(format!(
                            "offset {at}: attachment {:?} has the sentinel create_time but no Attachment Fields record",
                            a.name
                        ))),
                    }
                }
                self.pending.push_back(Item::Attachment(at, a, fields));
            }
            op::METADATA => self
                .pending
                .push_back(Item::Metadata(codec::dec_metadata(&content, c)?)),
            op::DATA_END => {
                let de = codec::dec_data_end(&content, c)?;
                if let (Some(h), true) = (self.data_crc.take(), de.data_section_crc != 0) {
                    let actual = h.finalize();
                    if actual != de.data_section_crc {
                        self.pending.push_back(Item::Warning(format!(
                            "data section CRC mismatch at offset {at}: stored {:#010x}, computed {actual:#010x}",
                            de.data_section_crc
                        )));
                    }
                }
                self.pending.push_back(Item::DataEnd(de));
                self.state = 2;
            }
            ext_op::MESSAGE_FIELDS | ext_op::ATTACHMENT_FIELDS => {
                self.pending.push_back(Item::Warning(format!(
                    "offset {at}: fields record without a sentinel record before it; ignored"
                )))
            }
            _ => {} // Message Index, Field Index, unknown and private opcodes: skipped
        }
        self.pos = next_pos;
        Ok(())
    }
}

impl<R: ReadAt> Iterator for LinearReader<R> {
    type Item = Result<Item>;
    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(it) = self.pending.pop_front() {
                return Some(Ok(it));
            }
            if self.state == 2 {
                return None;
            }
            if let Err(e) = self.step() {
                self.state = 2;
                return Some(Err(e));
            }
        }
    }
}
