//! Publishers: a topic stream vertex, written with CDR payloads.

use std::ffi::CString;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use libtracer_core::{Meta, Payload, Vertex};
use parking_lot::Mutex;

use crate::boundary::message::MessageRef;
use crate::boundary::{cstr, RmwError, RmwResult};
use crate::cdr::Destination;
use crate::context::Shared;
use crate::gid::Gid;
use crate::log::log;
use crate::names;
use crate::node::Node;
use crate::qos::{End, Qos};
use crate::registry::{EntityKind, Entry};
use crate::topic::{now_ns, TopicType};

pub use tracer_recording::delivery::PUBLISH_MAX_BLOCKING;

pub struct Publisher {
    /// Keeps the context (and its registry, which the entry retracts from) alive.
    _ctx: Arc<Shared>,
    pub topic: CString,
    pub gid: Gid,
    pub qos: Qos,
    vertex: Vertex,
    ty: TopicType,
    /// The last sequence number written. Held while a sample is written, so that samples
    /// enter the topic in sequence order even when threads publish at once: a subscription
    /// takes a jump for samples that never came and a step back for a repeat
    /// (`tracer_recording::resume`).
    seq: Mutex<u64>,
    /// The size of the last message: the next buffer starts this large.
    /// QoS event state (`crate::event`).
    pub events: Arc<crate::event::Events>,
    /// Our registry record (rewritten by `assert_liveliness`).
    rec: crate::registry::Record,
    /// When `assert_liveliness` last rewrote the record (ns since the epoch; 0 = never).
    last_reannounce: AtomicI64,
    _entry: Entry,
    /// `RMW_TRACER_RECORD`: set when this process records the topic.
    record: Option<crate::record::PubTap>,
    /// Outstanding loans; None when the type is not plain (docs/loans.md).
    loans: Option<crate::loan::PublisherLoans>,
}

impl Publisher {
    pub fn new(
        node: &Node,
        ty: TopicType,
        topic: &str,
        qos: &ffi::rmw_qos_profile_t,
    ) -> RmwResult<Publisher> {
        // Made after rmw_shutdown too, as with Fast DDS (only nodes are refused then).
        let ctx = node.ctx.clone();
        let path = names::topic_path(topic, qos.avoid_ros_namespace_conventions)?;
        let qos = Qos::resolve(qos, End::Publisher)?;
        let dds = crate::security::dds_topic("rt", topic, "");
        use crate::security::Action;
        ctx.permit(&[(Action::Publish, &dds)])?;
        let ring = qos.topic_ring();
        let vertex = ctx.graph.create_stream(&path, ring)?;
        // Match once, at the edge: what a subscription does not take is never handed to its
        // edge (`registry::verdicts`).
        ctx.graph
            .set_edge_filter(&path, Some(ctx.registry.edge_filter()))?;
        // Peers subscribe to the topic vertex: those whose permissions let them subscribe.
        ctx.guard(
            &path,
            (Action::Subscribe, &dds, libtracer_core::Rights::SUBSCRIBE),
        )?;
        // A transient-local publisher's history; with the network on, a reliable one's
        // resend window (docs/network.md section 6, `tracer_recording::resume`).
        ctx.retained
            .for_publisher(&ctx.graph, &path, &qos.shape(), ctx.networked)?;
        ty.set_schema(&ctx, &path)?;
        let gid = ctx.gids.next();
        let record = crate::record::publisher_tap(topic, &path, &ty, &qos, gid);
        let rec = node.endpoint_record(
            EntityKind::Publisher,
            gid,
            topic,
            &ty.type_name,
            &ty.type_hash,
            qos,
        );
        let entry = ctx.registry.announce(rec.clone())?;
        let events = crate::event::Events::new(
            ctx.clone(),
            crate::event::Endpoint {
                end: crate::event::End::Publisher,
                gid,
                topic,
                type_name: &ty.type_name,
                qos,
            },
            None,
        );
        let loans = ty.ty.plain_size().map(crate::loan::PublisherLoans::new);
        Ok(Publisher {
            loans,
            events,
            topic: cstr::owned(topic, "topic_name")?,
            gid,
            qos,
            vertex,
            ty,
            seq: Mutex::new(0),
            _ctx: ctx,
            rec,
            last_reannounce: AtomicI64::new(0),
            _entry: entry,
            record,
        })
    }

    /// Serialize and write one message: a size pass, then straight into the memory the sample
    /// lives in (a shared-memory slot from the threshold up, else a block of the core's buffer
    /// pool), with no intermediate buffer and, on the steady path, no allocation.
    pub fn publish(&self, msg: &MessageRef<'_>) -> RmwResult<()> {
        let size = msg.serialized_size(&self.ty.ty)?;
        if let Some(payload) = self.serialize_to_shm(msg, size)? {
            return self.write(payload);
        }
        let mut buf = libtracer_core::buffer::global().take(size);
        let n = msg.serialize_into(&self.ty.ty, buf.as_mut_slice(), Destination::Local)?;
        self.write(buf.freeze(n))
    }

    /// A large message (`size` reaches the threshold) serialized into a shared-memory slot;
    /// None: no pool, a smaller message, or the pool full (never a wait).
    fn serialize_to_shm(&self, msg: &MessageRef<'_>, size: usize) -> RmwResult<Option<Payload>> {
        let Some(shm) = &self._ctx.shm else {
            return Ok(None);
        };
        if size < shm.threshold {
            return Ok(None);
        }
        let Some(mut slot) = libtracer_core::link::alloc_shared(&shm.pool, size) else {
            return Ok(None);
        };
        let n = msg.serialize_into(&self.ty.ty, slot.as_mut_slice(), Destination::Shared)?;
        slot.truncate(n);
        Ok(Some(Payload::from_slot(slot.freeze())))
    }

    /// `can_loan_messages`: the type is plain.
    pub fn can_loan(&self) -> bool {
        self.loans.is_some()
    }

    /// The message type rcl handed us at creation (what a loan's type support must be).
    pub fn message_type(&self) -> &crate::cdr::MessageType {
        &self.ty.ty
    }

    fn loans(&self) -> RmwResult<&crate::loan::PublisherLoans> {
        self.loans.as_ref().ok_or_else(|| {
            RmwError::UnsupportedFeature(format!(
                "loaning messages of {} (not a plain type: docs/loans.md)",
                self.ty.type_name
            ))
        })
    }

    /// `rmw_borrow_loaned_message`: memory for one message in the context's pool.
    pub fn borrow_loaned(&self) -> RmwResult<*mut std::ffi::c_void> {
        let pool = self._ctx.shm.as_ref().map(|s| &s.pool);
        Ok(self.loans()?.borrow(pool))
    }

    /// `rmw_publish_loaned_message`: the loan's bytes are the CDR; written as they are.
    pub fn publish_loaned(&self, p: *mut std::ffi::c_void) -> RmwResult<()> {
        let payload = self.loans()?.publish(p)?;
        self.write(payload)
    }

    /// `rmw_return_loaned_message_from_publisher`.
    pub fn return_loaned(&self, p: *mut std::ffi::c_void) -> RmwResult<()> {
        self.loans()?.give_back(p)
    }

    /// Write one message that is already CDR (`rmw_publish_serialized_message`): copied once,
    /// into a block of the buffer pool.
    pub fn publish_cdr(&self, cdr: &[u8]) -> RmwResult<()> {
        let mut buf = libtracer_core::buffer::global().take(cdr.len());
        buf.as_mut_slice().copy_from_slice(cdr);
        self.write(buf.freeze(cdr.len()))
    }

    fn write(&self, payload: Payload) -> RmwResult<()> {
        {
            let mut seq = self.seq.lock();
            // Taken even if the write fails: a subscription that got the sample anyway must
            // not see the next one as its repeat.
            *seq += 1;
            let meta = Meta {
                source_timestamp_ns: now_ns(),
                sequence: *seq,
                writer: self.gid.0,
            };
            if let Some(r) = &self.record {
                r.published(&payload, &meta);
            }
            match self
                .vertex
                .write_within(payload, meta, PUBLISH_MAX_BLOCKING)
            {
                Ok(()) => {}
                Err(libtracer_core::Error::TooLarge(why)) => {
                    // Every other subscription got it; the one behind that link did not, and
                    // the user hears of it here as well as from the return code.
                    log!(
                        RMW_LOG_SEVERITY_ERROR,
                        "publisher on {}: {why}",
                        self.topic.to_string_lossy()
                    );
                    return Err(RmwError::failed(why));
                }
                // A RELIABLE + KEEP_ALL subscription had no room for so long: the message went
                // nowhere. rmw_publish documents no timeout code: an error, as Fast DDS's
                // write past its max_blocking_time.
                Err(libtracer_core::Error::Timeout) => {
                    return Err(RmwError::failed(format!(
                        "publish on {} timed out after {} ms: a RELIABLE + KEEP_ALL subscription \
                         has no room for it (it takes more slowly than this publisher writes)",
                        self.topic.to_string_lossy(),
                        PUBLISH_MAX_BLOCKING.as_millis()
                    )));
                }
                Err(e) => return Err(e.into()),
            }
        }
        self.events.on_publish();
        Ok(())
    }

    /// `rmw_publisher_assert_liveliness`: what a publication does for MANUAL_BY_TOPIC
    /// liveliness, without one. Subscriptions in this process see it at once; those of other
    /// processes through our registry record's `asserted=` line, rewritten at most four times
    /// per lease (often enough to keep a subscription's view alive, rare enough not to load
    /// the registry).
    pub fn assert_liveliness(&self) -> RmwResult<()> {
        self.events.on_assert();
        let (true, Some(lease)) = (self.qos.manual_liveliness(), self.qos.lease()) else {
            return Ok(());
        };
        let now = now_ns();
        let quarter = (lease.as_nanos() / 4).min(i64::MAX as u128) as i64;
        let last = self.last_reannounce.load(Ordering::Relaxed);
        if last != 0 && now.saturating_sub(last) < quarter {
            return Ok(());
        }
        self.last_reannounce.store(now, Ordering::Relaxed);
        let mut rec = self.rec.clone();
        rec.asserted_ns = Some(now);
        self._ctx.registry.reannounce(&rec)
    }

    /// `rmw_publisher_wait_for_all_acked`: true once every reliable subscription matched now
    /// holds every sample written before the call, false at `timeout` (`None`: no limit).
    ///
    /// A subscription of this process received a sample when the write returned (delivery into
    /// its ring is synchronous). One in another process received it when its process has landed
    /// the link's DELIVERY frame, which `Graph::sync_peers` proves with one READ round trip per
    /// process behind a reliable edge on the topic (all at once). Best-effort edges are not
    /// waited for, and a best-effort publisher returns at once, as the header says. A peer that
    /// dies, or whose link is closed as hung (0.9 s of silence), no longer holds the call; a
    /// subscription destroyed meanwhile still answers through its process.
    pub fn wait_for_all_acked(&self, timeout: Option<std::time::Duration>) -> RmwResult<bool> {
        if !self.qos.reliable() {
            return Ok(true);
        }
        let deadline = timeout.and_then(|t| std::time::Instant::now().checked_add(t));
        let mut peers: Vec<String> = self
            ._ctx
            .graph
            .subscribers(self.vertex.path())?
            .into_iter()
            .filter(|e| !e.structural && e.policy.is_reliable())
            .filter_map(|e| e.peer)
            .collect();
        peers.sort();
        peers.dedup();
        match self._ctx.graph.sync_peers(&peers, deadline) {
            Ok(()) => Ok(true),
            Err(libtracer_core::Error::Timeout) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// Subscriptions that receive what this publisher writes, read from the edges on the topic
    /// vertex: each one the edge filter lets our writes through (a subscription's edge is
    /// tagged with its gid: `registry::verdicts`), and each untagged one (a tool's).
    pub fn matched_subscriptions(&self) -> usize {
        let Ok(edges) = self._ctx.graph.subscribers(self.vertex.path()) else {
            return 0;
        };
        edges
            .iter()
            .filter(|e| !e.structural)
            .filter(|e| {
                e.tag
                    .as_deref()
                    .is_none_or(|t| self._ctx.registry.edge_takes(self.gid, t))
            })
            .count()
    }
}
