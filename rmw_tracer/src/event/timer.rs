//! One timer thread per process (`rmw_tracer-qos-timer`) for the deadline and liveliness
//! emulation: it wakes each endpoint whose deadline or lease falls due, so that a missed
//! deadline or a lost liveliness makes its event ready (and calls its callback) at that time,
//! not at the next look. One thread for every endpoint of every context, started with the
//! first endpoint that needs it; an entry holds a weak reference, so it keeps nothing alive.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{OnceLock, Weak};
use std::time::Instant;

use parking_lot::{Condvar, Mutex};

use super::Events;

#[derive(Default)]
struct Queue {
    /// Due time and timer id -> the endpoint.
    due: BTreeMap<(Instant, u64), Weak<Events>>,
    /// Timer id -> its due time (one entry per id).
    by_id: HashMap<u64, Instant>,
}

struct Timer {
    queue: Mutex<Queue>,
    wake: Condvar,
}

static TIMER: OnceLock<Option<&'static Timer>> = OnceLock::new();
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// A fresh timer id for one endpoint.
pub fn new_id() -> u64 {
    NEXT_ID.fetch_add(1, Ordering::Relaxed)
}

fn timer() -> Option<&'static Timer> {
    *TIMER.get_or_init(|| {
        let t: &'static Timer = Box::leak(Box::new(Timer {
            queue: Mutex::new(Queue::default()),
            wake: Condvar::new(),
        }));
        let started = std::thread::Builder::new()
            .name("rmw_tracer-qos-timer".into())
            .spawn(move || run(t));
        match started {
            Ok(_) => Some(t),
            Err(e) => {
                crate::log::log!(
                    RMW_LOG_SEVERITY_ERROR,
                    "cannot start the QoS timer thread: {e}"
                );
                None
            }
        }
    })
}

/// Wake `who` at `at` (or earlier, if it is already due earlier).
pub fn schedule(id: u64, at: Instant, who: Weak<Events>) {
    let Some(t) = timer() else { return };
    let mut q = t.queue.lock();
    if let Some(&old) = q.by_id.get(&id) {
        if old <= at {
            return;
        }
        q.due.remove(&(old, id));
    }
    q.by_id.insert(id, at);
    q.due.insert((at, id), who);
    t.wake.notify_one();
}

/// Forget `id` (its endpoint is going).
pub fn cancel(id: u64) {
    let Some(Some(t)) = TIMER.get() else { return };
    let mut q = t.queue.lock();
    if let Some(at) = q.by_id.remove(&id) {
        q.due.remove(&(at, id));
    }
}

fn run(t: &Timer) {
    loop {
        let who = {
            let mut q = t.queue.lock();
            loop {
                let Some((&(at, id), _)) = q.due.iter().next() else {
                    t.wake.wait(&mut q);
                    continue;
                };
                let now = Instant::now();
                if at > now {
                    t.wake.wait_for(&mut q, at - now);
                    continue;
                }
                q.by_id.remove(&id);
                break q.due.remove(&(at, id));
            }
        };
        // Called without the queue lock: `on_timer` schedules the next wake itself.
        // A panic must not stop the one timer thread of the process.
        if let Some(e) = who.and_then(|w| w.upgrade()) {
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| e.on_timer()));
        }
    }
}
