//! The worker threads that run the Unix links' handler callbacks, shared by every link of the
//! process and fixed in number (`WORKERS`), whatever the number of links.
//!
//! Work comes as jobs: a link's strand (`unix_loop.rs`) is one job, scheduled when it has
//! events and never twice at once, so a link's callbacks run one at a time and in order, while
//! different links run on different workers. A job runs a bounded batch and is put back at the
//! end of the queue if it has more, so one busy link does not starve the others. A callback that
//! blocks (a send into a peer's full socket buffer) holds one worker; the others go on serving
//! the other links, and the event loop goes on reading every socket.
//!
//! **Why a `VecDeque` under a lock, not a crossbeam channel** (the crate the project uses for
//! queues between threads, `record/handoff.rs` in rmw_tracer): `examples/job_queue.rs` measures
//! the three in this pool's shape (4 workers, one scheduling thread), in one run, twice
//! (2026-12-05, 2 cores, a build running beside):
//!
//! | queue | wake p50 | wake p99 | jobs/s back to back | allocations per job |
//! |---|---|---|---|---|
//! | `Mutex<VecDeque>` + `Condvar` (this) | 3.0 / 3.3 us | 35 / 167 us | 18.4 / 12.9 M | 0 |
//! | crossbeam unbounded | 24.2 / 21.9 us | 4.6 / 3.9 ms | 18.5 / 21.1 M | 0.03 |
//! | crossbeam bounded | 22.8 / 25.6 us | 3.9 / 3.9 ms | 31.1 / 30.8 M | 0 |
//!
//! A delivery to an idle link waits for exactly that wake, and crossbeam's receivers spin and
//! yield before they park, which on two cores takes the core from the thread that would run
//! the job; the throughput it wins is far above any link's message rate, and the unbounded
//! channel allocates a block every 31 jobs (tests/alloc_steady.rs counts the data path's).

use std::cell::Cell;
use std::collections::VecDeque;
use std::sync::{Arc, OnceLock};

use parking_lot::{Condvar, Mutex};

/// Workers of the process. More than one, so that a callback blocked in a send does not hold
/// up the links of other peers; few, since callbacks are short (a ring push, a reply).
const WORKERS: usize = 4;

/// A unit of work for a worker.
pub(crate) trait Job: Send + Sync {
    /// Run a bounded batch; true when more is waiting (the job is queued again, at the end).
    fn run(&self) -> bool;
}

struct Pool {
    ready: Mutex<VecDeque<Arc<dyn Job>>>,
    cv: Condvar,
    /// Workers running (the start latch: `pool` returns once all are).
    running: Mutex<usize>,
    up: Condvar,
}

/// How long `start` waits for the workers to run: a loaded machine may schedule a new thread
/// late; past this the pool is used anyway (the workers come when they come).
const START_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

static POOL: OnceLock<Result<Arc<Pool>, String>> = OnceLock::new();

thread_local! {
    static ON_WORKER: Cell<bool> = const { Cell::new(false) };
}

fn pool() -> Result<&'static Arc<Pool>, String> {
    POOL.get_or_init(|| {
        let pool = Arc::new(Pool {
            ready: Mutex::new(VecDeque::with_capacity(64)),
            cv: Condvar::new(),
            running: Mutex::new(0),
            up: Condvar::new(),
        });
        for i in 0..WORKERS {
            let p = pool.clone();
            std::thread::Builder::new()
                .name(format!("tracer-unix-cb{i}"))
                .spawn(move || work(&p))
                .map_err(|e| format!("cannot start a link worker: {e}"))?;
        }
        // Every worker made its one-time state (below) before the first link exists, so none
        // is made on the data path (tests/alloc_steady.rs counts every allocation there).
        let deadline = std::time::Instant::now() + START_WAIT;
        let mut running = pool.running.lock();
        while *running < WORKERS && !pool.up.wait_until(&mut running, deadline).timed_out() {}
        drop(running);
        Ok(pool)
    })
    .as_ref()
    .map_err(Clone::clone)
}

/// Start the workers now (a transport does at start, so that a failure is its error).
pub(crate) fn start() -> Result<(), String> {
    pool().map(|_| ())
}

/// Queue `job` for a worker. The caller makes sure a job is queued at most once at a time.
pub(crate) fn schedule(job: Arc<dyn Job>) {
    // The pool was started by the transport before any link existed.
    if let Ok(p) = pool() {
        p.ready.lock().push_back(job);
        p.cv.notify_one();
    }
}

/// Whether the caller is a worker (a shutdown from inside a callback must not wait for the
/// callbacks of the workers).
pub(crate) fn on_worker() -> bool {
    ON_WORKER.with(|w| w.get())
}

fn work(pool: &Pool) {
    ON_WORKER.with(|w| w.set(true));
    // A thread's first park makes its parking record (parking_lot allocates it): make it now.
    let _ = Condvar::new().wait_for(&mut Mutex::new(()).lock(), std::time::Duration::ZERO);
    *pool.running.lock() += 1;
    pool.up.notify_all();
    loop {
        let job = {
            let mut ready = pool.ready.lock();
            loop {
                if let Some(j) = ready.pop_front() {
                    break j;
                }
                pool.cv.wait(&mut ready);
            }
        };
        if job.run() {
            pool.ready.lock().push_back(job);
            pool.cv.notify_one();
        }
    }
}
