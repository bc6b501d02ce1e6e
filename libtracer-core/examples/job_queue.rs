//! Why `link/dispatch.rs` keeps its own job queue (a `VecDeque` under a parking_lot `Mutex`
//! with a `Condvar`) rather than a crossbeam channel: this measures the three in the shape the
//! pool runs (`WORKERS` threads take jobs; one thread, the event loop, schedules them), side by
//! side in one run:
//! - wake latency: one job scheduled while every worker sleeps, time until it runs (p50, p99);
//! - throughput: 1,000,000 jobs scheduled back to back, each a counter increment;
//! - allocations per job once warm (the data path must not allocate: tests/alloc_steady.rs).
//!
//! `cargo run --release -p libtracer-core --example job_queue`

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

/// Counts every allocation of the process.
struct Counting;

static ALLOCS: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's contract is passed on as it is.
        unsafe { System.alloc(l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's contract is passed on as it is.
        unsafe { System.realloc(p, l, n) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: the caller's contract is passed on as it is.
        unsafe { System.dealloc(p, l) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const WORKERS: usize = 4;
const JOBS: u64 = 1_000_000;
const PINGS: usize = 20_000;

/// What a job does: note when it ran (the latency run) and count.
struct Job {
    sent: Mutex<Option<Instant>>,
    waits: Mutex<Vec<Duration>>,
    done: AtomicU64,
}

impl Job {
    fn run(&self) {
        if let Some(t) = self.sent.lock().take() {
            self.waits.lock().push(t.elapsed());
        }
        self.done.fetch_add(1, Ordering::Release);
    }
}

/// A queue of jobs for the workers.
trait Queue: Send + Sync + 'static {
    fn push(&self, j: Arc<Job>);
    fn pop(&self) -> Arc<Job>;
}

/// dispatch.rs's shape.
struct Locked {
    ready: Mutex<VecDeque<Arc<Job>>>,
    cv: Condvar,
}

impl Queue for Locked {
    fn push(&self, j: Arc<Job>) {
        self.ready.lock().push_back(j);
        self.cv.notify_one();
    }
    fn pop(&self) -> Arc<Job> {
        let mut r = self.ready.lock();
        loop {
            if let Some(j) = r.pop_front() {
                return j;
            }
            self.cv.wait(&mut r);
        }
    }
}

struct Channel(
    crossbeam_channel::Sender<Arc<Job>>,
    crossbeam_channel::Receiver<Arc<Job>>,
);

impl Queue for Channel {
    fn push(&self, j: Arc<Job>) {
        let _ = self.0.send(j);
    }
    fn pop(&self) -> Arc<Job> {
        self.1.recv().expect("the sender lives")
    }
}

fn measure(name: &str, q: Arc<dyn Queue>) {
    for _ in 0..WORKERS {
        let q = q.clone();
        std::thread::spawn(move || loop {
            q.pop().run();
        });
    }
    let job = Arc::new(Job {
        sent: Mutex::new(None),
        waits: Mutex::new(Vec::with_capacity(PINGS)),
        done: AtomicU64::new(0),
    });
    // Wake latency: one job at a time, each after the workers are asleep again.
    for _ in 0..PINGS {
        let before = job.done.load(Ordering::Acquire);
        *job.sent.lock() = Some(Instant::now());
        q.push(job.clone());
        while job.done.load(Ordering::Acquire) == before {
            std::hint::spin_loop();
        }
        std::thread::sleep(Duration::from_micros(50));
    }
    let mut w = std::mem::take(&mut *job.waits.lock());
    w.sort();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    // Throughput: back to back, as many in flight as the queue takes.
    let base = job.done.load(Ordering::Acquire);
    let a0 = ALLOCS.load(Ordering::Relaxed);
    let t = Instant::now();
    for _ in 0..JOBS {
        q.push(job.clone());
    }
    while job.done.load(Ordering::Acquire) < base + JOBS {
        std::hint::spin_loop();
    }
    let secs = t.elapsed().as_secs_f64();
    let allocs = ALLOCS.load(Ordering::Relaxed) - a0;
    println!(
        "{name:<28} {:>9.1} {:>9.1} {:>12.2} {:>12.4}",
        us(w[w.len() / 2]),
        us(w[w.len() * 99 / 100]),
        JOBS as f64 / secs / 1e6,
        allocs as f64 / JOBS as f64
    );
}

fn main() {
    println!(
        "{:<28} {:>9} {:>9} {:>12} {:>12}",
        "queue", "wake p50", "wake p99", "Mjobs/s", "allocs/job"
    );
    println!("{:<28} {:>9} {:>9}", "", "us", "us");
    for round in 0..2 {
        let _ = round;
        measure(
            "Mutex<VecDeque> + Condvar",
            Arc::new(Locked {
                ready: Mutex::new(VecDeque::with_capacity(64)),
                cv: Condvar::new(),
            }),
        );
        let (tx, rx) = crossbeam_channel::unbounded();
        measure("crossbeam unbounded", Arc::new(Channel(tx, rx)));
        let (tx, rx) = crossbeam_channel::bounded(JOBS as usize);
        measure("crossbeam bounded", Arc::new(Channel(tx, rx)));
    }
}
