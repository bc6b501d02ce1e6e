//! Bringing an endpoint's event counts up to date from the endpoint registry: the matched
//! endpoints of the other kind, incompatible QoS and types (each logged once), and the matched
//! writers' liveliness.

use std::collections::BTreeSet;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::status::{State, WriterLiveliness};
use super::{min_due, timer, End, Events, ASSERTED};
use crate::gid::Gid;
use crate::log::log;
use crate::registry::{self, EntityKind, Record};
use crate::topic::now_ns;
use tracer_recording::INFINITE_NS;

impl Events {
    /// Bring every status up to date; schedule the timer for the next deadline or lease.
    pub(super) fn refresh(&self) {
        let registered = self.listener.lock().is_some();
        let other = match self.end {
            End::Publisher => EntityKind::Subscription,
            End::Subscription => EntityKind::Publisher,
        };
        let records = if registered {
            self.ctx.registry.on_topic(other, &self.topic)
        } else {
            Vec::new()
        };
        let now = now_ns();
        let newest = self.probe.as_ref().and_then(|p| (p.newest)());
        let mut st = self.state.lock();
        if registered {
            self.refresh_matching(&mut st, &records);
        }
        if let (End::Subscription, Some((w, at))) = (self.end, newest) {
            // A sample waiting in the ring arrived: a reception, and its writer's activity.
            self.restart_deadline(&mut st, at);
            if let Some(e) = st.activity.get_mut(&Gid(w)) {
                *e = (*e).max(at);
            }
        }
        self.count_deadline(&mut st, now);
        let mut due: Option<i64> = match (self.deadline_ns(), st.deadline_from) {
            (Some(d), Some(from)) => Some(from.saturating_add(d)),
            _ => None,
        };
        match self.end {
            End::Publisher => {
                if let (true, Some(lease)) = (self.qos.manual_liveliness(), self.qos.lease()) {
                    let lease = lease.as_nanos() as i64;
                    if let Some(at) = st.asserted_at {
                        let holds = now < at.saturating_add(lease);
                        if st.alive && !holds {
                            st.liveliness_lost.total += 1;
                        }
                        st.alive = holds;
                        if holds {
                            due = min_due(due, at.saturating_add(lease));
                        }
                    }
                }
            }
            End::Subscription => {
                if registered {
                    let d = self.refresh_writers(&mut st, &records, now);
                    if let Some(d) = d {
                        due = min_due(due, d);
                    }
                }
            }
        }
        drop(st);
        // Only an endpoint with an event wants waking; without one its counts stay lazy.
        if let (true, Some(due)) = (registered, due) {
            let wait = Duration::from_nanos(due.saturating_sub(now).max(0) as u64);
            timer::schedule(self.timer_id, Instant::now() + wait, self.me.clone());
        }
    }

    /// Matched, incompatible-QoS and incompatible-type endpoints from the registry.
    fn refresh_matching(&self, st: &mut State, records: &[(Option<String>, Record)]) {
        let mut matched = BTreeSet::new();
        for (_, r) in records {
            if r.type_name != self.type_name {
                if st.bad_type_seen.insert(r.gid) {
                    st.incompatible_type.total += 1;
                }
                continue;
            }
            let policy = match self.end {
                End::Publisher => registry::incompatible_sub(&self.qos, r),
                End::Subscription => registry::incompatible_with(r, &self.qos),
            };
            match policy {
                None => {
                    matched.insert(r.gid);
                }
                Some(p) => {
                    if st.incompatible_seen.insert(r.gid) {
                        st.incompatible_qos.total += 1;
                        st.last_policy = p;
                        self.log_incompatible(r, p);
                    }
                }
            }
        }
        st.ever.extend(matched.iter().copied());
        st.matched = matched;
    }

    /// Once per pair, in rmw_tracer's own log (INFO: rclpy's default event handler logs the
    /// user-facing warning when it takes the event, as it does with Fast DDS).
    fn log_incompatible(&self, other: &Record, p: ffi::rmw_qos_policy_kind_t) {
        let (what, them) = match self.end {
            End::Publisher => ("requesting", "subscription"),
            End::Subscription => ("offering", "publisher"),
        };
        log!(
            RMW_LOG_SEVERITY_INFO,
            "{}: {them} {:?} of node {} is {what} incompatible QoS, no messages flow between it and {:?}. Last incompatible policy: {}",
            self.topic,
            other.gid,
            other.node_name,
            self.gid,
            crate::qos_compat::policy_name(p)
        );
    }

    /// LIVELINESS_CHANGED: the matched publishers with a finite lease. Returns when the next
    /// lease of an alive manual writer ends.
    fn refresh_writers(
        &self,
        st: &mut State,
        records: &[(Option<String>, Record)],
        now: i64,
    ) -> Option<i64> {
        let mut due = None;
        let mut tracked = BTreeSet::new();
        let mut manual_writers = false;
        for (_, r) in records {
            if !st.matched.contains(&r.gid) {
                continue;
            }
            let Some(q) = r.qos else { continue };
            if q.lease_ns == INFINITE_NS {
                continue;
            }
            tracked.insert(r.gid);
            let manual = q.liveliness != ffi::RMW_QOS_POLICY_LIVELINESS_AUTOMATIC;
            let alive = if manual {
                manual_writers = true;
                // A sample, an assertion in this process, or one in the writer's record.
                let asserted = ASSERTED.lock().get(&r.gid).copied();
                let last = st
                    .activity
                    .get(&r.gid)
                    .copied()
                    .max(asserted)
                    .max(r.asserted_ns);
                match last {
                    Some(t) => {
                        let end = t.saturating_add(q.lease_ns.min(i64::MAX as u64) as i64);
                        if now < end {
                            due = min_due(due, end);
                        }
                        Some(now < end)
                    }
                    // Not asserted yet: neither alive nor not alive.
                    None => None,
                }
            } else {
                Some(true)
            };
            let Some(alive) = alive else { continue };
            match st.writers.insert(r.gid, WriterLiveliness { alive }) {
                Some(w) if w.alive == alive => {}
                _ => st.liveliness_changes.total += 1,
            }
        }
        let gone: Vec<Gid> = st
            .writers
            .keys()
            .filter(|g| !tracked.contains(g))
            .copied()
            .collect();
        for g in gone {
            st.writers.remove(&g);
            st.activity.remove(&g);
            st.liveliness_changes.total += 1;
        }
        if manual_writers {
            self.timed.store(true, Ordering::Relaxed);
        }
        due
    }
}
