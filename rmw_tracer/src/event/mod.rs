//! QoS events of publishers and subscriptions: all eleven rmw event types, by local emulation
//! (seed 003's ruling: no wire surface for QoS; docs/rmw-mapping.md, Events).
//!
//! | event | from |
//! |---|---|
//! | PUBLICATION_MATCHED / SUBSCRIPTION_MATCHED | the endpoint registry: the endpoints of the other kind on the topic with the same type and a compatible QoS, here and on every peer |
//! | MESSAGE_LOST | samples the subscription ring dropped on overflow, and samples a reliable writer's sequence jumped over (`tracer_recording::resume`: they never came) |
//! | OFFERED / REQUESTED_QOS_INCOMPATIBLE | the registry: endpoints of the other kind and same type whose QoS does not match (`crate::qos_compat::incompatible`) |
//! | PUBLISHER / SUBSCRIPTION_INCOMPATIBLE_TYPE | the registry: endpoints of the other kind on the topic with another type |
//! | OFFERED_DEADLINE_MISSED | each deadline period that passes without a publication |
//! | REQUESTED_DEADLINE_MISSED | each deadline period that passes without a sample arriving |
//! | LIVELINESS_LOST | a MANUAL_BY_TOPIC publisher whose lease passes without a publication or `rmw_publisher_assert_liveliness` |
//! | LIVELINESS_CHANGED | matched publishers with a lease: AUTOMATIC ones are alive while their record is (the process, and for a peer its link); manual ones while their publications (and, in this process, assertions) come within the lease |
//!
//! Counts are kept lazily: every look (a wait, a take, the timer) brings them up to date from
//! the registry and the clocks. Readiness is one signal per endpoint, raised by the registry on
//! every change and by the process's timer thread (`timer`) when a deadline or a lease falls
//! due.
//!
//! An `rmw_event_t` is the caller's and librmw's `rmw_event_fini` only clears it, so an event
//! owns nothing: its `data` is the publisher's or subscription's object, and the state of its
//! events lives here, inside that object ([`Events`]).

mod callback;
mod refresh;
mod status;
mod timer;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};

use libtracer_core::{Readiness, Sample, Signal};
use parking_lot::Mutex;

use crate::context::Shared;
use crate::gid::Gid;
use crate::qos::Qos;
use crate::topic::now_ns;

use status::State;
pub use status::{
    CountStatus, IncompatibleStatus, LivelinessChangedStatus, LostStatus, MatchedStatus,
};

/// The event kinds rmw_tracer offers: every rmw event type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Matched,
    MessageLost,
    QosIncompatible,
    TypeIncompatible,
    DeadlineMissed,
    /// LIVELINESS_LOST (publishers) and LIVELINESS_CHANGED (subscriptions).
    Liveliness,
}

/// Which end an event type belongs to and its kind; `None` for a value that is no event type.
pub fn classify(t: ffi::rmw_event_type_t) -> Option<(End, Kind)> {
    use End::{Publisher as P, Subscription as S};
    Some(match t {
        ffi::RMW_EVENT_PUBLICATION_MATCHED => (P, Kind::Matched),
        ffi::RMW_EVENT_OFFERED_QOS_INCOMPATIBLE => (P, Kind::QosIncompatible),
        ffi::RMW_EVENT_LIVELINESS_LOST => (P, Kind::Liveliness),
        ffi::RMW_EVENT_OFFERED_DEADLINE_MISSED => (P, Kind::DeadlineMissed),
        ffi::RMW_EVENT_PUBLISHER_INCOMPATIBLE_TYPE => (P, Kind::TypeIncompatible),
        ffi::RMW_EVENT_SUBSCRIPTION_MATCHED => (S, Kind::Matched),
        ffi::RMW_EVENT_MESSAGE_LOST => (S, Kind::MessageLost),
        ffi::RMW_EVENT_REQUESTED_QOS_INCOMPATIBLE => (S, Kind::QosIncompatible),
        ffi::RMW_EVENT_LIVELINESS_CHANGED => (S, Kind::Liveliness),
        ffi::RMW_EVENT_REQUESTED_DEADLINE_MISSED => (S, Kind::DeadlineMissed),
        ffi::RMW_EVENT_SUBSCRIPTION_INCOMPATIBLE_TYPE => (S, Kind::TypeIncompatible),
        _ => return None,
    })
}

/// `rmw_event_type_is_supported`.
pub fn is_supported(t: ffi::rmw_event_type_t) -> bool {
    classify(t).is_some()
}

/// The kind of endpoint an event belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    Publisher,
    Subscription,
}

/// What an endpoint's events need to know of it.
pub struct Endpoint<'a> {
    pub end: End,
    pub gid: Gid,
    pub topic: &'a str,
    pub type_name: &'a str,
    pub qos: Qos,
}

/// Drains a subscription ring's drop counter (`Vertex::take_dropped`).
pub type LostCounter = Arc<dyn Fn() -> u64 + Send + Sync>;

/// What a subscription's events read from its ring.
pub struct RingProbe {
    pub dropped: LostCounter,
    /// The writer and reception time of the newest sample waiting, if any.
    pub newest: Arc<dyn Fn() -> Option<([u8; 16], i64)> + Send + Sync>,
    /// Whether samples a reliable writer's sequence jumped over wait to be counted.
    pub has_gaps: Arc<dyn Fn() -> bool + Send + Sync>,
}

/// Assertions of this process's manual-liveliness publishers (gid -> last assertion, ns since
/// the epoch): a subscription in the same process sees an assertion without a sample.
static ASSERTED: Mutex<BTreeMap<Gid, i64>> = parking_lot::const_mutex(BTreeMap::new());

/// The event state of one publisher or subscription.
pub struct Events {
    ctx: Arc<Shared>,
    end: End,
    gid: Gid,
    topic: String,
    type_name: String,
    qos: Qos,
    probe: Option<RingProbe>,
    me: Weak<Events>,
    timer_id: u64,
    /// Raised by the registry on every change (registered on the first event init) and by the
    /// timer.
    signal: Signal,
    listener: Mutex<Option<u64>>,
    /// Publications / receptions matter (a deadline, a manual liveliness, or a subscription
    /// tracking manual writers): the hot path does nothing when this is false.
    timed: AtomicBool,
    state: Mutex<State>,
    /// Held while callbacks are called and while they are set (`callback`).
    calling: parking_lot::ReentrantMutex<()>,
    /// A lost-message callback is set: what the ring's arrival hook reads on every sample
    /// (`on_land`), so that without one it costs an atomic load.
    lost_callback: AtomicBool,
}

impl Events {
    pub fn new(ctx: Arc<Shared>, ep: Endpoint<'_>, probe: Option<RingProbe>) -> Arc<Events> {
        let timed = ep.qos.deadline().is_some()
            || (ep.end == End::Publisher && ep.qos.manual_liveliness() && ep.qos.lease().is_some());
        Arc::new_cyclic(|me| Events {
            ctx,
            end: ep.end,
            gid: ep.gid,
            topic: ep.topic.to_owned(),
            type_name: ep.type_name.to_owned(),
            qos: ep.qos,
            probe,
            me: me.clone(),
            timer_id: timer::new_id(),
            signal: Signal::new(),
            listener: Mutex::new(None),
            timed: AtomicBool::new(timed),
            state: Mutex::new(State::default()),
            calling: parking_lot::ReentrantMutex::new(()),
            lost_callback: AtomicBool::new(false),
        })
    }

    /// Prepare an event of `kind` (`rmw_*_event_init`): from now on registry changes wake
    /// it, and a deadline or lease is watched by the timer.
    pub fn init(&self, _kind: Kind) {
        let mut l = self.listener.lock();
        if l.is_none() {
            *l = Some(self.ctx.registry.add_listener(self.signal.clone()));
            // The first look: what is matched already counts as a change to report.
            self.signal.raise();
        }
        drop(l);
        self.refresh();
    }

    /// A publication: restarts the deadline period and asserts a manual liveliness.
    pub fn on_publish(&self) {
        if self.timed.load(Ordering::Relaxed) {
            self.activity(None, now_ns());
        }
    }

    /// `rmw_publisher_assert_liveliness`.
    pub fn on_assert(&self) {
        if self.qos.manual_liveliness() {
            let now = now_ns();
            ASSERTED.lock().insert(self.gid, now);
            let mut st = self.state.lock();
            st.asserted_at = Some(now);
            drop(st);
            self.refresh();
        }
    }

    /// A sample taken by the subscription: a reception for the deadline, and an assertion
    /// of its writer's manual liveliness.
    pub fn on_sample(&self, s: &Sample) {
        if self.timed.load(Ordering::Relaxed) {
            self.activity(Some(Gid(s.meta.writer)), s.received_timestamp_ns);
        }
    }

    /// A publication or reception at `at`. This is on the publish / take path, so it only
    /// updates the state; a full look (registry, timer) runs only when the timer may not be
    /// pending: the first deadline period, or a liveliness that comes back.
    fn activity(&self, writer: Option<Gid>, at: i64) {
        let look = {
            let mut st = self.state.lock();
            let mut look = self.deadline_ns().is_some() && st.deadline_from.is_none();
            self.restart_deadline(&mut st, at);
            match (self.end, writer) {
                (End::Publisher, _) if self.qos.manual_liveliness() => {
                    look |= !st.alive;
                    st.asserted_at = Some(at);
                    ASSERTED.lock().insert(self.gid, at);
                }
                (End::Subscription, Some(w)) => {
                    let known = st.activity.contains_key(&w);
                    look |= !known || st.writers.get(&w).is_some_and(|x| !x.alive);
                    let e = st.activity.entry(w).or_insert(at);
                    *e = (*e).max(at);
                }
                _ => {}
            }
            look
        };
        if look {
            self.refresh();
        }
    }

    /// The deadline period in ns, if there is one.
    fn deadline_ns(&self) -> Option<i64> {
        let d = self.qos.deadline()?;
        Some((d.as_nanos().min(i64::MAX as u128) as i64).max(1))
    }

    /// Count the deadline periods that ended before `until` since the watched one began
    /// (each period without a publication or reception is one miss, as in Fast DDS, whose
    /// deadline timer starts with the first sample and restarts after each miss).
    fn count_deadline(&self, st: &mut State, until: i64) {
        let (Some(d), Some(from)) = (self.deadline_ns(), st.deadline_from) else {
            return;
        };
        if until >= from.saturating_add(d) {
            let n = (until - from) / d;
            st.deadline_missed.total += n as u64;
            st.deadline_from = Some(from + n * d);
        }
    }

    /// A publication or reception at `at`: count what was missed before it, then watch a new
    /// period from it.
    fn restart_deadline(&self, st: &mut State, at: i64) {
        if self.deadline_ns().is_none() {
            return;
        }
        if st.deadline_from.is_some_and(|from| at <= from) {
            return;
        }
        self.count_deadline(st, at);
        st.deadline_from = Some(at);
    }

    /// A sample landed in the subscription's ring and `evicted` older ones went for it (or a
    /// reliable writer's sequence jumped: `has_gaps`): a lost-message callback hears of it now,
    /// through the notifier. Called on the delivering thread; nothing to do without such a
    /// callback (a wait set looks at the ring's counter itself).
    pub fn on_land(&self, evicted: usize) {
        if !self.lost_callback.load(Ordering::Acquire) {
            return;
        }
        if evicted > 0 || self.probe.as_ref().is_some_and(|p| (p.has_gaps)()) {
            self.signal.raise();
        }
    }

    fn poll_lost(&self) -> bool {
        let n = self.probe.as_ref().map_or(0, |p| (p.dropped)());
        let mut st = self.state.lock();
        st.lost_pending += n;
        st.lost_total += n;
        st.lost_pending > 0
    }

    /// Whether an event of `kind` waits to be taken (`st` is up to date).
    fn pending(&self, kind: Kind, st: &State) -> bool {
        match kind {
            Kind::Matched => st.matched != st.taken || st.total_at_take != st.ever.len(),
            Kind::MessageLost => st.lost_pending > 0,
            Kind::QosIncompatible => st.incompatible_qos.pending(),
            Kind::TypeIncompatible => st.incompatible_type.pending(),
            Kind::DeadlineMissed => st.deadline_missed.pending(),
            Kind::Liveliness => match self.end {
                End::Publisher => st.liveliness_lost.pending(),
                End::Subscription => st.liveliness_changes.pending(),
            },
        }
    }

    /// Readiness source of an event in `rmw_wait` (`None`: looked at whenever the wait wakes).
    pub fn readiness(&self, kind: Kind) -> Option<Readiness> {
        match kind {
            // Drops happen while the ring is full, so the subscription itself is ready then;
            // the ring's readiness would stay raised after the loss is taken.
            Kind::MessageLost => None,
            _ => Some(self.signal.readiness()),
        }
    }

    /// Whether an event of `kind` waits to be taken. Lowers the signal first, so that a
    /// change racing with this look raises it again, and raises it again while the event
    /// waits (so a wait over it returns until it is taken).
    pub fn is_ready(&self, kind: Kind) -> bool {
        if kind == Kind::MessageLost {
            return self.poll_lost();
        }
        self.signal.clear();
        self.refresh();
        let ready = self.pending(kind, &self.state.lock());
        if ready {
            self.signal.raise();
        }
        ready
    }

    /// Take the matched status: the counts as they stand and the changes since the last take
    /// (zero when nothing changed: a take always answers, as with Fast DDS).
    pub fn take_matched(&self) -> MatchedStatus {
        self.refresh();
        let mut st = self.state.lock();
        let now = st.matched.clone();
        let status = MatchedStatus {
            total_count: st.ever.len(),
            total_count_change: st.ever.len() - st.total_at_take,
            current_count: now.len(),
            current_count_change: now.len() as i32 - st.taken.len() as i32,
        };
        st.total_at_take = st.ever.len();
        st.taken = now;
        status
    }

    /// Take the lost-message status: the total and what was lost since the last take (zero
    /// when nothing was).
    pub fn take_lost(&self) -> LostStatus {
        self.poll_lost();
        let mut st = self.state.lock();
        let s = LostStatus {
            total_count: st.lost_total as usize,
            total_count_change: st.lost_pending as usize,
        };
        st.lost_pending = 0;
        st.told_lost = 0;
        s
    }

    /// Take the incompatible-QoS status.
    pub fn take_qos_incompatible(&self) -> Option<IncompatibleStatus> {
        self.refresh();
        let mut st = self.state.lock();
        let count = st.incompatible_qos.take()?;
        Some(IncompatibleStatus {
            count,
            last_policy_kind: st.last_policy,
        })
    }

    /// Take the incompatible-type status.
    pub fn take_type_incompatible(&self) -> Option<CountStatus> {
        self.refresh();
        self.state.lock().incompatible_type.take()
    }

    /// Take the deadline-missed status.
    pub fn take_deadline_missed(&self) -> Option<CountStatus> {
        self.refresh();
        self.state.lock().deadline_missed.take()
    }

    /// Take the liveliness-lost status (publishers).
    pub fn take_liveliness_lost(&self) -> Option<CountStatus> {
        self.refresh();
        self.state.lock().liveliness_lost.take()
    }

    /// Take the liveliness-changed status (subscriptions).
    pub fn take_liveliness_changed(&self) -> Option<LivelinessChangedStatus> {
        self.refresh();
        let mut st = self.state.lock();
        st.liveliness_changes.take()?;
        let (alive, not_alive) = st.alive_counts();
        let s = LivelinessChangedStatus {
            alive_count: alive,
            not_alive_count: not_alive,
            alive_count_change: alive - st.alive_at_take,
            not_alive_count_change: not_alive - st.not_alive_at_take,
        };
        st.alive_at_take = alive;
        st.not_alive_at_take = not_alive;
        Some(s)
    }

    /// The timer fired: bring the counts up to date, wake waits on a pending event and tell
    /// the callbacks.
    fn on_timer(&self) {
        self.refresh();
        let pending = {
            let st = self.state.lock();
            self.pending(Kind::DeadlineMissed, &st) || self.pending(Kind::Liveliness, &st)
        };
        if pending {
            self.signal.raise();
        }
        self.notify_once();
    }
}

fn min_due(a: Option<i64>, b: i64) -> Option<i64> {
    Some(a.map_or(b, |a| a.min(b)))
}

impl Drop for Events {
    fn drop(&mut self) {
        self.stop_notifier();
        timer::cancel(self.timer_id);
        if self.end == End::Publisher {
            ASSERTED.lock().remove(&self.gid);
        }
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

    // Ruling (issue 9): every rmw event type is supported, each on its own end.
    #[test]
    fn what_is_supported() {
        for t in [
            ffi::RMW_EVENT_PUBLICATION_MATCHED,
            ffi::RMW_EVENT_OFFERED_QOS_INCOMPATIBLE,
            ffi::RMW_EVENT_LIVELINESS_LOST,
            ffi::RMW_EVENT_OFFERED_DEADLINE_MISSED,
            ffi::RMW_EVENT_PUBLISHER_INCOMPATIBLE_TYPE,
        ] {
            assert!(is_supported(t), "{t}");
            assert_eq!(classify(t).unwrap().0, End::Publisher);
        }
        for t in [
            ffi::RMW_EVENT_SUBSCRIPTION_MATCHED,
            ffi::RMW_EVENT_MESSAGE_LOST,
            ffi::RMW_EVENT_REQUESTED_QOS_INCOMPATIBLE,
            ffi::RMW_EVENT_LIVELINESS_CHANGED,
            ffi::RMW_EVENT_REQUESTED_DEADLINE_MISSED,
            ffi::RMW_EVENT_SUBSCRIPTION_INCOMPATIBLE_TYPE,
        ] {
            assert!(is_supported(t), "{t}");
            assert_eq!(classify(t).unwrap().0, End::Subscription);
        }
        assert!(!is_supported(ffi::RMW_EVENT_INVALID));
        assert!(!is_supported(99));
    }
}
