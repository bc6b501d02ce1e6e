//! A service server: its request inbox, its registry record, and how it answers.

use std::collections::{HashMap, VecDeque};

use libtracer_core::{Meta, Payload};
use parking_lot::Mutex;

use super::endpoint::{Endpoint, Route};
use super::{request_path, response_path};
use crate::boundary::message::{MessageMut, MessageRef};
use crate::boundary::service_types::ServiceType;
use crate::boundary::{RmwError, RmwResult};
use crate::gid::Gid;
use crate::log::log;
use crate::node::Node;
use crate::registry::EntityKind;
use crate::topic::now_ns;

/// How many clients' origins a server remembers between a request and its response. Past this
/// the oldest is forgotten and its answer falls back to the registry's view of the client.
const MAX_ORIGINS: usize = 4096;

/// What `rmw_take_request` reports in `rmw_service_info_t`.
#[derive(Clone, Copy, Debug)]
pub struct RequestHeader {
    pub client: Gid,
    pub sequence: i64,
    pub source_timestamp_ns: i64,
    pub received_timestamp_ns: i64,
}

pub struct Server {
    /// Its request inbox, record and QoS (the QoS of the request subscription and the response
    /// publisher).
    endpoint: Endpoint,
    /// Client gid -> where its answers go.
    origins: Mutex<Origins>,
}

/// What the entry points and the wait set read of a server is its endpoint's.
impl std::ops::Deref for Server {
    type Target = Endpoint;
    fn deref(&self) -> &Endpoint {
        &self.endpoint
    }
}

#[derive(Default)]
struct Origins {
    by_client: HashMap<Gid, Route>,
    order: VecDeque<Gid>,
}

impl Origins {
    /// Learn where `client`'s answers go, the first time it is seen (`origin` = the sample's).
    fn remember(&mut self, graph: &libtracer_core::Graph, client: Gid, origin: Option<&str>) {
        if self.by_client.contains_key(&client) {
            return;
        }
        let Some(reply) = reply_route(graph, client, origin) else {
            return;
        };
        self.by_client.insert(client, reply);
        self.order.push_back(client);
        while self.order.len() > MAX_ORIGINS {
            if let Some(old) = self.order.pop_front() {
                self.by_client.remove(&old);
            }
        }
    }

    fn forget(&mut self, client: Gid) {
        if self.by_client.remove(&client).is_some() {
            self.order.retain(|g| *g != client);
        }
    }
}

/// `None` for a local client whose response vertex is gone.
fn reply_route(graph: &libtracer_core::Graph, client: Gid, origin: Option<&str>) -> Option<Route> {
    Route::to(graph, origin, &response_path(client))
}

impl Server {
    pub fn new(
        node: &Node,
        ty: ServiceType,
        name: &str,
        qos: &ffi::rmw_qos_profile_t,
    ) -> RmwResult<Server> {
        // The service's type, hash and `ros2srv` definition: enough for a tool without the
        // message packages (`tracer serve`) to encode requests and decode responses.
        let schema = libtracer_core::Schema {
            type_name: ty.name.clone(),
            type_hash: ty.type_hash.clone(),
            definition: ty.definition.clone(),
            encoding: "ros2srv".to_owned(),
            layout: String::new(),
        };
        let endpoint = Endpoint::new(
            node,
            EntityKind::Service,
            ty,
            name,
            qos,
            |gid| request_path(name, gid),
            Some(schema),
        )?;
        Ok(Server {
            endpoint,
            origins: Mutex::new(Origins::default()),
        })
    }

    /// Take the oldest request into `msg`; `None` when there is none.
    pub fn take_request(&self, msg: &mut MessageMut<'_>) -> RmwResult<Option<RequestHeader>> {
        let Some((s, sequence)) = self.pop("request")? else {
            return Ok(None);
        };
        let client = Gid(s.meta.writer);
        self.origins
            .lock()
            .remember(&self.ctx.graph, client, s.origin.as_deref());
        msg.deserialize(&self.ty.request, s.payload.as_ref())?;
        Ok(Some(RequestHeader {
            client,
            sequence,
            source_timestamp_ns: s.meta.source_timestamp_ns,
            received_timestamp_ns: s.received_timestamp_ns,
        }))
    }

    /// Send `msg` as the response to the request `sequence` of `client`. A client that asked and
    /// has gone since gets nothing and the call succeeds, as with Fast DDS (a DDS write with no
    /// matched reader; rclpy would warn "failed to send response (timeout)" on every answer to
    /// a `ros2 service call` that exited). `Timeout` when the client was never known here (no
    /// request from it, no registry record): rmw's "response reader not ready".
    pub fn send_response(&self, client: Gid, sequence: i64, msg: &MessageRef<'_>) -> RmwResult<()> {
        let sequence = u64::try_from(sequence).map_err(|_| {
            RmwError::invalid(format!("request sequence number {sequence} is negative"))
        })?;
        let known = self.origins.lock().by_client.get(&client).cloned();
        let reply = match known {
            Some(r) => r,
            None => {
                let origin = self.origin_from_registry(client).ok_or(RmwError::Timeout)?;
                reply_route(&self.ctx.graph, client, origin.as_deref()).ok_or(RmwError::Timeout)?
            }
        };
        let mut bytes = Vec::new();
        msg.serialize(&self.ty.response, &mut bytes)?;
        let meta = Meta {
            source_timestamp_ns: now_ns(),
            sequence,
            writer: self.gid.0,
        };
        let sent = reply.write(&self.ctx.graph, Payload::from(bytes), meta);
        match sent {
            Ok(()) => Ok(()),
            // The client went (its vertex removed, or the link to its process down): the answer
            // has no taker, and that is no failure of the server.
            Err(e) if !matches!(reply, Route::Remote(_)) || is_gone(&e) => {
                self.origins.lock().forget(client);
                log!(
                    RMW_LOG_SEVERITY_DEBUG,
                    "response to a client that is gone: {e}"
                );
                Ok(())
            }
            Err(e) => Err(e.into()),
        }
    }

    /// `Some(None)` for a local client, `Some(Some(peer))` for one on a peer, `None` if unknown.
    fn origin_from_registry(&self, client: Gid) -> Option<Option<String>> {
        self.ctx
            .registry
            .snapshot()
            .into_iter()
            .find(|(_, r)| r.kind == EntityKind::Client && r.gid == client)
            .map(|(peer, _)| peer)
    }
}

fn is_gone(e: &libtracer_core::Error) -> bool {
    matches!(
        e,
        libtracer_core::Error::LinkDown(_) | libtracer_core::Error::NotFound(_)
    )
}
