//! Issue 8: the steady path allocates nothing. A counting global allocator (every thread of the
//! process: the writer, the link event loop, the link workers, the echo thread) watches
//! ping-pong round trips after a warm-up, with payloads written into the buffer pool as the rmw
//! writes them:
//! - between two graphs over a real Unix-socket link (host discovery), payloads of 64 B, 4 KiB
//!   and 1 MiB copied through the socket, and of 1 MiB and 4 MiB in shared-memory slots (sent
//!   as references, each received as a view of the peer's memory and released);
//! - inside one graph (a local edge: the sample is shared, never copied).
//!
//! Any allocation in a measured round trip fails the test with the count, so a change that
//! brings one back to the data path cannot pass silently. No timing is asserted.
//!
//! One test function: the allocator's count is process-wide, and tests of one binary run in
//! parallel threads, so the cases run one after another inside it.

mod common;
use common::poll::eventually;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use libtracer_core::{buffer, DeliveryPolicy, Graph, Meta, Payload, StreamOptions, Vertex, Waiter};
use tracer_shm::{Pool, PoolConfig};

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

/// Where a sample's bytes are written, as the rmw writes them.
#[derive(Clone)]
enum Memory {
    /// A block of the buffer pool (the copy path).
    Pooled,
    /// A slot of a shared-memory pool (large samples between processes of a host).
    Shm(Pool),
}

impl Memory {
    fn payload(&self, data: &[u8]) -> Payload {
        match self {
            Memory::Pooled => {
                let mut b = buffer::global().take(data.len());
                b.as_mut_slice().copy_from_slice(data);
                b.freeze(data.len())
            }
            Memory::Shm(pool) => {
                let mut s = pool
                    .alloc(data.len())
                    .expect("room in the shared-memory pool");
                s.as_mut_slice().copy_from_slice(data);
                Payload::from_slot(s.freeze())
            }
        }
    }
}

fn write(v: &Vertex, mem: &Memory, data: &[u8], seq: u64) {
    let meta = Meta {
        sequence: seq,
        ..Meta::default()
    };
    v.write(mem.payload(data), meta).expect("write");
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

/// parking_lot makes a thread's parking record (and may grow its table of threads) the first
/// time that thread parks: a once-per-thread cost, not one of the steady path. A thread whose
/// samples were always ready during the warm-up (a loaded machine schedules it late) would pay
/// it inside the measured round trips, so each thread of the test parks once before.
fn first_park() {
    let m = parking_lot::Mutex::new(());
    parking_lot::Condvar::new().wait_for(&mut m.lock(), Duration::ZERO);
}

/// An echo thread: every sample popped from `from` goes back on `to`, copied into `mem` (as a
/// ROS echo deserializes and publishes again), until a sample of length 1.
fn echo(from: Vertex, to: Vertex, mem: Memory) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        first_park();
        let w = Waiter::new();
        w.attach(&from.readiness());
        loop {
            let s = next(&from, &w);
            let len = s.payload.len();
            let back = mem.payload(s.payload.as_ref());
            drop(s);
            to.write(back, Meta::default()).expect("echo");
            if len == 1 {
                return;
            }
        }
    })
}

/// `WARMUP` then `MEASURED` round trips of `size` bytes written into `mem`: write on `ping`,
/// wait for the echo on `back`. Returns the allocations made during the measured ones and the
/// sizes of the first.
fn round_trips(ping: &Vertex, back: &Vertex, mem: &Memory, size: usize) -> (u64, Vec<u64>) {
    first_park();
    let w = Waiter::new();
    w.attach(&back.readiness());
    let data: Vec<Vec<u8>> = (0..4).map(|k| vec![k as u8 + 1; size]).collect();
    let one = |i: usize| {
        let sent = &data[i % data.len()];
        write(ping, mem, sent, i as u64);
        let s = next(back, &w);
        assert!(s.payload.as_ref() == &sent[..], "echo {i} of {size} bytes");
        if let Memory::Shm(_) = mem {
            // Through the peer's memory both ways, not copied through the socket.
            assert!(s.payload.is_view(), "echo {i}: {:?}", s.payload);
        }
    };
    for i in 0..WARMUP {
        one(i);
    }
    // The buffer pool grows a class to the most blocks ever held at once, and how many a
    // round trip holds depends on where the threads happen to be (a loaded machine once needed
    // a fifth small block in the measured part). Growth is warm-up, not steady path: give the
    // class a few blocks beyond the warm-up's peak (below its bound of 4 blocks for the largest
    // classes, so nothing falls back to plain allocation).
    if size <= 64 * 1024 {
        let spare: Vec<_> = (0..8).map(|_| buffer::global().take(size)).collect();
        drop(spare);
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

/// End an echo thread: a 1-byte sample, echoed once more (taken here) before it returns.
fn stop(ping: &Vertex, back: &Vertex, t: std::thread::JoinHandle<()>) {
    write(ping, &Memory::Pooled, &[0], 0);
    t.join().unwrap();
    let w = Waiter::new();
    w.attach(&back.readiness());
    assert_eq!(next(back, &w).payload.len(), 1);
    w.detach(&back.readiness());
}

fn shm_pool() -> Pool {
    Pool::new(PoolConfig::default()).expect("memfd works here")
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
    eventually(T, || a.peers() == ["alloc-b"] && b.peers() == ["alloc-a"]).expect("a and b linked");
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
    let mut report = Vec::new();
    let t = echo(echo_in.clone(), pong.clone(), Memory::Pooled);
    for size in [64, 4096, 1 << 20] {
        report.push((
            format!("link {size} B"),
            round_trips(&ping, &back, &Memory::Pooled, size),
        ));
    }
    stop(&ping, &back, t);
    // Large samples in shared memory, each side's own pool: references over the link.
    let t = echo(echo_in, pong, Memory::Shm(shm_pool()));
    let mine = Memory::Shm(shm_pool());
    for size in [1 << 20, 4 << 20] {
        report.push((
            format!("link shared memory {size} B"),
            round_trips(&ping, &back, &mine, size),
        ));
    }
    stop(&ping, &back, t);

    // Inside one graph: local edges, the sample shared.
    let lping = a.create_stream("/local/ping", opts).unwrap();
    let lback = a.create_stream("/local/back", ring).unwrap();
    let lpong = a.create_stream("/local/pong", opts).unwrap();
    let lin = a.create_stream("/local/in", ring).unwrap();
    a.subscribe("/local/ping", "/local/in", DeliveryPolicy::default())
        .unwrap();
    a.subscribe("/local/pong", "/local/back", DeliveryPolicy::default())
        .unwrap();
    let t = echo(lin, lpong, Memory::Pooled);
    for size in [64, 4096, 1 << 20] {
        report.push((
            format!("in-process {size} B"),
            round_trips(&lping, &lback, &Memory::Pooled, size),
        ));
    }
    stop(&lping, &lback, t);

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
