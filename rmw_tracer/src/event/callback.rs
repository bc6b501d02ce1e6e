//! `rmw_event_set_callback`: one notifier thread per endpoint with a callback, woken by the
//! registry, the timer and every 100 ms (the ring's drop counter), that tells each callback how
//! many events it has not heard of.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use libtracer_core::Waiter;

use super::status::key;
use super::{End, Events, Kind};
use crate::boundary::event_callback::EventCallback;
use crate::boundary::{RmwError, RmwResult};

impl Events {
    /// `rmw_event_set_callback`. Callbacks are called from a notifier thread per endpoint
    /// (woken by the registry and the timer, and every 100 ms for the ring's drop counter)
    /// with the number of events not yet told.
    pub fn set_callback(self: &Arc<Self>, kind: Kind, cb: Option<EventCallback>) -> RmwResult<()> {
        self.stop_notifier();
        {
            let mut st = self.state.lock();
            match cb {
                Some(cb) => st.callbacks.insert(key(kind), cb),
                None => st.callbacks.remove(&key(kind)),
            };
            if kind == Kind::Matched {
                st.notified_matched = None;
            }
            if st.callbacks.is_empty() {
                return Ok(());
            }
        }
        let stop = Arc::new(AtomicBool::new(false));
        // A weak reference: the thread must not keep its owner alive (Drop stops it).
        let me = Arc::downgrade(self);
        let stop2 = stop.clone();
        let t = std::thread::Builder::new()
            .name("rmw_tracer-events".into())
            .spawn(move || Events::notify_loop(&me, &stop2))
            .map_err(|e| {
                RmwError::failed(format!("cannot start the event callback thread: {e}"))
            })?;
        *self.notifier.lock() = Some((stop, t));
        Ok(())
    }

    fn notify_loop(me: &Weak<Events>, stop: &AtomicBool) {
        let waiter = Waiter::new();
        match me.upgrade() {
            Some(e) => waiter.attach(&e.signal.readiness()),
            None => return,
        }
        while !stop.load(Ordering::SeqCst) {
            waiter.wait(Some(Duration::from_millis(100)));
            if stop.load(Ordering::SeqCst) {
                break;
            }
            let Some(e) = me.upgrade() else { break };
            e.signal.clear();
            e.notify_once();
        }
    }

    /// One round of the notifier: tell the callbacks what they have not heard of.
    pub(super) fn notify_once(&self) {
        self.refresh();
        let mut calls: Vec<(EventCallback, usize)> = Vec::new();
        let lost_cb = self
            .state
            .lock()
            .callbacks
            .get(&key(Kind::MessageLost))
            .copied();
        if lost_cb.is_some() {
            self.poll_lost();
        }
        {
            let mut st = self.state.lock();
            let cbs = st.callbacks.clone();
            for (k, cb) in cbs {
                let n = match k {
                    k if k == key(Kind::Matched) => {
                        // Every change of the matched set the callback has not heard of is one
                        // event.
                        let seen = st
                            .notified_matched
                            .take()
                            .unwrap_or_else(|| st.taken.clone());
                        let now = st.matched.clone();
                        let changed = now != seen;
                        st.notified_matched = Some(now);
                        u64::from(changed)
                    }
                    k if k == key(Kind::MessageLost) => {
                        let tell = st.lost_pending.saturating_sub(st.told_lost);
                        st.told_lost += tell;
                        tell
                    }
                    k if k == key(Kind::QosIncompatible) => st.incompatible_qos.untold(),
                    k if k == key(Kind::TypeIncompatible) => st.incompatible_type.untold(),
                    k if k == key(Kind::DeadlineMissed) => st.deadline_missed.untold(),
                    _ => match self.end {
                        End::Publisher => st.liveliness_lost.untold(),
                        End::Subscription => st.liveliness_changes.untold(),
                    },
                };
                if n > 0 {
                    calls.push((cb, n as usize));
                }
            }
        }
        // Called without our locks held: a callback may take the event at once.
        for (cb, n) in calls {
            cb.call(n);
        }
    }

    pub(super) fn stop_notifier(&self) {
        if let Some((stop, t)) = self.notifier.lock().take() {
            stop.store(true, Ordering::SeqCst);
            self.signal.raise();
            // The notifier itself may drop the last reference (it upgrades its weak one).
            if t.thread().id() != std::thread::current().id() {
                let _ = t.join();
            }
        }
    }
}
