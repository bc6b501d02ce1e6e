//! Subscriptions: a target ring `/.ros/sub/<n>` sized by the QoS depth, fed by an edge from the
//! local topic vertex and (wired by the registry) one from each peer that publishes the topic.

use std::collections::BTreeMap;
use std::ffi::CString;
use std::sync::Arc;

use libtracer_core::{Edge, Landed, Readiness, Sample, Vertex};
use parking_lot::Mutex;

use crate::admission::Admission;
use crate::boundary::event_callback::{CallbackSlot, EventCallback};
use crate::boundary::message::MessageMut;
use crate::boundary::{cstr, RmwResult};
use crate::context::Shared;
use crate::gid::Gid;
use crate::names;
use crate::node::Node;
use crate::qos::{End, Qos};
use crate::registry::{EntityKind, Entry, SubscriptionLink};
use crate::topic::{now_ns, TopicType};
use tracer_recording::resume::Resume;
use tracer_recording::INFINITE_NS;

/// What a take found, for `rmw_message_info_t`.
#[derive(Clone, Copy, Debug)]
pub struct TakenInfo {
    pub source_timestamp_ns: i64,
    pub received_timestamp_ns: i64,
    pub publication_sequence_number: u64,
    pub publisher_gid: Gid,
    pub from_intra_process: bool,
}

impl TakenInfo {
    fn of(s: &Sample) -> TakenInfo {
        TakenInfo {
            source_timestamp_ns: s.meta.source_timestamp_ns,
            received_timestamp_ns: s.received_timestamp_ns,
            publication_sequence_number: s.meta.sequence,
            publisher_gid: Gid(s.meta.writer),
            from_intra_process: s.origin.is_none(),
        }
    }
}

pub struct Subscription {
    pub ctx: Arc<Shared>,
    pub topic: CString,
    pub qos: Qos,
    target: Vertex,
    local_edge: Edge,
    link: Arc<SubscriptionLink>,
    ty: TopicType,
    /// What the ring admits (matching, ignore-local, resume, the content filter).
    admission: Arc<Admission>,
    /// The on-new-message callback, called by the ring's arrival hook.
    on_message: Arc<CallbackSlot>,
    /// QoS event state (`crate::event`); it owns the ring's drop counter.
    pub events: Arc<crate::event::Events>,
    _entry: Entry,
    /// `RMW_TRACER_RECORD`: set when this process records the topic.
    record: Option<crate::record::SubTap>,
    /// Outstanding loans; None when the type is not plain (docs/loans.md).
    loans: Option<crate::loan::SubscriptionLoans>,
}

impl Subscription {
    pub fn new(
        node: &Node,
        ty: TopicType,
        topic: &str,
        qos: &ffi::rmw_qos_profile_t,
        ignore_local_publications: bool,
    ) -> RmwResult<Subscription> {
        // Made after rmw_shutdown too, as with Fast DDS (only nodes are refused then).
        let ctx = node.ctx.clone();
        let path = names::topic_path(topic, qos.avoid_ros_namespace_conventions)?;
        let qos = Qos::resolve(qos, End::Subscription)?;
        let dds = crate::security::dds_topic("rt", topic, "");
        use crate::security::Action;
        ctx.permit(&[(Action::Subscribe, &dds)])?;
        // The topic vertex exists before any publisher, so a local publisher that comes later
        // writes into an edge that is already there.
        ctx.graph
            .create_stream(&path, libtracer_core::StreamOptions::keep_last(1))?;
        ctx.guard(
            &path,
            (Action::Subscribe, &dds, libtracer_core::Rights::SUBSCRIBE),
        )?;
        ty.set_schema(&ctx, &path)?;
        let ring_path = ctx.new_ring_path();
        let ring = qos.subscription_ring();
        let target = ctx.graph.create_stream(&ring_path, ring)?;
        // With the network on, a reliable subscription's edges are made again after a cut and
        // replay the publisher's resend window: the ring admits only what it has not had.
        let resume = (ctx.networked && qos.reliable()).then(|| Arc::new(Resume::default()));
        // The priority class rides on every edge of the subscription; only QUIC acts on it.
        let policy = qos
            .delivery()
            .with_priority(crate::priority::topic_class(topic));
        let gid = ctx.gids.next();
        let link = Arc::new(SubscriptionLink {
            gid,
            topic: topic.to_owned(),
            path: path.clone(),
            type_name: ty.type_name.clone(),
            target: ring_path.clone(),
            policy,
            qos,
            resume,
            writers: ctx
                .access
                .as_ref()
                .map(|a| crate::security::WriterCheck::new(a.clone(), topic, dds.clone())),
            remote: Mutex::new(Some(BTreeMap::new())),
            refused_by: Mutex::new(Default::default()),
            verdicts: Default::default(),
        });
        let admission = Arc::new(Admission {
            link: link.clone(),
            ignore_local: ignore_local_publications.then(|| ctx.gids.prefix()),
            filter: crate::content_filter::Slot::new(&ty.type_name, &ty.definition),
        });
        let admit = admission.clone();
        ctx.graph
            .set_stream_filter(&ring_path, Some(Arc::new(move |s| admit.admit(s))))?;
        let rec = node.endpoint_record(
            EntityKind::Subscription,
            gid,
            topic,
            &ty.type_name,
            &ty.type_hash,
            qos,
        );
        let entry = ctx.registry.announce(rec)?;
        // Before the local edge: the registry judges the topic's writers first, so the ring
        // admits a local writer's first sample (or a transient-local replay) as it should.
        ctx.registry.add_subscription(&link);
        let ring = target.clone();
        let gaps = link.resume.clone();
        let has_gaps = link.resume.clone();
        let newest = target.clone();
        let events = crate::event::Events::new(
            ctx.clone(),
            crate::event::Endpoint {
                end: crate::event::End::Subscription,
                gid,
                topic,
                type_name: &ty.type_name,
                qos,
            },
            Some(crate::event::RingProbe {
                // Lost: what the ring dropped on overflow, and what never came (a reliable
                // writer's sequence jumped: `tracer_recording::resume`).
                dropped: Arc::new(move || {
                    ring.take_dropped() + gaps.as_ref().map_or(0, |g| g.take_gaps())
                }),
                newest: Arc::new(move || {
                    newest
                        .value()
                        .map(|s| (s.meta.writer, s.received_timestamp_ns))
                }),
                has_gaps: Arc::new(move || has_gaps.as_ref().is_some_and(|g| g.has_gaps())),
            }),
        );
        // Arrival is announced by the ring, never polled: the on-new-message callback and a
        // lost-message callback hear of each sample as it lands, on the delivering thread.
        let on_message = Arc::new(CallbackSlot::default());
        {
            let (on_message, events) = (on_message.clone(), Arc::downgrade(&events));
            ctx.graph.set_on_land(
                &ring_path,
                Some(Arc::new(move |l: Landed| {
                    if let Some(e) = events.upgrade() {
                        e.on_land(l.evicted);
                    }
                    on_message.call(1);
                })),
            )?;
        }
        // Tagged with our gid: the topic's edge filter (set by its local publishers) keeps what
        // we do not match off this edge.
        let local_edge = match crate::registry::subscription_edge(
            &ctx.graph, &path, &ring_path, policy, &gid.0, None,
        ) {
            Ok(e) => e,
            Err(e) => {
                link.disconnect(&ctx.graph);
                let _ = ctx.graph.remove(&ring_path);
                return Err(e.into());
            }
        };
        let record = crate::record::subscription_tap(&ctx, topic, &path, &ty);
        let loans = ty.ty.plain_size().map(crate::loan::SubscriptionLoans::new);
        Ok(Subscription {
            loans,
            admission,
            on_message,
            events,
            topic: cstr::owned(topic, "topic_name")?,
            qos,
            target,
            local_edge,
            link,
            ty,
            ctx,
            _entry: entry,
            record,
        })
    }

    /// The content filter slot (`crate::content_filter`), applied as samples arrive.
    pub fn filter(&self) -> &crate::content_filter::Slot {
        &self.admission.filter
    }

    /// Set the content filter (an empty expression removes it; `Slot::set`), then test what is
    /// already queued against it: a sample the new filter refuses goes, not counted as lost, as
    /// Fast DDS drops it (so a wait over only such samples times out). Returns whether a filter
    /// is in force.
    pub fn set_content_filter(&self, expression: &str, parameters: Vec<String>) -> RmwResult<bool> {
        let enabled = self.admission.filter.set(expression, parameters)?;
        self.target.retain(|s| self.admission.passes_filter(s));
        Ok(enabled)
    }

    /// The oldest deliverable sample, or `None` when the ring is empty. What is not ours never
    /// reached the ring (`crate::admission`, and exact edges); dropped here only: samples older
    /// than their writer's lifespan, which only a take can tell.
    pub fn take_sample(&self) -> Option<Sample> {
        loop {
            let s = self.target.pop()?;
            self.events.on_sample(&s);
            let lifespan_ns = self.link.verdicts.lifespan_ns(&s.meta.writer);
            if lifespan_ns != INFINITE_NS
                && now_ns().saturating_sub(s.meta.source_timestamp_ns).max(0) as u64 > lifespan_ns
            {
                continue;
            }
            if let Some(r) = &self.record {
                r.received(&s);
            }
            return Some(s);
        }
    }

    /// Take one message into `msg`; `None` when there was none.
    ///
    /// A topic vertex is open to any libtracer writer, so a sample whose bytes are not a valid
    /// message of our type (a tool that wrote garbage) is dropped with a warning and the next
    /// one is taken: one bad writer must not make every take of a ROS node fail.
    pub fn take(&self, msg: &mut MessageMut<'_>) -> RmwResult<Option<TakenInfo>> {
        loop {
            let Some(s) = self.take_sample() else {
                return Ok(None);
            };
            match msg.deserialize(&self.ty.ty, s.payload.as_ref()) {
                Ok(()) => return Ok(Some(TakenInfo::of(&s))),
                Err(e) if e.is_bad_input() => self.admission.dropped_invalid(&s, &e),
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// `can_loan_messages`: the type is plain.
    pub fn can_loan(&self) -> bool {
        self.loans.is_some()
    }

    fn loans(&self) -> RmwResult<&crate::loan::SubscriptionLoans> {
        self.loans.as_ref().ok_or_else(|| {
            crate::boundary::RmwError::UnsupportedFeature(format!(
                "loaning messages of {} (not a plain type: docs/loans.md)",
                self.ty.type_name
            ))
        })
    }

    /// `rmw_take_loaned_message(_with_info)`: the next message, lent until
    /// [`return_loaned`](Self::return_loaned). In place (read-only: a peer's segment is mapped
    /// so) when the sample's bytes are a loaned publisher's; otherwise deserialized into a
    /// buffer of ours. Bytes that are not a valid message are dropped as in [`take`](Self::take).
    pub fn take_loaned(&self) -> RmwResult<Option<(*mut std::ffi::c_void, TakenInfo)>> {
        let loans = self.loans()?;
        // Before the take: at the limit, the sample stays queued.
        loans.check_room()?;
        loop {
            let Some(s) = self.take_sample() else {
                return Ok(None);
            };
            let info = TakenInfo::of(&s);
            if let Some(p) = loans.in_place(&s) {
                loans.lend_sample(p, s);
                return Ok(Some((p, info)));
            }
            let (mut buf, start) = loans.copy_buffer();
            match crate::boundary::message::deserialize_plain(
                &self.ty.ty,
                s.payload.as_ref(),
                &mut buf[start..],
            ) {
                Ok(()) => {
                    let p = buf[start..].as_mut_ptr().cast();
                    loans.lend_copy(p, buf);
                    return Ok(Some((p, info)));
                }
                Err(e) if e.is_bad_input() => self.admission.dropped_invalid(&s, &e),
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// `rmw_return_loaned_message_from_subscription`.
    pub fn return_loaned(&self, p: *mut std::ffi::c_void) -> RmwResult<()> {
        self.loans()?.give_back(p)
    }

    /// Take one message as CDR bytes.
    pub fn take_cdr(&self) -> Option<(Sample, TakenInfo)> {
        let s = self.take_sample()?;
        let info = TakenInfo::of(&s);
        Some((s, info))
    }

    /// Ready while the ring holds a sample.
    pub fn readiness(&self) -> Readiness {
        self.target.readiness()
    }

    pub fn is_ready(&self) -> bool {
        self.target.readiness().is_ready()
    }

    pub fn matched_publishers(&self) -> usize {
        self.ctx.registry.matched_publishers(&self.link)
    }

    /// Set (or clear, with `None`) the on-new-message callback. It is called at once with the
    /// number of messages already waiting, then once per message as it lands in the ring (from
    /// the delivering thread; a full KEEP_LAST ring still calls back for each arrival, as Fast
    /// DDS does). Once this returns, a callback it replaced is not running.
    pub fn set_on_new_message(&self, cb: Option<EventCallback>) {
        self.on_message.set_and_tell(cb, || self.target.len());
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.on_message.set(None);
        let _ = self.ctx.graph.unsubscribe(&self.local_edge);
        self.link.disconnect(&self.ctx.graph);
        let _ = self.ctx.graph.remove(&self.link.target);
    }
}

/// Fill an `rmw_message_info_t` for a taken message.
pub fn fill_message_info(out: &mut ffi::rmw_message_info_t, i: &TakenInfo) {
    out.source_timestamp = i.source_timestamp_ns;
    out.received_timestamp = i.received_timestamp_ns;
    out.publication_sequence_number = i.publication_sequence_number;
    out.reception_sequence_number = ffi::RMW_MESSAGE_INFO_SEQUENCE_NUMBER_UNSUPPORTED;
    out.publisher_gid = crate::gid::to_rmw(i.publisher_gid);
    out.from_intra_process = i.from_intra_process;
}
