//! The request/offer rules that decide whether a publisher's QoS meets a subscription's: the one
//! copy, used by rmw_tracer (which wires, counts as matched and raises the `*_INCOMPATIBLE_QOS`
//! events by it: `rmw_tracer/src/qos_compat.rs`) and by `tracer graph` (which marks an edge
//! that rmw_tracer does not make). On resolved profiles as the registry records carry them
//! ([`QosNumbers`], rmw's enum numbers).
//!
//! The rules are DDS's: the offer must be at least what is requested for reliability
//! (BEST_EFFORT < RELIABLE), durability (VOLATILE < TRANSIENT_LOCAL), deadline (the offered
//! period no longer than the requested one), liveliness kind (AUTOMATIC < MANUAL_BY_NODE <
//! MANUAL_BY_TOPIC) and lease (the offered lease no longer than the requested one).

use crate::endpoint::QosNumbers;

/// A QoS policy that can make a pair incompatible.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    Reliability,
    Durability,
    Deadline,
    Liveliness,
}

impl Policy {
    /// rmw's spelling (`rmw_qos_policy_kind_to_str`'s names).
    pub fn name(self) -> &'static str {
        match self {
            Policy::Reliability => "RELIABILITY",
            Policy::Durability => "DURABILITY",
            Policy::Deadline => "DEADLINE",
            Policy::Liveliness => "LIVELINESS",
        }
    }
}

// rmw's enum numbers of resolved profiles (`rmw_qos_*_policy_e`, stable since Foxy).
const RELIABLE: u32 = 1;
const TRANSIENT_LOCAL: u32 = 1;
const MANUAL_BY_NODE: u32 = 2;
const MANUAL_BY_TOPIC: u32 = 3;

/// The policy that keeps `offered` (a publisher's) from meeting `requested` (a
/// subscription's); None when they match. When several fail, the one Fast DDS reports as
/// "last": the highest DDS policy id (reliability 11 > liveliness 8 > deadline 4 >
/// durability 2). Liveliness kind and lease are both the DDS LIVELINESS policy.
pub fn incompatible(offered: &QosNumbers, requested: &QosNumbers) -> Option<Policy> {
    let (o, r) = (offered, requested);
    if o.reliability != RELIABLE && r.reliability == RELIABLE {
        return Some(Policy::Reliability);
    }
    let rank = |l| match l {
        MANUAL_BY_TOPIC => 2,
        MANUAL_BY_NODE => 1,
        _ => 0,
    };
    if rank(o.liveliness) < rank(r.liveliness) || o.lease_ns > r.lease_ns {
        return Some(Policy::Liveliness);
    }
    if o.deadline_ns > r.deadline_ns {
        return Some(Policy::Deadline);
    }
    if o.durability != TRANSIENT_LOCAL && r.durability == TRANSIENT_LOCAL {
        return Some(Policy::Durability);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::INFINITE_NS;

    fn q(reliability: u32, durability: u32) -> QosNumbers {
        QosNumbers {
            history: 1,
            depth: 10,
            reliability,
            durability,
            liveliness: 1,
            deadline_ns: INFINITE_NS,
            lifespan_ns: INFINITE_NS,
            lease_ns: INFINITE_NS,
        }
    }

    #[test]
    fn offers_must_meet_requests() {
        let (rel, be, tl, vol) = (1, 2, 1, 2);
        assert_eq!(incompatible(&q(rel, vol), &q(rel, vol)), None);
        assert_eq!(incompatible(&q(rel, tl), &q(be, vol)), None);
        assert_eq!(
            incompatible(&q(be, vol), &q(rel, vol)),
            Some(Policy::Reliability)
        );
        assert_eq!(
            incompatible(&q(rel, vol), &q(rel, tl)),
            Some(Policy::Durability)
        );
        // Both fail: reliability is the one reported.
        assert_eq!(
            incompatible(&q(be, vol), &q(rel, tl)),
            Some(Policy::Reliability)
        );
        let mut dl = q(rel, vol);
        dl.deadline_ns = 1_000_000;
        assert_eq!(incompatible(&q(rel, vol), &dl), Some(Policy::Deadline));
        assert_eq!(incompatible(&dl, &dl), None);
        let mut manual = q(rel, vol);
        manual.liveliness = MANUAL_BY_TOPIC;
        assert_eq!(
            incompatible(&q(rel, vol), &manual),
            Some(Policy::Liveliness)
        );
        assert_eq!(incompatible(&manual, &q(rel, vol)), None);
        assert_eq!(Policy::Durability.name(), "DURABILITY");
    }
}
