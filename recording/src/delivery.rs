//! How a ROS QoS maps onto the core's delivery (docs/rmw-mapping.md, "QoS" and "Flow
//! control"): the edge policy of a subscription, the bounds of its ring and of a publisher's
//! topic stream, and the credit of a RELIABLE + KEEP_ALL edge. One mapping for rmw_tracer and
//! the C API, so that a native C subscription holds a publisher back exactly as an rclpy one
//! does, and a C publisher waits for it as long as rmw_publish does.

use std::time::Duration;

use libtracer_core::{DeliveryPolicy, Edge, Graph, StreamOptions, Window};

/// The byte budget of a KEEP_ALL ring: KEEP_ALL has no count bound, and this keeps a stalled
/// subscriber from taking all memory (the oldest samples go first, counted as lost).
pub const KEEP_ALL_BYTE_BUDGET: usize = 256 * 1024 * 1024;

/// The credit a RELIABLE + KEEP_ALL subscription grants each of its edges (docs/wire.md section
/// 2, "Flow control"): what a publisher may have sent it beyond what it has taken. Small
/// enough that a publisher ahead of its reader runs out of credit, and so waits at most
/// [`PUBLISH_MAX_BLOCKING`], before a Unix socket's buffer (208 KiB by default, each small
/// frame taking most of a kilobyte of it) blocks its write; the credit comes back every 2 ms
/// or quarter window while the reader takes, so on one host it does not limit the rate.
/// Across hosts it bounds a small-message stream to 128 messages per round trip (a
/// measured choice for later: docs/rmw-mapping.md, "Flow control").
pub const PACED_WINDOW: Window = Window {
    messages: 128,
    bytes: 4 * 1024 * 1024,
};

/// The window of a paced edge from a publisher on another host (QUIC): no socket buffer to
/// stay below, and a round trip of tens of milliseconds with losses to repair, so a writer
/// ahead of the link must have room for what the link carries in a round trip or two before
/// its bound ends; the bytes stay below the link's 64 MiB per-stream backlog.
pub const PACED_WINDOW_REMOTE: Window = Window {
    messages: 8192,
    bytes: 32 * 1024 * 1024,
};

/// How long a publish waits for room at a RELIABLE + KEEP_ALL subscription before it fails.
/// Five times Fast DDS's default `max_blocking_time` (100 ms), with a reason: rclpy and rclcpp
/// raise on a failed publish, and a subscriber held up 100 ms by a busy CPU should not make a
/// publishing node throw; and below the 0.9 s after which a Unix link takes a silent peer for
/// hung, so a stopped subscriber fails the publish rather than losing its link
/// (docs/rmw-mapping.md, "Flow control").
pub const PUBLISH_MAX_BLOCKING: Duration = Duration::from_millis(500);

/// What of a ROS QoS profile the core's delivery depends on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QosShape {
    pub reliable: bool,
    pub transient_local: bool,
    pub keep_all: bool,
    /// KEEP_LAST's depth (unused with KEEP_ALL).
    pub depth: usize,
}

impl QosShape {
    /// The delivery policy of a subscription's edges, at priority 0. `exact`: a ROS topic is a
    /// name, not a subtree, so a subscription to `/camera/image` never receives
    /// `/camera/image/compressed` (the C API's namespace subscriptions are subtrees). Paced for
    /// RELIABLE + KEEP_ALL: the publisher is held back rather than the subscription losing
    /// what it cannot hold ([`PACED_WINDOW`]).
    pub fn delivery(&self, exact: bool) -> DeliveryPolicy {
        DeliveryPolicy::new(self.reliable, 0, self.transient_local)
            .with_exact(exact)
            .with_paced(self.reliable && self.keep_all)
    }

    /// The bounds of a subscription's ring.
    pub fn subscription_ring(&self) -> StreamOptions {
        if self.keep_all {
            StreamOptions {
                depth: 0,
                byte_budget: KEEP_ALL_BYTE_BUDGET,
            }
        } else {
            StreamOptions::keep_last(self.depth.max(1))
        }
    }

    /// The bounds of a publisher's topic stream: what a transient-local subscriber is replayed.
    /// A volatile publisher retains only the newest sample (a ring cannot be empty-bounded; the
    /// newest sample is what `tracer` shows for a topic), which no volatile subscriber replays.
    pub fn topic_ring(&self) -> StreamOptions {
        match (self.transient_local, self.keep_all) {
            (false, _) => StreamOptions::keep_last(1),
            (true, true) => StreamOptions {
                depth: 0,
                byte_budget: KEEP_ALL_BYTE_BUDGET,
            },
            (true, false) => StreamOptions::keep_last(self.depth.max(1)),
        }
    }
}

/// A subscription's edge from `source` into its ring `target`, tagged with its gid (the
/// producer's edge filter judges each write by it) and, with a paced policy (RELIABLE +
/// KEEP_ALL), with the subscription's window of credit: [`PACED_WINDOW`] on this host,
/// [`PACED_WINDOW_REMOTE`] from a peer on another host (`peer`: its link authenticated it),
/// whose round trips are long and lossy.
pub fn subscription_edge(
    graph: &Graph,
    source: &str,
    target: &str,
    policy: DeliveryPolicy,
    tag: &[u8],
    peer: Option<&str>,
) -> Result<Edge, libtracer_core::Error> {
    if policy.is_paced() {
        let window = match peer.and_then(|p| graph.peer_subject(p)) {
            Some(_) => PACED_WINDOW_REMOTE,
            None => PACED_WINDOW,
        };
        graph.subscribe_paced(source, target, policy, tag, window)
    } else {
        graph.subscribe_tagged(source, target, policy, tag)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reliable_keep_all_is_paced_and_budgeted() {
        let q = QosShape {
            reliable: true,
            transient_local: false,
            keep_all: true,
            depth: 0,
        };
        assert!(q.delivery(true).is_paced());
        assert_eq!(q.subscription_ring().byte_budget, KEEP_ALL_BYTE_BUDGET);
        assert_eq!(q.topic_ring(), StreamOptions::keep_last(1));
        let best_effort = QosShape {
            reliable: false,
            ..q
        };
        assert!(!best_effort.delivery(true).is_paced());
        let last = QosShape {
            keep_all: false,
            depth: 7,
            transient_local: true,
            ..q
        };
        assert!(!last.delivery(true).is_paced());
        assert_eq!(last.subscription_ring(), StreamOptions::keep_last(7));
        assert_eq!(last.topic_ring(), StreamOptions::keep_last(7));
    }
}
