//! Shared-memory payloads through whole graphs in separate processes (issue 8, step 1): a
//! reader that is SIGKILLed while holding samples frees them in the publisher's pool, and a
//! reader that stalls holds no more of the pool than its ring (the rest overflow, counted lost
//! there, and are released). The reader maps the publisher's segments read-only.
//!
//! The child is this test binary re-executed (`/proc/self/exe`) to run the ignored test
//! `shm_child`: a graph subscribed to the parent's `/t` with a ring of `LT_SHM_DEPTH`, driven
//! by commands on stdin, answering lines starting `@@ `.

mod common;
use common::poll::eventually;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

use libtracer_core::{DeliveryPolicy, Graph, Meta, Payload, Sample, StreamOptions};
use tracer_shm::{Pool, PoolConfig};

const T: Duration = Duration::from_secs(30);
const SIZE: usize = 100_000;

fn graph(dir: &std::path::Path, name: &str) -> Graph {
    Graph::new(common::host_config(dir, name, 0)).expect("graph")
}

/// Sample `i`: SIZE bytes, each `i`. Waits for a slot: samples on their way to the child (not
/// yet dropped by its ring) hold theirs, and a busy machine may let the writes run ahead of it;
/// a reader that kept every sample would exhaust the pool, and this waits in vain.
fn sample(pool: &Pool, i: u8) -> Payload {
    let mut slot = None;
    eventually(T, || {
        slot = pool.alloc(SIZE);
        slot.is_some()
    })
    .expect("room in the pool");
    let mut s = slot.expect("room in the pool");
    s.as_mut_slice().fill(i);
    Payload::from_slot(s.freeze())
}

/// Whether this process maps a segment of another's pool read-only (`r--s memfd:tracer-shm`).
fn maps_segment_read_only() -> bool {
    std::fs::read_to_string("/proc/self/maps")
        .unwrap_or_default()
        .lines()
        .any(|l| l.contains("memfd:tracer-shm") && l.split_whitespace().nth(1) == Some("r--s"))
}

#[test]
#[ignore = "entry point of the child processes of the shared-memory tests"]
fn shm_child() {
    let dir = std::env::var("LT_SHM_DIR").expect("run by the shared-memory tests only");
    let depth: usize = std::env::var("LT_SHM_DEPTH").unwrap().parse().unwrap();
    let g = graph(std::path::Path::new(&dir), "reader");
    let ring = g
        .create_stream(
            "/in",
            StreamOptions {
                depth,
                byte_budget: 0,
            },
        )
        .unwrap();
    let start = Instant::now();
    while !g.peers().iter().any(|p| p == "pub") {
        assert!(start.elapsed() < T, "no link to the publisher");
        std::thread::sleep(Duration::from_millis(2));
    }
    let edge = g
        .subscribe("/net/pub/t", "/in", DeliveryPolicy::RELIABLE)
        .unwrap();
    edge.wait_established(T).unwrap();
    println!("@@ ready");
    let mut held: Vec<Sample> = Vec::new();
    let mut out = std::io::stdout();
    for line in std::io::stdin().lock().lines() {
        let line = line.unwrap();
        let reply = match line.as_str() {
            // Take every sample and keep it (the views stay alive): "<count> <first>..<last> <ok>".
            "hold" => {
                let before = held.len();
                held.extend(std::iter::from_fn(|| ring.pop()));
                let new = &held[before..];
                let ok = new.iter().all(|s| {
                    let b = s.payload.as_ref();
                    b.len() == SIZE && b.iter().all(|&x| x == b[0])
                });
                let first = new.first().map_or(-1, |s| i32::from(s.payload.as_ref()[0]));
                let last = new.last().map_or(-1, |s| i32::from(s.payload.as_ref()[0]));
                format!(
                    "{} {first}..{last} {ok} {}",
                    new.len(),
                    maps_segment_read_only()
                )
            }
            "len" => ring.len().to_string(),
            "lost" => ring.take_dropped().to_string(),
            _ => format!("unknown {line}"),
        };
        writeln!(out, "@@ {reply}").unwrap();
        out.flush().unwrap();
    }
}

struct Child1 {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
}

impl Child1 {
    fn spawn(dir: &std::path::Path, depth: usize) -> Child1 {
        let mut child = Command::new("/proc/self/exe")
            .args([
                "--ignored",
                "--exact",
                "shm_child",
                "--nocapture",
                "--test-threads=1",
                "-q",
            ])
            .env("LT_SHM_DIR", dir)
            .env("LT_SHM_DEPTH", depth.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn child");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for l in stdout.lines().map_while(Result::ok) {
                if let Some(said) = l.strip_prefix("@@ ") {
                    if tx.send(said.to_owned()).is_err() {
                        return;
                    }
                }
            }
        });
        let mut c = Child1 {
            child,
            stdin,
            lines,
        };
        assert_eq!(c.next(), "ready");
        c
    }
    fn next(&mut self) -> String {
        self.lines.recv_timeout(T).expect("the child answers")
    }
    fn ask(&mut self, cmd: &str) -> String {
        writeln!(self.stdin, "{cmd}").unwrap();
        self.stdin.flush().unwrap();
        self.next()
    }
}

impl Drop for Child1 {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct Dir(std::path::PathBuf);
impl Dir {
    fn new(tag: &str) -> Dir {
        use std::os::unix::fs::DirBuilderExt;
        let p = std::env::temp_dir().join(format!("lt-shm-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::DirBuilder::new().mode(0o700).create(&p).unwrap();
        Dir(p)
    }
}
impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn publisher(dir: &Dir) -> (Graph, libtracer_core::Vertex, Pool) {
    let g = graph(&dir.0, "pub");
    // As rmw_tracer makes a volatile topic: the newest sample retained (so one slot stays ours).
    let v = g.create_stream("/t", StreamOptions::keep_last(1)).unwrap();
    let pool = Pool::new(PoolConfig {
        min_slot: 4096,
        max_slot: 1 << 20,
        max_bytes: 16 << 20,
        segment_bytes: 1 << 20,
    })
    .expect("this machine maps memfd segments");
    (g, v, pool)
}

#[test]
fn a_sigkilled_reader_frees_what_it_held() {
    let dir = Dir::new("kill");
    let (g, t, pool) = publisher(&dir);
    let mut c = Child1::spawn(&dir.0, 64);
    eventually(T, || t.subscriber_count() == 1).expect("the child's edge");
    for i in 0..10u8 {
        t.write(sample(&pool, i), Meta::default()).unwrap();
    }
    eventually(T, || c.ask("len") == "10").expect("ten in the child's ring");
    // Exact values, and from our segments mapped read-only in the child.
    assert_eq!(c.ask("hold"), "10 0..9 true true");
    assert_eq!(
        pool.stats().slots_in_use,
        10,
        "the child holds all ten (the topic the last)"
    );
    c.child.kill().unwrap();
    c.child.wait().unwrap();
    eventually(T, || pool.stats().slots_in_use == 1)
        .expect("only the topic's retained sample is left");
    eventually(T, || g.peers().is_empty()).expect("the mount went");
}

#[test]
fn a_stalled_reader_holds_no_more_than_its_ring() {
    let dir = Dir::new("stall");
    let (_g, t, pool) = publisher(&dir);
    let mut c = Child1::spawn(&dir.0, 2);
    eventually(T, || t.subscriber_count() == 1).expect("the child's edge");
    // Far more than the ring, and than the pool holds (16 MiB / 128 KiB slots = 128): with a
    // reader that kept them all, allocation would fail.
    for i in 0..200u8 {
        t.write(sample(&pool, i), Meta::default()).unwrap();
    }
    // The child's two, one of which is also the topic's retained newest.
    eventually(T, || c.ask("len") == "2" && pool.stats().slots_in_use == 2)
        .expect("the ring holds the newest two");
    assert_eq!(c.ask("hold"), "2 198..199 true true");
    assert_eq!(
        c.ask("lost"),
        "198",
        "overflow counted as lost at the reader"
    );
    assert_eq!(pool.stats().slots_in_use, 2);
}
