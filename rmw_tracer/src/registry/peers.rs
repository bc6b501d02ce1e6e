//! Following the peers: a peer mount under `/net` gets a subscription of its registry into
//! a sink (`/.ros/peers/<p>`), its records are kept as they come and go, and a peer that
//! cannot be followed yet is retried.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use libtracer_core::{DeliveryPolicy, EdgeState, Sample, StructEvent};
use tracer_recording::{decode, Announcement};

use super::{Inner, Msg, Peer, ENDPOINTS, PEERS, RETRY};
use crate::gid::Gid;
use crate::log::log;
use crate::names;

impl Inner {
    pub(super) fn on_structure(&self, s: &Sample) -> bool {
        let ev = match StructEvent::decode(s.payload.as_ref()) {
            Ok(ev) => ev,
            Err(e) => {
                log!(
                    RMW_LOG_SEVERITY_WARN,
                    "undecodable structure event on /net: {e}"
                );
                return false;
            }
        };
        match ev {
            StructEvent::Created { path, .. } if is_peer_name(&path) => self.peer_up(&path),
            StructEvent::Removed { path } if is_peer_name(&path) => {
                let p = self.state.lock().peers.remove(&path);
                match p {
                    Some(p) => {
                        self.drop_peer(p);
                        true
                    }
                    None => false,
                }
            }
            _ => false,
        }
    }

    fn peer_up(&self, peer: &str) -> bool {
        if peer == self.graph.name() || self.state.lock().peers.contains_key(peer) {
            return false;
        }
        let sink = format!("{PEERS}/{peer}");
        let tx = self.tx.clone();
        let name = peer.to_owned();
        let made = self.graph.create_sink(
            &sink,
            Arc::new(move |s: &Sample| {
                let _ = tx.send(Msg::Entity {
                    peer: name.clone(),
                    sample: s.clone(),
                });
            }),
        );
        if let Err(e) = made {
            log!(RMW_LOG_SEVERITY_WARN, "cannot create {sink}: {e}");
            return false;
        }
        let mut p = Peer {
            records: BTreeMap::new(),
            edge: None,
            edge_made: Instant::now(),
            sink,
        };
        self.connect_peer(peer, &mut p);
        self.state.lock().peers.insert(peer.to_owned(), p);
        true
    }

    fn connect_peer(&self, peer: &str, p: &mut Peer) {
        let source = names::on_peer(peer, ENDPOINTS);
        match self.graph.subscribe(
            &source,
            &p.sink,
            DeliveryPolicy::new(true, crate::priority::REGISTRY_CLASS, true),
        ) {
            Ok(e) => p.edge = Some(e),
            Err(e) => log!(RMW_LOG_SEVERITY_DEBUG, "cannot subscribe {source}: {e}"),
        }
        p.edge_made = Instant::now();
    }

    /// A peer's registry subscription can fail when it mounted us before it created its own
    /// `/.ros/endpoints` (or it is not a ROS process yet): try again now and then.
    pub(super) fn retry_peers(&self) {
        let mut st = self.state.lock();
        for (name, p) in st.peers.iter_mut() {
            let failed = match &p.edge {
                None => true,
                Some(e) => matches!(e.state(), EdgeState::Failed(_) | EdgeState::Closed),
            };
            if failed && p.edge_made.elapsed() >= RETRY {
                if let Some(e) = p.edge.take() {
                    let _ = self.graph.unsubscribe(&e);
                }
                self.connect_peer(name, p);
            }
        }
    }

    pub(super) fn drop_peer(&self, p: Peer) {
        if let Some(e) = p.edge {
            let _ = self.graph.unsubscribe(&e);
        }
        let _ = self.graph.remove(&p.sink);
    }

    pub(super) fn on_entity(&self, peer: &str, s: &Sample) -> bool {
        let Some(suffix) = s.suffix.as_deref() else {
            return false;
        };
        let Some(gid) = Gid::from_hex(suffix) else {
            return false;
        };
        let mut st = self.state.lock();
        let Some(p) = st.peers.get_mut(peer) else {
            return false;
        };
        match decode(s.payload.as_ref()) {
            Some(Announcement::Present(r)) if r.gid == gid => {
                p.records.insert(gid, *r);
                true
            }
            Some(Announcement::Gone(g)) if g == gid => p.records.remove(&gid).is_some(),
            _ => {
                log!(
                    RMW_LOG_SEVERITY_WARN,
                    "ignoring a malformed entity record from {peer} at {suffix}"
                );
                false
            }
        }
    }
}

/// `/net/:children[]` reports paths relative to `/net`: a peer mount is one segment.
fn is_peer_name(path: &str) -> bool {
    !path.is_empty() && !path.contains('/')
}
