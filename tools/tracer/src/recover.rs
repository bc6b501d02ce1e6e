//! `tracer recover`: rebuild a complete file from the readable part of a broken one.

use std::fs::File;
use std::io::BufWriter;
use std::path::PathBuf;

use indicatif::{ProgressBar, ProgressStyle};
use tracer_mcap::{Compression, ReadAt, WriteOptions};

use crate::format::{err, size, CliResult};

#[derive(clap::Args)]
pub struct Args {
    /// The broken file.
    input: PathBuf,
    /// Where to write the recovered file (must differ from the input).
    output: PathBuf,
    /// Chunk compression of the output.
    #[arg(long, default_value = "zstd", value_parser = ["zstd", "lz4", "none"])]
    compression: String,
}

/// Reports progress as the reader walks the input.
struct Progress<'a> {
    inner: File,
    pb: &'a ProgressBar,
}

impl ReadAt for Progress<'_> {
    fn size(&self) -> std::io::Result<u64> {
        self.inner.size()
    }
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
        self.pb.set_position(offset + buf.len() as u64);
        self.inner.read_exact_at(offset, buf)
    }
}

pub fn run(a: Args) -> CliResult {
    let iname = a.input.display().to_string();
    if a.input
        .canonicalize()
        .ok()
        .is_some_and(|p| a.output.canonicalize().ok() == Some(p))
    {
        return Err("output must differ from input".into());
    }
    let input = File::open(&a.input).map_err(err(&iname))?;
    let total = input.size().map_err(err(&iname))?;
    let out = File::create(&a.output).map_err(err(&a.output.display().to_string()))?;
    let pb = ProgressBar::new(total);
    pb.set_style(
        ProgressStyle::with_template("{bar:40} {bytes}/{total_bytes} {elapsed}")
            .map_err(err("progress"))?,
    );
    let opts = WriteOptions {
        compression: Compression::from_name(&a.compression).unwrap_or_default(),
        ..Default::default()
    };
    let rep = tracer_mcap::recover(
        Progress {
            inner: input,
            pb: &pb,
        },
        BufWriter::new(out),
        opts,
    )
    .map_err(err(&iname))?;
    pb.finish_and_clear();
    for w in &rep.warnings {
        eprintln!("tracer recover: warning: {w}");
    }
    match &rep.stopped {
        Some((off, why)) => eprintln!(
            "tracer recover: input readable up to offset {off} of {}: {why}",
            size(total)
        ),
        None => eprintln!("tracer recover: the input's data section was complete"),
    }
    println!(
        "recovered {} messages in {} chunks, {} attachments, {} metadata into {}",
        rep.messages,
        rep.chunks,
        rep.attachments,
        rep.metadata,
        a.output.display()
    );
    Ok(())
}
