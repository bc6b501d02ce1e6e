//! Benchmarks, side by side in one run:
//! - local write-to-delivery latency, 64 B (into a sink, and into a stream ring then popped);
//! - link round trip between two processes (WRITE out, DELIVERY back over a Unix-socket link)
//!   against a raw Unix-socket ping-pong of the same payload sizes (64 B, 64 KiB, 1 MiB).
//!
//! `cargo run --release -p libtracer-core --example bench [-- --json] [-- --quick]`
//!
//! Both round trips are driven the same way: the reply is received and the next message sent by
//! one thread (for the link, the link's reader thread, inside `on_frame`), so the comparison
//! measures the link's framing, codec and locking, not an extra thread hop. The child process
//! is this binary re-executed with `--child raw|link`.

use std::io::{BufRead, Read, Write};
use std::os::unix::fs::DirBuilderExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::Arc;
use std::time::{Duration, Instant};

use libtracer_core::link::{HostTransport, Link, LinkHandler};
use libtracer_core::wire::Frame;
use libtracer_core::Vertex;
use libtracer_core::{
    DeliveryPolicy, Discovery, Graph, GraphConfig, Meta, Payload, Sample, StreamOptions,
};
use parking_lot::{Condvar, Mutex};

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

#[derive(Clone, Debug)]
struct Stats {
    n: usize,
    mean_ns: f64,
    p50_ns: f64,
    p99_ns: f64,
}

fn stats(mut v: Vec<u64>) -> Stats {
    v.sort_unstable();
    let n = v.len();
    let pct = |p: f64| v[((n as f64 - 1.0) * p).round() as usize] as f64;
    Stats {
        n,
        mean_ns: v.iter().sum::<u64>() as f64 / n as f64,
        p50_ns: pct(0.5),
        p99_ns: pct(0.99),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--child") {
        let path = PathBuf::from(&args[3]);
        match args[2].as_str() {
            "raw" => child_raw(&path),
            "link" => child_link(&path),
            "graph" => child_graph(&path),
            other => panic!("unknown child role {other}"),
        }
        return;
    }
    let json = args.iter().any(|a| a == "--json");
    let quick = args.iter().any(|a| a == "--quick");

    let local = local_latency(if quick { 20_000 } else { 200_000 });
    let dir = bench_dir();
    let (raw, link, graph) = round_trips(&dir, quick);
    let _ = std::fs::remove_dir_all(&dir);

    if json {
        print_json(&local, &raw, &link, &graph);
    } else {
        print_table(&local, &raw, &link, &graph);
    }
}

// ------------------------------------------------------------------------------------------
// Local delivery

struct Local {
    sink: Stats,
    stream: Stats,
}

fn local_latency(n: usize) -> Local {
    let g = Graph::new(GraphConfig {
        name: Some("bench".into()),
        discovery: Discovery::Off,
        ..Default::default()
    })
    .expect("graph");
    let src = g
        .create_stream(
            "/bench/src",
            StreamOptions {
                depth: 1,
                byte_budget: 0,
            },
        )
        .expect("source");
    let hits = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let h = hits.clone();
    g.create_sink(
        "/bench/sink",
        Arc::new(move |_s: &Sample| {
            h.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }),
    )
    .expect("sink");
    let target = g
        .create_stream(
            "/bench/ring",
            StreamOptions {
                depth: 1024,
                byte_budget: 0,
            },
        )
        .expect("ring");
    let payload = Payload::from(vec![0xabu8; 64]);

    // Write into a sink: the delivery is done when `write` returns (the sink runs inline).
    let edge = g
        .subscribe("/bench/src", "/bench/sink", DeliveryPolicy::RELIABLE)
        .expect("subscribe");
    let mut sink = Vec::with_capacity(n);
    for i in 0..n as u64 + 1000 {
        let meta = Meta {
            sequence: i,
            ..Meta::default()
        };
        let t0 = Instant::now();
        src.write(payload.clone(), meta).expect("write");
        let dt = t0.elapsed().as_nanos() as u64;
        if i >= 1000 {
            sink.push(dt);
        }
    }
    assert_eq!(
        hits.load(std::sync::atomic::Ordering::Relaxed),
        n as u64 + 1000,
        "every write delivered"
    );
    g.unsubscribe(&edge).expect("unsubscribe");

    // Write into a stream ring and pop it on the reader side.
    let _edge = g
        .subscribe("/bench/src", "/bench/ring", DeliveryPolicy::RELIABLE)
        .expect("subscribe");
    let mut stream = Vec::with_capacity(n);
    for i in 0..n as u64 + 1000 {
        let meta = Meta {
            sequence: i,
            ..Meta::default()
        };
        let t0 = Instant::now();
        src.write(payload.clone(), meta).expect("write");
        let s = target.pop().expect("delivered");
        let dt = t0.elapsed().as_nanos() as u64;
        assert_eq!(s.meta.sequence, i);
        if i >= 1000 {
            stream.push(dt);
        }
    }
    Local {
        sink: stats(sink),
        stream: stats(stream),
    }
}

// ------------------------------------------------------------------------------------------
// Raw Unix-socket ping-pong

fn bench_dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("libtracer-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&d)
        .expect("bench dir");
    d
}

fn spawn_child(role: &str, path: &Path) -> Child {
    Command::new(std::env::current_exe().expect("own path"))
        .args(["--child", role])
        .arg(path)
        .spawn()
        .expect("spawn child")
}

fn wait_for_file(p: &Path) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !p.exists() {
        assert!(
            Instant::now() < deadline,
            "child did not bind {}",
            p.display()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Child: per connection, read the size (u32 LE), then echo messages of that size until EOF.
fn child_raw(path: &Path) {
    let l = UnixListener::bind(path).expect("bind");
    for conn in l.incoming() {
        let Ok(mut s) = conn else { break };
        let mut hdr = [0u8; 4];
        if s.read_exact(&mut hdr).is_err() {
            break;
        }
        let size = u32::from_le_bytes(hdr) as usize;
        if size == 0 {
            break;
        }
        let mut buf = vec![0u8; size];
        while s.read_exact(&mut buf).is_ok() {
            if s.write_all(&buf).is_err() {
                break;
            }
        }
    }
}

/// One raw ping-pong connection to the raw child, for one message size.
struct RawPing {
    s: UnixStream,
    msg: Vec<u8>,
    back: Vec<u8>,
}

impl RawPing {
    fn new(path: &Path, size: usize) -> RawPing {
        let mut s = connect_retry(path);
        s.write_all(&(size as u32).to_le_bytes()).unwrap();
        RawPing {
            s,
            msg: vec![0x5au8; size],
            back: vec![0u8; size],
        }
    }
    fn run(&mut self, n: usize, samples: &mut Vec<u64>) {
        for _ in 0..n {
            let t0 = Instant::now();
            self.s.write_all(&self.msg).unwrap();
            self.s.read_exact(&mut self.back).unwrap();
            samples.push(t0.elapsed().as_nanos() as u64);
        }
    }
}

/// Raw and link round trips, interleaved in rounds so that a load change on this shared
/// machine hits both alike.
fn round_trips(dir: &Path, quick: bool) -> (BySize, BySize, BySize) {
    const ROUNDS: usize = 10;
    let raw_path = dir.join("raw.sock");
    let mut raw_child = spawn_child("raw", &raw_path);
    wait_for_file(&raw_path);
    let mut link = LinkPing::start(dir);
    let mut graph = GraphPing::start(dir);
    let (mut raw_out, mut link_out, mut graph_out) = (Vec::new(), Vec::new(), Vec::new());
    for size in SIZES {
        let n = iters(size, quick);
        let per_round = n.div_ceil(ROUNDS);
        let mut raw = RawPing::new(&raw_path, size);
        // Warm both paths up (allocations, caches, the socket buffers' sizes).
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
    // Size 0 tells the raw child to exit.
    let mut s = connect_retry(&raw_path);
    let _ = s.write_all(&0u32.to_le_bytes());
    let _ = raw_child.wait();
    link.stop();
    graph.stop();
    (raw_out, link_out, graph_out)
}

fn connect_retry(p: &Path) -> UnixStream {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match UnixStream::connect(p) {
            Ok(s) => return s,
            Err(e) => {
                assert!(Instant::now() < deadline, "connect {}: {e}", p.display());
                std::thread::sleep(Duration::from_millis(5));
            }
        }
    }
}

// ------------------------------------------------------------------------------------------
// Link round trip

/// Child: answer every WRITE with a DELIVERY carrying the same payload; exit when the link goes.
struct Echo {
    gone: Mutex<bool>,
    cv: Condvar,
}

impl LinkHandler for Echo {
    fn on_up(&self, _link: Arc<dyn Link>) {}
    fn on_frame(&self, link: &Arc<dyn Link>, frame: Frame) {
        if let Frame::Write { meta, payload, .. } = frame {
            let _ = link.send(&Frame::Delivery {
                edge: 1,
                meta,
                suffix: None,
                payload,
            });
        }
    }
    fn on_down(&self, _link: &Arc<dyn Link>) {
        *self.gone.lock() = true;
        self.cv.notify_all();
    }
}

fn child_link(dir: &Path) {
    let echo = Arc::new(Echo {
        gone: Mutex::new(false),
        cv: Condvar::new(),
    });
    let _t = HostTransport::start(dir, "echo", echo.clone()).expect("child transport");
    let mut gone = echo.gone.lock();
    while !*gone {
        echo.cv.wait(&mut gone);
    }
}

#[derive(Default)]
struct Run {
    payload: Payload,
    left: usize,
    t0: Option<Instant>,
    samples: Vec<u64>,
    done: bool,
}

/// Parent: on each DELIVERY, take the time and send the next WRITE, from the reader thread.
struct Driver {
    link: Mutex<Option<Arc<dyn Link>>>,
    run: Mutex<Run>,
    cv: Condvar,
}

impl Driver {
    fn send_next(&self, link: &Arc<dyn Link>, run: &mut Run) {
        run.t0 = Some(Instant::now());
        let f = Frame::Write {
            req: 0,
            path: "/echo".into(),
            meta: Meta::default(),
            payload: run.payload.clone(),
        };
        link.send(&f).expect("link send");
    }
}

impl LinkHandler for Driver {
    fn on_up(&self, link: Arc<dyn Link>) {
        *self.link.lock() = Some(link);
        self.cv.notify_all();
    }
    fn on_frame(&self, link: &Arc<dyn Link>, frame: Frame) {
        let Frame::Delivery { payload, .. } = frame else {
            return;
        };
        let now = Instant::now();
        let mut run = self.run.lock();
        assert_eq!(payload.len(), run.payload.len(), "echo carried the payload");
        let dt = now.duration_since(run.t0.expect("sent")).as_nanos() as u64;
        run.samples.push(dt);
        run.left -= 1;
        if run.left == 0 {
            run.done = true;
            self.cv.notify_all();
        } else {
            self.send_next(link, &mut run);
        }
    }
    fn on_down(&self, _link: &Arc<dyn Link>) {
        *self.link.lock() = None;
        let mut run = self.run.lock();
        run.done = true;
        self.cv.notify_all();
    }
}

/// The link side: this process's transport, linked to the echo child.
struct LinkPing {
    child: Child,
    transport: Option<HostTransport>,
    driver: Arc<Driver>,
    link: Arc<dyn Link>,
}

impl LinkPing {
    fn start(dir: &Path) -> LinkPing {
        let child = spawn_child("link", dir);
        wait_for_file(&dir.join("echo.sock"));
        let driver = Arc::new(Driver {
            link: Mutex::new(None),
            run: Mutex::new(Run::default()),
            cv: Condvar::new(),
        });
        let transport =
            HostTransport::start(dir, "bench", driver.clone()).expect("parent transport");
        let link = {
            let mut l = driver.link.lock();
            let deadline = Instant::now() + Duration::from_secs(10);
            while l.is_none() {
                assert!(
                    !driver.cv.wait_until(&mut l, deadline).timed_out(),
                    "no link to the echo child"
                );
            }
            l.clone().expect("link")
        };
        LinkPing {
            child,
            transport: Some(transport),
            driver,
            link,
        }
    }

    fn run(&mut self, size: usize, n: usize, samples: &mut Vec<u64>) {
        let mut run = self.driver.run.lock();
        let payload = if run.payload.len() == size {
            run.payload.clone()
        } else {
            Payload::from(vec![0x5au8; size])
        };
        *run = Run {
            payload,
            left: n,
            samples: Vec::with_capacity(n),
            ..Run::default()
        };
        self.driver.send_next(&self.link, &mut run);
        while !run.done {
            self.driver.cv.wait(&mut run);
        }
        assert_eq!(run.left, 0, "link went down during the run");
        samples.append(&mut run.samples);
    }

    fn stop(mut self) {
        drop(self.transport.take());
        let _ = self.child.wait();
    }
}

// ------------------------------------------------------------------------------------------
// Graph round trip: the whole path, not just the link

/// Child: a graph whose sink `/in` (fed by an edge from the parent's `/out`) writes every
/// sample on to its own `/back`; the parent subscribes `/back`. Exits when stdin closes.
fn child_graph(dir: &Path) {
    let g = Graph::new(GraphConfig {
        name: Some("gecho".into()),
        discovery: Discovery::Host,
        rendezvous_dir: Some(dir.to_owned()),
        ..Default::default()
    })
    .expect("child graph");
    let back = g
        .create_stream(
            "/back",
            StreamOptions {
                depth: 1,
                byte_budget: 0,
            },
        )
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
struct GraphPing {
    child: Child,
    graph: Graph,
    out: Vertex,
    run: Arc<(Mutex<Run>, Condvar)>,
}

impl GraphPing {
    fn start(dir: &Path) -> GraphPing {
        let graph = Graph::new(GraphConfig {
            name: Some("gbench".into()),
            discovery: Discovery::Host,
            rendezvous_dir: Some(dir.to_owned()),
            ..Default::default()
        })
        .expect("parent graph");
        let out = graph
            .create_stream(
                "/out",
                StreamOptions {
                    depth: 1,
                    byte_budget: 0,
                },
            )
            .expect("out");
        let mut child = Command::new(std::env::current_exe().expect("own path"))
            .args(["--child", "graph"])
            .arg(dir)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
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
                    assert_eq!(
                        s.payload.len(),
                        run.payload.len(),
                        "echo carried the payload"
                    );
                    let dt = now.duration_since(run.t0.expect("sent")).as_nanos() as u64;
                    run.samples.push(dt);
                    run.left -= 1;
                    if run.left == 0 {
                        run.done = true;
                        cv.notify_all();
                    } else {
                        run.t0 = Some(Instant::now());
                        o.write(run.payload.clone(), Meta::default())
                            .expect("write /out");
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

    fn run(&mut self, size: usize, n: usize, samples: &mut Vec<u64>) {
        let (lock, cv) = &*self.run;
        let mut run = lock.lock();
        let payload = if run.payload.len() == size {
            run.payload.clone()
        } else {
            Payload::from(vec![0x5au8; size])
        };
        *run = Run {
            payload: payload.clone(),
            left: n,
            samples: Vec::with_capacity(n),
            ..Run::default()
        };
        run.t0 = Some(Instant::now());
        // The first write goes out from here (not holding the lock the sink takes); the sink
        // sends the rest.
        drop(run);
        self.out
            .write(payload, Meta::default())
            .expect("write /out");
        let mut run = lock.lock();
        while !run.done {
            cv.wait(&mut run);
        }
        samples.append(&mut run.samples);
    }

    fn stop(mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.wait();
        self.graph.shutdown();
    }
}

// ------------------------------------------------------------------------------------------
// Output

fn us(ns: f64) -> String {
    format!("{:.2}", ns / 1000.0)
}

fn print_table(
    local: &Local,
    raw: &[(usize, Stats)],
    link: &[(usize, Stats)],
    graph: &[(usize, Stats)],
) {
    println!(
        "local write-to-delivery, 64 B payload ({} writes each)",
        local.sink.n
    );
    println!(
        "  {:<28} {:>10} {:>10} {:>10}",
        "target", "mean us", "p50 us", "p99 us"
    );
    for (name, s) in [
        ("sink (inline callback)", &local.sink),
        ("stream ring, then pop", &local.stream),
    ] {
        println!(
            "  {:<28} {:>10} {:>10} {:>10}",
            name,
            us(s.mean_ns),
            us(s.p50_ns),
            us(s.p99_ns)
        );
    }
    println!();
    println!("round trip between two processes, us (raw Unix socket / libtracer link / whole graph path)");
    println!(
        "  {:>7} {:>6} {:>9} {:>9} {:>9} {:>7} {:>9} {:>9} {:>9} {:>7} {:>7}",
        "size",
        "iters",
        "raw p50",
        "link p50",
        "graph p50",
        "link x",
        "raw mean",
        "link mean",
        "graph mean",
        "link x",
        "graph x"
    );
    for (((size, r), (_, l)), (_, g)) in raw.iter().zip(link).zip(graph) {
        println!(
            "  {:>7} {:>6} {:>9} {:>9} {:>9} {:>7.2} {:>9} {:>9} {:>9} {:>7.2} {:>7.2}",
            size_name(*size),
            l.n,
            us(r.p50_ns),
            us(l.p50_ns),
            us(g.p50_ns),
            l.p50_ns / r.p50_ns,
            us(r.mean_ns),
            us(l.mean_ns),
            us(g.mean_ns),
            l.mean_ns / r.mean_ns,
            g.mean_ns / r.mean_ns
        );
    }
    println!("  (link x, graph x: ratio to raw; the first link x column is on p50, the last two on the mean)");
}

fn size_name(s: usize) -> String {
    match s {
        s if s >= 1 << 20 => format!("{} MiB", s >> 20),
        s if s >= 1 << 10 => format!("{} KiB", s >> 10),
        s => format!("{s} B"),
    }
}

fn stats_json(s: &Stats) -> String {
    format!(
        "{{\"n\":{},\"mean_ns\":{:.0},\"p50_ns\":{:.0},\"p99_ns\":{:.0}}}",
        s.n, s.mean_ns, s.p50_ns, s.p99_ns
    )
}

fn print_json(
    local: &Local,
    raw: &[(usize, Stats)],
    link: &[(usize, Stats)],
    graph: &[(usize, Stats)],
) {
    let rt: Vec<String> = raw
        .iter()
        .zip(link)
        .zip(graph)
        .map(|(((size, r), (_, l)), (_, g))| {
            format!(
                "{{\"size\":{size},\"raw\":{},\"link\":{},\"graph\":{},\"link_ratio_p50\":{:.3},\"link_ratio_mean\":{:.3},\"graph_ratio_p50\":{:.3},\"graph_ratio_mean\":{:.3}}}",
                stats_json(r),
                stats_json(l),
                stats_json(g),
                l.p50_ns / r.p50_ns,
                l.mean_ns / r.mean_ns,
                g.p50_ns / r.p50_ns,
                g.mean_ns / r.mean_ns
            )
        })
        .collect();
    println!(
        "{{\"local_64B\":{{\"sink\":{},\"stream\":{}}},\"round_trip\":[{}]}}",
        stats_json(&local.sink),
        stats_json(&local.stream),
        rt.join(",")
    );
}
