//! A native publisher: a stream vertex at the topic's path with the type's `:schema`, and a
//! registry record (kind publisher, this context's node, topic, type, RIHS01 hash, QoS) that
//! every rmw_tracer process answers by wiring its matching subscriptions to
//! `/net/<us>/<topic>`: what an rmw_tracer publisher is (docs/rmw-mapping.md).

use std::sync::{Arc, OnceLock};

use libtracer_core::buffer::BufMut;
use libtracer_core::{Meta, Payload, Rights, Schema, Vertex};
use parking_lot::Mutex;
use tracer_recording::delivery::PUBLISH_MAX_BLOCKING;
use tracer_recording::record::{self, PubTap};
use tracer_recording::security::{dds_topic, Action};
use tracer_recording::{EntityKind, Gid, Record};
use tracer_shm::SlotMut;

use crate::context::Context;
use crate::env;
use crate::error::{CapiError, CapiResult};
use crate::qos::Qos;

pub struct Publisher {
    pub ctx: Arc<Context>,
    pub topic: String,
    pub path: String,
    pub type_name: String,
    pub gid: Gid,
    vertex: Vertex,
    rec: Record,
    /// The last sequence number written; held while a sample is written so that samples enter
    /// the topic in sequence order.
    seq: Mutex<u64>,
    qos: Qos,
    /// `RMW_TRACER_RECORD`: made at the first publish (`None` inside: not recorded).
    tap: OnceLock<Option<PubTap>>,
}

/// Memory lent for one message: a shared-memory slot (published as a reference, no copy),
/// or a block of the core's buffer pool where shared memory is not available.
pub enum Loan {
    Shm(SlotMut),
    Heap(BufMut),
}

impl Loan {
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        match self {
            Loan::Shm(s) => s.as_mut_slice().as_mut_ptr(),
            Loan::Heap(b) => b.as_mut_slice().as_mut_ptr(),
        }
    }

    pub fn capacity(&mut self) -> usize {
        match self {
            Loan::Shm(s) => s.len(),
            Loan::Heap(b) => b.as_mut_slice().len(),
        }
    }
}

/// `pkg/msg/Type` (or `pkg/srv/..`, `pkg/action/..`): what rmw_tracer's records carry.
pub fn check_type_name(t: &str) -> CapiResult<()> {
    let parts: Vec<&str> = t.split('/').collect();
    let ok = parts.len() == 3
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'));
    if ok {
        Ok(())
    } else {
        Err(CapiError::invalid(format!(
            "type name `{t}` is not `package/msg/Type`"
        )))
    }
}

/// `RIHS01_` and 64 hex digits, or empty (no hash known).
pub fn check_type_hash(h: &str) -> CapiResult<()> {
    let ok = h.is_empty()
        || h.strip_prefix("RIHS01_")
            .is_some_and(|x| x.len() == 64 && x.bytes().all(|b| b.is_ascii_hexdigit()));
    if ok {
        Ok(())
    } else {
        Err(CapiError::invalid(format!(
            "type hash `{h}` is not `RIHS01_` and 64 hex digits"
        )))
    }
}

impl Publisher {
    pub fn new(
        ctx: Arc<Context>,
        topic: &str,
        type_name: &str,
        type_hash: &str,
        qos: Qos,
    ) -> CapiResult<Publisher> {
        let path = env::topic_path(topic)?;
        check_type_name(type_name)?;
        check_type_hash(type_hash)?;
        let dds = dds_topic("rt", topic, "");
        ctx.permit(&[(Action::Publish, &dds)])?;
        let vertex = ctx.graph.create_stream(&path, qos.topic_ring())?;
        // Peers subscribe to the topic vertex: those whose permissions let them subscribe.
        ctx.guard(&path, Action::Subscribe, &dds, Rights::SUBSCRIBE)?;
        // A transient-local publisher's history; with the network on, a reliable one's resend
        // window (docs/network.md section 6).
        ctx.retained
            .for_publisher(&ctx.graph, &path, &qos.shape(), ctx.networked)?;
        if ctx.graph.schema(&path).is_none() {
            ctx.graph.set_schema(
                &path,
                Schema {
                    type_name: type_name.to_owned(),
                    type_hash: type_hash.to_owned(),
                    definition: String::new(),
                    encoding: "cdr".to_owned(),
                    layout: String::new(),
                },
            )?;
        }
        let gid = ctx.gids.next();
        let mut rec = ctx.endpoint_record(EntityKind::Publisher, gid, topic, type_name);
        rec.type_hash = type_hash.to_owned();
        rec.qos = Some(qos.numbers());
        ctx.announce(&rec)?;
        ctx.watch.local(&rec, true);
        Ok(Publisher {
            topic: topic.to_owned(),
            path,
            type_name: type_name.to_owned(),
            gid,
            vertex,
            rec,
            seq: Mutex::new(0),
            qos,
            tap: OnceLock::new(),
            ctx,
        })
    }

    /// Copy `cdr` into a block of the core's buffer pool and write it.
    pub fn publish(&self, cdr: &[u8]) -> CapiResult<()> {
        check_cdr(cdr)?;
        let mut buf = libtracer_core::buffer::global().take(cdr.len());
        buf.as_mut_slice()[..cdr.len()].copy_from_slice(cdr);
        self.write(buf.freeze(cdr.len()))
    }

    /// Memory for one message of `len` bytes.
    pub fn borrow(&self, len: usize) -> CapiResult<Loan> {
        if len == 0 {
            return Err(CapiError::invalid("a loan of 0 bytes"));
        }
        if let Some(slot) = self
            .ctx
            .pool()
            .and_then(|p| libtracer_core::link::alloc_shared(p, len))
        {
            return Ok(Loan::Shm(slot));
        }
        Ok(Loan::Heap(libtracer_core::buffer::global().take(len)))
    }

    /// Write the first `len` bytes of a loan, as they are (a slot goes as a reference).
    pub fn publish_loan(&self, loan: Loan, len: usize) -> CapiResult<()> {
        let payload = match loan {
            Loan::Shm(mut s) => {
                if len > s.len() {
                    return Err(CapiError::invalid(format!(
                        "length {len} is past the loan's {} bytes",
                        s.len()
                    )));
                }
                s.truncate(len);
                check_cdr(s.as_mut_slice())?;
                Payload::from_slot(s.freeze())
            }
            Loan::Heap(mut b) => {
                let cap = b.as_mut_slice().len();
                if len > cap {
                    return Err(CapiError::invalid(format!(
                        "length {len} is past the loan's {cap} bytes"
                    )));
                }
                check_cdr(&b.as_mut_slice()[..len])?;
                b.freeze(len)
            }
        };
        self.write(payload)
    }

    /// The type's `ros2msg` definition, in the topic's `:schema`: what recorders and tools
    /// decode the messages with. Before the first publish, to be in this process's recording.
    pub fn set_definition(&self, definition: &str) -> CapiResult<()> {
        let mut schema = self
            .ctx
            .graph
            .schema(&self.path)
            .ok_or_else(|| CapiError::internal(format!("{}: no :schema", self.topic)))?;
        schema.definition = definition.to_owned();
        self.ctx.graph.set_schema(&self.path, schema)?;
        Ok(())
    }

    /// The recording's tap (`RMW_TRACER_RECORD`), made at the first publish with the
    /// definition known then.
    fn tap(&self) -> Option<&PubTap> {
        self.tap
            .get_or_init(|| {
                let definition = self
                    .ctx
                    .graph
                    .schema(&self.path)
                    .map(|s| s.definition)
                    .unwrap_or_default();
                if definition.is_empty() && record::recording() {
                    crate::env::log()(&format!(
                        "recording {} without the definition of {} (tracer_publisher_set_definition): its fields cannot be decoded from the file",
                        self.topic, self.type_name
                    ));
                }
                let offered = self.qos.numbers().offered();
                record::publisher_tap(
                    &self.topic,
                    &self.path,
                    &self.type_name,
                    &definition,
                    offered,
                    self.gid.0,
                )
            })
            .as_ref()
    }

    fn write(&self, payload: Payload) -> CapiResult<()> {
        let tap = self.tap();
        let recorded = tap.map(|_| payload.clone());
        let mut seq = self.seq.lock();
        let meta = Meta {
            source_timestamp_ns: now_ns(),
            sequence: *seq + 1,
            writer: self.gid.0,
        };
        // A RELIABLE + KEEP_ALL subscription with no room holds the write back, as long as
        // rmw_publish waits; then TRACER_ERR_TIMEOUT (the message went nowhere).
        match self
            .vertex
            .write_within(payload, meta, PUBLISH_MAX_BLOCKING)
        {
            Err(libtracer_core::Error::Timeout) => {
                return Err(CapiError::PublishTimedOut(format!(
                    "publish timed out after {} ms: a RELIABLE + KEEP_ALL subscription has no \
                     room for it (it takes more slowly than this publisher writes)",
                    PUBLISH_MAX_BLOCKING.as_millis()
                )))
            }
            r => r?,
        }
        *seq += 1;
        if let (Some(t), Some(p)) = (tap, recorded) {
            t.published(&p, &meta);
        }
        Ok(())
    }

    /// Wait until `count` subscriptions take from the topic; Err(Timeout) at `deadline`.
    pub fn wait_for_subscriptions(
        &self,
        count: usize,
        deadline: Option<std::time::Instant>,
    ) -> CapiResult<()> {
        loop {
            let version = self.vertex.edges_version();
            if self.vertex.subscriber_count() >= count {
                return Ok(());
            }
            if !self.vertex.await_edges(version, deadline) {
                return Err(CapiError::Timeout);
            }
        }
    }

    /// Subscriptions that take from this topic now (edges on its vertex).
    pub fn subscription_count(&self) -> usize {
        self.vertex.subscriber_count()
    }
}

impl Drop for Publisher {
    fn drop(&mut self) {
        self.ctx.watch.local(&self.rec, false);
        self.ctx.retract(&self.rec);
    }
}

/// Serialized ROS messages start with a 4-byte encapsulation header (`00 01 00 00`: CDR
/// little endian; `00 00`: big endian).
fn check_cdr(b: &[u8]) -> CapiResult<()> {
    if b.len() >= 4 && matches!(b[..2], [0, 0] | [0, 1]) {
        Ok(())
    } else {
        Err(CapiError::invalid(
            "not a serialized message (no 4-byte CDR encapsulation header 00 01 00 00)",
        ))
    }
}

/// Nanoseconds since the Unix epoch.
pub fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}
