//! `recover`: rebuild a complete file (summary and all indexes) from the readable part of
//! one whose writer died. Everything up to the first unreadable record is kept.

use std::collections::HashMap;
use std::io::Write;

use crate::error::{McapError, Result};
use crate::field::{FieldEncoding, FieldValue};
use crate::io::ReadAt;
use crate::linear::{Item, LinearReader, ReadOptions};
use crate::records::{Attachment, MessageHeader};
use crate::writer::{PublishTimeField, WriteOptions, Writer};

#[derive(Debug, Default, Clone)]
pub struct RecoverReport {
    pub messages: u64,
    pub chunks: u64,
    pub attachments: u64,
    pub metadata: u64,
    pub warnings: Vec<String>,
    /// Where reading stopped and why (None: the data section was complete).
    pub stopped: Option<(u64, String)>,
}

/// Copies every readable record of `src` into a new file written with `opts`, remapping
/// schema, channel and field ids, and finishes it.
pub fn recover<R: ReadAt, W: Write>(src: R, out: W, opts: WriteOptions) -> Result<RecoverReport> {
    recover_with(src, out, opts, ReadOptions::default())
}

/// `recover` with explicit read limits (the fuzz entry uses small ones).
pub fn recover_with<R: ReadAt, W: Write>(
    src: R,
    out: W,
    mut opts: WriteOptions,
    read: ReadOptions,
) -> Result<RecoverReport> {
    // The fields are copied as they were: the writer must not add a publish_time of its own.
    opts.publish_time_field = PublishTimeField::Never;
    let mut lin = LinearReader::new(src, read)?;
    let mut report = RecoverReport::default();
    let mut first = true;
    let mut schemas: HashMap<u16, u16> = HashMap::new();
    let mut channels: HashMap<u16, u16> = HashMap::new();
    let mut fields: HashMap<u16, (u16, String)> = HashMap::new();
    let mut w: Option<Writer<W>> = None;
    let mut out = Some(out);
    let map_fields =
        |fields: &HashMap<u16, (u16, String)>, vals: Vec<(u16, FieldValue)>, dropped: &mut u64| {
            vals.into_iter()
                .filter_map(|(id, v)| match fields.get(&id) {
                    Some((nid, _)) => Some((*nid, v)),
                    None => {
                        *dropped += 1;
                        None
                    }
                })
                .collect::<Vec<_>>()
        };
    let mut dropped_fields = 0u64;
    loop {
        let item = match lin.next() {
            None => break,
            Some(Ok(it)) => it,
            Some(Err(e)) => {
                let at = match &e {
                    McapError::Truncated { offset, .. }
                    | McapError::Corrupt { offset, .. }
                    | McapError::Crc { offset, .. } => *offset,
                    _ => lin.position(),
                };
                report.stopped = Some((at, e.to_string()));
                break;
            }
        };
        if first {
            first = false;
            if let Item::Header(h) = &item {
                opts.profile = h.profile.clone();
            }
        }
        if w.is_none() {
            w = Some(Writer::new(out.take().expect("taken once"), opts.clone())?);
        }
        let wr = w.as_mut().expect("created above");
        match item {
            Item::Header(_) | Item::DataEnd(_) => {}
            Item::Schema(s) => {
                let id = wr.add_schema(&s.name, &s.encoding, &s.data)?;
                schemas.insert(s.id, id);
            }
            Item::Channel(c) => {
                let sid = if c.schema_id == 0 {
                    0
                } else {
                    schemas.get(&c.schema_id).copied().unwrap_or(0)
                };
                let id = wr.add_channel(sid, &c.topic, &c.message_encoding, &c.metadata)?;
                channels.insert(c.id, id);
            }
            Item::Field(f) => {
                match FieldEncoding::from_name(&f.encoding).filter(|e| e.length() == f.length) {
                    Some(enc) => {
                        let indexed = f.indexed() && enc.indexable();
                        let id = wr.add_field(&f.name, enc, indexed)?;
                        fields.insert(f.id, (id, f.name.clone()));
                    }
                    None => report.warnings.push(format!(
                        "field {:?} ({}) cannot be re-declared; its values are dropped",
                        f.name, f.encoding
                    )),
                }
            }
            Item::Message(m) => {
                let Some(ch) = channels.get(&m.channel_id).copied() else {
                    report.warnings.push(format!(
                        "message on undeclared channel {} dropped",
                        m.channel_id
                    ));
                    continue;
                };
                let vals = map_fields(&fields, m.fields, &mut dropped_fields);
                let h = MessageHeader {
                    channel_id: ch,
                    sequence: m.sequence,
                    log_time: m.log_time,
                    publish_time: m.publish_time,
                };
                wr.write_message(&h, &m.data, &vals)?;
                report.messages += 1;
            }
            Item::Attachment(_, a, vals) => {
                let mut vals = map_fields(&fields, vals, &mut dropped_fields);
                let mut create_time = if a.create_time == crate::records::SENTINEL {
                    0
                } else {
                    a.create_time
                };
                if let Some(pos) = vals.iter().position(|(id, _)| {
                    fields
                        .values()
                        .any(|(n, name)| n == id && name == "create_time")
                }) {
                    if let (_, FieldValue::Timestamp(t)) = vals.remove(pos) {
                        create_time = t;
                    }
                }
                wr.attach(&Attachment { create_time, ..a }, &vals)?;
                report.attachments += 1;
            }
            Item::Metadata(m) => {
                wr.write_metadata(&m.name, &m.metadata)?;
                report.metadata += 1;
            }
            Item::ChunkEnd(..) => report.chunks += 1,
            Item::Warning(s) => report.warnings.push(s),
        }
    }
    if dropped_fields > 0 {
        report.warnings.push(format!(
            "{dropped_fields} field values had no declaration and were dropped"
        ));
    }
    match w {
        Some(mut w) => w.finish()?,
        None => {
            return Err(report
                .stopped
                .map_or(McapError::NoSummary, |(offset, reason)| {
                    McapError::Corrupt { offset, reason }
                }));
        }
    }
    Ok(report)
}
