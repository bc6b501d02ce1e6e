//! Guard conditions: a libtracer [`Signal`] behind `rmw_guard_condition_t`.
//!
//! A trigger raises the signal; `rmw_wait` reports a raised guard condition once and clears it,
//! as rmw prescribes (a trigger is consumed by the wait that sees it).
//!
//! A wait returns only once no trigger call of its guard conditions is in flight ([`settle`]),
//! and `rmw_destroy_guard_condition` frees one only then.
//! rclpy (Jazzy) needs it: its signal thread triggers each executor's SIGINT guard condition
//! while walking a list that it reads without a lock (`trigger_guard_conditions` in rclpy's
//! `signal_handler.cpp`), and the executor woken by the first trigger can unregister its guard
//! condition, which frees that list, before the walk goes on. On a loaded machine the woken
//! thread often runs at once on the CPU of the triggering one (the kernel's wake-up
//! preemption), so the walk resumed on freed memory and the process died with SIGSEGV on
//! Ctrl-C (6 in 1,750 multi-threaded-executor nodes at load 7 to 18, Fast DDS 0 in 1,000 in the
//! same run; 0 in 1,250 with this, as Fast DDS; docs/rmw-mapping.md, "Ctrl-C").
//!
//! [`settle`]: GuardCondition::settle

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use libtracer_core::{Readiness, Signal};

/// The longest a wait holds back for a trigger still in flight: the triggering thread only has
/// to return, so this bounds a preempted thread's wait for a CPU, never a hang.
const SETTLE_LIMIT: Duration = Duration::from_millis(20);

pub struct GuardCondition {
    signal: Signal,
    /// Trigger calls that have raised the signal and not yet returned.
    in_flight: AtomicU32,
}

impl GuardCondition {
    pub fn new() -> GuardCondition {
        GuardCondition::with_signal(Signal::new())
    }

    /// A guard condition raised by someone else (the registry, for graph guard conditions).
    pub fn with_signal(signal: Signal) -> GuardCondition {
        GuardCondition {
            signal,
            in_flight: AtomicU32::new(0),
        }
    }

    pub fn trigger(&self) {
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        self.signal.raise();
        self.in_flight.fetch_sub(1, Ordering::Release);
    }

    /// Return once no trigger call is in flight (at most [`SETTLE_LIMIT`]): a wait that reports
    /// this guard condition calls it, so the thread it wakes cannot run ahead of the trigger's
    /// return. Yields rather than spins: the triggering thread is usually waiting for this CPU.
    pub fn settle(&self) {
        if self.in_flight.load(Ordering::Acquire) == 0 {
            return;
        }
        let start = Instant::now();
        while self.in_flight.load(Ordering::Acquire) != 0 && start.elapsed() < SETTLE_LIMIT {
            std::thread::yield_now();
        }
    }

    pub fn readiness(&self) -> Readiness {
        self.signal.readiness()
    }

    /// Whether it was triggered since the last wait that saw it; consumes the trigger.
    pub fn take_triggered(&self) -> bool {
        let raised = self.signal.is_raised();
        if raised {
            self.signal.clear();
        }
        raised
    }

    pub fn is_triggered(&self) -> bool {
        self.signal.is_raised()
    }
}

impl Default for GuardCondition {
    fn default() -> Self {
        GuardCondition::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn settle_waits_for_a_trigger_in_flight_and_no_longer_than_its_limit() {
        let g = Arc::new(GuardCondition::new());
        g.settle(); // nothing in flight: returns at once
                    // A trigger that has raised the signal and not returned yet (as when the triggering
                    // thread was preempted by the thread it woke).
        g.in_flight.fetch_add(1, Ordering::SeqCst);
        g.signal.raise();
        let g2 = g.clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(2));
            g2.in_flight.fetch_sub(1, Ordering::Release);
        });
        let start = Instant::now();
        g.settle();
        assert!(g.in_flight.load(Ordering::Acquire) == 0 || start.elapsed() >= SETTLE_LIMIT);
        t.join().unwrap();
        // One that never returns holds a wait back for SETTLE_LIMIT, not forever.
        g.in_flight.fetch_add(1, Ordering::SeqCst);
        let start = Instant::now();
        g.settle();
        assert!(start.elapsed() >= SETTLE_LIMIT);
        assert!(g.take_triggered());
    }
}
