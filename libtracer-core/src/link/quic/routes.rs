//! Which stream or datagram carries each frame of a link (docs/network.md section 7,
//! wire.md section 5, "A link of several streams"): the policies of the edges the peer made
//! here, learned from its SUBSCRIBEs, decide. Whoever drives the link's connection (quinn's
//! tasks today, the runtime-free engine from stage 2 of docs/network.md section 4a) asks here.

use std::collections::HashMap;

use parking_lot::Mutex;

use crate::wire::policy::DeliveryPolicy;
use crate::wire::{EdgeId, Frame, ReqId};

/// Edges whose policy a link remembers (learned from SUBSCRIBE); an edge past it is carried on
/// the control stream, reliably and in order.
const MAX_EDGES: usize = 65536;
/// Where one frame goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Route {
    Control,
    /// The reliable stream of the class, never dropped (waits for room if it must).
    Reliable(u8),
    /// A DELIVERY on the reliable stream of the class, of this edge: dropped, oldest first,
    /// from a full queue.
    ReliableDelivery(u8, EdgeId),
    /// A DELIVERY of a transient-local replay on the reliable stream of the class: never
    /// dropped, and it takes no room from the others (`queue::Kind::Owed`).
    Owed(u8),
    /// A datagram if it fits, else the best-effort stream of the class.
    BestEffort(u8),
    /// A READ: a barrier over the reliable streams, then the READ on the control stream.
    Barrier,
}

/// What the link has learned of the edges the peer made here (from the SUBSCRIBEs it sent).
#[derive(Default)]
pub(crate) struct Routes {
    edges: Mutex<Edges>,
}

/// The edges' policies, and the SUBSCRIBEs whose answer follows their edge.
#[derive(Default)]
struct Edges {
    policy: HashMap<EdgeId, DeliveryPolicy>,
    /// SUBSCRIBE requests not answered yet, and their edge.
    answer: HashMap<ReqId, EdgeId>,
}

impl Routes {
    /// A frame the peer sent on the control stream, seen before the graph handles it: a
    /// SUBSCRIBE names the edge and class its deliveries and its answer will use.
    pub(crate) fn learn(&self, frame: &Frame) {
        let mut e = self.edges.lock();
        match frame {
            Frame::Subscribe {
                req, edge, policy, ..
            } if e.policy.len() < MAX_EDGES => {
                e.policy.insert(*edge, DeliveryPolicy::from_bits(*policy));
                if *req != 0 && e.answer.len() < MAX_EDGES {
                    e.answer.insert(*req, *edge);
                }
            }
            Frame::Unsubscribe { edge } => {
                e.policy.remove(edge);
            }
            _ => {}
        }
    }

    fn edge_route(edge: EdgeId, policy: Option<DeliveryPolicy>) -> Route {
        match policy {
            Some(p) if p.is_reliable() => Route::ReliableDelivery(p.priority(), edge),
            Some(p) => Route::BestEffort(p.priority()),
            None => Route::Control,
        }
    }

    /// Where `frame` goes (wire.md section 5, "A link of several streams").
    pub(crate) fn route(&self, frame: &Frame) -> Route {
        match frame {
            Frame::Delivery { edge, .. } => {
                Self::edge_route(*edge, self.edges.lock().policy.get(edge).copied())
            }
            Frame::Structure { edge, .. } => match self.edges.lock().policy.get(edge).copied() {
                Some(p) if p.is_reliable() => Route::Reliable(p.priority()),
                _ => Route::Control,
            },
            Frame::Ok { req } => {
                let mut e = self.edges.lock();
                let edge = e.answer.remove(req);
                match edge.and_then(|id| e.policy.get(&id).copied()) {
                    Some(p) if p.is_reliable() => Route::Reliable(p.priority()),
                    _ => Route::Control,
                }
            }
            Frame::Error { req, .. } => {
                let mut e = self.edges.lock();
                if let Some(edge) = e.answer.remove(req) {
                    e.policy.remove(&edge);
                }
                Route::Control
            }
            Frame::Read { .. } => Route::Barrier,
            // Behind the default class's deliveries written before it, as on one byte
            // stream: a service reply after the feedback its server published first
            // (wire.md section 5, ruling 3).
            Frame::Write { .. } => Route::Reliable(DeliveryPolicy::DEFAULT_CLASS),
            _ => Route::Control,
        }
    }
}
