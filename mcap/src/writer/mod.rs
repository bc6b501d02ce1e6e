//! The MCAP writer: chunked (zstd, lz4, none) or unchunked, with message, field, chunk,
//! attachment and metadata indexes, statistics and summary offsets.
//!
//! Failure model: the first I/O error poisons the writer (every later call returns
//! `Poisoned`), `finish` is idempotent, `Drop` finishes. Each chunk goes out as complete
//! records followed by a flush, so a process that dies leaves a data section that a linear
//! reader (and `recover`) can read up to the last complete chunk.

mod chunk;
mod summary;

use std::collections::{BTreeMap, HashMap};
use std::io::Write;

use crate::codec;
use crate::compression::Compression;
use crate::error::{McapError, Result};
use crate::field::{encode_entries, FieldEncoding, FieldValue};
use crate::records::*;

/// When the writer adds a `publish_time` field itself (D15).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PublishTimeField {
    /// Only on messages that carry fields and whose publish time differs from log time.
    #[default]
    WhenFieldsDiffer,
    /// On every message (makes the publish time seekable when indexed).
    Always,
    /// Never: the caller adds it if it wants it.
    Never,
}

#[derive(Debug, Clone)]
pub struct WriteOptions {
    pub profile: String,
    pub library: String,
    pub compression: Compression,
    /// None writes an unchunked file (no message index, no chunk index).
    pub chunk_size: Option<u64>,
    pub publish_time_field: PublishTimeField,
    /// Index the automatic `publish_time` field.
    pub index_publish_time: bool,
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions {
            profile: "ros2".into(),
            library: concat!("tracer-mcap ", env!("CARGO_PKG_VERSION")).into(),
            compression: Compression::Zstd,
            chunk_size: Some(4 << 20),
            publish_time_field: PublishTimeField::default(),
            index_publish_time: false,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Open,
    Failed,
    Finished,
}

#[derive(Default)]
struct ChunkBuf {
    records: Vec<u8>,
    start: u64,
    end: u64,
    messages: u64,
    msg_index: BTreeMap<u16, Vec<(u64, u64)>>,
    field_index: BTreeMap<(u16, u16), Vec<(u64, u64)>>,
    field_bounds: BTreeMap<u16, (u64, u64)>,
}

pub struct Writer<W: Write> {
    out: Option<W>,
    pos: u64,
    data_crc: crc32fast::Hasher,
    opts: WriteOptions,
    state: State,
    schemas: Vec<Schema>,
    channels: BTreeMap<u16, Channel>,
    fields: BTreeMap<u16, (Field, FieldEncoding)>,
    field_names: HashMap<String, u16>,
    auto_publish_time: Option<u16>,
    chunk: ChunkBuf,
    chunk_indexes: Vec<ChunkIndex>,
    field_chunk_indexes: Vec<FieldChunkIndex>,
    attachment_indexes: Vec<AttachmentIndex>,
    metadata_indexes: Vec<MetadataIndex>,
    stats: Statistics,
    field_bounds: BTreeMap<u16, (u64, u64)>,
    scratch: Vec<u8>,
    compressed: Vec<u8>,
}

fn widen(enc: FieldEncoding, bounds: &mut BTreeMap<u16, (u64, u64)>, id: u16, v: u64) {
    let e = bounds.entry(id).or_insert((v, v));
    if enc.compare_raw(v, e.0).is_lt() {
        e.0 = v;
    }
    if enc.compare_raw(v, e.1).is_gt() {
        e.1 = v;
    }
}

impl<W: Write> Writer<W> {
    pub fn new(out: W, opts: WriteOptions) -> Result<Self> {
        if opts.chunk_size == Some(0) {
            return Err(McapError::InvalidArgument(
                "chunk_size must be > 0 (None = unchunked)".into(),
            ));
        }
        let mut w = Writer {
            out: Some(out),
            pos: 0,
            data_crc: crc32fast::Hasher::new(),
            opts,
            state: State::Open,
            schemas: Vec::new(),
            channels: BTreeMap::new(),
            fields: BTreeMap::new(),
            field_names: HashMap::new(),
            auto_publish_time: None,
            chunk: ChunkBuf::default(),
            chunk_indexes: Vec::new(),
            field_chunk_indexes: Vec::new(),
            attachment_indexes: Vec::new(),
            metadata_indexes: Vec::new(),
            stats: Statistics::default(),
            field_bounds: BTreeMap::new(),
            scratch: Vec::new(),
            compressed: Vec::new(),
        };
        let mut head = MAGIC.to_vec();
        codec::header(
            &mut head,
            &Header {
                profile: w.opts.profile.clone(),
                library: w.opts.library.clone(),
            },
        );
        w.emit(&head)?;
        Ok(w)
    }

    /// Bytes written so far.
    pub fn position(&self) -> u64 {
        self.pos
    }

    fn check(&self) -> Result<()> {
        match self.state {
            State::Open => Ok(()),
            State::Failed => Err(McapError::Poisoned),
            State::Finished => Err(McapError::Finished),
        }
    }

    fn emit(&mut self, bytes: &[u8]) -> Result<()> {
        let out = self.out.as_mut().ok_or(McapError::Poisoned)?;
        if let Err(e) = out.write_all(bytes) {
            self.state = State::Failed;
            return Err(e.into());
        }
        self.data_crc.update(bytes);
        self.pos += bytes.len() as u64;
        Ok(())
    }

    /// Writes a declaration record into the current stream: the open chunk, or the data
    /// section when unchunked (D12: declared before first use, like Channels).
    fn declare(&mut self, f: impl FnOnce(&mut Vec<u8>)) -> Result<()> {
        if self.opts.chunk_size.is_some() {
            f(&mut self.chunk.records);
            Ok(())
        } else {
            let mut buf = std::mem::take(&mut self.scratch);
            buf.clear();
            f(&mut buf);
            let r = self.emit(&buf);
            self.scratch = buf;
            r
        }
    }

    /// Registers a schema; identical content returns the same id.
    pub fn add_schema(&mut self, name: &str, encoding: &str, data: &[u8]) -> Result<u16> {
        self.check()?;
        if let Some(s) = self
            .schemas
            .iter()
            .find(|s| s.name == name && s.encoding == encoding && s.data == data)
        {
            return Ok(s.id);
        }
        let id = u16::try_from(self.schemas.len() + 1)
            .map_err(|_| McapError::InvalidArgument("too many schemas".into()))?;
        let s = Schema {
            id,
            name: name.into(),
            encoding: encoding.into(),
            data: data.to_vec(),
        };
        self.declare(|o| codec::schema(o, &s))?;
        self.schemas.push(s);
        Ok(id)
    }

    /// Registers a channel; identical content returns the same id. `schema_id` 0 = none.
    pub fn add_channel(
        &mut self,
        schema_id: u16,
        topic: &str,
        message_encoding: &str,
        metadata: &BTreeMap<String, String>,
    ) -> Result<u16> {
        self.check()?;
        if schema_id != 0 && !self.schemas.iter().any(|s| s.id == schema_id) {
            return Err(McapError::InvalidArgument(format!(
                "schema {schema_id} was never added"
            )));
        }
        if let Some(c) = self.channels.values().find(|c| {
            c.schema_id == schema_id
                && c.topic == topic
                && c.message_encoding == message_encoding
                && &c.metadata == metadata
        }) {
            return Ok(c.id);
        }
        let id = u16::try_from(self.channels.len() + 1)
            .map_err(|_| McapError::InvalidArgument("too many channels".into()))?;
        let c = Channel {
            id,
            schema_id,
            topic: topic.into(),
            message_encoding: message_encoding.into(),
            metadata: metadata.clone(),
        };
        self.declare(|o| codec::channel(o, &c))?;
        self.channels.insert(id, c);
        Ok(id)
    }

    /// Declares a field (D2: a name maps to one id; re-registering with another encoding or
    /// index flag is an error). Only 64-bit orderable encodings may be indexed.
    pub fn add_field(&mut self, name: &str, encoding: FieldEncoding, indexed: bool) -> Result<u16> {
        self.check()?;
        if indexed && !encoding.indexable() {
            return Err(McapError::InvalidArgument(format!(
                "field {name:?}: encoding {} cannot be indexed",
                encoding.name()
            )));
        }
        if let Some(id) = self.field_names.get(name) {
            let (f, e) = &self.fields[id];
            if *e != encoding || f.indexed() != indexed {
                return Err(McapError::InvalidArgument(format!(
                    "field {name:?} already declared as {} (indexed: {})",
                    e.name(),
                    f.indexed()
                )));
            }
            return Ok(*id);
        }
        let id = u16::try_from(self.fields.len() + 1)
            .map_err(|_| McapError::InvalidArgument("too many fields".into()))?;
        let f = Field {
            id,
            name: name.into(),
            encoding: encoding.name().into(),
            length: encoding.length(),
            flags: Some(if indexed { FIELD_FLAG_INDEXED } else { 0 }),
        };
        self.declare(|o| codec::field(o, &f))?;
        self.fields.insert(id, (f, encoding));
        self.field_names.insert(name.into(), id);
        Ok(id)
    }

    /// The field the writer adds itself (D15): an existing timestamp field of that name is
    /// reused whatever its index flag.
    fn auto_field(&mut self, name: &str, indexed: bool) -> Result<u16> {
        match self.field_names.get(name) {
            Some(id) if self.fields[id].1 == FieldEncoding::Timestamp => Ok(*id),
            Some(_) => Err(McapError::InvalidArgument(format!(
                "field {name:?} is declared with an encoding other than timestamp"
            ))),
            None => self.add_field(name, FieldEncoding::Timestamp, indexed),
        }
    }

    pub fn field_id(&self, name: &str) -> Option<u16> {
        self.field_names.get(name).copied()
    }

    fn check_fields(&self, fields: &[(u16, FieldValue)]) -> Result<()> {
        for (i, (id, v)) in fields.iter().enumerate() {
            let Some((f, enc)) = self.fields.get(id) else {
                return Err(McapError::InvalidArgument(format!(
                    "field id {id} was never declared"
                )));
            };
            if v.encoding() != Some(*enc) {
                return Err(McapError::InvalidArgument(format!(
                    "field {:?} is {}, got {v:?}",
                    f.name,
                    enc.name()
                )));
            }
            if fields[..i].iter().any(|(j, _)| j == id) {
                return Err(McapError::InvalidArgument(format!(
                    "field {:?} given twice",
                    f.name
                )));
            }
        }
        Ok(())
    }

    /// Writes one message. With fields, the Message gets the sentinel publish time and a
    /// Message Fields record right after it, in the same chunk (D17).
    pub fn write_message(
        &mut self,
        header: &MessageHeader,
        data: &[u8],
        fields: &[(u16, FieldValue)],
    ) -> Result<()> {
        self.check()?;
        if !self.channels.contains_key(&header.channel_id) {
            return Err(McapError::InvalidArgument(format!(
                "channel {} was never added",
                header.channel_id
            )));
        }
        if header.publish_time == SENTINEL {
            return Err(McapError::InvalidArgument(
                "publish_time u64::MAX is reserved (field sentinel)".into(),
            ));
        }
        self.check_fields(fields)?;
        let add_pt = match self.opts.publish_time_field {
            PublishTimeField::Never => false,
            PublishTimeField::Always => true,
            PublishTimeField::WhenFieldsDiffer => {
                !fields.is_empty() && header.publish_time != header.log_time
            }
        };
        // The automatic publish_time entry is passed beside the caller's fields, so they are
        // never cloned on the hot path.
        let mut extra: Option<(u16, FieldValue)> = None;
        if add_pt {
            let id = match self.auto_publish_time {
                Some(id) => id,
                None => {
                    let id = self.auto_field("publish_time", self.opts.index_publish_time)?;
                    self.auto_publish_time = Some(id);
                    id
                }
            };
            if !fields.iter().any(|(i, _)| *i == id) {
                extra = Some((id, FieldValue::Timestamp(header.publish_time)));
            }
        }
        let has_fields = !fields.is_empty() || extra.is_some();
        let mut h = *header;
        if has_fields {
            h.publish_time = SENTINEL;
        }

        self.stats.message_count += 1;
        if self.stats.message_count == 1 {
            self.stats.message_start_time = h.log_time;
            self.stats.message_end_time = h.log_time;
        } else {
            self.stats.message_start_time = self.stats.message_start_time.min(h.log_time);
            self.stats.message_end_time = self.stats.message_end_time.max(h.log_time);
        }
        *self
            .stats
            .channel_message_counts
            .entry(h.channel_id)
            .or_insert(0) += 1;

        let Some(limit) = self.opts.chunk_size else {
            let mut buf = std::mem::take(&mut self.scratch);
            buf.clear();
            codec::message(&mut buf, &h, data);
            if has_fields {
                codec::message_fields_from(&mut buf, h.channel_id, fields, extra.as_ref());
            }
            let r = self.emit(&buf);
            self.scratch = buf;
            return r;
        };

        let c = &mut self.chunk;
        let offset = c.records.len() as u64;
        c.records.reserve(data.len() + 31);
        codec::message(&mut c.records, &h, data);
        if has_fields {
            codec::message_fields_from(&mut c.records, h.channel_id, fields, extra.as_ref());
        }
        if c.messages == 0 {
            c.start = h.log_time;
            c.end = h.log_time;
        } else {
            c.start = c.start.min(h.log_time);
            c.end = c.end.max(h.log_time);
        }
        c.messages += 1;
        c.msg_index
            .entry(h.channel_id)
            .or_default()
            .push((h.log_time, offset));
        for (id, v) in fields.iter().chain(extra.iter()) {
            let (f, enc) = &self.fields[id];
            if !f.indexed() {
                continue;
            }
            let key = v
                .index_key()
                .expect("indexed fields have indexable encodings");
            c.field_index
                .entry((*id, h.channel_id))
                .or_default()
                .push((key, offset));
            widen(*enc, &mut c.field_bounds, *id, key);
            widen(*enc, &mut self.field_bounds, *id, key);
        }
        if c.records.len() as u64 >= limit {
            self.close_chunk()?;
        }
        Ok(())
    }

    fn flush_out(&mut self) -> Result<()> {
        let out = self.out.as_mut().ok_or(McapError::Poisoned)?;
        if let Err(e) = out.flush() {
            self.state = State::Failed;
            return Err(e.into());
        }
        Ok(())
    }

    /// Writes an attachment (never inside a chunk). With fields, `create_time` becomes the
    /// sentinel and an Attachment Fields record follows; a non-zero true create time is
    /// carried as a `create_time` field.
    pub fn attach(&mut self, a: &Attachment, fields: &[(u16, FieldValue)]) -> Result<()> {
        self.check()?;
        if a.create_time == SENTINEL {
            return Err(McapError::InvalidArgument(
                "create_time u64::MAX is reserved (field sentinel)".into(),
            ));
        }
        self.check_fields(fields)?;
        let mut fields = fields.to_vec();
        if !fields.is_empty() && a.create_time != 0 {
            let id = self.auto_field("create_time", false)?;
            if !fields.iter().any(|(i, _)| *i == id) {
                fields.push((id, FieldValue::Timestamp(a.create_time)));
            }
        }
        // A Field declared just now sits in the open chunk; it must precede its first use.
        if !fields.is_empty() {
            self.close_chunk()?;
        }
        let mut rec = Attachment {
            log_time: a.log_time,
            create_time: a.create_time,
            name: a.name.clone(),
            media_type: a.media_type.clone(),
            data: Vec::new(),
        };
        if !fields.is_empty() {
            rec.create_time = SENTINEL;
        }
        rec.data = a.data.clone();
        let offset = self.pos;
        let mut buf = Vec::with_capacity(a.data.len() + 64);
        codec::attachment(&mut buf, &rec);
        let length = buf.len() as u64;
        if !fields.is_empty() {
            codec::attachment_fields(
                &mut buf,
                &AttachmentFields {
                    entries: encode_entries(&fields),
                },
            );
        }
        self.emit(&buf)?;
        self.attachment_indexes.push(AttachmentIndex {
            offset,
            length,
            log_time: rec.log_time,
            create_time: rec.create_time,
            data_size: rec.data.len() as u64,
            name: rec.name,
            media_type: rec.media_type,
        });
        Ok(())
    }

    pub fn write_metadata(
        &mut self,
        name: &str,
        metadata: &BTreeMap<String, String>,
    ) -> Result<()> {
        self.check()?;
        let offset = self.pos;
        let mut buf = Vec::new();
        codec::metadata(
            &mut buf,
            &Metadata {
                name: name.into(),
                metadata: metadata.clone(),
            },
        );
        self.emit(&buf)?;
        self.metadata_indexes.push(MetadataIndex {
            offset,
            length: buf.len() as u64,
            name: name.into(),
        });
        Ok(())
    }

    /// Closes the open chunk and flushes the output, so everything so far is on disk as
    /// complete records.
    pub fn flush(&mut self) -> Result<()> {
        self.check()?;
        self.close_chunk()?;
        self.flush_out()
    }

    /// Writes Data End, the summary, the summary offsets and the footer. Idempotent.
    pub fn finish(&mut self) -> Result<()> {
        match self.state {
            State::Finished => return Ok(()),
            State::Failed => return Err(McapError::Poisoned),
            State::Open => {}
        }
        self.close_chunk()?;
        let crc = self.data_crc.clone().finalize();
        let mut de = Vec::new();
        codec::data_end(
            &mut de,
            &DataEnd {
                data_section_crc: crc,
            },
        );
        self.emit(&de)?;

        let summary_start = self.pos;
        let tail = self.summary_bytes(summary_start);
        self.emit(&tail)?;
        self.flush_out()?;
        self.state = State::Finished;
        Ok(())
    }

    /// Finishes and returns the output.
    pub fn into_inner(mut self) -> Result<W> {
        self.finish()?;
        Ok(self.out.take().expect("present until into_inner"))
    }
}

impl<W: Write> Drop for Writer<W> {
    fn drop(&mut self) {
        if self.state == State::Open && self.out.is_some() {
            let _ = self.finish();
        }
    }
}
