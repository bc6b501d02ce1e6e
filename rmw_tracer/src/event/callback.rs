//! `rmw_event_set_callback`: one notifier thread per process (`rmw_tracer-events`), started
//! with the first event callback, for every endpoint of every context that has one.
//!
//! An endpoint with a callback attaches its event signal to the notifier's one waiter. The
//! signal is raised by whatever changes an event: the registry (matched, incompatible QoS or
//! type, liveliness of peers), the subscription ring as a sample lands and evicts an older one
//! (message lost: `Events::on_land`); deadlines and leases are the QoS timer's, which tells the
//! callbacks itself. When the waiter wakes, each endpoint whose signal is up is told what its
//! callbacks have not heard of. Nothing is polled: the thread sleeps until a signal rises, and
//! the thread count does not grow with the number of endpoints (issue 26: one thread per
//! endpoint made 418 threads for 200 subscriptions under rclcpp's EventsExecutor).

use std::sync::{Arc, OnceLock, Weak};

use libtracer_core::{Signal, Waiter};
use parking_lot::Mutex;

use super::status::key;
use super::{End, Events, Kind};
use crate::boundary::event_callback::EventCallback;
use crate::boundary::{RmwError, RmwResult};

struct Notifier {
    waiter: Waiter,
    /// Endpoints with at least one callback.
    endpoints: Mutex<Vec<Weak<Events>>>,
    /// Raised to make the thread look at its list again (an endpoint was added).
    kick: Signal,
}

static NOTIFIER: OnceLock<Option<&'static Notifier>> = OnceLock::new();

fn notifier() -> Option<&'static Notifier> {
    *NOTIFIER.get_or_init(|| {
        let n: &'static Notifier = Box::leak(Box::new(Notifier {
            waiter: Waiter::new(),
            endpoints: Mutex::new(Vec::new()),
            kick: Signal::new(),
        }));
        n.waiter.attach(&n.kick.readiness());
        let started = std::thread::Builder::new()
            .name("rmw_tracer-events".into())
            .spawn(move || run(n));
        match started {
            Ok(_) => Some(n),
            Err(e) => {
                crate::log::log!(
                    RMW_LOG_SEVERITY_ERROR,
                    "cannot start the event callback thread: {e}"
                );
                None
            }
        }
    })
}

fn run(n: &Notifier) {
    loop {
        n.waiter.wait(None);
        n.kick.clear();
        let ready: Vec<Arc<Events>> = {
            let mut eps = n.endpoints.lock();
            eps.retain(|w| w.strong_count() > 0);
            eps.iter()
                .filter_map(Weak::upgrade)
                .filter(|e| e.signal.is_raised())
                .collect()
        };
        for e in ready {
            // Lowered before the look, so that a change racing with it raises it again.
            e.signal.clear();
            // A panic must not stop the one notifier thread of the process.
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| e.notify_once()));
        }
    }
}

impl Events {
    /// `rmw_event_set_callback`. Callbacks are called from the process's notifier thread
    /// (registry changes, lost messages) or its QoS timer thread (deadlines, leases) with the
    /// number of events not yet told. Once this returns, a callback it replaced or cleared is
    /// not running and is never called again.
    pub fn set_callback(self: &Arc<Self>, kind: Kind, cb: Option<EventCallback>) -> RmwResult<()> {
        let _calling = self.calling.lock();
        let any = {
            let mut st = self.state.lock();
            match cb {
                Some(cb) => st.callbacks.insert(key(kind), cb),
                None => st.callbacks.remove(&key(kind)),
            };
            if kind == Kind::Matched {
                st.notified_matched = None;
            }
            self.lost_callback.store(
                st.callbacks.contains_key(&key(Kind::MessageLost)),
                std::sync::atomic::Ordering::Release,
            );
            !st.callbacks.is_empty()
        };
        let n = notifier()
            .ok_or_else(|| RmwError::failed("the event callback thread could not be started"))?;
        let mut eps = n.endpoints.lock();
        let listed = eps.iter().any(|w| w.as_ptr() == Arc::as_ptr(self));
        match (any, listed) {
            (true, false) => {
                eps.push(Arc::downgrade(self));
                n.waiter.attach(&self.signal.readiness());
            }
            (false, true) => self.unlist(&mut eps, n),
            _ => {}
        }
        drop(eps);
        if cb.is_some() {
            // The first look: events that came before the callback are told at once.
            self.signal.raise();
            n.kick.raise();
        }
        Ok(())
    }

    fn unlist(&self, eps: &mut Vec<Weak<Events>>, n: &Notifier) {
        eps.retain(|w| !std::ptr::eq(w.as_ptr(), self));
        n.waiter.detach(&self.signal.readiness());
    }

    /// The endpoint is going: off the notifier's list.
    pub(super) fn stop_notifier(&self) {
        if let Some(Some(n)) = NOTIFIER.get() {
            self.unlist(&mut n.endpoints.lock(), n);
        }
    }

    /// One round of the notifier: tell the callbacks what they have not heard of.
    pub(super) fn notify_once(&self) {
        // Held across the calls: `set_callback` waits for them (re-entrant: a callback may
        // set callbacks from inside the call).
        let _calling = self.calling.lock();
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
        // Called without the state lock: a callback may take the event at once.
        for (cb, n) in calls {
            cb.call(n);
        }
    }
}
