//! `tracer info`: the rosbag-info-style summary (seed 002), from the footer and summary
//! section only: no chunk is read.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::PathBuf;

use tracer_mcap::{Counting, IndexedReader};

use crate::format::{duration, err, raw_bound, size, time, CliResult};

#[derive(clap::Args)]
pub struct Args {
    /// The MCAP file.
    file: PathBuf,
    /// Also print how many bytes of the file were read to produce the summary.
    #[arg(long)]
    io_stats: bool,
}

pub fn run(a: Args) -> CliResult {
    let f = File::open(&a.file).map_err(err(&a.file.display().to_string()))?;
    let src = Counting::new(f);
    let r = IndexedReader::open(&src).map_err(err(&a.file.display().to_string()))?;
    let s = r.summary();
    let mut out = String::new();
    let line = |out: &mut String, k: &str, v: String| {
        out.push_str(&format!("{:<14}{v}\n", format!("{k}:")))
    };
    line(&mut out, "path", a.file.display().to_string());
    if let Some(h) = &s.header {
        line(
            &mut out,
            "profile",
            if h.profile.is_empty() {
                "(none)".into()
            } else {
                h.profile.clone()
            },
        );
        line(&mut out, "library", h.library.clone());
    }
    line(&mut out, "size", size(s.file_size));
    let Some(st) = &s.statistics else {
        out.push_str("no statistics in the summary (an unfinished file? try `tracer recover`)\n");
        print!("{out}");
        return Ok(());
    };
    if st.message_count > 0 {
        line(
            &mut out,
            "duration",
            duration(st.message_end_time - st.message_start_time),
        );
        line(&mut out, "start", time(st.message_start_time));
        line(&mut out, "end", time(st.message_end_time));
    }
    line(&mut out, "messages", st.message_count.to_string());
    if !s.chunk_indexes.is_empty() {
        let mut by: BTreeMap<&str, (u64, u64, u64)> = BTreeMap::new();
        for ci in &s.chunk_indexes {
            let e = by
                .entry(if ci.compression.is_empty() {
                    "none"
                } else {
                    &ci.compression
                })
                .or_default();
            e.0 += 1;
            e.1 += ci.compressed_size;
            e.2 += ci.uncompressed_size;
        }
        let n = s.chunk_indexes.len();
        let comp: Vec<String> = by
            .iter()
            .map(|(k, v)| format!("{k} [{}/{n} chunks]", v.0))
            .collect();
        let (c, u) = by
            .values()
            .fold((0, 0), |acc, v| (acc.0 + v.1, acc.1 + v.2));
        line(&mut out, "chunks", n.to_string());
        line(&mut out, "compression", comp.join(", "));
        let secs = (st.message_end_time.saturating_sub(st.message_start_time)) as f64 / 1e9;
        let rate = |b: u64| {
            if secs > 0.0 {
                format!(" @ {}/s", size((b as f64 / secs) as u64))
            } else {
                String::new()
            }
        };
        line(&mut out, "uncompressed", format!("{}{}", size(u), rate(u)));
        let pct = if u > 0 {
            100.0 * c as f64 / u as f64
        } else {
            100.0
        };
        line(
            &mut out,
            "compressed",
            format!("{}{} ({pct:.2}%)", size(c), rate(c)),
        );
    }
    let mut first = true;
    for sc in s.schemas.values() {
        line_cont(
            &mut out,
            if first { "types" } else { "" },
            format!("{} [{}]", sc.name, sc.encoding),
        );
        first = false;
    }
    // Message counts are per channel; rosbag info shows them per topic.
    let mut topics: BTreeMap<&str, (u64, Vec<String>, Vec<&str>)> = BTreeMap::new();
    for ch in s.channels.values() {
        let e = topics.entry(&ch.topic).or_default();
        e.0 += st.channel_message_counts.get(&ch.id).copied().unwrap_or(0);
        let ty = s
            .schemas
            .get(&ch.schema_id)
            .map_or("(no schema)".to_string(), |x| x.name.clone());
        if !e.1.contains(&ty) {
            e.1.push(ty);
        }
        if !e.2.contains(&ch.message_encoding.as_str()) {
            e.2.push(&ch.message_encoding);
        }
    }
    let w = topics.keys().map(|t| t.len()).max().unwrap_or(0);
    let mut first = true;
    for (t, (n, types, encs)) in &topics {
        line_cont(
            &mut out,
            if first { "topics" } else { "" },
            format!(
                "{t:<w$} {n:>8} msgs : {} [{}]",
                types.join(", "),
                encs.join(", ")
            ),
        );
        first = false;
    }
    let bounds = st.field_value_bounds.clone().unwrap_or_default();
    let mut fields: Vec<_> = s.fields.values().collect();
    fields.sort_by_key(|d| d.record.id);
    let mut first = true;
    for d in fields {
        let indexed = s.field_indexed(d.record.id);
        let mut txt = format!(
            "{:>3} {} : {}{}",
            d.record.id,
            d.record.name,
            d.record.encoding,
            if indexed { ", indexed" } else { "" }
        );
        if let Some((lo, hi)) = bounds.get(&d.record.id) {
            txt.push_str(&format!(
                " [{} .. {}]",
                raw_bound(d.encoding, *lo),
                raw_bound(d.encoding, *hi)
            ));
        }
        line_cont(&mut out, if first { "fields" } else { "" }, txt);
        first = false;
    }
    let mut first = true;
    for ai in &s.attachment_indexes {
        let fields = if ai.create_time == tracer_mcap::SENTINEL {
            ", with fields"
        } else {
            ""
        };
        line_cont(
            &mut out,
            if first { "attachments" } else { "" },
            format!(
                "{} : {}, {}{fields}, log time {}",
                ai.name,
                ai.media_type,
                size(ai.data_size),
                time(ai.log_time)
            ),
        );
        first = false;
    }
    let mut first = true;
    for mi in &s.metadata_indexes {
        line_cont(
            &mut out,
            if first { "metadata" } else { "" },
            mi.name.clone(),
        );
        first = false;
    }
    print!("{out}");
    if a.io_stats {
        println!(
            "{:<14}{} bytes in {} reads ({:.4}% of the file)",
            "read:",
            src.bytes_read(),
            src.reads(),
            100.0 * src.bytes_read() as f64 / s.file_size.max(1) as f64
        );
    }
    Ok(())
}

fn line_cont(out: &mut String, k: &str, v: String) {
    let key = if k.is_empty() {
        String::new()
    } else {
        format!("{k}:")
    };
    out.push_str(&format!("{key:<14}{v}\n"));
}
