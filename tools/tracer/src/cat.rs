//! `tracer cat`: messages as JSON lines, through the indexed reader (topics and time window
//! by the chunk index, a field range by the field indexes).

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;

use indicatif::{ProgressBar, ProgressStyle};
use serde_json::{json, Map, Value};
use tracer_mcap::{Counting, FieldRange, IndexedReader, Message, Query, ScanStrategy};

use crate::format::{b64, err, field_json, parse_bound, parse_time, CliResult};

#[derive(Clone, Copy, clap::ValueEnum)]
enum Payload {
    /// std_msgs/msg/String decoded to its text, anything else base64.
    Auto,
    Base64,
    Hex,
    None,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum Strategy {
    Auto,
    Full,
    Index,
}

#[derive(clap::Args)]
pub struct Args {
    /// The MCAP file.
    file: PathBuf,
    /// Only these topics (repeatable).
    #[arg(short, long = "topic")]
    topics: Vec<String>,
    /// Log time from (inclusive): nanoseconds, or seconds like 12.5 / 12s.
    #[arg(long)]
    start: Option<String>,
    /// Log time to (exclusive).
    #[arg(long)]
    end: Option<String>,
    /// Filter by a field (seeks when the field is indexed).
    #[arg(long)]
    field: Option<String>,
    /// Lower bound of --field (inclusive), in the field's encoding.
    #[arg(long, requires = "field")]
    min: Option<String>,
    /// Upper bound of --field (inclusive).
    #[arg(long, requires = "field")]
    max: Option<String>,
    #[arg(long, value_enum, default_value = "auto")]
    payload: Payload,
    /// How chunks are read (auto: index scan when under half of a chunk's channels are wanted).
    #[arg(long, value_enum, default_value = "auto")]
    strategy: Strategy,
    /// Print to stderr how many bytes of the file were read.
    #[arg(long)]
    io_stats: bool,
}

/// CDR std_msgs/String: 4-byte encapsulation, uint32 length with NUL, bytes, NUL.
fn cdr_string(d: &[u8]) -> Option<String> {
    if d.len() < 8 || d[0] != 0 || d[1] != 1 {
        return None;
    }
    let n = u32::from_le_bytes(d[4..8].try_into().ok()?) as usize;
    let body = d.get(8..8 + n)?;
    let (text, nul) = body.split_at(n.checked_sub(1)?);
    (nul == [0])
        .then(|| String::from_utf8(text.to_vec()).ok())
        .flatten()
}

pub fn run(a: Args) -> CliResult {
    let name = a.file.display().to_string();
    let src = Counting::new(File::open(&a.file).map_err(err(&name))?);
    let (r, broken) = IndexedReader::open_lenient(&src).map_err(err(&name))?;
    if let Some(e) = broken {
        eprintln!("tracer cat: warning: {name}: {e}; reading the data section linearly");
    }
    let s = r.summary();
    let field = match &a.field {
        None => None,
        Some(f) => {
            let def = s
                .field_by_name(f)
                .ok_or_else(|| format!("{name}: no field named {f:?}"))?;
            let enc = def.encoding.ok_or_else(|| {
                format!("field {f:?} has unknown encoding {}", def.record.encoding)
            })?;
            Some(FieldRange {
                name: f.clone(),
                min: a.min.as_deref().map(|v| parse_bound(enc, v)).transpose()?,
                max: a.max.as_deref().map(|v| parse_bound(enc, v)).transpose()?,
            })
        }
    };
    for t in &a.topics {
        if s.channel_by_topic(t).is_empty() {
            eprintln!("tracer cat: warning: no topic {t:?} in {name}");
        }
    }
    let q = Query {
        topics: if a.topics.is_empty() {
            None
        } else {
            Some(a.topics.clone())
        },
        start: a.start.as_deref().map(parse_time).transpose()?,
        end: a.end.as_deref().map(parse_time).transpose()?,
        field,
        strategy: match a.strategy {
            Strategy::Auto => ScanStrategy::Auto,
            Strategy::Full => ScanStrategy::Full,
            Strategy::Index => ScanStrategy::Index,
        },
    };
    let names: HashMap<u16, String> = s
        .fields
        .values()
        .map(|d| (d.record.id, d.record.name.clone()))
        .collect();
    let mut stream = r.messages(&q).map_err(err(&name))?;
    let pb = ProgressBar::new(stream.chunks_left() as u64);
    pb.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} chunks {elapsed}")
            .map_err(err("progress"))?,
    );
    let mut out = BufWriter::new(std::io::stdout().lock());
    let total = stream.chunks_left() as u64;
    let mut n = 0u64;
    while let Some(m) = stream.next() {
        let m = m.map_err(err(&name))?;
        pb.set_position(total - stream.chunks_left() as u64);
        let line = to_json(&m, s, &names, a.payload);
        if writeln!(out, "{line}").is_err() {
            break; // stdout closed (e.g. piped into head)
        }
        n += 1;
        for w in stream.take_warnings() {
            pb.suspend(|| eprintln!("tracer cat: warning: {w}"));
        }
    }
    for w in stream.take_warnings() {
        eprintln!("tracer cat: warning: {w}");
    }
    let _ = out.flush();
    pb.finish_and_clear();
    if a.io_stats {
        eprintln!(
            "{n} messages; read {} bytes in {} reads of a {}-byte file",
            src.bytes_read(),
            src.reads(),
            s.file_size
        );
    }
    Ok(())
}

fn to_json(
    m: &Message,
    s: &tracer_mcap::Summary,
    names: &HashMap<u16, String>,
    payload: Payload,
) -> Value {
    let ch = s.channels.get(&m.channel_id);
    let topic = ch.map_or("", |c| c.topic.as_str());
    let schema = ch
        .and_then(|c| s.schemas.get(&c.schema_id))
        .map_or("", |x| x.name.as_str());
    let mut fields = Map::new();
    for (id, v) in &m.fields {
        fields.insert(
            names.get(id).cloned().unwrap_or_else(|| format!("#{id}")),
            field_json(v),
        );
    }
    let mut o = json!({
        "topic": topic,
        "channel_id": m.channel_id,
        "sequence": m.sequence,
        "log_time": m.log_time,
        "publish_time": m.publish_time,
        "fields": fields,
    });
    let obj = o.as_object_mut().expect("object literal");
    match payload {
        Payload::None => {}
        Payload::Hex => {
            obj.insert(
                "payload_hex".into(),
                json!(m
                    .data
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect::<String>()),
            );
        }
        Payload::Base64 => {
            obj.insert("payload_base64".into(), json!(b64(&m.data)));
        }
        Payload::Auto => match (schema == "std_msgs/msg/String")
            .then(|| cdr_string(&m.data))
            .flatten()
        {
            Some(text) => {
                obj.insert("data".into(), json!({ "data": text }));
            }
            None => {
                obj.insert("payload_base64".into(), json!(b64(&m.data)));
            }
        },
    }
    o
}

#[cfg(test)]
mod tests {
    #[test]
    fn cdr_string_decodes_only_well_formed() {
        let mut v = vec![0, 1, 0, 0, 3, 0, 0, 0, b'h', b'i', 0];
        assert_eq!(super::cdr_string(&v).as_deref(), Some("hi"));
        v[10] = 1;
        assert_eq!(super::cdr_string(&v), None);
        assert_eq!(super::cdr_string(&[0, 1, 0, 0, 0, 0, 0, 0]), None);
    }
}
