//! Benchmarks, side by side in one run:
//! - local write-to-delivery latency, 64 B (into a sink, and into a stream ring then popped);
//! - link round trip between two processes (WRITE out, DELIVERY back over a Unix-socket link)
//!   against a raw Unix-socket ping-pong of the same payload sizes (64 B, 64 KiB, 1 MiB), and
//!   the whole graph path (an edge out, the child's sink, an edge back).
//!
//! `cargo run --release -p libtracer-core --example bench [-- --json] [-- --quick]`
//!
//! All round trips are driven the same way: the reply is received and the next message sent by
//! one thread (for the link, the link's reader thread, inside `on_frame`), so the comparison
//! measures the link's framing, codec and locking, not an extra thread hop. The child process
//! is this binary re-executed with `--child raw|link|graph`.
//!
//! Modules: `measure` (statistics, the timed loop, one round-trip run), `child` (child
//! processes and their sockets), one module per measured path (`local`, `raw`, `link`,
//! `graph`), and `output` (table and JSON).

mod child;
mod graph;
mod link;
mod local;
mod measure;
mod output;
mod raw;

use std::path::{Path, PathBuf};

use measure::{stats, Stats};

/// Results per payload size.
type BySize = Vec<(usize, Stats)>;

const SIZES: [usize; 3] = [64, 64 * 1024, 1024 * 1024];

fn iters(size: usize, quick: bool) -> usize {
    let n = match size {
        s if s <= 1024 => 20_000,
        s if s <= 128 * 1024 => 2_000,
        _ => 300,
    };
    if quick {
        n / 10
    } else {
        n
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--child") {
        let path = PathBuf::from(&args[3]);
        match args[2].as_str() {
            "raw" => raw::child(&path),
            "link" => link::child(&path),
            "graph" => graph::child(&path),
            other => panic!("unknown child role {other}"),
        }
        return;
    }
    let json = args.iter().any(|a| a == "--json");
    let quick = args.iter().any(|a| a == "--quick");

    let local = local::latency(if quick { 20_000 } else { 200_000 });
    let dir = child::bench_dir();
    let (raw, link, graph) = round_trips(&dir, quick);
    let _ = std::fs::remove_dir_all(&dir);

    if json {
        output::print_json(&local, &raw, &link, &graph);
    } else {
        output::print_table(&local, &raw, &link, &graph);
    }
}

/// Raw, link and graph round trips, interleaved in rounds so that a load change on this shared
/// machine hits them alike.
fn round_trips(dir: &Path, quick: bool) -> (BySize, BySize, BySize) {
    const ROUNDS: usize = 10;
    let raw_child = raw::RawChild::start(dir);
    let mut link = link::LinkPing::start(dir);
    let mut graph = graph::GraphPing::start(dir);
    let (mut raw_out, mut link_out, mut graph_out) = (Vec::new(), Vec::new(), Vec::new());
    for size in SIZES {
        let n = iters(size, quick);
        let per_round = n.div_ceil(ROUNDS);
        let mut raw = raw_child.connect(size);
        // Warm every path up (allocations, caches, the socket buffers' sizes).
        let mut scratch = Vec::new();
        raw.run(per_round / 2 + 10, &mut scratch);
        link.run(size, per_round / 2 + 10, &mut scratch);
        graph.run(size, per_round / 2 + 10, &mut scratch);
        let (mut rv, mut lv, mut gv) = (
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
        );
        for _ in 0..ROUNDS {
            raw.run(per_round, &mut rv);
            link.run(size, per_round, &mut lv);
            graph.run(size, per_round, &mut gv);
        }
        raw_out.push((size, stats(rv)));
        link_out.push((size, stats(lv)));
        graph_out.push((size, stats(gv)));
    }
    raw_child.stop();
    link.stop();
    graph.stop();
    (raw_out, link_out, graph_out)
}
