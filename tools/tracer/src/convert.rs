//! `tracer convert IN OUT [--plain]`: rewrite a file, in log-time order, through the writer.
//!
//! `--plain` writes a file without the message-fields extension: each message's
//! `publish_time` is the effective one (its `publish_time` field, docs/mcap.md), no Field,
//! Message Fields, Field Index or Field Chunk Index record is written, and an attachment's
//! `create_time` is its `create_time` field. Other fields are dropped; which ones, and how many
//! values, goes into a metadata record `tracer.convert` so the file says what it lost. Schemas,
//! channels (with their metadata: offered QoS), attachments and metadata are kept. Without
//! `--plain` the fields are copied (a re-compression, or a rewrite of an old file).

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::BufWriter;
use std::path::PathBuf;

use indicatif::{ProgressBar, ProgressStyle};
use tracer_mcap::{
    Compression, FieldValue, IndexedReader, MessageHeader, PublishTimeField, Query, WriteOptions,
    Writer,
};

use crate::format::{err, CliResult};

#[derive(clap::Args)]
pub struct Args {
    /// The input file (complete: a file whose writer died needs `tracer recover` first).
    input: PathBuf,
    /// The output file (must differ from the input).
    output: PathBuf,
    /// Without the message-fields extension: true publish times, fields dropped.
    #[arg(long)]
    plain: bool,
    /// Chunk compression of the output.
    #[arg(long, default_value = "zstd", value_parser = ["zstd", "lz4", "none"])]
    compression: String,
}

pub fn run(a: Args) -> CliResult {
    let iname = a.input.display().to_string();
    let oname = a.output.display().to_string();
    if a.input
        .canonicalize()
        .ok()
        .is_some_and(|p| a.output.canonicalize().ok() == Some(p))
    {
        return Err("the output must differ from the input".into());
    }
    let src = File::open(&a.input).map_err(err(&iname))?;
    let (r, broken) = IndexedReader::open_lenient(&src).map_err(err(&iname))?;
    if let Some(e) = broken {
        return Err(format!(
            "{iname}: {e}: not a complete file; `tracer recover {iname} <fixed.mcap>` first"
        ));
    }
    let s = r.summary();
    let out = File::create(&a.output).map_err(err(&oname))?;
    let opts = WriteOptions {
        compression: Compression::from_name(&a.compression).unwrap_or_default(),
        // Plain: nothing added. Otherwise the input's publish_time field is copied as it is.
        publish_time_field: PublishTimeField::Never,
        ..Default::default()
    };
    let mut w = Writer::new(BufWriter::new(out), opts).map_err(err(&oname))?;
    let werr = |e: tracer_mcap::McapError| format!("{oname}: {e}");

    let mut schemas = HashMap::new();
    for x in s.schemas.values() {
        schemas.insert(
            x.id,
            w.add_schema(&x.name, &x.encoding, &x.data).map_err(werr)?,
        );
    }
    let mut channels = HashMap::new();
    for c in s.channels.values() {
        let sid = match schemas.get(&c.schema_id) {
            Some(id) => *id,
            None if c.schema_id == 0 => 0,
            None => {
                return Err(format!(
                    "{iname}: channel {} names schema {} which is not in the file",
                    c.id, c.schema_id
                ))
            }
        };
        channels.insert(
            c.id,
            w.add_channel(sid, &c.topic, &c.message_encoding, &c.metadata)
                .map_err(werr)?,
        );
    }
    // Field ids of the output (fields kept), by the input's id.
    let mut field_ids: HashMap<u16, u16> = HashMap::new();
    if !a.plain {
        for d in s.fields.values() {
            let Some(enc) = d.encoding else {
                continue; // an encoding we do not know cannot be written again
            };
            field_ids.insert(
                d.record.id,
                w.add_field(&d.record.name, enc, d.record.indexed())
                    .map_err(werr)?,
            );
        }
    }
    let names: HashMap<u16, &str> = s
        .fields
        .values()
        .map(|d| (d.record.id, d.record.name.as_str()))
        .collect();
    let mut dropped: BTreeMap<String, u64> = BTreeMap::new();

    let total = s.statistics.as_ref().map_or(0, |st| st.message_count);
    let pb = ProgressBar::new(total);
    pb.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} messages {elapsed} (eta {eta})")
            .map_err(err("progress"))?,
    );
    let mut stream = r.messages(&Query::default()).map_err(err(&iname))?;
    let mut n = 0u64;
    while let Some(m) = stream.next() {
        let m = m.map_err(err(&iname))?;
        let Some(&ch) = channels.get(&m.channel_id) else {
            return Err(format!(
                "{iname}: a message of channel {} which is not in the summary",
                m.channel_id
            ));
        };
        let mut fields: Vec<(u16, FieldValue)> = Vec::new();
        for (id, v) in &m.fields {
            match field_ids.get(id) {
                Some(out_id) if !matches!(v, FieldValue::Raw(_)) => {
                    fields.push((*out_id, v.clone()))
                }
                _ => {
                    let name = names
                        .get(id)
                        .map_or_else(|| format!("#{id}"), |n| n.to_string());
                    if !(a.plain && name == "publish_time") {
                        *dropped.entry(name).or_default() += 1;
                    }
                }
            }
        }
        fields.sort_by_key(|(id, _)| *id);
        // The effective publish time; the writer puts the sentinel in when fields follow
        // (then the input's publish_time field, copied, carries it).
        let header = MessageHeader {
            channel_id: ch,
            sequence: m.sequence,
            log_time: m.log_time,
            publish_time: m.publish_time,
        };
        w.write_message(&header, &m.data, &fields).map_err(werr)?;
        n += 1;
        if n & 1023 == 0 {
            pb.set_position(n);
        }
        for warn in stream.take_warnings() {
            pb.suspend(|| eprintln!("tracer convert: warning: {iname}: {warn}"));
        }
    }
    pb.finish_and_clear();
    for i in 0..s.attachment_indexes.len() {
        let at = r.attachment(i).map_err(err(&iname))?;
        let mut att = at.attachment;
        let create = at
            .fields
            .iter()
            .find_map(|(id, v)| match (names.get(id), v) {
                (Some(&"create_time"), FieldValue::Timestamp(t)) => Some(*t),
                _ => None,
            });
        let fields: Vec<(u16, FieldValue)> = if a.plain {
            att.create_time = create.unwrap_or(att.log_time);
            Vec::new()
        } else {
            at.fields
                .iter()
                .filter_map(|(id, v)| field_ids.get(id).map(|o| (*o, v.clone())))
                .collect()
        };
        if a.plain && fields.is_empty() && att.create_time == u64::MAX {
            att.create_time = att.log_time;
        }
        w.attach(&att, &fields).map_err(werr)?;
    }
    for i in 0..s.metadata_indexes.len() {
        let md = r.metadata(i).map_err(err(&iname))?;
        w.write_metadata(&md.name, &md.metadata).map_err(werr)?;
    }
    if a.plain {
        let mut meta = BTreeMap::new();
        meta.insert("source".to_string(), iname.clone());
        meta.insert(
            "publish_time".to_string(),
            "from the publish_time field".to_string(),
        );
        for (name, count) in &dropped {
            meta.insert(format!("dropped_field.{name}"), count.to_string());
        }
        w.write_metadata("tracer.convert", &meta).map_err(werr)?;
    }
    w.finish().map_err(werr)?;
    let kept = if a.plain {
        "plain, no message fields".to_string()
    } else {
        format!("{} fields kept", field_ids.len())
    };
    println!("converted {n} messages into {oname} ({kept})");
    if a.plain && !dropped.is_empty() {
        let d: Vec<String> = dropped.iter().map(|(k, v)| format!("{k} ({v})")).collect();
        println!("  dropped fields: {}", d.join(", "));
    }
    Ok(())
}
