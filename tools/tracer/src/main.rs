#![forbid(unsafe_code)]
//! `tracer`: the rmw_tracer command line (docs/cli.md). `info`, `cat`, `attachments` and
//! `recover` work on MCAP files through tracer-mcap; `record`, `graph`, `echo` and `serve` are
//! libtracer participants of the host graph (participant.rs).

mod attachments;
mod cat;
mod convert;
mod decoder;
mod echo;
mod format;
mod graph;
mod info;
mod keystore;
mod participant;
mod record;
mod recover;
mod serve;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "tracer",
    version,
    about = "rmw_tracer tools: record, inspect and repair MCAP files; show the live ROS graph and its topics"
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
    /// Rewrite a file; --plain: without message fields, true publish times, for any MCAP tool.
    Convert(convert::Args),
    /// Record ROS topics to MCAP as a libtracer participant (stop with Ctrl-C).
    Record(record::Args),
    /// The ROS graph: nodes, topics, services, endpoints with QoS, and the edges between peers.
    Graph(graph::Args),
    /// Print the messages of a live topic, decoded from its schema (JSON or YAML-like).
    Echo(echo::Args),
    /// Serve the live graph over the Foxglove WebSocket protocol (Foxglove Studio, no bridge).
    Serve(serve::Args),
    /// SROS2 keystores for authenticated links between hosts: a CA, enclave certificates.
    Keystore {
        #[command(subcommand)]
        cmd: keystore::Cmd,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let r = match cli.cmd {
        Cmd::Info(a) => info::run(a),
        Cmd::Cat(a) => cat::run(a),
        Cmd::Attachments { cmd } => attachments::run(cmd),
        Cmd::Recover(a) => recover::run(a),
        Cmd::Convert(a) => convert::run(a),
        Cmd::Record(a) => record::run(a),
        Cmd::Graph(a) => graph::run(a),
        Cmd::Echo(a) => echo::run(a),
        Cmd::Serve(a) => serve::run(a),
        Cmd::Keystore { cmd } => keystore::run(cmd),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tracer: {e}");
            ExitCode::FAILURE
        }
    }
}
