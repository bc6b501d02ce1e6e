//! The statuses of the QoS events as Rust, and the counters they are kept with.

use std::collections::{BTreeMap, BTreeSet};

use crate::boundary::event_callback::EventCallback;
use crate::gid::Gid;

use super::Kind;

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

/// The `total_count` / `total_count_change` pair every counted status has (deadline missed,
/// liveliness lost, incompatible QoS and type).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CountStatus {
    pub total_count: i32,
    pub total_count_change: i32,
}

/// `rmw_qos_incompatible_event_status_t`, as Rust.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IncompatibleStatus {
    pub count: CountStatus,
    pub last_policy_kind: ffi::rmw_qos_policy_kind_t,
}

impl IncompatibleStatus {
    /// The policy of the last incompatibility, or `RMW_QOS_POLICY_INVALID` before any (as Fast
    /// DDS reports, and rclpy's test_qos_event.py expects: 0 is no policy kind at all).
    pub fn policy(&self) -> ffi::rmw_qos_policy_kind_t {
        if self.last_policy_kind == 0 {
            ffi::RMW_QOS_POLICY_INVALID
        } else {
            self.last_policy_kind
        }
    }
}

/// `rmw_liveliness_changed_status_t`, as Rust.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LivelinessChangedStatus {
    pub alive_count: i32,
    pub not_alive_count: i32,
    pub alive_count_change: i32,
    pub not_alive_count_change: i32,
}

/// A cumulative count: how much of it was taken and how much told to a callback.
#[derive(Clone, Copy, Debug, Default)]
pub struct Tally {
    pub total: u64,
    pub at_take: u64,
    told: u64,
}

impl Tally {
    pub fn pending(&self) -> bool {
        self.total > self.at_take
    }

    /// The status at a take: the total, and the change since the last take (zero when nothing
    /// happened: a take always reports, as Fast DDS's and test_rmw_implementation's
    /// `rmw_take_event` does). Always `Some`; the `Option` is kept for the `?` of the callers.
    pub fn take(&mut self) -> Option<CountStatus> {
        let s = CountStatus {
            total_count: clamp(self.total),
            total_count_change: clamp(self.total - self.at_take),
        };
        self.at_take = self.total;
        self.told = self.told.max(self.total);
        Some(s)
    }

    /// Events not yet told to a callback (nor taken).
    pub fn untold(&mut self) -> u64 {
        let n = self.total - self.told.max(self.at_take);
        self.told = self.total;
        n
    }
}

fn clamp(n: u64) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

/// How a subscription sees one matched publisher that has a liveliness lease.
#[derive(Clone, Copy, Debug)]
pub struct WriterLiveliness {
    pub alive: bool,
}

/// Everything an endpoint's events remember between looks.
#[derive(Default)]
pub struct State {
    // Matched.
    /// The matched endpoints at the last take.
    pub taken: BTreeSet<Gid>,
    /// Every endpoint ever matched (the total count).
    pub ever: BTreeSet<Gid>,
    pub total_at_take: usize,
    /// The matched set the notifier last told a callback about (`None`: not yet; the first
    /// look compares with the set last taken, so a change not taken yet is the backlog).
    pub notified_matched: Option<BTreeSet<Gid>>,
    /// The matched set at the last look.
    pub matched: BTreeSet<Gid>,

    // Message lost.
    pub lost_total: u64,
    pub lost_pending: u64,
    pub told_lost: u64,

    // Incompatible QoS and type: every endpoint ever found incompatible counts once.
    pub incompatible_qos: Tally,
    pub incompatible_seen: BTreeSet<Gid>,
    pub last_policy: ffi::rmw_qos_policy_kind_t,
    pub incompatible_type: Tally,
    pub bad_type_seen: BTreeSet<Gid>,

    // Deadline: `deadline_from` is the start of the period being watched (the last
    // publication or reception, or the last counted miss), in ns since the epoch; `None`
    // before the first one.
    pub deadline_missed: Tally,
    pub deadline_from: Option<i64>,

    // Publisher liveliness (manual): the last assertion, and whether the lease still holds.
    pub liveliness_lost: Tally,
    pub asserted_at: Option<i64>,
    pub alive: bool,

    // Subscription liveliness: the matched publishers with a lease.
    pub writers: BTreeMap<Gid, WriterLiveliness>,
    /// The newest sample's reception time of each writer that asserts manually.
    pub activity: BTreeMap<Gid, i64>,
    pub liveliness_changes: Tally,
    pub alive_at_take: i32,
    pub not_alive_at_take: i32,

    pub callbacks: BTreeMap<KindKey, EventCallback>,
}

/// [`Kind`] as a map key.
pub type KindKey = u8;

pub fn key(k: Kind) -> KindKey {
    k as u8
}

impl State {
    pub fn alive_counts(&self) -> (i32, i32) {
        let alive = self.writers.values().filter(|w| w.alive).count();
        let not_alive = self.writers.len() - alive;
        (clamp(alive as u64), clamp(not_alive as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_take_always_reports_the_total() {
        let mut t = Tally::default();
        assert_eq!(t.take(), Some(CountStatus::default()));
        t.total = 3;
        assert!(t.pending());
        let s = CountStatus {
            total_count: 3,
            total_count_change: 3,
        };
        assert_eq!(t.take(), Some(s));
        assert!(!t.pending());
        let again = CountStatus {
            total_count: 3,
            total_count_change: 0,
        };
        assert_eq!(t.take(), Some(again));
        assert_eq!(t.untold(), 0);
    }

    #[test]
    fn no_incompatibility_yet_is_the_invalid_policy() {
        let s = IncompatibleStatus::default();
        assert_eq!(s.policy(), ffi::RMW_QOS_POLICY_INVALID);
        let d = IncompatibleStatus {
            last_policy_kind: ffi::RMW_QOS_POLICY_DURABILITY,
            ..s
        };
        assert_eq!(d.policy(), ffi::RMW_QOS_POLICY_DURABILITY);
    }
}
