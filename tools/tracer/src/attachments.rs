//! `tracer attachments list|extract`, through the attachment index.

use std::fs::File;
use std::path::PathBuf;

use tracer_mcap::{IndexedReader, SENTINEL};

use crate::format::{err, field_json, size, time, CliResult};

#[derive(clap::Subcommand)]
pub enum Cmd {
    /// List the attachments (from the summary only).
    List { file: PathBuf },
    /// Write one attachment's data to a file (or `-` for stdout).
    Extract {
        file: PathBuf,
        /// Attachment name (the first with that name).
        #[arg(short, long, conflicts_with = "index")]
        name: Option<String>,
        /// Attachment number as shown by `list`.
        #[arg(short, long)]
        index: Option<usize>,
        /// Output path; default: the attachment's file name in the current directory.
        #[arg(short, long)]
        output: Option<PathBuf>,
    },
}

pub fn run(cmd: Cmd) -> CliResult {
    match cmd {
        Cmd::List { file } => {
            let name = file.display().to_string();
            let r =
                IndexedReader::open(File::open(&file).map_err(err(&name))?).map_err(err(&name))?;
            let s = r.summary();
            if s.attachment_indexes.is_empty() {
                println!("no attachments");
            }
            for (i, a) in s.attachment_indexes.iter().enumerate() {
                let ct = if a.create_time == SENTINEL {
                    "in fields".to_string()
                } else {
                    time(a.create_time)
                };
                println!(
                    "{i:>3}  {}  {}  {}  log {}  created {ct}",
                    a.name,
                    a.media_type,
                    size(a.data_size),
                    time(a.log_time)
                );
            }
            Ok(())
        }
        Cmd::Extract {
            file,
            name,
            index,
            output,
        } => {
            let fname = file.display().to_string();
            let r = IndexedReader::open(File::open(&file).map_err(err(&fname))?)
                .map_err(err(&fname))?;
            let s = r.summary();
            let i = match (index, &name) {
                (Some(i), _) => i,
                (None, Some(n)) => s
                    .attachment_indexes
                    .iter()
                    .position(|a| &a.name == n)
                    .ok_or_else(|| format!("{fname}: no attachment named {n:?}"))?,
                (None, None) => return Err("give --name or --index".into()),
            };
            let got = r.attachment(i).map_err(err(&fname))?;
            for w in &got.warnings {
                eprintln!("tracer attachments: warning: {w}");
            }
            let names: std::collections::HashMap<u16, String> = s
                .fields
                .values()
                .map(|d| (d.record.id, d.record.name.clone()))
                .collect();
            for (id, v) in &got.fields {
                eprintln!(
                    "field {} = {}",
                    names.get(id).cloned().unwrap_or_else(|| format!("#{id}")),
                    field_json(v)
                );
            }
            let out = match output {
                Some(p) => p,
                // Only the last path component: an attachment name must not write elsewhere.
                None => PathBuf::from(
                    std::path::Path::new(&got.attachment.name)
                        .file_name()
                        .ok_or("attachment name is not a file name; give --output")?,
                ),
            };
            if out.as_os_str() == "-" {
                use std::io::Write;
                std::io::stdout()
                    .write_all(&got.attachment.data)
                    .map_err(err("stdout"))?;
            } else {
                std::fs::write(&out, &got.attachment.data)
                    .map_err(err(&out.display().to_string()))?;
                eprintln!(
                    "wrote {} ({})",
                    out.display(),
                    size(got.attachment.data.len() as u64)
                );
            }
            Ok(())
        }
    }
}
