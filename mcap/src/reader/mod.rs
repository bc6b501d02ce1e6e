//! The indexed reader (seed 002): footer, then summary; a query's topics and time window are
//! resolved to chunks by the chunk index, each chunk read by full scan or index scan; a field
//! range is resolved through Field Chunk Index and Field Index, touching only candidate chunks.

mod stream;

pub use stream::MessageStream;

use std::collections::{BTreeSet, VecDeque};

use crate::codec::{self, RecordIter};
use crate::error::{McapError, Result};
use crate::field::{decode_entries, FieldEncoding, FieldTable, FieldValue};
use crate::io::ReadAt;
use crate::linear::{
    open_chunk, pair_fields, read_record, scan_chunk, ChunkItem, Item, LinearReader, Message,
    ReadOptions,
};
use crate::records::*;
use crate::summary::{read_summary, Summary};

/// How a chunk's messages are found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ScanStrategy {
    /// Index scan when under half of the chunk's channels are wanted, else full scan.
    #[default]
    Auto,
    Full,
    Index,
}

/// An inclusive range over an indexed field's values.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldRange {
    pub name: String,
    pub min: Option<FieldValue>,
    pub max: Option<FieldValue>,
}

#[derive(Debug, Clone, Default)]
pub struct Query {
    /// None = every topic.
    pub topics: Option<Vec<String>>,
    /// log_time >= start.
    pub start: Option<u64>,
    /// log_time < end.
    pub end: Option<u64>,
    pub field: Option<FieldRange>,
    pub strategy: ScanStrategy,
}

/// An attachment as extracted through the index, with its fields and any warnings.
#[derive(Debug, Clone, PartialEq)]
pub struct AttachmentRead {
    pub attachment: Attachment,
    pub fields: Vec<(u16, FieldValue)>,
    pub warnings: Vec<String>,
}

pub struct IndexedReader<R> {
    src: R,
    summary: Summary,
    opts: ReadOptions,
}

/// The resolved field filter: id, encoding, raw bounds.
#[derive(Debug, Clone, Copy)]
struct FieldFilter {
    id: u16,
    enc: FieldEncoding,
    lo: Option<u64>,
    hi: Option<u64>,
    indexed: bool,
}

impl FieldFilter {
    fn contains(&self, v: u64) -> bool {
        self.lo.is_none_or(|lo| self.enc.compare_raw(v, lo).is_ge())
            && self.hi.is_none_or(|hi| self.enc.compare_raw(v, hi).is_le())
    }
    fn overlaps(&self, min: u64, max: u64) -> bool {
        self.lo
            .is_none_or(|lo| self.enc.compare_raw(max, lo).is_ge())
            && self
                .hi
                .is_none_or(|hi| self.enc.compare_raw(min, hi).is_le())
    }
    fn matches(&self, m: &Message) -> bool {
        m.field(self.id)
            .and_then(|v| v.index_key())
            .is_some_and(|k| self.contains(k))
    }
}

#[derive(Debug, Clone)]
struct Filter {
    channels: Option<BTreeSet<u16>>,
    start: Option<u64>,
    end: Option<u64>,
    field: Option<FieldFilter>,
}

impl Filter {
    fn wants_channel(&self, ch: u16) -> bool {
        self.channels.as_ref().is_none_or(|s| s.contains(&ch))
    }
    fn wants_time(&self, t: u64) -> bool {
        self.start.is_none_or(|s| t >= s) && self.end.is_none_or(|e| t < e)
    }
    fn overlaps_time(&self, start: u64, end: u64) -> bool {
        self.start.is_none_or(|s| end >= s) && self.end.is_none_or(|e| start < e)
    }
    fn matches(&self, m: &Message) -> bool {
        self.wants_channel(m.channel_id)
            && self.wants_time(m.log_time)
            && self.field.is_none_or(|f| f.matches(m))
    }
}

/// One chunk to visit, with how to read it.
#[derive(Debug, Clone)]
struct Plan {
    chunk: ChunkIndex,
    /// Some: read only these offsets (index or field-index scan). None: full scan.
    offsets: Option<Vec<u64>>,
    /// Field index scan: offsets are known to carry the field.
    field_offsets: Option<Vec<u64>>,
}

impl<R: ReadAt> IndexedReader<R> {
    pub fn open(src: R) -> Result<Self> {
        Self::with_options(src, ReadOptions::default())
    }
    pub fn with_options(src: R, opts: ReadOptions) -> Result<Self> {
        let summary = read_summary(&src, &opts)?;
        Ok(IndexedReader { src, summary, opts })
    }
    /// Opens a file whose footer or summary is missing or broken (a writer that died) by
    /// reading its data section once for the Schema, Channel and Field records; queries then
    /// read linearly. Returns the reason the summary could not be used, if it could not.
    pub fn open_lenient(src: R) -> Result<(Self, Option<McapError>)> {
        let opts = ReadOptions::default();
        match read_summary(&src, &opts) {
            Ok(summary) => Ok((IndexedReader { src, summary, opts }, None)),
            Err(e @ (McapError::BadMagic { .. } | McapError::Io(_))) => Err(e),
            Err(e) => {
                let mut summary = Summary {
                    file_size: src.size()?,
                    ..Default::default()
                };
                for item in LinearReader::new(&src, opts)? {
                    match item {
                        Ok(Item::Header(h)) => summary.header = Some(h),
                        Ok(Item::Schema(x)) => {
                            summary.schemas.insert(x.id, x);
                        }
                        Ok(Item::Channel(x)) => {
                            summary.channels.insert(x.id, x);
                        }
                        Ok(Item::Field(x)) => {
                            summary.fields.insert(x.id, crate::field::FieldDef::new(x));
                        }
                        Ok(_) => {}
                        Err(_) => break,
                    }
                }
                Ok((IndexedReader { src, summary, opts }, Some(e)))
            }
        }
    }

    pub fn summary(&self) -> &Summary {
        &self.summary
    }
    pub fn source(&self) -> &R {
        &self.src
    }

    fn resolve(&self, q: &Query) -> Result<Filter> {
        let channels = q.topics.as_ref().map(|ts| {
            ts.iter()
                .flat_map(|t| self.summary.channel_by_topic(t))
                .collect::<BTreeSet<u16>>()
        });
        let field = match &q.field {
            None => None,
            Some(fr) => {
                let def = self.summary.field_by_name(&fr.name).ok_or_else(|| {
                    McapError::InvalidArgument(format!(
                        "no field named {:?} in the summary",
                        fr.name
                    ))
                })?;
                let enc = def.encoding.filter(|e| e.indexable()).ok_or_else(|| {
                    McapError::InvalidArgument(format!(
                        "field {:?} ({}) is not a seekable encoding",
                        fr.name, def.record.encoding
                    ))
                })?;
                let key = |v: &Option<FieldValue>| -> Result<Option<u64>> {
                    match v {
                        None => Ok(None),
                        Some(v) => v.index_key().map(Some).ok_or_else(|| {
                            McapError::InvalidArgument(format!("bound {v:?} is not a 64-bit value"))
                        }),
                    }
                };
                Some(FieldFilter {
                    id: def.record.id,
                    enc,
                    lo: key(&fr.min)?,
                    hi: key(&fr.max)?,
                    indexed: self.summary.field_indexed(def.record.id),
                })
            }
        };
        Ok(Filter {
            channels,
            start: q.start,
            end: q.end,
            field,
        })
    }

    /// Reads a record's content by its file offset.
    fn record_at(&self, offset: u64) -> Result<(u8, Vec<u8>)> {
        read_record(&self.src, offset, self.summary.file_size)
    }

    /// The content of the index record at `at`, which the summary says has opcode `want`
    /// (`what` names it for the error).
    fn index_record_at(&self, at: u64, want: u8, what: &str) -> Result<Vec<u8>> {
        let (opc, content) = self.record_at(at)?;
        if opc != want {
            return Err(McapError::Corrupt {
                offset: at,
                reason: format!("expected a {what} record, found opcode {opc:#04x}"),
            });
        }
        Ok(content)
    }

    fn plan(&self, f: &Filter, strategy: ScanStrategy) -> Result<Vec<Plan>> {
        let mut plans = Vec::new();
        for ci in &self.summary.chunk_indexes {
            if !f.overlaps_time(ci.message_start_time, ci.message_end_time) {
                continue;
            }
            let chans: Vec<u16> = ci.message_index_offsets.keys().copied().collect();
            let wanted: Vec<u16> = chans
                .iter()
                .copied()
                .filter(|c| f.wants_channel(*c))
                .collect();
            if !chans.is_empty() && wanted.is_empty() {
                continue;
            }
            if let Some(ff) = f.field.filter(|ff| ff.indexed) {
                // D8: no Field Chunk Index for this chunk means no message in it carries F.
                let Some(fci) =
                    self.summary.field_chunk_indexes.iter().find(|x| {
                        x.field_id == ff.id && x.chunk_start_offset == ci.chunk_start_offset
                    })
                else {
                    continue;
                };
                let unknown = fci.message_index_offsets.is_empty()
                    && fci.min_value == 0
                    && fci.max_value == 0;
                if !unknown && !ff.overlaps(fci.min_value, fci.max_value) {
                    continue;
                }
                if unknown || fci.message_index_offsets.is_empty() {
                    plans.push(Plan {
                        chunk: ci.clone(),
                        offsets: None,
                        field_offsets: None,
                    });
                    continue;
                }
                let mut offs = Vec::new();
                for (ch, at) in &fci.message_index_offsets {
                    if !f.wants_channel(*ch) {
                        continue;
                    }
                    let content = self.index_record_at(*at, ext_op::FIELD_INDEX, "Field Index")?;
                    let fi = codec::dec_field_index(&content, at + 9)?;
                    offs.extend(
                        fi.records
                            .iter()
                            .filter(|(v, _)| ff.contains(*v))
                            .map(|(_, o)| *o),
                    );
                }
                let Some(offs) = sorted_unique(offs) else {
                    continue;
                };
                plans.push(Plan {
                    chunk: ci.clone(),
                    offsets: None,
                    field_offsets: Some(offs),
                });
                continue;
            }
            let index_scan = match strategy {
                ScanStrategy::Full => false,
                ScanStrategy::Index => !chans.is_empty(),
                ScanStrategy::Auto => {
                    !chans.is_empty() && (wanted.len() as f64) < 0.5 * chans.len() as f64
                }
            };
            if !index_scan {
                plans.push(Plan {
                    chunk: ci.clone(),
                    offsets: None,
                    field_offsets: None,
                });
                continue;
            }
            let mut offs = Vec::new();
            for ch in &wanted {
                let at = ci.message_index_offsets[ch];
                let content = self.index_record_at(at, op::MESSAGE_INDEX, "Message Index")?;
                let mi = codec::dec_message_index(&content, at + 9)?;
                offs.extend(
                    mi.records
                        .iter()
                        .filter(|(t, _)| f.wants_time(*t))
                        .map(|(_, o)| *o),
                );
            }
            let Some(offs) = sorted_unique(offs) else {
                continue;
            };
            plans.push(Plan {
                chunk: ci.clone(),
                offsets: Some(offs),
                field_offsets: None,
            });
        }
        plans.sort_by_key(|p| (p.chunk.message_start_time, p.chunk.chunk_start_offset));
        Ok(plans)
    }

    /// Reads the messages at `offsets` in one chunk. An uncompressed chunk is read record by
    /// record straight from the file; a compressed one is decompressed once.
    fn read_at_offsets(
        &self,
        ci: &ChunkIndex,
        offsets: &[u64],
        warnings: &mut Vec<String>,
    ) -> Result<Vec<(u64, Message)>> {
        let mut out = Vec::with_capacity(offsets.len());
        let table = &self.summary.fields;
        if ci.compression.is_empty() {
            // Index values are untrusted: saturate, and never read past the file.
            let data_start = ci
                .chunk_start_offset
                .saturating_add(9 + 8 + 8 + 8 + 4 + 4 + 8);
            let chunk_end = ci
                .chunk_start_offset
                .saturating_add(ci.chunk_length)
                .min(self.summary.file_size);
            let mut min_next = 0u64;
            for &o in offsets {
                if o < min_next {
                    return Err(McapError::Corrupt {
                        offset: ci.chunk_start_offset,
                        reason: format!("index offset {o} points inside the previous message"),
                    });
                }
                let at = data_start.saturating_add(o);
                let (opc, content) = read_record(&self.src, at, chunk_end)?;
                if opc != op::MESSAGE {
                    return Err(McapError::Corrupt {
                        offset: at,
                        reason: "index points at a record that is not a Message".into(),
                    });
                }
                let (h, data) = codec::dec_message(&content, at + 9)?;
                let next_at = at + 9 + content.len() as u64;
                min_next = o + 9 + content.len() as u64;
                let next = if h.publish_time == SENTINEL && next_at < chunk_end {
                    read_record(&self.src, next_at, chunk_end).ok()
                } else {
                    None
                };
                let (m, _) = pair_fields(
                    h,
                    data,
                    at,
                    next.as_ref().map(|(p, c)| (*p, c.as_slice(), next_at + 9)),
                    table,
                    warnings,
                );
                out.push((o, m));
            }
            return Ok(out);
        }
        let (opc, content) = self.record_at(ci.chunk_start_offset)?;
        if opc != op::CHUNK {
            return Err(McapError::Corrupt {
                offset: ci.chunk_start_offset,
                reason: "chunk index points at a record that is not a Chunk".into(),
            });
        }
        let (_, records) = open_chunk(&content, ci.chunk_start_offset, &self.opts)?;
        let mut min_next = 0u64;
        for &o in offsets {
            if o < min_next {
                return Err(McapError::Corrupt {
                    offset: ci.chunk_start_offset,
                    reason: format!("index offset {o} points inside the previous message"),
                });
            }
            let pos = usize::try_from(o)
                .ok()
                .filter(|p| *p < records.len())
                .ok_or_else(|| McapError::Corrupt {
                    offset: ci.chunk_start_offset,
                    reason: format!("index offset {o} is outside the chunk"),
                })?;
            let mut it = RecordIter::at(&records, pos, 0);
            let rec = it.next().ok_or(McapError::Truncated {
                offset: ci.chunk_start_offset,
                needed: 9,
                available: 0,
            })??;
            if rec.opcode != op::MESSAGE {
                return Err(McapError::Corrupt {
                    offset: ci.chunk_start_offset,
                    reason: format!("index offset {o} is not a Message"),
                });
            }
            min_next = o + 9 + rec.content.len() as u64;
            let (h, data) = codec::dec_message(rec.content, o + 9)?;
            let next = if h.publish_time == SENTINEL {
                it.next().and_then(|r| r.ok())
            } else {
                None
            };
            let (m, _) = pair_fields(
                h,
                data,
                o,
                next.map(|n| (n.opcode, n.content, n.offset as u64 + 9)),
                table,
                warnings,
            );
            out.push((o, m));
        }
        Ok(out)
    }

    fn full_scan(
        &self,
        ci: &ChunkIndex,
        warnings: &mut Vec<String>,
    ) -> Result<Vec<(u64, Message)>> {
        let (opc, content) = self.record_at(ci.chunk_start_offset)?;
        if opc != op::CHUNK {
            return Err(McapError::Corrupt {
                offset: ci.chunk_start_offset,
                reason: "chunk index points at a record that is not a Chunk".into(),
            });
        }
        let (_, records) = open_chunk(&content, ci.chunk_start_offset, &self.opts)?;
        let mut table: FieldTable = self.summary.fields.clone();
        let mut out = Vec::new();
        scan_chunk(&records, &mut table, warnings, |it| {
            if let ChunkItem::Message(o, m) = it {
                out.push((o, m));
            }
        })
        .map_err(|e| McapError::Corrupt {
            offset: ci.chunk_start_offset,
            reason: format!("inside the chunk: {e}"),
        })?;
        Ok(out)
    }

    /// Messages matching `q`, ordered by log time. Without a chunk index (an unchunked or
    /// unfinished file) this falls back to a linear read of the data section.
    pub fn messages(&self, q: &Query) -> Result<MessageStream<'_, R>> {
        let filter = self.resolve(q)?;
        if self.summary.chunk_indexes.is_empty() {
            let lin = LinearReader::new(&self.src, self.opts)?;
            return Ok(MessageStream {
                reader: self,
                filter,
                plans: VecDeque::new(),
                buf: VecDeque::new(),
                linear: Some(lin),
                warnings: Vec::new(),
                chunks_read: 0,
            });
        }
        let plans = self.plan(&filter, q.strategy)?;
        Ok(MessageStream {
            reader: self,
            filter,
            plans: plans.into(),
            buf: VecDeque::new(),
            linear: None,
            warnings: Vec::new(),
            chunks_read: 0,
        })
    }

    /// Reads attachment `i` of the summary's Attachment Index, with its fields (D13).
    pub fn attachment(&self, i: usize) -> Result<AttachmentRead> {
        let ai = self
            .summary
            .attachment_indexes
            .get(i)
            .ok_or_else(|| McapError::InvalidArgument(format!("no attachment #{i}")))?;
        let (opc, content) = self.record_at(ai.offset)?;
        if opc != op::ATTACHMENT {
            return Err(McapError::Corrupt {
                offset: ai.offset,
                reason: "attachment index points at a record that is not an Attachment".into(),
            });
        }
        let a = codec::dec_attachment(&content, ai.offset + 9)?;
        let mut warnings = Vec::new();
        let mut fields = Vec::new();
        if a.create_time == SENTINEL {
            let next = ai.offset + 9 + content.len() as u64;
            match self.record_at(next) {
                Ok((ext_op::ATTACHMENT_FIELDS, c)) => {
                    let af = codec::dec_attachment_fields(&c, next + 9)?;
                    fields = decode_entries(&af.entries, &self.summary.fields, &mut warnings);
                }
                _ => warnings.push(format!(
                    "attachment {:?}: sentinel create_time but no Attachment Fields record",
                    a.name
                )),
            }
        }
        Ok(AttachmentRead {
            attachment: a,
            fields,
            warnings,
        })
    }

    pub fn metadata(&self, i: usize) -> Result<Metadata> {
        let mi = self
            .summary
            .metadata_indexes
            .get(i)
            .ok_or_else(|| McapError::InvalidArgument(format!("no metadata #{i}")))?;
        let (opc, content) = self.record_at(mi.offset)?;
        if opc != op::METADATA {
            return Err(McapError::Corrupt {
                offset: mi.offset,
                reason: "metadata index points at a record that is not Metadata".into(),
            });
        }
        codec::dec_metadata(&content, mi.offset + 9)
    }
}

/// Message offsets in file order, each once; `None` when there are none (the chunk is skipped).
fn sorted_unique(mut offsets: Vec<u64>) -> Option<Vec<u64>> {
    if offsets.is_empty() {
        return None;
    }
    offsets.sort_unstable();
    offsets.dedup();
    Some(offsets)
}
