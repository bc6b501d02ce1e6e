//! QoS: what rmw_tracer does with each policy, and the concrete profile it reports.
//!
//! | policy | rmw_tracer |
//! |---|---|
//! | history KEEP_LAST(n) | the subscription ring keeps the last `n` samples |
//! | history KEEP_ALL | the ring has no depth bound, only a byte budget ([`KEEP_ALL_BYTE_BUDGET`]) |
//! | reliability | the edge's delivery policy (reliable / best effort) |
//! | durability TRANSIENT_LOCAL | the publisher's topic stream retains its last `depth` samples, and a transient-local subscription's edges replay them first |
//! | deadline, lifespan, liveliness lease | not offered: reported as infinite |
//! | liveliness | reported AUTOMATIC |
//!
//! System defaults resolve to: KEEP_LAST, depth 10, RELIABLE, VOLATILE, AUTOMATIC.

use libtracer_core::{DeliveryPolicy, StreamOptions};
use tracer_recording::QosNumbers;

use crate::boundary::{RmwError, RmwResult};

/// Depth used when a KEEP_LAST profile asks for the system default depth.
pub const DEFAULT_DEPTH: usize = 10;

/// The byte budget of a KEEP_ALL ring: KEEP_ALL has no count bound, and this keeps a stalled
/// subscriber from taking all memory (the oldest samples go first, counted as lost).
pub const KEEP_ALL_BYTE_BUDGET: usize = 256 * 1024 * 1024;

/// Which end of a topic a profile belongs to (BEST_AVAILABLE resolves differently).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    Publisher,
    Subscription,
}

const INFINITE: ffi::rmw_time_t = ffi::rmw_time_t {
    sec: 9_223_372_036,
    nsec: 854_775_807,
};

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
            | ffi::RMW_QOS_POLICY_LIVELINESS_BEST_AVAILABLE
            | ffi::RMW_QOS_POLICY_LIVELINESS_MANUAL_BY_NODE
            | ffi::RMW_QOS_POLICY_LIVELINESS_MANUAL_BY_TOPIC => {
                ffi::RMW_QOS_POLICY_LIVELINESS_AUTOMATIC
            }
            other => {
                return Err(RmwError::invalid(format!(
                    "unknown QoS liveliness policy {other}"
                )))
            }
        };
        p.deadline = INFINITE;
        p.lifespan = INFINITE;
        p.liveliness_lease_duration = INFINITE;
        Ok(Qos { profile: p })
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

    /// The delivery policy of a subscription's edges.
    pub fn delivery(&self) -> DeliveryPolicy {
        DeliveryPolicy::new(self.reliable(), 0, self.transient_local())
    }

    /// The bounds of a subscription's ring.
    pub fn subscription_ring(&self) -> StreamOptions {
        if self.keep_all() {
            StreamOptions {
                depth: 0,
                byte_budget: KEEP_ALL_BYTE_BUDGET,
            }
        } else {
            StreamOptions::keep_last(self.depth().max(1))
        }
    }

    /// The bounds of a publisher's topic stream: what a transient-local subscriber is replayed.
    /// A volatile publisher retains only the newest sample (a ring cannot be empty-bounded; the
    /// newest sample is what `tracer` shows for a topic), which no volatile subscriber replays.
    pub fn topic_ring(&self) -> StreamOptions {
        match (self.transient_local(), self.keep_all()) {
            (false, _) => StreamOptions::keep_last(1),
            (true, true) => StreamOptions {
                depth: 0,
                byte_budget: KEEP_ALL_BYTE_BUDGET,
            },
            (true, false) => StreamOptions::keep_last(self.depth().max(1)),
        }
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
        }
    }

    /// The profile of a registry record's [`QosNumbers`]; the policies the record does not
    /// carry (deadline, lifespan, lease) are the resolved system default's.
    pub fn from_numbers(n: QosNumbers) -> Qos {
        let mut p = Qos::system_default().profile;
        p.history = n.history;
        p.depth = n.depth;
        p.reliability = n.reliability;
        p.durability = n.durability;
        p.liveliness = n.liveliness;
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
        assert!(QosNumbers::decode("1,2,3").is_none());
    }
}
