//! `tracer cat`: messages as JSON lines, through the indexed reader (topics and time window
//! by the chunk index, a field range by the field indexes).

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;

use indicatif::{ProgressBar, ProgressStyle};
use serde_json::{json, Map, Value};
use tracer_mcap::{Counting, FieldRange, IndexedReader, Message, Query, ScanStrategy};

use ros2msg::Schema;

use crate::decoder::{decode, parse_schema};
use crate::format::{b64, err, field_json, parse_bound, parse_time, CliResult};

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Payload {
    /// Decoded with the channel's ros2msg schema into `data`; base64 when it cannot be.
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
    let mut decoders = Decoders::default();
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
        let mut line = to_json(&m, s, &names, a.payload);
        if a.payload == Payload::Auto {
            let decoded = decoders.decode(&m, s, &name);
            pb.suspend(|| decoders.report());
            add_decoded(&mut line, &m, decoded);
        }
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
    if decoders.failed > 0 {
        return Err(format!(
            "{name}: {} of {n} messages could not be decoded (see the warnings; their payload is in payload_base64)",
            decoders.failed
        ));
    }
    Ok(())
}

/// One parsed schema per channel, or why there is none (said once).
#[derive(Default)]
struct Decoders {
    channels: HashMap<u16, Result<Schema, String>>,
    pending: Vec<String>,
    failed: u64,
}

impl Decoders {
    fn decode(
        &mut self,
        m: &Message,
        s: &tracer_mcap::Summary,
        file: &str,
    ) -> Result<ros2msg::Value, ()> {
        let ch = s.channels.get(&m.channel_id);
        let topic = ch.map_or("?", |c| c.topic.as_str());
        let Decoders {
            channels,
            pending,
            failed,
        } = self;
        let schema = channels.entry(m.channel_id).or_insert_with(|| {
            let made = match ch.map(|c| (c, s.schemas.get(&c.schema_id))) {
                None => Err(format!("channel {} is not in the summary", m.channel_id)),
                Some((_, None)) => Err("the channel has no schema".to_string()),
                Some((c, Some(x))) => {
                    parse_schema(&x.name, &x.encoding, &c.message_encoding, &x.data)
                }
            };
            if let Err(e) = &made {
                pending.push(format!("{file}: channel {} ({topic}): {e}", m.channel_id));
            }
            made
        });
        let Ok(schema) = schema else {
            return Err(());
        };
        decode(schema, &m.data).map_err(|e| {
            *failed += 1;
            pending.push(format!(
                "{file}: {topic}: message at log time {} (sequence {}): {e}",
                m.log_time, m.sequence
            ));
        })
    }

    fn report(&mut self) {
        for w in self.pending.drain(..) {
            eprintln!("tracer cat: warning: {w}");
        }
    }
}

fn add_decoded(line: &mut Value, m: &Message, decoded: Result<ros2msg::Value, ()>) {
    let obj = line.as_object_mut().expect("object literal");
    match decoded {
        Ok(v) => {
            obj.insert("data".into(), v.to_json());
        }
        Err(()) => {
            obj.insert("payload_base64".into(), json!(b64(&m.data)));
        }
    }
}

fn to_json(
    m: &Message,
    s: &tracer_mcap::Summary,
    names: &HashMap<u16, String>,
    payload: Payload,
) -> Value {
    let ch = s.channels.get(&m.channel_id);
    let topic = ch.map_or("", |c| c.topic.as_str());
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
        Payload::Auto => {} // added by the caller, which keeps the parsed schemas
    }
    o
}
