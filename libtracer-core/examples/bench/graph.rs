//! The whole graph path, not just the link: a write at `/out` -> remote edge -> the child's
//! sink writes `/back` -> remote edge -> our sink writes the next `/out`.

use std::io::{BufRead, Read};
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use libtracer_core::{
    DeliveryPolicy, Discovery, Graph, GraphConfig, Meta, Sample, StreamOptions, Vertex,
};
use parking_lot::{Condvar, Mutex};

use crate::child;
use crate::measure::Run;

/// A graph that finds its peers in the bench directory.
fn host_graph(name: &str, dir: &Path) -> Graph {
    Graph::new(GraphConfig {
        name: Some(name.into()),
        discovery: Discovery::Host,
        rendezvous_dir: Some(dir.to_owned()),
        ..Default::default()
    })
    .unwrap_or_else(|e| panic!("graph {name}: {e}"))
}

/// Child: a graph whose sink `/in` (fed by an edge from the parent's `/out`) writes every
/// sample on to its own `/back`; the parent subscribes `/back`. Exits when stdin closes.
pub fn child(dir: &Path) {
    let g = host_graph("gecho", dir);
    let back = g
        .create_stream("/back", StreamOptions::keep_last(1))
        .expect("back");
    g.create_sink(
        "/in",
        Arc::new(move |s: &Sample| {
            let _ = back.write(s.payload.clone(), s.meta);
        }),
    )
    .expect("sink");
    let edge = g
        .subscribe("/net/gbench/out", "/in", DeliveryPolicy::RELIABLE)
        .expect("subscribe");
    edge.wait_established(Duration::from_secs(10))
        .expect("edge to the parent");
    println!("ready");
    let mut rest = String::new();
    let _ = std::io::stdin().read_to_string(&mut rest);
}

/// Parent: `/out` goes to the child; the child's `/back` comes to the sink `/ret`, which takes
/// the time and writes the next `/out`, on the link's reader thread.
pub struct GraphPing {
    child: Child,
    graph: Graph,
    out: Vertex,
    run: Arc<(Mutex<Run>, Condvar)>,
}

impl GraphPing {
    pub fn start(dir: &Path) -> GraphPing {
        let graph = host_graph("gbench", dir);
        let out = graph
            .create_stream("/out", StreamOptions::keep_last(1))
            .expect("out");
        let mut child = child::command("graph", dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn graph child");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("ready");
        assert_eq!(line.trim(), "ready", "graph child failed");
        let run: Arc<(Mutex<Run>, Condvar)> =
            Arc::new((Mutex::new(Run::default()), Condvar::new()));
        let (r, o) = (run.clone(), out.clone());
        graph
            .create_sink(
                "/ret",
                Arc::new(move |s: &Sample| {
                    let now = Instant::now();
                    let (lock, cv) = &*r;
                    let mut run = lock.lock();
                    if run.arrived(s.payload.len(), now) {
                        run.t0 = Some(Instant::now());
                        o.write(run.payload.clone(), Meta::default())
                            .expect("write /out");
                    } else {
                        cv.notify_all();
                    }
                }),
            )
            .expect("sink");
        graph
            .subscribe("/net/gecho/back", "/ret", DeliveryPolicy::RELIABLE)
            .expect("subscribe")
            .wait_established(Duration::from_secs(10))
            .expect("edge to the child");
        GraphPing {
            child,
            graph,
            out,
            run,
        }
    }

    pub fn run(&mut self, size: usize, n: usize, samples: &mut Vec<u64>) {
        let (lock, cv) = &*self.run;
        let mut run = lock.lock();
        *run = run.next(size, n);
        run.t0 = Some(Instant::now());
        let payload = run.payload.clone();
        // The first write goes out from here (not holding the lock the sink takes); the sink
        // sends the rest.
        drop(run);
        self.out
            .write(payload, Meta::default())
            .expect("write /out");
        Run::finish(&mut lock.lock(), cv, samples);
    }

    pub fn stop(mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.wait();
        self.graph.shutdown();
    }
}
