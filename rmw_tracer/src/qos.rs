//! QoS: what rmw_tracer does with each policy, and the concrete profile it reports.
//!
//! | policy | rmw_tracer |
//! |---|---|
//! | history KEEP_LAST(n) | the subscription ring keeps the last `n` samples |
//! | history KEEP_ALL | the ring has no depth bound, only a byte budget ([`KEEP_ALL_BYTE_BUDGET`]) |
//! | reliability | the edge's delivery policy (reliable / best effort) |
//! | durability TRANSIENT_LOCAL | the publisher's topic stream retains its last `depth` samples, and a transient-local subscription's edges replay them first |
//! | deadline | kept; emulated by the per-process timer (`crate::event::timer`) against publish / receive times |
//! | lifespan | kept; a subscription drops samples older than the publisher's lifespan at take |
//! | liveliness AUTOMATIC / MANUAL_BY_TOPIC (MANUAL_BY_NODE kept, asserted like MANUAL_BY_TOPIC) | kept; emulated (`crate::event`) |
//! | liveliness lease | kept; emulated with the liveliness kind |
//!
//! System defaults resolve to: KEEP_LAST, depth 10, RELIABLE, VOLATILE, AUTOMATIC, and infinite
//! deadline, lifespan and lease (an unspecified or BEST_AVAILABLE time is infinite).

use std::time::Duration;

use libtracer_core::{DeliveryPolicy, StreamOptions};
use tracer_recording::{QosNumbers, INFINITE_NS};

use crate::boundary::{RmwError, RmwResult};

/// Depth used when a KEEP_LAST profile asks for the system default depth.
pub const DEFAULT_DEPTH: usize = 10;

pub use tracer_recording::delivery::{QosShape, KEEP_ALL_BYTE_BUDGET};

/// Which end of a topic a profile belongs to (BEST_AVAILABLE resolves differently).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    Publisher,
    Subscription,
}

pub const INFINITE: ffi::rmw_time_t = ffi::rmw_time_t {
    sec: 9_223_372_036,
    nsec: 854_775_807,
};

/// A requested time in nanoseconds, or [`INFINITE_NS`] for "unspecified" (0), infinite and
/// BEST_AVAILABLE (which rmw spells as one nanosecond less than infinite).
pub fn time_ns(t: &ffi::rmw_time_t) -> u64 {
    let infinite_ns = INFINITE.sec * 1_000_000_000 + INFINITE.nsec;
    if t.sec == 0 && t.nsec == 0 {
        return INFINITE_NS;
    }
    match t
        .sec
        .checked_mul(1_000_000_000)
        .and_then(|n| n.checked_add(t.nsec))
    {
        Some(n) if n < infinite_ns - 1 => n,
        _ => INFINITE_NS,
    }
}

/// The `rmw_time_t` of [`time_ns`].
pub fn time_of(ns: u64) -> ffi::rmw_time_t {
    if ns == INFINITE_NS {
        INFINITE
    } else {
        ffi::rmw_time_t {
            sec: ns / 1_000_000_000,
            nsec: ns % 1_000_000_000,
        }
    }
}

fn duration_of(ns: u64) -> Option<Duration> {
    (ns != INFINITE_NS).then(|| Duration::from_nanos(ns))
}

/// A resolved profile: every policy has a concrete value.
#[derive(Clone, Copy, Debug)]
pub struct Qos {
    pub profile: ffi::rmw_qos_profile_t,
}

impl Qos {
    /// Resolve a requested profile; UNKNOWN policies are invalid arguments.
    pub fn resolve(req: &ffi::rmw_qos_profile_t, end: End) -> RmwResult<Qos> {
        let mut p = *req;
        p.history = match req.history {
            ffi::RMW_QOS_POLICY_HISTORY_SYSTEM_DEFAULT | ffi::RMW_QOS_POLICY_HISTORY_KEEP_LAST => {
                ffi::RMW_QOS_POLICY_HISTORY_KEEP_LAST
            }
            ffi::RMW_QOS_POLICY_HISTORY_KEEP_ALL => ffi::RMW_QOS_POLICY_HISTORY_KEEP_ALL,
            other => {
                return Err(RmwError::invalid(format!(
                    "unknown QoS history policy {other}"
                )))
            }
        };
        if p.history == ffi::RMW_QOS_POLICY_HISTORY_KEEP_LAST && p.depth == 0 {
            p.depth = DEFAULT_DEPTH;
        }
        p.reliability = match req.reliability {
            ffi::RMW_QOS_POLICY_RELIABILITY_SYSTEM_DEFAULT
            | ffi::RMW_QOS_POLICY_RELIABILITY_BEST_AVAILABLE
            | ffi::RMW_QOS_POLICY_RELIABILITY_RELIABLE => ffi::RMW_QOS_POLICY_RELIABILITY_RELIABLE,
            ffi::RMW_QOS_POLICY_RELIABILITY_BEST_EFFORT => {
                ffi::RMW_QOS_POLICY_RELIABILITY_BEST_EFFORT
            }
            other => {
                return Err(RmwError::invalid(format!(
                    "unknown QoS reliability policy {other}"
                )))
            }
        };
        p.durability = match (req.durability, end) {
            (ffi::RMW_QOS_POLICY_DURABILITY_SYSTEM_DEFAULT, _)
            | (ffi::RMW_QOS_POLICY_DURABILITY_VOLATILE, _)
            | (ffi::RMW_QOS_POLICY_DURABILITY_BEST_AVAILABLE, End::Subscription) => {
                ffi::RMW_QOS_POLICY_DURABILITY_VOLATILE
            }
            (ffi::RMW_QOS_POLICY_DURABILITY_TRANSIENT_LOCAL, _)
            | (ffi::RMW_QOS_POLICY_DURABILITY_BEST_AVAILABLE, End::Publisher) => {
                ffi::RMW_QOS_POLICY_DURABILITY_TRANSIENT_LOCAL
            }
            (other, _) => {
                return Err(RmwError::invalid(format!(
                    "unknown QoS durability policy {other}"
                )))
            }
        };
        p.liveliness = match req.liveliness {
            ffi::RMW_QOS_POLICY_LIVELINESS_SYSTEM_DEFAULT
            | ffi::RMW_QOS_POLICY_LIVELINESS_AUTOMATIC
            | ffi::RMW_QOS_POLICY_LIVELINESS_BEST_AVAILABLE => {
                ffi::RMW_QOS_POLICY_LIVELINESS_AUTOMATIC
            }
            l @ (ffi::RMW_QOS_POLICY_LIVELINESS_MANUAL_BY_NODE
            | ffi::RMW_QOS_POLICY_LIVELINESS_MANUAL_BY_TOPIC) => l,
            other => {
                return Err(RmwError::invalid(format!(
                    "unknown QoS liveliness policy {other}"
                )))
            }
        };
        p.deadline = time_of(time_ns(&req.deadline));
        p.lifespan = time_of(time_ns(&req.lifespan));
        p.liveliness_lease_duration = time_of(time_ns(&req.liveliness_lease_duration));
        Ok(Qos { profile: p })
    }

    /// The deadline period; `None` when infinite.
    pub fn deadline(&self) -> Option<Duration> {
        duration_of(time_ns(&self.profile.deadline))
    }

    /// The liveliness lease; `None` when infinite.
    pub fn lease(&self) -> Option<Duration> {
        duration_of(time_ns(&self.profile.liveliness_lease_duration))
    }

    /// MANUAL_BY_TOPIC or MANUAL_BY_NODE: liveliness is asserted by publications and
    /// `rmw_publisher_assert_liveliness`, not by the process being alive.
    pub fn manual_liveliness(&self) -> bool {
        self.profile.liveliness != ffi::RMW_QOS_POLICY_LIVELINESS_AUTOMATIC
    }

    pub fn reliable(&self) -> bool {
        self.profile.reliability == ffi::RMW_QOS_POLICY_RELIABILITY_RELIABLE
    }

    pub fn transient_local(&self) -> bool {
        self.profile.durability == ffi::RMW_QOS_POLICY_DURABILITY_TRANSIENT_LOCAL
    }

    pub fn keep_all(&self) -> bool {
        self.profile.history == ffi::RMW_QOS_POLICY_HISTORY_KEEP_ALL
    }

    pub fn depth(&self) -> usize {
        self.profile.depth
    }

    /// What of the profile the core's delivery depends on (`tracer_recording::delivery`, the
    /// mapping the C API shares).
    pub fn shape(&self) -> QosShape {
        QosShape {
            reliable: self.reliable(),
            transient_local: self.transient_local(),
            keep_all: self.keep_all(),
            depth: self.depth(),
        }
    }

    /// The delivery policy of a subscription's edges: exact (a ROS topic is a name, not a
    /// subtree), paced for RELIABLE + KEEP_ALL ([`QosShape::delivery`]).
    pub fn delivery(&self) -> DeliveryPolicy {
        self.shape().delivery(true)
    }

    /// The bounds of a subscription's ring.
    pub fn subscription_ring(&self) -> StreamOptions {
        self.shape().subscription_ring()
    }

    /// The bounds of a publisher's topic stream: what a transient-local subscriber is replayed.
    pub fn topic_ring(&self) -> StreamOptions {
        self.shape().topic_ring()
    }

    /// What the endpoint registry's `qos=` line carries (`tracer_recording::QosNumbers`).
    pub fn numbers(&self) -> QosNumbers {
        let p = &self.profile;
        QosNumbers {
            history: p.history,
            depth: p.depth,
            reliability: p.reliability,
            durability: p.durability,
            liveliness: p.liveliness,
            deadline_ns: time_ns(&p.deadline),
            lifespan_ns: time_ns(&p.lifespan),
            lease_ns: time_ns(&p.liveliness_lease_duration),
        }
    }

    /// The profile of a registry record's [`QosNumbers`].
    pub fn from_numbers(n: QosNumbers) -> Qos {
        let mut p = Qos::system_default().profile;
        p.history = n.history;
        p.depth = n.depth;
        p.reliability = n.reliability;
        p.durability = n.durability;
        p.liveliness = n.liveliness;
        p.deadline = time_of(n.deadline_ns);
        p.lifespan = time_of(n.lifespan_ns);
        p.liveliness_lease_duration = time_of(n.lease_ns);
        Qos { profile: p }
    }

    /// The resolved system default profile.
    pub fn system_default() -> Qos {
        let req = ffi::rmw_qos_profile_t {
            history: ffi::RMW_QOS_POLICY_HISTORY_SYSTEM_DEFAULT,
            depth: 0,
            reliability: ffi::RMW_QOS_POLICY_RELIABILITY_SYSTEM_DEFAULT,
            durability: ffi::RMW_QOS_POLICY_DURABILITY_SYSTEM_DEFAULT,
            deadline: ffi::rmw_time_t { sec: 0, nsec: 0 },
            lifespan: ffi::rmw_time_t { sec: 0, nsec: 0 },
            liveliness: ffi::RMW_QOS_POLICY_LIVELINESS_SYSTEM_DEFAULT,
            liveliness_lease_duration: ffi::rmw_time_t { sec: 0, nsec: 0 },
            avoid_ros_namespace_conventions: false,
        };
        match Qos::resolve(&req, End::Subscription) {
            Ok(q) => q,
            Err(_) => unreachable!("the system default profile always resolves"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_default_is_concrete() {
        let q = Qos::system_default();
        assert_eq!(q.profile.history, ffi::RMW_QOS_POLICY_HISTORY_KEEP_LAST);
        assert_eq!(q.profile.depth, 10);
        assert!(q.reliable());
        assert!(!q.transient_local());
        assert_eq!(
            q.profile.liveliness,
            ffi::RMW_QOS_POLICY_LIVELINESS_AUTOMATIC
        );
        assert_eq!(q.profile.deadline.sec, INFINITE.sec);
        assert_eq!(q.subscription_ring(), StreamOptions::keep_last(10));
        assert_eq!(q.topic_ring(), StreamOptions::keep_last(1));
    }

    #[test]
    fn best_available_and_unknown() {
        let mut req = Qos::system_default().profile;
        req.durability = ffi::RMW_QOS_POLICY_DURABILITY_BEST_AVAILABLE;
        assert!(Qos::resolve(&req, End::Publisher)
            .unwrap()
            .transient_local());
        assert!(!Qos::resolve(&req, End::Subscription)
            .unwrap()
            .transient_local());
        req.reliability = ffi::RMW_QOS_POLICY_RELIABILITY_UNKNOWN;
        assert!(Qos::resolve(&req, End::Publisher).is_err());
    }

    #[test]
    fn keep_all_and_round_trip() {
        let mut req = Qos::system_default().profile;
        req.history = ffi::RMW_QOS_POLICY_HISTORY_KEEP_ALL;
        req.durability = ffi::RMW_QOS_POLICY_DURABILITY_TRANSIENT_LOCAL;
        let q = Qos::resolve(&req, End::Publisher).unwrap();
        assert_eq!(q.subscription_ring().depth, 0);
        assert_eq!(q.subscription_ring().byte_budget, KEEP_ALL_BYTE_BUDGET);
        assert_eq!(q.topic_ring().byte_budget, KEEP_ALL_BYTE_BUDGET);
        let line = q.numbers().encode();
        let back = Qos::from_numbers(QosNumbers::decode(&line).unwrap());
        assert_eq!(back.numbers(), q.numbers());
        req.deadline = ffi::rmw_time_t { sec: 1, nsec: 5 };
        req.liveliness = ffi::RMW_QOS_POLICY_LIVELINESS_MANUAL_BY_TOPIC;
        let q = Qos::resolve(&req, End::Publisher).unwrap();
        assert_eq!(q.deadline(), Some(Duration::from_nanos(1_000_000_005)));
        assert!(q.manual_liveliness());
        assert_eq!(q.profile.lifespan.sec, INFINITE.sec);
        let mut n = QosNumbers::decode(&q.numbers().encode()).unwrap();
        assert!(n.decode_times(&q.numbers().encode_times().unwrap()));
        assert_eq!(Qos::from_numbers(n).numbers(), q.numbers());
        assert!(QosNumbers::decode("1,2,3").is_none());
    }
}
