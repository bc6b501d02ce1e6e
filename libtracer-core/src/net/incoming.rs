//! Frames from a peer, handled on the link's reader thread: forwarded writes (never create),
//! subscribes (checked against the ACL with the peer's kernel-attested uid/gid), deliveries and
//! structural events for the edges we made, and the replies to our requests.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::acl::Rights;
use crate::error::Error;
use crate::path::{MetaSegment, Path};
use crate::payload::{Meta, Payload};
use crate::peers::{unhook_remote_target, LinkId, LinkState, Pending};
use crate::sample::{now_ns, Credit, Sample};
use crate::state::GraphInner;
use crate::structure;
use crate::vertex::edge::{DeliveryPolicy, EdgeRec, EdgeState, Target, Window};
use crate::vertex::{dispatch, Kind};
use crate::wire::frame::{EdgeId, Frame, ReqId, Role, StructEvent};

/// One frame from the peer, on the link's reader thread.
pub(crate) fn on_frame(g: &GraphInner, id: LinkId, frame: Frame) {
    let Some(st) = g.peers.get(id) else {
        return;
    };
    match frame {
        Frame::Write {
            req,
            path,
            meta,
            payload,
        } => {
            let r = incoming_write(g, &st, &path, meta, payload);
            st.reply(req, r);
        }
        Frame::Subscribe {
            req,
            source,
            edge,
            policy,
            tag,
            window,
        } => match incoming_subscribe(
            g,
            &st,
            &source,
            edge,
            DeliveryPolicy::from_bits(policy),
            tag,
            window,
        ) {
            // The OK goes after any replay or snapshot: once the consumer sees its edge
            // established, the retained history has already landed.
            Ok(paced) => {
                st.reply(req, Ok(()));
                if paced {
                    // We pace this edge: an empty CREDIT says so.
                    let _ = st.send(&Frame::Credit {
                        edge,
                        window: Window::default(),
                    });
                }
            }
            Err(e) => st.reply(req, Err(e)),
        },
        Frame::Unsubscribe { edge } => {
            let src = st.produced.lock().remove(&edge);
            if let Some(src) = src.and_then(|w| w.upgrade()) {
                src.edges
                    .remove_where(|e| e.link == Some(st.key) && e.id == edge);
                src.struct_edges
                    .remove_where(|e| e.link == Some(st.key) && e.id == edge);
            }
        }
        Frame::Delivery {
            edge,
            meta,
            suffix,
            payload,
        } => {
            let t = st.consumer.lock().get(&edge).map(|c| {
                (
                    c.target.clone(),
                    c.handle.policy.is_exact(),
                    c.credit.clone(),
                )
            });
            if let Some((t, exact, paced)) = t {
                // A producer that predates exact edges reads the bit as reserved and sends the
                // subtree: what it sent below the source is refused here, before any ring
                // (wire.md, SUBSCRIBE), and counted.
                if exact && suffix.is_some() {
                    st.nested_refused.fetch_add(1, Ordering::Relaxed);
                    return;
                }
                // On a paced edge the sample holds its credit until it goes.
                let credit = match paced {
                    Some(c) => {
                        c.landed();
                        Credit::held(c, payload.len() as u64)
                    }
                    None => Credit::default(),
                };
                t.land(Sample {
                    payload,
                    meta,
                    received_timestamp_ns: now_ns(),
                    suffix,
                    origin: Some(st.origin.clone()),
                    credit,
                });
            }
        }
        // Empty: the producer of our paced edge `edge` says that it paces. Else credit back
        // for an edge the peer made here (docs/wire.md, "Flow control"). Either way an edge
        // that is gone (or not paced) makes it a no-op.
        Frame::Credit { edge, window } if window == Window::default() => {
            let c = st.consumer.lock().get(&edge).and_then(|c| c.credit.clone());
            if let Some(c) = c {
                c.confirm();
            }
        }
        Frame::Credit { edge, window } => {
            let src = st.produced.lock().get(&edge).and_then(|w| w.upgrade());
            if let Some(src) = src {
                let rec = src.edges.snapshot().and_then(|l| {
                    l.iter()
                        .find(|e| e.link == Some(st.key) && e.id == edge)
                        .cloned()
                });
                if let Some(p) = rec.as_ref().and_then(|r| r.pacing.as_ref()) {
                    p.give(window);
                }
            }
        }
        Frame::Structure { edge, event } => {
            let t = st
                .consumer
                .lock()
                .get(&edge)
                .map(|c| (c.target.clone(), c.handle.is_structural()));
            if let Some((t, structural)) = t {
                let gone = matches!(&event, StructEvent::Removed { path } if path.is_empty());
                // On a data edge only "the source is gone" is meaningful; nothing lands.
                if structural {
                    let mut s = structure::event_sample(&event);
                    s.origin = Some(st.origin.clone());
                    t.land(s);
                }
                // The watched vertex itself went: the producer has dropped the edge already.
                if gone {
                    unhook_remote_target(&t, st.key, edge);
                    st.drop_consumer(edge, false);
                }
            }
        }
        Frame::Read { req, path } => {
            let f = match incoming_read(g, &st, req, &path) {
                Ok(f) => f,
                Err(e) => Frame::Error {
                    req,
                    code: e.code(),
                    message: e.to_string(),
                },
            };
            let _ = st.send(&f);
        }
        Frame::ReadReply { req, value, .. } => {
            if let Some(Pending::Wait(r)) = st.pending.lock().remove(&req) {
                r.fill(Ok(value.map(|(meta, payload)| Sample {
                    payload,
                    meta,
                    received_timestamp_ns: now_ns(),
                    suffix: None,
                    origin: Some(st.origin.clone()),
                    credit: Credit::default(),
                })));
            }
        }
        Frame::Ok { req } => match st.pending.lock().remove(&req) {
            Some(Pending::Subscribe(edge)) => {
                if let Some(c) = st.consumer.lock().get(&edge) {
                    c.handle.set_state(EdgeState::Established);
                }
            }
            Some(Pending::Wait(r)) => r.fill(Ok(None)),
            None => {}
        },
        Frame::Error { req, code, message } => {
            let err = Error::from_wire(code, &message);
            let p = st.pending.lock().remove(&req);
            match p {
                Some(Pending::Subscribe(edge)) => {
                    let c = st.consumer.lock().remove(&edge);
                    if let Some(c) = c {
                        unhook_remote_target(&c.target, st.key, edge);
                        c.handle.set_state(EdgeState::Failed(err));
                    }
                }
                Some(Pending::Wait(r)) => r.fill(Err(err)),
                None => {
                    g.peers.note_remote_error(err);
                }
            }
        }
        Frame::Ping { nonce } => {
            let _ = st.send(&Frame::Pong { nonce });
        }
        // The link's own business (handshake, liveness, shared memory): never passed up.
        Frame::Hello { .. }
        | Frame::Pong { .. }
        | Frame::Segment { .. }
        | Frame::Retire { .. }
        | Frame::ShmDelivery { .. }
        | Frame::DeliveryPart { .. }
        | Frame::Release { .. } => {}
    }
}

/// A path a peer addressed to us: local, data only (no multi-hop forwarding yet).
fn peer_path(path: &str) -> Result<Path, Error> {
    let p = Path::parse(path).map_err(|e| Error::Malformed(e.to_string()))?;
    if p.net_split().is_some() {
        return Err(Error::Unsupported(format!(
            "{path}: forwarding through a second link is not built"
        )));
    }
    Ok(p)
}

/// A forwarded write lands only on an existing vertex: a missing path is `NotFound` and nothing
/// is created (creation on another node is never implicit).
fn incoming_write(
    g: &GraphInner,
    st: &LinkState,
    path: &str,
    meta: Meta,
    payload: Payload,
) -> Result<(), Error> {
    let p = peer_path(path)?;
    if p.meta().is_some() {
        return Err(Error::SchemaNotFound(path.to_string()));
    }
    let node = g
        .tree
        .get(p.base())
        .ok_or_else(|| Error::NotFound(p.base().to_string()))?;
    if matches!(node.kind.get(), Some(Kind::Mount)) || p.base() == "/net" {
        return Err(Error::NotFound(p.base().to_string()));
    }
    node.writable()?;
    g.check(&node, st.creds(), Rights::WRITE)?;
    // A write we could not pass on to one of our edges' links is the peer's to hear of.
    dispatch(
        &node,
        Sample {
            payload,
            meta,
            received_timestamp_ns: now_ns(),
            suffix: None,
            origin: Some(st.origin.clone()),
            credit: Credit::default(),
        },
    )
}

fn incoming_subscribe(
    g: &GraphInner,
    st: &Arc<LinkState>,
    source: &str,
    edge: EdgeId,
    policy: DeliveryPolicy,
    tag: Option<bytes::Bytes>,
    window: Option<Window>,
) -> Result<bool, Error> {
    let p = peer_path(source)?;
    let structural = match p.meta() {
        None => false,
        Some(MetaSegment::Children) => true,
        Some(_) => return Err(Error::SchemaNotFound(source.to_string())),
    };
    let node = g
        .tree
        .get(p.base())
        .ok_or_else(|| Error::NotFound(p.base().to_string()))?;
    g.check(&node, st.creds(), Rights::SUBSCRIBE)?;
    {
        let mut prod = st.produced.lock();
        if prod.contains_key(&edge) {
            return Err(Error::Malformed(format!("edge id {edge} already in use")));
        }
        prod.insert(edge, Arc::downgrade(&node));
    }
    let rec = EdgeRec::new(
        edge,
        Some(st.key),
        policy,
        tag,
        Target::Remote {
            link: st.clone(),
            edge,
        },
        None,
        policy.is_transient_local() && !structural,
        window.filter(|_| !structural),
    );
    let paced = rec.pacing.is_some();
    if structural {
        g.attach_struct_edge(&node, rec);
    } else {
        g.attach_data_edge(&node, rec);
    }
    // The link may have dropped while we attached: do not leave an edge bound to it.
    if st.is_down() {
        node.edges.remove_where(|e| e.link == Some(st.key));
        node.struct_edges.remove_where(|e| e.link == Some(st.key));
        return Err(Error::LinkDown(st.peer.name.clone()));
    }
    Ok(paced)
}

fn incoming_read(g: &GraphInner, st: &LinkState, req: ReqId, path: &str) -> Result<Frame, Error> {
    let p = peer_path(path)?;
    let node = g
        .tree
        .get(p.base())
        .ok_or_else(|| Error::NotFound(p.base().to_string()))?;
    g.check(&node, st.creds(), Rights::READ)?;
    let value = {
        let s = node.store.lock();
        match node.kind.get() {
            Some(Kind::Value) => s.value.as_ref().map(|v| (v.meta, v.payload.clone())),
            Some(Kind::Stream) => s.ring.newest().map(|v| (v.meta, v.payload.clone())),
            _ => None,
        }
    };
    let role = match node.role() {
        Role::Sink => Role::Stream,
        r => r,
    };
    let schema = node.schema.lock().clone();
    Ok(Frame::ReadReply {
        req,
        role,
        schema,
        value,
    })
}
