#![forbid(unsafe_code)]
//! `tracer`: the rmw_tracer command line. `info`, `cat`, `attachments` and `recover` work on
//! MCAP files through tracer-mcap; `record` is a libtracer participant (record.rs); `graph`
//! and `bench` are not built yet.

mod attachments;
mod cat;
mod decoder;
mod format;
mod info;
mod record;
mod recover;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "tracer",
    version,
    about = "rmw_tracer tools: inspect, read and repair MCAP recordings"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Summary of an MCAP file (rosbag-info style), read from the summary section only.
    Info(info::Args),
    /// Print messages as JSON lines, filtered by topic, time window and field range.
    Cat(cat::Args),
    /// List or extract attachments through the attachment index.
    Attachments {
        #[command(subcommand)]
        cmd: attachments::Cmd,
    },
    /// Rebuild the summary and indexes of a file whose writer died.
    Recover(recover::Args),
    /// Record ROS topics to MCAP as a libtracer participant (stop with Ctrl-C).
    Record(record::Args),
    /// Show the libtracer graph (not built yet).
    Graph,
    /// Benchmarks of the libtracer graph (not built yet).
    Bench,
}

fn not_built(verb: &str) -> ExitCode {
    eprintln!("tracer {verb}: needs the libtracer participant, not built yet");
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let r = match cli.cmd {
        Cmd::Info(a) => info::run(a),
        Cmd::Cat(a) => cat::run(a),
        Cmd::Attachments { cmd } => attachments::run(cmd),
        Cmd::Recover(a) => recover::run(a),
        Cmd::Record(a) => record::run(a),
        Cmd::Graph => return not_built("graph"),
        Cmd::Bench => return not_built("bench"),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tracer: {e}");
            ExitCode::FAILURE
        }
    }
}
