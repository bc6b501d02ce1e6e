//! Services on raw CDR, as rmw_tracer lays them out (docs/rmw-mapping.md, "Services"): a server
//! owns a stream `/.ros/services<name>/_request/<server gid>` (its queue) and a registry record
//! of kind service; a client owns a stream `/.ros/clients/<client gid>/_response` and a record
//! of kind client, and writes each request to every server of the name and type it knows, here
//! or at `/net/<peer>/...`. A response goes to the client's response stream at the request's
//! origin. So a native server answers rclpy clients and a native client calls rclpy servers.

use std::collections::HashMap;
use std::sync::Arc;

use libtracer_core::{Meta, Payload, Rights, Sample, Schema, Vertex};
use parking_lot::Mutex;
use tracer_recording::security::{Action, ServiceTopics};
use tracer_recording::{EntityKind, Gid, Record};

use crate::context::Context;
use crate::env;
use crate::error::{CapiError, CapiResult};
use crate::publisher::{check_type_hash, check_type_name, now_ns};
use crate::qos::Qos;

/// Where the requests of the service `name` served by `server` land (rmw_tracer's
/// `service::request_path`).
pub fn request_path(name: &str, server: Gid) -> CapiResult<String> {
    Ok(format!(
        "/.ros/services{}/_request/{}",
        env::topic_path(name)?,
        server.hex()
    ))
}

/// Where the responses to the client `client` land (rmw_tracer's `service::response_path`).
pub fn response_path(client: Gid) -> String {
    format!("/.ros/clients/{}/_response", client.hex())
}

/// An inbox: a stream, its record, and what a wait and a take need.
struct Inbox {
    ctx: Arc<Context>,
    vertex: Vertex,
    path: String,
    rec: Record,
    spin: crate::wait::Spin,
}

/// What a server or a client is made of: the service's name (`/add_two_ints`), its type
/// (`pkg/srv/Type`), RIHS01 type hash (or "") and QoS.
pub struct ServiceSpec<'a> {
    pub name: &'a str,
    pub type_name: &'a str,
    pub type_hash: &'a str,
    pub qos: Qos,
}

impl Inbox {
    fn new(
        ctx: Arc<Context>,
        kind: EntityKind,
        spec: ServiceSpec<'_>,
        path: impl FnOnce(Gid) -> CapiResult<String>,
    ) -> CapiResult<Inbox> {
        let ServiceSpec {
            name,
            type_name,
            type_hash,
            qos,
        } = spec;
        check_type_name(type_name)?;
        check_type_hash(type_hash)?;
        env::topic_path(name)?;
        let topics = ServiceTopics::new(name, kind == EntityKind::Service);
        ctx.permit(&topics.checks())?;
        let gid = ctx.gids.next();
        let path = path(gid)?;
        let vertex = ctx.graph.create_stream(&path, qos.subscription_ring())?;
        if let Err(e) = ctx.guard(&path, Action::Publish, &topics.inbox, Rights::WRITE) {
            let _ = ctx.graph.remove(&path);
            return Err(e);
        }
        if kind == EntityKind::Service {
            ctx.graph.set_schema(
                &path,
                Schema {
                    type_name: type_name.to_owned(),
                    type_hash: type_hash.to_owned(),
                    definition: String::new(),
                    encoding: "ros2srv".to_owned(),
                    layout: String::new(),
                },
            )?;
        }
        let mut rec = ctx.endpoint_record(kind, gid, name, type_name);
        rec.type_hash = type_hash.to_owned();
        let mut numbers = qos.numbers();
        numbers.durability = 2; // VOLATILE: an inbox replays nothing
        rec.qos = Some(numbers);
        if let Err(e) = ctx.announce(&rec) {
            let _ = ctx.graph.remove(&path);
            return Err(e);
        }
        ctx.watch.local(&rec, true);
        Ok(Inbox {
            ctx,
            vertex,
            path,
            rec,
            spin: Default::default(),
        })
    }

    fn wait(&self, timeout: Option<std::time::Duration>) -> CapiResult<()> {
        crate::wait::until_ready(&self.vertex, &self.spin, timeout)
    }
}

impl Drop for Inbox {
    fn drop(&mut self) {
        self.ctx.watch.local(&self.rec, false);
        self.ctx.retract(&self.rec);
        let _ = self.ctx.graph.remove(&self.path);
    }
}

/// A service server.
pub struct Server {
    inbox: Inbox,
    /// Client gid -> the peer its requests came from (None: this graph).
    origins: Mutex<HashMap<Gid, Option<String>>>,
}

impl Server {
    pub fn new(ctx: Arc<Context>, spec: ServiceSpec<'_>) -> CapiResult<Server> {
        let name = spec.name;
        let inbox = Inbox::new(ctx, EntityKind::Service, spec, |g| request_path(name, g))?;
        Ok(Server {
            inbox,
            origins: Mutex::new(HashMap::new()),
        })
    }

    pub fn wait(&self, timeout: Option<std::time::Duration>) -> CapiResult<()> {
        self.inbox.wait(timeout)
    }

    /// The ring requests land in (`tracer_wait` watches its readiness).
    pub fn ring(&self) -> &Vertex {
        &self.inbox.vertex
    }

    /// The oldest request; its client is remembered for the response.
    pub fn take(&self) -> Option<Sample> {
        let s = self.inbox.vertex.pop()?;
        let mut o = self.origins.lock();
        if o.len() >= 4096 {
            o.clear();
        }
        o.insert(Gid(s.meta.writer), s.origin.as_deref().map(str::to_owned));
        Some(s)
    }

    /// Answer the request `sequence` of `client` (a client some taken request came from).
    pub fn send_response(&self, client: Gid, sequence: u64, cdr: &[u8]) -> CapiResult<()> {
        let origin = self
            .origins
            .lock()
            .get(&client)
            .cloned()
            .ok_or_else(|| CapiError::invalid("no request was taken from this client"))?;
        let path = match origin {
            None => response_path(client),
            Some(p) => format!("/net/{p}{}", response_path(client)),
        };
        let meta = Meta {
            source_timestamp_ns: now_ns(),
            sequence,
            writer: self.inbox.rec.gid.0,
        };
        match self
            .inbox
            .ctx
            .graph
            .write(&path, Payload::from(cdr.to_vec()), meta)
        {
            Ok(()) => Ok(()),
            // The client went: the answer has no taker, and that is no failure of the server
            // (as rmw_tracer and Fast DDS do).
            Err(libtracer_core::Error::NotFound(_) | libtracer_core::Error::LinkDown(_)) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
}

/// A service client.
pub struct Client {
    inbox: Inbox,
    name: String,
    type_name: String,
    /// The last request's sequence number.
    seq: Mutex<u64>,
}

impl Client {
    pub fn new(ctx: Arc<Context>, spec: ServiceSpec<'_>) -> CapiResult<Client> {
        let (name, type_name) = (spec.name.to_owned(), spec.type_name.to_owned());
        let inbox = Inbox::new(ctx, EntityKind::Client, spec, |g| Ok(response_path(g)))?;
        Ok(Client {
            inbox,
            name,
            type_name,
            seq: Mutex::new(0),
        })
    }

    /// The request paths of every server of the name and type known now.
    fn servers(&self) -> Vec<String> {
        self.inbox
            .ctx
            .watch
            .records()
            .into_iter()
            .filter(|(_, r)| {
                r.kind == EntityKind::Service
                    && r.topic == self.name
                    && r.type_name == self.type_name
            })
            .filter_map(|(peer, r)| {
                let own = request_path(&self.name, r.gid).ok()?;
                Some(match peer {
                    None => own,
                    Some(p) => format!("/net/{p}{own}"),
                })
            })
            .collect()
    }

    /// How many servers are known now.
    pub fn server_count(&self) -> usize {
        self.servers().len()
    }

    /// Write `cdr` to every server; the request's sequence number.
    pub fn send(&self, cdr: &[u8]) -> CapiResult<u64> {
        let servers = self.servers();
        let mut seq = self.seq.lock();
        let n = *seq + 1;
        let meta = Meta {
            source_timestamp_ns: now_ns(),
            sequence: n,
            writer: self.inbox.rec.gid.0,
        };
        let payload = Payload::from(cdr.to_vec());
        for path in &servers {
            // A server whose process just went loses the request, as a DDS request to a
            // vanished reader is lost; the call still succeeds.
            match self.inbox.ctx.graph.write(path, payload.clone(), meta) {
                Ok(())
                | Err(libtracer_core::Error::NotFound(_) | libtracer_core::Error::LinkDown(_)) => {}
                Err(e) => return Err(e.into()),
            }
        }
        *seq = n;
        Ok(n)
    }

    pub fn wait(&self, timeout: Option<std::time::Duration>) -> CapiResult<()> {
        self.inbox.wait(timeout)
    }

    /// The ring responses land in (`tracer_wait` watches its readiness).
    pub fn ring(&self) -> &Vertex {
        &self.inbox.vertex
    }

    pub fn take(&self) -> Option<Sample> {
        self.inbox.vertex.pop()
    }
}
