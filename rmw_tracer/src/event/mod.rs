//! QoS events of publishers and subscriptions (R3): what rmw_tracer can report truthfully.
//!
//! | event | state |
//! |---|---|
//! | PUBLICATION_MATCHED / SUBSCRIPTION_MATCHED | from the endpoint registry: the endpoints of the other kind on the same topic with the same type, here and on every peer |
//! | MESSAGE_LOST | samples the subscription ring dropped on overflow |
//! | OFFERED / REQUESTED_QOS_INCOMPATIBLE | supported, never raised: rmw_tracer matches endpoints whatever their QoS (`crate::qos_compat` never answers ERROR) |
//! | deadline, liveliness, incompatible type | `RMW_RET_UNSUPPORTED` (no deadline or liveliness is offered; a type mismatch is not detected as an event) |
//!
//! An `rmw_event_t` is the caller's and librmw's `rmw_event_fini` only clears it, so an event
//! owns nothing: its `data` is the publisher's or subscription's object, and the state of its
//! events lives here, inside that object ([`Events`]).

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

use libtracer_core::{Readiness, Signal, Waiter};
use parking_lot::Mutex;

use crate::boundary::event_callback::EventCallback;
use crate::boundary::{RmwError, RmwResult};
use crate::context::Shared;
use crate::gid::Gid;
use crate::registry::EntityKind;

/// The event kinds rmw_tracer offers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Matched,
    MessageLost,
    QosIncompatible,
}

/// Which end an event type belongs to, and what rmw_tracer does with it: `None` = unsupported.
pub fn classify(t: ffi::rmw_event_type_t) -> (Option<End>, Option<Kind>) {
    match t {
        ffi::RMW_EVENT_PUBLICATION_MATCHED => (Some(End::Publisher), Some(Kind::Matched)),
        ffi::RMW_EVENT_OFFERED_QOS_INCOMPATIBLE => {
            (Some(End::Publisher), Some(Kind::QosIncompatible))
        }
        ffi::RMW_EVENT_LIVELINESS_LOST
        | ffi::RMW_EVENT_OFFERED_DEADLINE_MISSED
        | ffi::RMW_EVENT_PUBLISHER_INCOMPATIBLE_TYPE => (Some(End::Publisher), None),
        ffi::RMW_EVENT_SUBSCRIPTION_MATCHED => (Some(End::Subscription), Some(Kind::Matched)),
        ffi::RMW_EVENT_MESSAGE_LOST => (Some(End::Subscription), Some(Kind::MessageLost)),
        ffi::RMW_EVENT_REQUESTED_QOS_INCOMPATIBLE => {
            (Some(End::Subscription), Some(Kind::QosIncompatible))
        }
        ffi::RMW_EVENT_LIVELINESS_CHANGED
        | ffi::RMW_EVENT_REQUESTED_DEADLINE_MISSED
        | ffi::RMW_EVENT_SUBSCRIPTION_INCOMPATIBLE_TYPE => (Some(End::Subscription), None),
        _ => (None, None),
    }
}

/// `rmw_event_type_is_supported`.
pub fn is_supported(t: ffi::rmw_event_type_t) -> bool {
    classify(t).1.is_some()
}

/// The kind of endpoint an event belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    Publisher,
    Subscription,
}

/// `rmw_matched_status_t`, as Rust.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MatchedStatus {
    pub total_count: usize,
    pub total_count_change: usize,
    pub current_count: usize,
    pub current_count_change: i32,
}

/// `rmw_message_lost_status_t`, as Rust.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LostStatus {
    pub total_count: usize,
    pub total_count_change: usize,
}

#[derive(Default)]
struct State {
    /// The matched endpoints at the last take.
    taken: BTreeSet<Gid>,
    /// Every endpoint ever matched (the total count).
    ever: BTreeSet<Gid>,
    total_at_take: usize,
    lost_total: u64,
    lost_pending: u64,
    /// The matched set the notifier last told a callback about (`None`: not yet; the first
    /// look compares with the set last taken, so a change not taken yet is the backlog).
    notified_matched: Option<BTreeSet<Gid>>,
    /// Lost messages already told to a callback and not yet taken.
    told_lost: u64,
    callbacks: Callbacks,
}

#[derive(Default, Clone, Copy)]
struct Callbacks {
    matched: Option<EventCallback>,
    lost: Option<EventCallback>,
}

/// Drains a subscription ring's drop counter (`Vertex::take_dropped`).
pub type LostCounter = Arc<dyn Fn() -> u64 + Send + Sync>;

/// The event state of one publisher or subscription.
pub struct Events {
    ctx: Arc<Shared>,
    end: End,
    lost: Option<LostCounter>,
    topic: String,
    type_name: String,
    /// Raised by the registry on every change (registered on the first matched event).
    signal: Signal,
    listener: Mutex<Option<u64>>,
    state: Mutex<State>,
    notifier: Mutex<Option<(Arc<AtomicBool>, JoinHandle<()>)>>,
}

impl Events {
    /// `lost`: the subscription ring's drop counter (publishers lose nothing).
    pub fn new(
        ctx: Arc<Shared>,
        end: End,
        topic: &str,
        type_name: &str,
        lost: Option<LostCounter>,
    ) -> Arc<Events> {
        Arc::new(Events {
            ctx,
            end,
            lost,
            topic: topic.to_owned(),
            type_name: type_name.to_owned(),
            signal: Signal::new(),
            listener: Mutex::new(None),
            state: Mutex::new(State::default()),
            notifier: Mutex::new(None),
        })
    }

    /// Prepare an event of `kind` (`rmw_*_event_init`).
    pub fn init(&self, kind: Kind) {
        if kind == Kind::Matched {
            let mut l = self.listener.lock();
            if l.is_none() {
                *l = Some(self.ctx.registry.add_listener(self.signal.clone()));
                // The first look: what is matched already counts as a change to report.
                self.signal.raise();
            }
        }
    }

    /// The endpoints of the other kind on this topic with this type, here and on every peer.
    fn matched_now(&self) -> BTreeSet<Gid> {
        let other = match self.end {
            End::Publisher => EntityKind::Subscription,
            End::Subscription => EntityKind::Publisher,
        };
        self.ctx
            .registry
            .snapshot()
            .into_iter()
            .filter(|(_, r)| {
                r.kind == other && r.topic == self.topic && r.type_name == self.type_name
            })
            .map(|(_, r)| r.gid)
            .collect()
    }

    /// Whether the matched set differs from the one last taken. Lowers the registry signal
    /// first, so that a change racing with this look raises it again.
    fn matched_changed(&self) -> bool {
        self.signal.clear();
        let now = self.matched_now();
        let mut st = self.state.lock();
        st.ever.extend(now.iter().copied());
        let changed = now != st.taken;
        if changed {
            self.signal.raise();
        }
        changed
    }

    fn poll_lost(&self) -> bool {
        let n = self.lost.as_ref().map_or(0, |f| f());
        let mut st = self.state.lock();
        st.lost_pending += n;
        st.lost_total += n;
        st.lost_pending > 0
    }

    /// Readiness source of an event in `rmw_wait` (`None`: looked at whenever the wait wakes).
    pub fn readiness(&self, kind: Kind) -> Option<Readiness> {
        match kind {
            Kind::Matched => Some(self.signal.readiness()),
            // Drops happen while the ring is full, so the subscription itself is ready then;
            // the ring's readiness would stay raised after the loss is taken.
            Kind::MessageLost | Kind::QosIncompatible => None,
        }
    }

    /// Whether an event of `kind` waits to be taken.
    pub fn is_ready(&self, kind: Kind) -> bool {
        match kind {
            Kind::Matched => self.matched_changed(),
            Kind::MessageLost => self.poll_lost(),
            Kind::QosIncompatible => false,
        }
    }

    /// Take the matched status; `None` when nothing changed since the last take.
    pub fn take_matched(&self) -> Option<MatchedStatus> {
        let now = self.matched_now();
        let mut st = self.state.lock();
        st.ever.extend(now.iter().copied());
        if now == st.taken && st.total_at_take == st.ever.len() {
            return None;
        }
        let status = MatchedStatus {
            total_count: st.ever.len(),
            total_count_change: st.ever.len() - st.total_at_take,
            current_count: now.len(),
            current_count_change: now.len() as i32 - st.taken.len() as i32,
        };
        st.total_at_take = st.ever.len();
        st.taken = now;
        Some(status)
    }

    /// Take the lost-message status; `None` when nothing was lost since the last take.
    pub fn take_lost(&self) -> Option<LostStatus> {
        self.poll_lost();
        let mut st = self.state.lock();
        if st.lost_pending == 0 {
            return None;
        }
        let s = LostStatus {
            total_count: st.lost_total as usize,
            total_count_change: st.lost_pending as usize,
        };
        st.lost_pending = 0;
        st.told_lost = 0;
        Some(s)
    }

    /// `rmw_event_set_callback`. Matched and lost-message callbacks are called from a
    /// notifier thread (woken by the registry, and every 100 ms for the ring's drop counter)
    /// with the number of events not yet told; an incompatible-QoS callback is kept and never
    /// called, as its event never happens.
    pub fn set_callback(self: &Arc<Self>, kind: Kind, cb: Option<EventCallback>) -> RmwResult<()> {
        if kind == Kind::QosIncompatible {
            return Ok(());
        }
        self.stop_notifier();
        {
            let mut st = self.state.lock();
            match kind {
                Kind::Matched => {
                    st.callbacks.matched = cb;
                    st.notified_matched = None;
                }
                Kind::MessageLost => st.callbacks.lost = cb,
                Kind::QosIncompatible => {}
            }
        }
        let cbs = self.state.lock().callbacks;
        if cbs.matched.is_none() && cbs.lost.is_none() {
            return Ok(());
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
            e.notify_once();
        }
    }

    /// One round of the notifier: tell the callbacks what they have not heard of.
    fn notify_once(&self) {
        {
            let cbs = self.state.lock().callbacks;
            if let Some(cb) = cbs.matched {
                self.signal.clear();
                let now = self.matched_now();
                // Every change of the matched set the callback has not heard of is one event.
                let changed = {
                    let mut st = self.state.lock();
                    let seen = st
                        .notified_matched
                        .take()
                        .unwrap_or_else(|| st.taken.clone());
                    let changed = now != seen;
                    st.notified_matched = Some(now);
                    changed
                };
                if changed {
                    cb.call(1);
                }
            } else {
                self.signal.clear();
            }
            if let Some(cb) = cbs.lost {
                self.poll_lost();
                let n = {
                    let mut st = self.state.lock();
                    let tell = st.lost_pending.saturating_sub(st.told_lost);
                    st.told_lost += tell;
                    tell
                };
                if n > 0 {
                    cb.call(n as usize);
                }
            }
        }
    }

    fn stop_notifier(&self) {
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

impl Drop for Events {
    fn drop(&mut self) {
        self.stop_notifier();
        if let Some(id) = self.listener.lock().take() {
            self.ctx.registry.remove_listener(id);
        }
    }
}

/// The Rust side of an `rmw_event_t`: a marker for the handle checks only. The event's `data`
/// is its publisher's or subscription's object, never an `EventHandle`.
pub struct EventHandle;

/// An event as `rmw_wait` sees it.
pub struct Waitable<'a> {
    pub events: &'a Events,
    pub kind: Kind,
}

impl Waitable<'_> {
    pub fn readiness(&self) -> Option<Readiness> {
        self.events.readiness(self.kind)
    }

    pub fn is_ready(&self) -> bool {
        self.events.is_ready(self.kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Ruling (brief R3): matched and lost are offered, incompatible QoS is offered and never
    // fires, deadline / liveliness / incompatible type are unsupported.
    #[test]
    fn what_is_supported() {
        for t in [
            ffi::RMW_EVENT_PUBLICATION_MATCHED,
            ffi::RMW_EVENT_SUBSCRIPTION_MATCHED,
            ffi::RMW_EVENT_MESSAGE_LOST,
            ffi::RMW_EVENT_OFFERED_QOS_INCOMPATIBLE,
            ffi::RMW_EVENT_REQUESTED_QOS_INCOMPATIBLE,
        ] {
            assert!(is_supported(t), "{t}");
        }
        for t in [
            ffi::RMW_EVENT_LIVELINESS_CHANGED,
            ffi::RMW_EVENT_LIVELINESS_LOST,
            ffi::RMW_EVENT_REQUESTED_DEADLINE_MISSED,
            ffi::RMW_EVENT_OFFERED_DEADLINE_MISSED,
            ffi::RMW_EVENT_SUBSCRIPTION_INCOMPATIBLE_TYPE,
            ffi::RMW_EVENT_PUBLISHER_INCOMPATIBLE_TYPE,
            ffi::RMW_EVENT_INVALID,
            99,
        ] {
            assert!(!is_supported(t), "{t}");
        }
        assert_eq!(
            classify(ffi::RMW_EVENT_MESSAGE_LOST).0,
            Some(End::Subscription)
        );
        assert_eq!(
            classify(ffi::RMW_EVENT_PUBLICATION_MATCHED).0,
            Some(End::Publisher)
        );
    }
}
