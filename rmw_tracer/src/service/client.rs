//! A service client: its response inbox, its registry record, and how it reaches the servers.

use std::ffi::CString;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use libtracer_core::{Meta, Payload, Readiness, Signal, Vertex};
use parking_lot::Mutex;

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
use crate::qos::Qos;
use crate::registry::{EntityKind, Entry};
use crate::topic::now_ns;

/// What `rmw_take_response` reports in `rmw_service_info_t`.
#[derive(Clone, Copy, Debug)]
pub struct ResponseHeader {
    pub sequence: i64,
    pub source_timestamp_ns: i64,
    pub received_timestamp_ns: i64,
}

/// How a request reaches one server: the vertex handle of a server in this graph (no path
/// lookup per request), or the `/net/<peer>/...` path of one on a peer.
enum Route {
    Local(Vertex),
    Remote(String),
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
    /// The routes to the servers, rebuilt from the registry only after it changed.
    routes: Mutex<Option<Arc<Vec<Route>>>>,
    /// Raised by the registry on every change: the routes are stale.
    changed: Signal,
    listener: u64,
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
        let qos = super::resolve_qos(qos)?;
        let gid = ctx.gids.next();
        let path = response_path(gid);
        let inbox = Inbox::new(qos.subscription_ring());
        ctx.graph.create_sink(&path, inbox.sink())?;
        let rec = node.endpoint_record(EntityKind::Client, gid, name, &ty.name, &ty.type_hash, qos);
        let entry = match ctx.registry.announce(rec) {
            Ok(e) => e,
            Err(e) => {
                let _ = ctx.graph.remove(&path);
                return Err(e);
            }
        };
        let changed = Signal::new();
        Ok(Client {
            service_name: cstr::owned(name, "service_name")?,
            gid,
            qos,
            ty,
            path,
            inbox,
            sequence: AtomicI64::new(0),
            routes: Mutex::new(None),
            listener: ctx.registry.add_listener(changed.clone()),
            changed,
            ctx,
            _entry: entry,
        })
    }

    pub fn name(&self) -> &str {
        self.service_name.to_str().unwrap_or_default()
    }

    /// The routes to every server of this service with this type, here and on peers: taken
    /// from the registry again only when it has changed since the last look.
    fn routes(&self) -> RmwResult<Arc<Vec<Route>>> {
        let mut cache = self.routes.lock();
        if let (Some(r), false) = (cache.as_ref(), self.changed.is_raised()) {
            return Ok(r.clone());
        }
        // Lowered before the look, so that a change during it raises it again.
        self.changed.clear();
        let name = self.name();
        let mut routes = Vec::new();
        for (peer, r) in self.ctx.registry.snapshot() {
            if r.kind != EntityKind::Service || r.topic != name || r.type_name != self.ty.name {
                continue;
            }
            let path = request_path(name, r.gid)?;
            match peer {
                // A local server whose vertex is already gone is on its way out of the registry.
                None => routes.extend(self.ctx.graph.vertex(&path).map(Route::Local)),
                Some(peer) => routes.push(Route::Remote(names::on_peer(&peer, &path))),
            }
        }
        let routes = Arc::new(routes);
        *cache = Some(routes.clone());
        Ok(routes)
    }

    /// `rmw_service_server_is_available`.
    pub fn server_is_available(&self) -> RmwResult<bool> {
        Ok(!self.routes()?.is_empty())
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
        for route in self.routes()?.iter() {
            let r = match route {
                Route::Local(v) => v.write(payload.clone(), meta),
                Route::Remote(path) => self.ctx.graph.write(path, payload.clone(), meta),
            };
            // A server that just went is still routed to until the registry says so: its
            // request is lost, as a DDS request to a vanished reader is, and the client waits
            // (or times out) for the others.
            if let Err(e) = r {
                log!(
                    RMW_LOG_SEVERITY_DEBUG,
                    "a request of {} was not delivered: {e}",
                    self.name()
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
        self.ctx.registry.remove_listener(self.listener);
        let _ = self.ctx.graph.remove(&self.path);
    }
}
