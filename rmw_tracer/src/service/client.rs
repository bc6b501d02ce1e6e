//! A service client: its response inbox, its registry record, and how it reaches the servers.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use libtracer_core::{Meta, Payload, Signal};
use parking_lot::Mutex;

use super::endpoint::{Endpoint, Route};
use super::{request_path, response_path};
use crate::boundary::message::{MessageMut, MessageRef};
use crate::boundary::service_types::ServiceType;
use crate::boundary::RmwResult;
use crate::log::log;
use crate::node::Node;
use crate::registry::EntityKind;
use crate::topic::now_ns;

/// What `rmw_take_response` reports in `rmw_service_info_t`.
#[derive(Clone, Copy, Debug)]
pub struct ResponseHeader {
    pub sequence: i64,
    pub source_timestamp_ns: i64,
    pub received_timestamp_ns: i64,
}

pub struct Client {
    /// Its response inbox, record and QoS (the QoS of the request publisher and the response
    /// subscription).
    endpoint: Endpoint,
    /// The last sequence number handed out; the first request is 1.
    sequence: AtomicI64,
    /// The routes to the servers, rebuilt from the registry only after it changed.
    routes: Mutex<Option<Arc<Vec<Route>>>>,
    /// Raised by the registry on every change: the routes are stale.
    changed: Signal,
    listener: u64,
}

/// What the entry points and the wait set read of a client is its endpoint's.
impl std::ops::Deref for Client {
    type Target = Endpoint;
    fn deref(&self) -> &Endpoint {
        &self.endpoint
    }
}

impl Client {
    pub fn new(
        node: &Node,
        ty: ServiceType,
        name: &str,
        qos: &ffi::rmw_qos_profile_t,
    ) -> RmwResult<Client> {
        let endpoint = Endpoint::new(
            node,
            EntityKind::Client,
            ty,
            name,
            qos,
            |gid| Ok(response_path(gid)),
            None,
        )?;
        let changed = Signal::new();
        Ok(Client {
            listener: endpoint.ctx.registry.add_listener(changed.clone()),
            endpoint,
            sequence: AtomicI64::new(0),
            routes: Mutex::new(None),
            changed,
        })
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
            // A local server whose vertex is already gone is on its way out of the registry.
            routes.extend(Route::to(&self.ctx.graph, peer.as_deref(), &path));
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
            let r = route.write(&self.ctx.graph, payload.clone(), meta);
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
        let Some((s, sequence)) = self.pop("response")? else {
            return Ok(None);
        };
        msg.deserialize(&self.ty.response, s.payload.as_ref())?;
        Ok(Some(ResponseHeader {
            sequence,
            source_timestamp_ns: s.meta.source_timestamp_ns,
            received_timestamp_ns: s.received_timestamp_ns,
        }))
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        self.ctx.registry.remove_listener(self.listener);
    }
}
