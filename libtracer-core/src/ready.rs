//! Readiness: one `Waiter` blocks on many sources (rings, signals) at once.
//!
//! A source is a level (ready or not) plus the list of waiters attached to it. Raising the level
//! from false to true wakes every attached waiter; a waiter sleeps on its own mutex + condvar, so
//! a wake-up costs one futex wake and nothing spins. A waiter re-checks every source's level while
//! holding its own mutex before it sleeps, and a source sets its level before it takes that mutex
//! to notify, so no wake-up can be lost between the check and the sleep.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

#[derive(Default)]
pub(crate) struct ReadyCore {
    level: AtomicBool,
    nwaiters: AtomicUsize,
    waiters: Mutex<Vec<Arc<WaiterCore>>>,
}

impl ReadyCore {
    pub(crate) fn new() -> Arc<ReadyCore> {
        Arc::new(ReadyCore::default())
    }

    pub(crate) fn is_set(&self) -> bool {
        self.level.load(Ordering::SeqCst)
    }

    /// Set the level; wakes attached waiters on a false -> true edge only, so a busy stream does
    /// not pay for a wake-up per write.
    pub(crate) fn set(&self, ready: bool) {
        if ready {
            if !self.level.swap(true, Ordering::SeqCst) && self.nwaiters.load(Ordering::SeqCst) > 0
            {
                self.wake();
            }
        } else {
            self.level.store(false, Ordering::SeqCst);
        }
    }

    /// Raise or lower the level without waking anyone; true when the caller must `wake()` (a
    /// false -> true edge with waiters attached). Lets a ring set its level under its own lock
    /// and do the futex wake after releasing it.
    pub(crate) fn set_quiet(&self, ready: bool) -> bool {
        if ready {
            // Already set (a busy ring): no read-modify-write on the hot path.
            if self.level.load(Ordering::SeqCst) {
                return false;
            }
            !self.level.swap(true, Ordering::SeqCst) && self.nwaiters.load(Ordering::SeqCst) > 0
        } else {
            self.level.store(false, Ordering::SeqCst);
            false
        }
    }

    /// Wake attached waiters without changing the level (used when a source is removed).
    pub(crate) fn wake(&self) {
        // The list is copied and the futex wakes happen after its lock is released: a woken
        // waiter detaches from this very list on its way out of `wait`, and finding the lock
        // still held by the waker (descheduled in the wake syscall) made it spin and yield,
        // two sched_yield and two more context switches per intra-process round trip
        // (measured, docs/loans.md "Intra-process"). Up to four waiters (the usual one or two)
        // are copied without allocating.
        let mut few: [Option<Arc<WaiterCore>>; 4] = Default::default();
        let mut more = Vec::new();
        {
            let ws = self.waiters.lock();
            for (i, w) in ws.iter().enumerate() {
                match few.get_mut(i) {
                    Some(slot) => *slot = Some(w.clone()),
                    None => more.push(w.clone()),
                }
            }
        }
        for w in few.iter().flatten().chain(more.iter()) {
            w.notify();
        }
    }

    fn attach(&self, w: &Arc<WaiterCore>) {
        let mut ws = self.waiters.lock();
        if !ws.iter().any(|x| Arc::ptr_eq(x, w)) {
            ws.push(w.clone());
            self.nwaiters.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn detach(&self, w: &Arc<WaiterCore>) {
        let mut ws = self.waiters.lock();
        let before = ws.len();
        ws.retain(|x| !Arc::ptr_eq(x, w));
        if ws.len() != before {
            self.nwaiters.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// Wakes the thread that leads the links' loop (set by the loop when it starts: the links are a
/// layer above this module, docs/architecture.md).
static LEADER_POKE: OnceLock<fn()> = OnceLock::new();

/// How to wake a waiter that leads the links' loop (`Waiter::wait_leading`, `link/lead.rs`).
pub(crate) fn on_leader_poke(poke: fn()) {
    let _ = LEADER_POKE.set(poke);
}

#[derive(Default)]
pub(crate) struct WaiterCore {
    notified: Mutex<bool>,
    cv: Condvar,
    sources: Mutex<Vec<Arc<ReadyCore>>>,
    /// The waiting thread leads the links' loop (`wait_leading`): a notify pokes it there.
    leading: AtomicBool,
}

impl WaiterCore {
    fn notify(&self) {
        *self.notified.lock() = true;
        // After the level (the caller set it, SeqCst): a leader that looked before the level
        // was set is committed to waiting, and the poke reaches it (`link/lead.rs`).
        if self.leading.load(Ordering::SeqCst) {
            if let Some(poke) = LEADER_POKE.get() {
                poke();
            }
        }
        self.cv.notify_one();
    }
}

/// A readiness source as the rmw layer sees it: a ring's "non-empty", or a `Signal`.
#[derive(Clone)]
pub struct Readiness(pub(crate) Arc<ReadyCore>);

impl Readiness {
    pub fn is_ready(&self) -> bool {
        self.0.is_set()
    }
    /// Attach `w`: `w.wait` now returns when this source is ready. Attaching twice is a no-op.
    pub fn attach(&self, w: &Waiter) {
        self.0.attach(&w.0);
        let mut s = w.0.sources.lock();
        if !s.iter().any(|x| Arc::ptr_eq(x, &self.0)) {
            s.push(self.0.clone());
        }
    }
    pub fn detach(&self, w: &Waiter) {
        self.0.detach(&w.0);
        w.0.sources.lock().retain(|x| !Arc::ptr_eq(x, &self.0));
    }
}

impl std::fmt::Debug for Readiness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Readiness({})", self.is_ready())
    }
}

/// One per blocking thread (an rmw wait set). Not `Clone`: dropping it detaches it everywhere.
pub struct Waiter(Arc<WaiterCore>);

impl Default for Waiter {
    fn default() -> Self {
        Waiter::new()
    }
}

impl Waiter {
    pub fn new() -> Waiter {
        Waiter(Arc::new(WaiterCore::default()))
    }

    pub fn attach(&self, r: &Readiness) {
        r.attach(self);
    }

    pub fn detach(&self, r: &Readiness) {
        r.detach(self);
    }

    /// Detach every source. The list keeps its memory for the next attach (a wait set attaches
    /// and clears on every wait).
    pub fn clear(&self) {
        let mut srcs = self.0.sources.lock();
        for s in srcs.drain(..) {
            s.detach(&self.0);
        }
    }

    pub(crate) fn any_ready(&self) -> bool {
        self.0.sources.lock().iter().any(|s| s.is_set())
    }

    /// While set, a notify also pokes the leader of the links' loop (`link/lead.rs`).
    pub(crate) fn set_leading(&self, leading: bool) {
        self.0.leading.store(leading, Ordering::SeqCst);
    }

    /// Block until an attached source is ready or the timeout passes (`None` = forever,
    /// `Some(ZERO)` = poll). Returns whether a source is ready.
    pub fn wait(&self, timeout: Option<Duration>) -> bool {
        let deadline = timeout.map(|t| Instant::now() + t);
        let mut n = self.0.notified.lock();
        loop {
            *n = false;
            if self.any_ready() {
                return true;
            }
            match deadline {
                None => self.0.cv.wait(&mut n),
                Some(d) => {
                    if Instant::now() >= d {
                        return false;
                    }
                    if self.0.cv.wait_until(&mut n, d).timed_out() && !*n {
                        return self.any_ready();
                    }
                }
            }
        }
    }
}

impl Drop for Waiter {
    fn drop(&mut self) {
        self.clear();
    }
}

/// A readiness source the owner sets and clears by hand: guard conditions, events.
#[derive(Clone, Default)]
pub struct Signal(Arc<ReadyCore>);

impl Signal {
    pub fn new() -> Signal {
        Signal::default()
    }
    pub fn raise(&self) {
        self.0.set(true);
    }
    pub fn clear(&self) {
        self.0.set(false);
    }
    pub fn is_raised(&self) -> bool {
        self.0.is_set()
    }
    pub fn readiness(&self) -> Readiness {
        Readiness(self.0.clone())
    }
}

impl std::fmt::Debug for Signal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Signal({})", self.is_raised())
    }
}

/// Lets a thread block until a vertex's own store changes (`Vertex::await_change`). Writers pay one
/// atomic increment and one atomic load unless someone is waiting.
#[derive(Default)]
pub(crate) struct ChangeNotifier {
    changes: std::sync::atomic::AtomicU64,
    waiting: AtomicUsize,
    lock: Mutex<()>,
    cv: Condvar,
}

impl ChangeNotifier {
    pub(crate) fn bump(&self) {
        self.changes.fetch_add(1, Ordering::SeqCst);
        if self.waiting.load(Ordering::SeqCst) > 0 {
            let _g = self.lock.lock();
            self.cv.notify_all();
        }
    }

    /// Returns true if a change happened after the call started.
    pub(crate) fn wait(&self, timeout: Option<Duration>) -> bool {
        self.wait_past(self.version(), timeout.map(|t| Instant::now() + t))
    }

    /// How many changes there have been: a version to wait past (`wait_past`).
    pub(crate) fn version(&self) -> u64 {
        self.changes.load(Ordering::SeqCst)
    }

    /// Block until a change after `version` (at once if there was one already), or until
    /// `deadline`; true when there was one. No change between reading `version` and calling
    /// this can be missed.
    pub(crate) fn wait_past(&self, version: u64, deadline: Option<Instant>) -> bool {
        let start = version;
        self.waiting.fetch_add(1, Ordering::SeqCst);
        let mut g = self.lock.lock();
        let changed = loop {
            if self.changes.load(Ordering::SeqCst) != start {
                break true;
            }
            match deadline {
                None => self.cv.wait(&mut g),
                Some(d) => {
                    if Instant::now() >= d {
                        break false;
                    }
                    self.cv.wait_until(&mut g, d);
                }
            }
        };
        drop(g);
        self.waiting.fetch_sub(1, Ordering::SeqCst);
        changed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signal_wakes_a_waiter_on_another_thread() {
        let s = Signal::new();
        let w = Waiter::new();
        w.attach(&s.readiness());
        assert!(!w.wait(Some(Duration::from_millis(1))));
        let s2 = s.clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            s2.raise();
        });
        assert!(w.wait(Some(Duration::from_secs(10))));
        t.join().unwrap();
        s.clear();
        assert!(!w.wait(Some(Duration::ZERO)));
    }

    #[test]
    fn detached_source_no_longer_counts() {
        let s = Signal::new();
        s.raise();
        let w = Waiter::new();
        w.attach(&s.readiness());
        assert!(w.wait(Some(Duration::ZERO)));
        w.detach(&s.readiness());
        assert!(!w.wait(Some(Duration::ZERO)));
    }
}
