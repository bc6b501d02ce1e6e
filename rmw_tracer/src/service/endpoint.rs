//! What a server and a client share: the receiving inbox (a stream vertex whose ring is the
//! queue, bounded like a subscription's, and whose arrival hook calls the on-new-request or
//! on-new-response callback), the registry record, the resolved QoS, and the routes their
//! writes take to the other end.

use std::ffi::CString;
use std::sync::Arc;

use libtracer_core::{Graph, Meta, Payload, Readiness, Sample, Schema, Vertex};

use super::request_path;
use crate::boundary::event_callback::{CallbackSlot, EventCallback};
use crate::boundary::service_types::ServiceType;
use crate::boundary::{cstr, RmwError, RmwResult};
use crate::context::Shared;
use crate::gid::Gid;
use crate::names;
use crate::node::Node;
use crate::qos::Qos;
use crate::registry::{EntityKind, Entry};

/// How a write reaches one inbox: the vertex handle of one in this graph (no path lookup per
/// write), or the `/net/<peer>/...` path of one on a peer.
#[derive(Clone)]
pub enum Route {
    Local(Vertex),
    Remote(String),
}

impl Route {
    /// The route to the vertex `path` of the graph `peer` (`None` = this graph); `None` for a
    /// local vertex that is gone.
    pub fn to(graph: &Graph, peer: Option<&str>, path: &str) -> Option<Route> {
        match peer {
            None => graph.vertex(path).map(Route::Local),
            Some(peer) => Some(Route::Remote(names::on_peer(peer, path))),
        }
    }

    pub fn write(
        &self,
        graph: &Graph,
        payload: Payload,
        meta: Meta,
    ) -> Result<(), libtracer_core::Error> {
        match self {
            Route::Local(v) => v.write(payload, meta),
            Route::Remote(path) => graph.write(path, payload, meta),
        }
    }
}

/// The common part of a [`super::server::Server`] and a [`super::client::Client`].
pub struct Endpoint {
    pub ctx: Arc<Shared>,
    pub service_name: CString,
    pub gid: Gid,
    /// The actual QoS of both directions (one profile, as a DDS service or client has).
    pub qos: Qos,
    pub ty: ServiceType,
    /// The inbox's stream vertex.
    path: String,
    inbox: Vertex,
    /// The on-new-request (server) or on-new-response (client) callback, called by the
    /// inbox's arrival hook once per request or response.
    on_arrival: Arc<CallbackSlot>,
    _entry: Entry,
}

impl Endpoint {
    /// Validate `name`, resolve the QoS, make the inbox's stream at `path_of(gid)` (with
    /// `schema`, if any) and announce the endpoint as `kind`. On failure nothing is left behind.
    pub fn new(
        node: &Node,
        kind: EntityKind,
        ty: ServiceType,
        name: &str,
        qos: &ffi::rmw_qos_profile_t,
        path_of: impl FnOnce(Gid) -> RmwResult<String>,
        schema: Option<Schema>,
    ) -> RmwResult<Endpoint> {
        // Made after rmw_shutdown too, as with Fast DDS (only nodes are refused then).
        let ctx = node.ctx.clone();
        // The rules of a topic name apply to a service name (rmw_validate_full_topic_name).
        names::topic_path(name, qos.avoid_ros_namespace_conventions)?;
        // Check that the name maps to request paths (a server's own, a client's servers')
        // before anything is made.
        request_path(name, Gid::default())?;
        let service_name = cstr::owned(name, "service_name")?;
        let qos = super::resolve_qos(qos)?;
        use crate::security::{Action, ServiceTopics};
        let topics = ServiceTopics::new(name, kind == EntityKind::Service);
        ctx.permit(&topics.checks())?;
        let gid = ctx.gids.next();
        let path = path_of(gid)?;
        let inbox = ctx.graph.create_stream(&path, super::inbox_ring())?;
        let on_arrival = Arc::new(CallbackSlot::default());
        let made = (|| -> RmwResult<Entry> {
            let cb = on_arrival.clone();
            ctx.graph.set_on_land(
                &path,
                Some(Arc::new(move |_: libtracer_core::Landed| {
                    cb.call(1);
                })),
            )?;
            ctx.guard(
                &path,
                (
                    Action::Publish,
                    &topics.inbox,
                    libtracer_core::Rights::WRITE,
                ),
            )?;
            if let Some(schema) = schema {
                ctx.graph.set_schema(&path, schema)?;
            }
            let rec = node.endpoint_record(kind, gid, name, &ty.name, &ty.type_hash, qos);
            ctx.registry.announce(rec)
        })();
        let entry = match made {
            Ok(e) => e,
            Err(e) => {
                let _ = ctx.graph.remove(&path);
                return Err(e);
            }
        };
        Ok(Endpoint {
            ctx,
            service_name,
            gid,
            qos,
            ty,
            path,
            inbox,
            on_arrival,
            _entry: entry,
        })
    }

    pub fn name(&self) -> &str {
        self.service_name.to_str().unwrap_or_default()
    }

    /// The oldest sample in the inbox and its sequence number (`what` names it in the error
    /// when the number does not fit rmw's `int64_t`).
    pub fn pop(&self, what: &str) -> RmwResult<Option<(Sample, i64)>> {
        let Some(s) = self.inbox.pop() else {
            return Ok(None);
        };
        let sequence = i64::try_from(s.meta.sequence).map_err(|_| {
            RmwError::failed(format!(
                "{what} sequence number {} out of range",
                s.meta.sequence
            ))
        })?;
        Ok(Some((s, sequence)))
    }

    /// Ready while the inbox holds a sample.
    pub fn readiness(&self) -> Readiness {
        self.inbox.readiness()
    }

    pub fn is_ready(&self) -> bool {
        !self.inbox.is_empty()
    }

    /// The on-new-request (server) or on-new-response (client) callback: called at once with
    /// the number waiting, then once per arrival; once this returns, a callback it replaced is
    /// not running (`CallbackSlot`).
    pub fn set_callback(&self, cb: Option<EventCallback>) {
        self.on_arrival.set_and_tell(cb, || self.inbox.len());
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        self.on_arrival.set(None);
        let _ = self.ctx.graph.remove(&self.path);
    }
}
