//! Wait sets: one libtracer [`Waiter`] per `rmw_wait_set_t`.
//!
//! `rmw_wait` semantics: a null timeout blocks until something is ready, a zero timeout polls,
//! anything else waits at most that long; entries that are not ready come back null, and
//! `RMW_RET_TIMEOUT` means nothing was ready. A guard condition's trigger is consumed by the
//! wait that reports it.

use std::time::{Duration, Instant};

use libtracer_core::{Readiness, Waiter};
use parking_lot::Mutex;

use crate::boundary::RmwResult;
use crate::guard::GuardCondition;
use crate::service::client::Client;
use crate::service::server::Server;
use crate::subscription::Subscription;

pub struct WaitSet {
    /// rmw lets only one thread wait on a wait set at a time; the lock makes a second one wait
    /// its turn instead of sharing the waiter.
    waiter: Mutex<Waiter>,
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

impl WaitSet {
    pub fn new() -> WaitSet {
        WaitSet {
            waiter: Mutex::new(Waiter::new()),
        }
    }

    /// Wait for any of `entries`; returns which are ready (all false = timed out).
    pub fn wait(
        &self,
        entries: &[Option<Entry<'_>>],
        timeout: Option<Duration>,
    ) -> RmwResult<Vec<bool>> {
        let scan = || -> Vec<bool> {
            entries
                .iter()
                .map(|e| e.as_ref().is_some_and(Entry::is_ready))
                .collect()
        };
        let mut ready = scan();
        if !ready.iter().any(|r| *r) && timeout != Some(Duration::ZERO) {
            let waiter = self.waiter.lock();
            let sources: Vec<Readiness> = entries
                .iter()
                .filter_map(|e| e.as_ref().and_then(Entry::readiness))
                .collect();
            for s in &sources {
                waiter.attach(s);
            }
            // A timeout past what an Instant can hold is as good as forever.
            let deadline = timeout.and_then(|t| Instant::now().checked_add(t));
            loop {
                let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
                if left == Some(Duration::ZERO) {
                    break;
                }
                waiter.wait(left);
                ready = scan();
                if ready.iter().any(|r| *r) {
                    break;
                }
            }
            waiter.clear();
        }
        // Consume the triggers this wait reports.
        for (e, r) in entries.iter().zip(&ready) {
            if let (Some(Entry::GuardCondition(g)), true) = (e, r) {
                g.take_triggered();
            }
        }
        Ok(ready)
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

    #[test]
    fn guard_conditions_poll_block_and_consume() {
        let ws = WaitSet::new();
        let g = GuardCondition::new();
        let none = ws
            .wait(&[Some(Entry::GuardCondition(&g))], Some(Duration::ZERO))
            .unwrap();
        assert_eq!(none, vec![false]);
        let t0 = Instant::now();
        let none = ws
            .wait(
                &[Some(Entry::GuardCondition(&g))],
                Some(Duration::from_millis(30)),
            )
            .unwrap();
        assert_eq!(none, vec![false]);
        assert!(t0.elapsed() >= Duration::from_millis(30));
        g.trigger();
        let yes = ws
            .wait(&[Some(Entry::GuardCondition(&g)), None], None)
            .unwrap();
        assert_eq!(yes, vec![true, false]);
        // consumed
        let again = ws
            .wait(&[Some(Entry::GuardCondition(&g))], Some(Duration::ZERO))
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
        let r = ws.wait(&[Some(Entry::GuardCondition(&g))], None).unwrap();
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
            ws.wait(&[Some(Entry::GuardCondition(&g))], forever)
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
            ws.wait(&[Some(Entry::GuardCondition(&g2))], Some(Duration::MAX))
                .unwrap(),
            vec![true]
        );
    }
}
