//! A service server: its request inbox, its registry record, and how it answers.

use std::collections::{HashMap, VecDeque};
use std::ffi::CString;
use std::sync::Arc;

use libtracer_core::{Meta, Payload, Readiness, Vertex};
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
    pub ctx: Arc<Shared>,
    pub service_name: CString,
    pub gid: Gid,
    /// The actual QoS of the request subscription and the response publisher (one profile, as
    /// a DDS service has).
    pub qos: Qos,
    pub ty: ServiceType,
    path: String,
    inbox: Inbox,
    /// Client gid -> the peer its requests came from (`None` = this graph).
    origins: Mutex<Origins>,
    _entry: Entry,
}

/// Where the answers to one client go: its response vertex in this graph (a handle, so an
/// answer does no path lookup), or the `/net/<peer>/...` path of one on a peer.
#[derive(Clone)]
enum Reply {
    Local(Vertex),
    Remote(String),
}

#[derive(Default)]
struct Origins {
    by_client: HashMap<Gid, Reply>,
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
fn reply_route(graph: &libtracer_core::Graph, client: Gid, origin: Option<&str>) -> Option<Reply> {
    let path = response_path(client);
    match origin {
        None => graph.vertex(&path).map(Reply::Local),
        Some(peer) => Some(Reply::Remote(names::on_peer(peer, &path))),
    }
}

impl Server {
    pub fn new(
        node: &Node,
        ty: ServiceType,
        name: &str,
        qos: &ffi::rmw_qos_profile_t,
    ) -> RmwResult<Server> {
        let ctx = node.ctx.clone();
        ctx.check_live()?;
        // The rules of a topic name apply to a service name (rmw_validate_full_topic_name).
        names::topic_path(name, qos.avoid_ros_namespace_conventions)?;
        let qos = super::resolve_qos(qos)?;
        let gid = ctx.gids.next();
        let path = request_path(name, gid)?;
        let inbox = Inbox::new(qos.subscription_ring());
        ctx.graph.create_sink(&path, inbox.sink())?;
        let made = (|| -> RmwResult<Entry> {
            ctx.graph.set_schema(
                &path,
                libtracer_core::Schema {
                    type_name: ty.request.name().to_owned(),
                    type_hash: String::new(),
                    definition: String::new(),
                    encoding: "cdr".to_owned(),
                },
            )?;
            let rec =
                node.endpoint_record(EntityKind::Service, gid, name, &ty.name, &ty.type_hash, qos);
            ctx.registry.announce(rec)
        })();
        let entry = match made {
            Ok(e) => e,
            Err(e) => {
                let _ = ctx.graph.remove(&path);
                return Err(e);
            }
        };
        Ok(Server {
            service_name: cstr::owned(name, "service_name")?,
            gid,
            qos,
            ty,
            path,
            inbox,
            origins: Mutex::new(Origins::default()),
            ctx,
            _entry: entry,
        })
    }

    /// Take the oldest request into `msg`; `None` when there is none.
    pub fn take_request(&self, msg: &mut MessageMut<'_>) -> RmwResult<Option<RequestHeader>> {
        let Some(s) = self.inbox.pop() else {
            return Ok(None);
        };
        let client = Gid(s.meta.writer);
        let sequence = i64::try_from(s.meta.sequence).map_err(|_| {
            RmwError::failed(format!(
                "request sequence number {} out of range",
                s.meta.sequence
            ))
        })?;
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

    /// Send `msg` as the response to the request `sequence` of `client`. `Timeout` when the
    /// client is not known (gone, or never sent a request here): rcl reports that as a failed
    /// response without raising.
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
        let sent = match &reply {
            Reply::Local(v) => v.write(Payload::from(bytes), meta),
            Reply::Remote(path) => self.ctx.graph.write(path, Payload::from(bytes), meta),
        };
        match sent {
            Ok(()) => Ok(()),
            // The client went (its vertex removed, or the link to its process down): the answer
            // has no taker, which rcl reports as a timeout, not as a failure of the server.
            Err(e) if !matches!(reply, Reply::Remote(_)) || is_gone(&e) => {
                self.origins.lock().forget(client);
                log!(
                    RMW_LOG_SEVERITY_DEBUG,
                    "response to a client that is gone: {e}"
                );
                Err(RmwError::Timeout)
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

    pub fn readiness(&self) -> Readiness {
        self.inbox.readiness()
    }

    pub fn is_ready(&self) -> bool {
        !self.inbox.is_empty()
    }

    pub fn set_on_new_request(&self, cb: Option<EventCallback>) {
        self.inbox.set_callback(cb);
    }
}

fn is_gone(e: &libtracer_core::Error) -> bool {
    matches!(
        e,
        libtracer_core::Error::LinkDown(_) | libtracer_core::Error::NotFound(_)
    )
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.ctx.graph.remove(&self.path);
    }
}
