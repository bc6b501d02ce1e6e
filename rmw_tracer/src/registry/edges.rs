//! Wiring a local subscription to the remote publishers of its topic: one edge per peer with a
//! publisher of the same type and a compatible QoS whose writer the subscription may take data
//! from (SROS2), made when such a publisher appears and removed when it goes.

use std::collections::BTreeSet;
use std::time::Instant;

use libtracer_core::{Edge, EdgeState};
use tracer_recording::delivery::subscription_edge;

use super::{delivers_to, Inner, RemoteEdge, State, SubscriptionLink, RETRY};
use crate::log::log;
use crate::names;

impl Inner {
    /// With SROS2, whether `peer`'s publishers may feed `sub`: as a DDS DataReader ignores a
    /// remote DataWriter whose permissions do not allow it to publish the topic, no edge is
    /// made to such a peer, so neither its data nor a match is counted (logged once).
    fn writer_allowed(&self, sub: &SubscriptionLink, peer: &str) -> bool {
        sub.writers.as_ref().is_none_or(|check| {
            check.allows(peer, self.graph.peer_subject(peer).as_ref(), |line| {
                log!(RMW_LOG_SEVERITY_WARN, "{line}")
            })
        })
    }

    /// Make `sub`'s remote edges those its matching peers call for. True when each of them is
    /// established (nothing for the worker's tick to retry).
    pub(super) fn reconcile(&self, st: &State, sub: &SubscriptionLink) -> bool {
        super::verdicts::judge_all(st, sub);
        let wanted: BTreeSet<&str> = st
            .peers
            .iter()
            .filter(|(_, p)| {
                p.records
                    .values()
                    .any(|r| delivers_to(r, &sub.topic, &sub.type_name, &sub.qos))
            })
            .map(|(n, _)| n.as_str())
            .filter(|peer| self.writer_allowed(sub, peer))
            .collect();
        let mut remote = sub.remote.lock();
        let Some(remote) = remote.as_mut() else {
            return true; // the subscription is going away
        };
        remote.retain(|peer, e| {
            let state = e.edge.state();
            if let EdgeState::Failed(why @ libtracer_core::Error::PermissionDenied { .. }) = &state
            {
                if sub.refused_by.lock().insert(peer.clone()) {
                    log!(
                        RMW_LOG_SEVERITY_WARN,
                        "security: {peer} refused the subscription to {}: {why}",
                        sub.topic
                    );
                }
            }
            let dead = matches!(state, EdgeState::Failed(_) | EdgeState::Closed);
            let keep = wanted.contains(peer.as_str()) && !(dead && e.made.elapsed() >= RETRY);
            if !keep {
                let _ = self.graph.unsubscribe(&e.edge);
            }
            keep
        });
        let n_wanted = wanted.len();
        for peer in wanted {
            if remote.contains_key(peer) {
                continue;
            }
            let source = names::on_peer(peer, &sub.path);
            let policy = match &sub.resume {
                Some(r) if r.rewire(peer) => sub.policy.with_transient_local(true),
                _ => sub.policy,
            };
            match subscription_edge(
                &self.graph,
                &source,
                &sub.target,
                policy,
                &sub.gid.0,
                Some(peer),
            ) {
                Ok(edge) => {
                    remote.insert(
                        peer.to_owned(),
                        RemoteEdge {
                            edge,
                            made: Instant::now(),
                        },
                    );
                }
                // The peer is leaving (its link closed) or has left: its records go when its
                // mount's removal is handled, and the edge with them. Not worth a warning (a
                // process exiting is no fault).
                Err(e)
                    if matches!(e, libtracer_core::Error::LinkDown(_))
                        || !self.graph.peers().iter().any(|p| p == peer) =>
                {
                    log!(RMW_LOG_SEVERITY_DEBUG, "cannot subscribe {source}: {e}")
                }
                Err(e) => log!(RMW_LOG_SEVERITY_WARN, "cannot subscribe {source}: {e}"),
            }
        }
        n_wanted == remote.len() && remote.values().all(|e| established(&e.edge))
    }
}

pub(super) fn established(e: &Edge) -> bool {
    matches!(e.state(), EdgeState::Established)
}
