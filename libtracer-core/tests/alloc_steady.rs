//! Issue 8: the steady path allocates nothing. A counting global allocator (every thread of the
//! process: the writer, the link event loop, the link workers, the echo thread) watches
//! ping-pong round trips after a warm-up, with payloads written into the buffer pool as the rmw
//! writes them:
//! - between two graphs over a real Unix-socket link (host discovery), payloads of 64 B, 4 KiB
//!   and 1 MiB (copied through the socket: no shared-memory pool here);
//! - inside one graph (a local edge: the sample is shared, never copied).
//!
//! Any allocation in a measured round trip fails the test with the count, so a change that
//! brings one back to the data path cannot pass silently. No timing is asserted.
//!
//! One test function: the allocator's count is process-wide, and tests of one binary run in
//! parallel threads, so the cases run one after another inside it.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use libtracer_core::{buffer, DeliveryPolicy, Graph, Meta, StreamOptions, Vertex, Waiter};

struct Counting;

static COUNTING: AtomicBool = AtomicBool::new(false);
static ALLOCS: AtomicU64 = AtomicU64::new(0);
/// The sizes of the first allocations counted (for the failure message).
static SIZES: [AtomicU64; 8] = [const { AtomicU64::new(0) }; 8];
/// `ALLOC_ABORT=1`: abort at the first allocation counted, so that a debugger shows its stack
/// (`ALLOC_ABORT=1 gdb -batch -ex run -ex bt target/release/deps/alloc_steady-*`).
static ABORT: AtomicBool = AtomicBool::new(false);

fn counted(l: Layout) {
    if COUNTING.load(Ordering::Relaxed) {
        let i = ALLOCS.fetch_add(1, Ordering::Relaxed) as usize;
        if let Some(s) = SIZES.get(i) {
            s.store(l.size() as u64, Ordering::Relaxed);
        }
        if ABORT.load(Ordering::Relaxed) {
            std::process::abort();
        }
    }
}

// SAFETY: every call is forwarded to `System` unchanged; the counters are plain atomics and
// never allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        counted(l);
        // SAFETY: forwarded contract.
        unsafe { System.alloc(l) }
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        counted(l);
        // SAFETY: forwarded contract.
        unsafe { System.alloc_zeroed(l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        counted(l);
        // SAFETY: forwarded contract.
        unsafe { System.realloc(p, l, n) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: forwarded contract.
        unsafe { System.dealloc(p, l) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const T: Duration = Duration::from_secs(30);
const WARMUP: usize = 200;
const MEASURED: usize = 1000;

fn eventually(what: &str, f: impl Fn() -> bool) {
    let end = Instant::now() + T;
    while !f() {
        assert!(Instant::now() < end, "never happened: {what}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Write `len` bytes of `fill` as the rmw publishes: into a block of the buffer pool.
fn write_pooled(v: &Vertex, len: usize, fill: u8, seq: u64) {
    let mut b = buffer::global().take(len);
    b.as_mut_slice().fill(fill);
    let meta = Meta {
        sequence: seq,
        ..Meta::default()
    };
    v.write(b.freeze(len), meta).expect("write");
}

/// The next sample of `v`, waiting on `w` (attached to `v`'s readiness).
fn next(v: &Vertex, w: &Waiter) -> libtracer_core::Sample {
    let end = Instant::now() + T;
    loop {
        if let Some(s) = v.pop() {
            return s;
        }
        assert!(Instant::now() < end, "no sample on {}", v.path());
        w.wait(Some(Duration::from_millis(10)));
    }
}

/// An echo thread: every sample popped from `from` goes back on `to`, copied into a pool
/// buffer (as a ROS echo deserializes and publishes again), until a sample of length 1.
fn echo(from: Vertex, to: Vertex) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let w = Waiter::new();
        w.attach(&from.readiness());
        loop {
            let s = next(&from, &w);
            let len = s.payload.len();
            let mut b = buffer::global().take(len);
            b.as_mut_slice().copy_from_slice(s.payload.as_ref());
            drop(s);
            to.write(b.freeze(len), Meta::default()).expect("echo");
            if len == 1 {
                return;
            }
        }
    })
}

/// `WARMUP` then `MEASURED` round trips of `size` bytes: write on `ping`, wait for the echo on
/// `back`. Returns the allocations made during the measured ones and the sizes of the first.
fn round_trips(ping: &Vertex, back: &Vertex, size: usize) -> (u64, Vec<u64>) {
    let w = Waiter::new();
    w.attach(&back.readiness());
    let one = |i: usize| {
        let fill = (i % 251) as u8;
        write_pooled(ping, size, fill, i as u64);
        let s = next(back, &w);
        assert_eq!(s.payload.len(), size);
        assert!(s.payload.as_ref().iter().all(|b| *b == fill), "echo {i}");
    };
    for i in 0..WARMUP {
        one(i);
    }
    ALLOCS.store(0, Ordering::SeqCst);
    for s in &SIZES {
        s.store(0, Ordering::SeqCst);
    }
    COUNTING.store(true, Ordering::SeqCst);
    for i in WARMUP..WARMUP + MEASURED {
        one(i);
    }
    COUNTING.store(false, Ordering::SeqCst);
    let n = ALLOCS.load(Ordering::SeqCst);
    let sizes = SIZES
        .iter()
        .map(|s| s.load(Ordering::SeqCst))
        .take(n as usize)
        .collect();
    w.detach(&back.readiness());
    (n, sizes)
}

fn host_graph(dir: &std::path::Path, name: &str) -> Graph {
    Graph::new(common::host_config(dir, name, 0)).expect("graph")
}

#[test]
fn steady_publish_and_take_allocate_nothing() {
    ABORT.store(std::env::var_os("ALLOC_ABORT").is_some(), Ordering::SeqCst);
    let dir = tempdir();
    let a = host_graph(dir.path(), "alloc-a");
    let b = host_graph(dir.path(), "alloc-b");
    eventually("a and b linked", || {
        a.peers() == ["alloc-b"] && b.peers() == ["alloc-a"]
    });
    // As the rmw makes them: a topic keeps its last sample, a subscription ring a few.
    let opts = StreamOptions::keep_last(1);
    let ring = StreamOptions::keep_last(16);

    // Over the link: a's /ping -> b's /echo_in; b's /pong -> a's /back.
    let ping = a.create_stream("/ping", opts).unwrap();
    let back = a.create_stream("/back", ring).unwrap();
    let pong = b.create_stream("/pong", opts).unwrap();
    let echo_in = b.create_stream("/echo_in", ring).unwrap();
    let e1 = b
        .subscribe("/net/alloc-a/ping", "/echo_in", DeliveryPolicy::default())
        .unwrap();
    let e2 = a
        .subscribe("/net/alloc-b/pong", "/back", DeliveryPolicy::default())
        .unwrap();
    e1.wait_established(T).unwrap();
    e2.wait_established(T).unwrap();
    let t = echo(echo_in, pong);
    let mut report = Vec::new();
    for size in [64, 4096, 1 << 20] {
        report.push((format!("link {size} B"), round_trips(&ping, &back, size)));
    }
    write_pooled(&ping, 1, 0, 0);
    t.join().unwrap();

    // Inside one graph: local edges, the sample shared.
    let lping = a.create_stream("/local/ping", opts).unwrap();
    let lback = a.create_stream("/local/back", ring).unwrap();
    let lpong = a.create_stream("/local/pong", opts).unwrap();
    let lin = a.create_stream("/local/in", ring).unwrap();
    a.subscribe("/local/ping", "/local/in", DeliveryPolicy::default())
        .unwrap();
    a.subscribe("/local/pong", "/local/back", DeliveryPolicy::default())
        .unwrap();
    let t = echo(lin, lpong);
    for size in [64, 4096, 1 << 20] {
        report.push((
            format!("in-process {size} B"),
            round_trips(&lping, &lback, size),
        ));
    }
    write_pooled(&lping, 1, 0, 0);
    t.join().unwrap();

    let bad: Vec<_> = report.iter().filter(|(_, (n, _))| *n != 0).collect();
    assert!(
        bad.is_empty(),
        "allocations in {MEASURED} steady round trips (count, first sizes): {report:?}"
    );
    assert_eq!(
        buffer::global().stats().fallbacks,
        0,
        "every buffer came from the pool"
    );
}

/// A private rendezvous directory (mode 0700), removed at the end.
struct TempDir(std::path::PathBuf);

impl TempDir {
    fn path(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn tempdir() -> Arc<TempDir> {
    use std::os::unix::fs::DirBuilderExt;
    let p = std::env::temp_dir().join(format!("alloc-steady-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    std::fs::DirBuilder::new().mode(0o700).create(&p).unwrap();
    Arc::new(TempDir(p))
}
