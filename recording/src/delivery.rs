//! How a ROS QoS maps onto the core's delivery (docs/rmw-mapping.md, "QoS" and "Flow
//! control"): the edge policy of a subscription, the bounds of its ring and of a publisher's
//! topic stream, and the credit of a RELIABLE + KEEP_ALL edge; what a publisher retains for
//! transient-local subscribers and to resend across a cut link ([`Retained`]). One mapping for
//! rmw_tracer and the C API, so that a native C subscription holds a publisher back exactly as
//! an rclpy one does, and a C publisher waits for it as long as rmw_publish does.

use std::collections::HashMap;
use std::time::Duration;

use libtracer_core::{DeliveryPolicy, Edge, Graph, StreamOptions, Window};
use parking_lot::Mutex;

/// The byte bound of a reliable KEEP_ALL publisher's resend window with the network on
/// (docs/network.md section 6): what it keeps for a subscriber whose link was cut.
pub const RESEND_BYTE_BUDGET: usize = 64 * 1024 * 1024;

/// The byte budget of a KEEP_ALL ring: KEEP_ALL has no count bound, and this keeps a stalled
/// subscriber from taking all memory (the oldest samples go first, counted as lost).
pub const KEEP_ALL_BYTE_BUDGET: usize = 256 * 1024 * 1024;

/// The credit a RELIABLE + KEEP_ALL subscription grants each of its edges (docs/wire.md section
/// 2, "Flow control"): what a publisher may have sent it beyond what it has taken. Small
/// enough that a publisher ahead of its reader runs out of credit, and so waits at most
/// [`PUBLISH_MAX_BLOCKING`], before a Unix link's socket buffer (about 416 KiB, each frame of
/// up to 700 bytes taking a kilobyte and more of it: docs/wire.md section 5) blocks its write;
/// as large as that allows, since on one host the window bounds the rate of small messages
/// (the time a CREDIT takes to reach the writer: docs/rmw-mapping.md, "Flow control").
pub const PACED_WINDOW: Window = Window {
    messages: 256,
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

    /// What a reliable publisher keeps, with the network on, to resend to a subscriber whose
    /// link was cut and came back (docs/network.md section 6): its depth (`usize::MAX` for
    /// KEEP_ALL) and byte budget. `None` for best effort, which promises nothing.
    pub fn resend_window(&self) -> Option<(usize, usize)> {
        if !self.reliable {
            None
        } else if self.keep_all {
            Some((usize::MAX, RESEND_BYTE_BUDGET))
        } else {
            Some((self.depth.max(1), 0))
        }
    }

    /// What a transient-local publisher keeps for late subscribers: its depth (`usize::MAX`
    /// for KEEP_ALL) and byte budget. `None` when volatile.
    pub fn durable_history(&self) -> Option<(usize, usize)> {
        match (self.transient_local, self.keep_all) {
            (false, _) => None,
            (true, true) => Some((usize::MAX, KEEP_ALL_BYTE_BUDGET)),
            (true, false) => Some((self.depth.max(1), 0)),
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

/// What the topic vertices of one context retain, the most any of their publishers asked:
/// a transient-local publisher's history, a reliable publisher's resend window with the network
/// on. Several publishers of one topic share its vertex, so the bound only grows.
#[derive(Default)]
pub struct Retained(Mutex<HashMap<String, (usize, usize)>>);

impl Retained {
    /// Make sure the topic vertex at `path` retains at least `depth` samples (`usize::MAX` =
    /// keep all within `byte_budget`).
    pub fn at_least(
        &self,
        graph: &Graph,
        path: &str,
        depth: usize,
        byte_budget: usize,
    ) -> Result<(), libtracer_core::Error> {
        let mut r = self.0.lock();
        let (cur_depth, cur_budget) = r.get(path).copied().unwrap_or((1, 0));
        let depth = depth.max(cur_depth);
        let budget = byte_budget.max(cur_budget);
        if (depth, budget) == (cur_depth, cur_budget) {
            return Ok(());
        }
        if depth == usize::MAX {
            graph.set_history_depth(path, 0)?;
            graph.set_ring_source(path, budget)?;
        } else {
            graph.set_history_depth(path, depth)?;
        }
        r.insert(path.to_owned(), (depth, budget));
        Ok(())
    }

    /// What a new publisher of `shape` on `path` needs kept (`networked`: the graph reaches
    /// other hosts, so a reliable publisher keeps its resend window).
    pub fn for_publisher(
        &self,
        graph: &Graph,
        path: &str,
        shape: &QosShape,
        networked: bool,
    ) -> Result<(), libtracer_core::Error> {
        if let Some((depth, budget)) = shape.durable_history() {
            self.at_least(graph, path, depth, budget)?;
        }
        if networked {
            if let Some((depth, budget)) = shape.resend_window() {
                self.at_least(graph, path, depth, budget)?;
            }
        }
        Ok(())
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
