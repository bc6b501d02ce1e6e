//! Wait sets: one libtracer [`Waiter`] per `rmw_wait_set_t`.
//!
//! `rmw_wait` semantics: a null timeout blocks until something is ready, a zero timeout polls,
//! anything else waits at most that long; entries that are not ready come back null, and
//! `RMW_RET_TIMEOUT` means nothing was ready. A guard condition's trigger is consumed by the
//! wait that reports it.
//!
//! Before it sleeps, a wait may spin a little (`RMW_TRACER_WAIT_SPIN_US`): a reply that arrives within the
//! budget then costs no sleep, no futex wake by the writer and no context switch (docs/loans.md,
//! "Intra-process"). A wait set spins only while spinning pays: after a spin that found nothing
//! (a timer, an idle topic, or a writer that could not run because the CPUs are busy) it sleeps
//! at once, and tries a spin again only every [`PROBE_EVERY`] waits, so an idle node costs next
//! to no CPU.

use std::time::{Duration, Instant};

use libtracer_core::{Readiness, WaitTuning, Waiter};
use parking_lot::Mutex;

use crate::boundary::RmwResult;
use crate::guard::GuardCondition;
use crate::service::client::Client;
use crate::service::server::Server;
use crate::subscription::Subscription;

/// After a spin that found nothing, every this many waits spins once more to see if it pays.
const PROBE_EVERY: u32 = 16;

/// The waits' settings (`RMW_TRACER_WAIT_SPIN_US`, `RMW_TRACER_WAIT_LEADS`; libtracer_core's
/// `wait_tuning`, shared with the C API), a value not understood logged once.
fn tuning() -> WaitTuning {
    WaitTuning::get(|m| crate::log::log!(RMW_LOG_SEVERITY_WARN, "{m}"))
}

pub struct WaitSet {
    /// rmw lets only one thread wait on a wait set at a time; the lock makes a second one wait
    /// its turn instead of sharing the waiter.
    state: Mutex<State>,
}

struct State {
    waiter: Waiter,
    /// Reused from wait to wait, so the steady path allocates nothing here.
    ready: Vec<bool>,
    sources: Vec<Readiness>,
    /// The last spin found something ready.
    spin_paid: bool,
    /// Waits since the last spin.
    since_spin: u32,
}

/// One entry of an `rmw_wait` array: `None` for a null slot.
pub enum Entry<'a> {
    Subscription(&'a Subscription),
    GuardCondition(&'a GuardCondition),
    Service(&'a Server),
    Client(&'a Client),
    /// A QoS event of a publisher or subscription.
    Event(crate::event::Waitable<'a>),
}

impl Entry<'_> {
    fn readiness(&self) -> Option<Readiness> {
        match self {
            Entry::Subscription(s) => Some(s.readiness()),
            Entry::GuardCondition(g) => Some(g.readiness()),
            Entry::Service(s) => Some(s.readiness()),
            Entry::Client(c) => Some(c.readiness()),
            Entry::Event(e) => e.readiness(),
        }
    }

    fn is_ready(&self) -> bool {
        match self {
            Entry::Subscription(s) => s.is_ready(),
            Entry::GuardCondition(g) => g.is_triggered(),
            Entry::Service(s) => s.is_ready(),
            Entry::Client(c) => c.is_ready(),
            Entry::Event(e) => e.is_ready(),
        }
    }
}

/// `rmw_time_t` to a timeout: `None` (forever) for a null pointer or a time too large to
/// represent (`RMW_DURATION_INFINITE` and beyond).
pub fn timeout_of(t: Option<&ffi::rmw_time_t>) -> Option<Duration> {
    let t = t?;
    Duration::from_secs(t.sec).checked_add(Duration::from_nanos(t.nsec))
}

/// Which entries are ready, into `ready`; whether any is.
fn scan(entries: &[Option<Entry<'_>>], ready: &mut Vec<bool>) -> bool {
    ready.clear();
    ready.extend(
        entries
            .iter()
            .map(|e| e.as_ref().is_some_and(Entry::is_ready)),
    );
    ready.iter().any(|r| *r)
}

impl WaitSet {
    pub fn new() -> WaitSet {
        WaitSet {
            state: Mutex::new(State {
                waiter: Waiter::new(),
                ready: Vec::new(),
                sources: Vec::new(),
                spin_paid: true,
                since_spin: 0,
            }),
        }
    }

    /// Wait for any of `entries`, then hand `report` which are ready (all false = timed out).
    pub fn wait<R>(
        &self,
        entries: &[Option<Entry<'_>>],
        timeout: Option<Duration>,
        report: impl FnOnce(&[bool]) -> R,
    ) -> RmwResult<R> {
        let mut st = self.state.lock();
        let State {
            waiter,
            ready,
            sources,
            spin_paid,
            since_spin,
        } = &mut *st;
        if !scan(entries, ready) && timeout != Some(Duration::ZERO) {
            let start = Instant::now();
            // A timeout past what an Instant can hold is as good as forever.
            let deadline = timeout.and_then(|t| start.checked_add(t));
            let budget = tuning().spin;
            let mut found = false;
            if !budget.is_zero() && (*spin_paid || *since_spin >= PROBE_EVERY) {
                let until = deadline.map_or(start + budget, |d| d.min(start + budget));
                while Instant::now() < until {
                    std::hint::spin_loop();
                    if scan(entries, ready) {
                        found = true;
                        break;
                    }
                }
                *spin_paid = found;
                *since_spin = 0;
            } else {
                *since_spin = since_spin.saturating_add(1);
            }
            if !found {
                sources.extend(
                    entries
                        .iter()
                        .filter_map(|e| e.as_ref().and_then(Entry::readiness)),
                );
                for s in sources.iter() {
                    waiter.attach(s);
                }
                loop {
                    let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
                    if left == Some(Duration::ZERO) {
                        break;
                    }
                    waiter.wait_maybe_leading(tuning().leads, left);
                    if scan(entries, ready) {
                        break;
                    }
                }
                waiter.clear();
                sources.clear();
            }
        }
        // Return only once no trigger of this wait's guard conditions is in flight, reported or
        // not (a wait woken by data can end while a trigger is waking it): rclpy's signal thread
        // needs its trigger to return before the woken executor goes on (guard.rs). Then consume
        // the triggers this wait reports.
        for (e, r) in entries.iter().zip(ready.iter()) {
            if let Some(Entry::GuardCondition(g)) = e {
                g.settle();
                if *r {
                    g.take_triggered();
                }
            }
        }
        Ok(report(ready))
    }
}

impl Default for WaitSet {
    fn default() -> Self {
        WaitSet::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl WaitSet {
        fn wait_vec(
            &self,
            entries: &[Option<Entry<'_>>],
            timeout: Option<Duration>,
        ) -> RmwResult<Vec<bool>> {
            self.wait(entries, timeout, <[bool]>::to_vec)
        }
    }

    #[test]
    fn guard_conditions_poll_block_and_consume() {
        let ws = WaitSet::new();
        let g = GuardCondition::new();
        let none = ws
            .wait_vec(&[Some(Entry::GuardCondition(&g))], Some(Duration::ZERO))
            .unwrap();
        assert_eq!(none, vec![false]);
        let t0 = Instant::now();
        let none = ws
            .wait_vec(
                &[Some(Entry::GuardCondition(&g))],
                Some(Duration::from_millis(30)),
            )
            .unwrap();
        assert_eq!(none, vec![false]);
        assert!(t0.elapsed() >= Duration::from_millis(30));
        g.trigger();
        let yes = ws
            .wait_vec(&[Some(Entry::GuardCondition(&g)), None], None)
            .unwrap();
        assert_eq!(yes, vec![true, false]);
        // consumed
        let again = ws
            .wait_vec(&[Some(Entry::GuardCondition(&g))], Some(Duration::ZERO))
            .unwrap();
        assert_eq!(again, vec![false]);
    }

    #[test]
    fn a_trigger_from_another_thread_ends_an_infinite_wait() {
        let ws = WaitSet::new();
        let g = std::sync::Arc::new(GuardCondition::new());
        let g2 = g.clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            g2.trigger();
        });
        let r = ws
            .wait_vec(&[Some(Entry::GuardCondition(&g))], None)
            .unwrap();
        assert_eq!(r, vec![true]);
        t.join().unwrap();
    }

    #[test]
    fn timeouts() {
        assert_eq!(timeout_of(None), None);
        assert_eq!(
            timeout_of(Some(&ffi::rmw_time_t { sec: 1, nsec: 5 })),
            Some(Duration::new(1, 5))
        );
        assert_eq!(
            timeout_of(Some(&ffi::rmw_time_t {
                sec: u64::MAX,
                nsec: 1_000_000_000
            })),
            None
        );
        // RMW_DURATION_INFINITE: representable, but no deadline can be computed from it.
        let ws = WaitSet::new();
        let g = GuardCondition::new();
        g.trigger();
        let forever = timeout_of(Some(&ffi::rmw_time_t {
            sec: 9_223_372_036,
            nsec: 854_775_807,
        }));
        assert_eq!(
            ws.wait_vec(&[Some(Entry::GuardCondition(&g))], forever)
                .unwrap(),
            vec![true]
        );
        let g2 = GuardCondition::new();
        let t = std::thread::spawn({
            let g2 = std::sync::Arc::new(g2);
            let g3 = g2.clone();
            move || {
                std::thread::sleep(Duration::from_millis(20));
                g3.trigger();
                g2
            }
        });
        let g2 = t.join().unwrap();
        assert_eq!(
            ws.wait_vec(&[Some(Entry::GuardCondition(&g2))], Some(Duration::MAX))
                .unwrap(),
            vec![true]
        );
    }
}
