//! A service client: its response inbox, its registry record, and how it reaches the servers.

use std::ffi::CString;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use libtracer_core::{Meta, Payload, Readiness};

use super::inbox::Inbox;
use super::{request_path, response_path};
use crate::boundary::event_callback::EventCallback;
use crate::boundary::message::{MessageMut, MessageRef};
use crate::boundary::service_types::ServiceType;
use crate::boundary::{cstr, RmwError, RmwResult};
use crate::context::Shared;
use crate::gid::Gid;
use crate::log::log;
use crate::names;
use crate::node::Node;
use crate::qos::{End, Qos};
use crate::registry::{EntityKind, Entry, Record};
use crate::topic::now_ns;

/// What `rmw_take_response` reports in `rmw_service_info_t`.
#[derive(Clone, Copy, Debug)]
pub struct ResponseHeader {
    pub sequence: i64,
    pub source_timestamp_ns: i64,
    pub received_timestamp_ns: i64,
}

/// A server of the client's service as the registry knows it.
struct Target {
    peer: Option<String>,
    gid: Gid,
}

pub struct Client {
    pub ctx: Arc<Shared>,
    pub service_name: CString,
    pub gid: Gid,
    /// The actual QoS of the request publisher and the response subscription.
    pub qos: Qos,
    pub ty: ServiceType,
    path: String,
    inbox: Inbox,
    /// The last sequence number handed out; the first request is 1.
    sequence: AtomicI64,
    _entry: Entry,
}

impl Client {
    pub fn new(
        node: &Node,
        ty: ServiceType,
        name: &str,
        qos: &ffi::rmw_qos_profile_t,
    ) -> RmwResult<Client> {
        let ctx = node.ctx.clone();
        ctx.check_live()?;
        names::topic_path(name, qos.avoid_ros_namespace_conventions)?;
        // Check that the name maps before anything is made.
        request_path(name, Gid::default())?;
        let qos = Qos::resolve(qos, End::Publisher)?;
        let gid = ctx.gids.next();
        let path = response_path(gid);
        let inbox = Inbox::new(qos.subscription_ring());
        ctx.graph.create_sink(&path, inbox.sink())?;
        let mut rec = Record::new(EntityKind::Client, gid);
        rec.node_gid = Some(node.gid);
        rec.node_name = node.name().to_owned();
        rec.node_namespace = node.namespace().to_owned();
        rec.topic = name.to_owned();
        rec.type_name = ty.name.clone();
        rec.type_hash = ty.type_hash.clone();
        rec.qos = Some(qos);
        let entry = match ctx.registry.announce(rec) {
            Ok(e) => e,
            Err(e) => {
                let _ = ctx.graph.remove(&path);
                return Err(e);
            }
        };
        Ok(Client {
            service_name: cstr::owned(name, "service_name")?,
            gid,
            qos,
            ty,
            path,
            inbox,
            sequence: AtomicI64::new(0),
            ctx,
            _entry: entry,
        })
    }

    pub fn name(&self) -> &str {
        self.service_name.to_str().unwrap_or_default()
    }

    /// Every server of this service with this type, here and on peers.
    fn servers(&self) -> Vec<Target> {
        let name = self.name();
        self.ctx
            .registry
            .snapshot()
            .into_iter()
            .filter(|(_, r)| {
                r.kind == EntityKind::Service && r.topic == name && r.type_name == self.ty.name
            })
            .map(|(peer, r)| Target { peer, gid: r.gid })
            .collect()
    }

    /// `rmw_service_server_is_available`.
    pub fn server_is_available(&self) -> bool {
        !self.servers().is_empty()
    }

    /// Serialize `msg` and write it to every server; returns the request's sequence number.
    /// With no server the request goes nowhere, as a DDS request with no matched reader does.
    pub fn send_request(&self, msg: &MessageRef<'_>) -> RmwResult<i64> {
        let mut bytes = Vec::new();
        msg.serialize(&self.ty.request, &mut bytes)?;
        let sequence = self.sequence.fetch_add(1, Ordering::Relaxed) + 1;
        let meta = Meta {
            source_timestamp_ns: now_ns(),
            sequence: sequence as u64,
            writer: self.gid.0,
        };
        let payload = Payload::from(bytes);
        let name = self.name();
        for t in self.servers() {
            let path = request_path(name, t.gid)?;
            let r = match &t.peer {
                None => match self.ctx.graph.vertex(&path) {
                    Some(v) => v.write(payload.clone(), meta),
                    // The server went between the registry snapshot and now.
                    None => continue,
                },
                Some(peer) => {
                    self.ctx
                        .graph
                        .write(&names::on_peer(peer, &path), payload.clone(), meta)
                }
            };
            // A server whose process just went is still in the registry for up to a second:
            // its request is lost, as a DDS request to a vanished reader is, and the client
            // waits (or times out) for the others.
            if let Err(e) = r {
                log!(
                    RMW_LOG_SEVERITY_DEBUG,
                    "request to {path} on {:?} failed: {e}",
                    t.peer
                );
            }
        }
        Ok(sequence)
    }

    /// Take the oldest response into `msg`; `None` when there is none.
    pub fn take_response(&self, msg: &mut MessageMut<'_>) -> RmwResult<Option<ResponseHeader>> {
        let Some(s) = self.inbox.pop() else {
            return Ok(None);
        };
        let sequence = i64::try_from(s.meta.sequence).map_err(|_| {
            RmwError::failed(format!(
                "response sequence number {} out of range",
                s.meta.sequence
            ))
        })?;
        msg.deserialize(&self.ty.response, s.payload.as_ref())?;
        Ok(Some(ResponseHeader {
            sequence,
            source_timestamp_ns: s.meta.source_timestamp_ns,
            received_timestamp_ns: s.received_timestamp_ns,
        }))
    }

    pub fn readiness(&self) -> Readiness {
        self.inbox.readiness()
    }

    pub fn is_ready(&self) -> bool {
        !self.inbox.is_empty()
    }

    pub fn set_on_new_response(&self, cb: Option<EventCallback>) {
        self.inbox.set_callback(cb);
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.ctx.graph.remove(&self.path);
    }
}
