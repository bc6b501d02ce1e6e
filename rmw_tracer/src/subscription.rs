//! Subscriptions: a target ring `/.ros/sub/<n>` sized by the QoS depth, fed by an edge from the
//! local topic vertex and (wired by the registry) one from each peer that publishes the topic.

use std::collections::{BTreeMap, HashMap};
use std::ffi::CString;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use libtracer_core::{Edge, Readiness, Sample, Vertex};
use parking_lot::Mutex;

use crate::boundary::event_callback::EventCallback;
use crate::boundary::message::MessageMut;
use crate::boundary::{cstr, RmwResult};
use crate::context::Shared;
use crate::gid::Gid;
use crate::log::log;
use crate::names;
use crate::node::Node;
use crate::qos::{End, Qos};
use crate::registry::{EntityKind, Entry, SubscriptionLink};
use crate::resume::Resume;
use crate::topic::{now_ns, TopicType};
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
    ignore_local: bool,
    notifier: Arc<Notifier>,
    notifier_thread: Mutex<Option<JoinHandle<()>>>,
    /// Known writers seen so far: whether we take their samples, and their lifespan (see
    /// `take_sample`).
    writers: Mutex<HashMap<[u8; 16], Writer>>,
    /// The content filter, if one is set (`crate::content_filter`).
    pub filter: crate::content_filter::Slot,
    /// QoS event state (`crate::event`); it owns the ring's drop counter.
    pub events: Arc<crate::event::Events>,
    _entry: Entry,
    /// `RMW_TRACER_RECORD`: set when this process records the topic.
    record: Option<crate::record::SubTap>,
    /// Outstanding loans; None when the type is not plain (docs/loans.md).
    loans: Option<crate::loan::SubscriptionLoans>,
}

/// What a subscription knows of one writer of its topic.
#[derive(Clone, Copy)]
struct Writer {
    /// Its type is ours and its QoS meets ours (DDS would have matched them).
    takes: bool,
    /// Its lifespan in ns (`INFINITE_NS`: none).
    lifespan_ns: u64,
}

/// The longest an arrival can go unreported by the on-new-message notifier.
const NOTIFIER_POLL: Duration = Duration::from_millis(10);

/// The on-new-message callback: how many unread messages it has been told about.
#[derive(Default)]
struct Notifier {
    callback: Mutex<Option<EventCallback>>,
    reported: Mutex<usize>,
    stop: AtomicBool,
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
        if let Some(r) = &resume {
            let r = r.clone();
            ctx.graph
                .set_stream_filter(&ring_path, Some(Arc::new(move |s| r.admit(s))))?;
        }
        // The priority class rides on every edge of the subscription; only QUIC acts on it.
        let policy = qos
            .delivery()
            .with_priority(crate::priority::topic_class(topic));
        let local_edge = match ctx.graph.subscribe(&path, &ring_path, policy) {
            Ok(e) => e,
            Err(e) => {
                let _ = ctx.graph.remove(&ring_path);
                return Err(e.into());
            }
        };
        let record = crate::record::subscription_tap(&ctx, topic, &path, &ty);
        let link = Arc::new(SubscriptionLink {
            topic: topic.to_owned(),
            path,
            type_name: ty.type_name.clone(),
            target: ring_path,
            policy,
            qos,
            resume,
            writers: ctx.access.as_ref().map(|a| crate::security::WriterCheck {
                access: a.clone(),
                dds: dds.clone(),
            }),
            remote: Mutex::new(Some(BTreeMap::new())),
            refused_by: Mutex::new(Default::default()),
            refused_writers: Mutex::new(Default::default()),
        });
        let gid = ctx.gids.next();
        let rec = node.endpoint_record(
            EntityKind::Subscription,
            gid,
            topic,
            &ty.type_name,
            &ty.type_hash,
            qos,
        );
        let entry = ctx.registry.announce(rec)?;
        ctx.registry.add_subscription(&link);
        let ring = target.clone();
        let gaps = link.resume.clone();
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
                // writer's sequence jumped: `crate::resume`).
                dropped: Arc::new(move || {
                    ring.take_dropped() + gaps.as_ref().map_or(0, |g| g.take_gaps())
                }),
                newest: Arc::new(move || {
                    newest
                        .value()
                        .map(|s| (s.meta.writer, s.received_timestamp_ns))
                }),
            }),
        );
        let loans = ty.ty.plain_size().map(crate::loan::SubscriptionLoans::new);
        Ok(Subscription {
            loans,
            filter: crate::content_filter::Slot::new(&ty.type_name, &ty.definition),
            events,
            topic: cstr::owned(topic, "topic_name")?,
            qos,
            target,
            local_edge,
            link,
            ty,
            ignore_local: ignore_local_publications,
            notifier: Arc::new(Notifier::default()),
            notifier_thread: Mutex::new(None),
            writers: Mutex::new(HashMap::new()),
            ctx,
            _entry: entry,
            record,
        })
    }

    /// The oldest deliverable sample, or `None` when the ring is empty. Dropped here: writes
    /// to nested topics (a sample with a suffix); with `ignore_local_publications`, this
    /// context's own publications; samples of writers DDS would not have matched with us
    /// (`writer`); samples the content filter refuses; and samples older than their writer's
    /// lifespan.
    pub fn take_sample(&self) -> Option<Sample> {
        loop {
            let s = self.target.pop()?;
            if self.has_callback() {
                let mut r = self.notifier.reported.lock();
                *r = r.saturating_sub(1);
            }
            if s.suffix.is_some() {
                continue;
            }
            if s.origin.is_none()
                && self.ignore_local
                && Gid(s.meta.writer).context_prefix() == self.ctx.gids.prefix()
            {
                continue;
            }
            let w = self.writer(&s);
            if !w.takes || !self.passes_filter(&s) {
                continue;
            }
            self.events.on_sample(&s);
            if w.lifespan_ns != INFINITE_NS
                && now_ns().saturating_sub(s.meta.source_timestamp_ns).max(0) as u64 > w.lifespan_ns
            {
                continue;
            }
            if let Some(r) = &self.record {
                r.received(&s);
            }
            return Some(s);
        }
    }

    /// Whether `s` passes the content filter (true when there is none). A filtered-out sample
    /// is as if never received: no deadline activity, no recording, not lost. Bytes that are
    /// not a message of our type are dropped with the warning a take gives them.
    fn passes_filter(&self, s: &Sample) -> bool {
        let Some(f) = self.filter.get() else {
            return true;
        };
        match f.passes(s.payload.as_ref()) {
            Ok(pass) => pass,
            Err(e) => {
                self.dropped_invalid(s, &e);
                false
            }
        }
    }

    /// What we know of the writer of `s`. An edge delivers every write to its topic vertex
    /// (the local one every local write, a remote one every write on that peer), whatever the
    /// writer's type and QoS; DDS would not match a publisher of another type or an
    /// incompatible QoS, so neither does a take. A writer with no record (a tool writing the
    /// vertex directly, or a remote publisher whose record has not arrived yet) is taken as it
    /// comes, and looked up again next time.
    fn writer(&self, s: &Sample) -> Writer {
        let mut seen = self.writers.lock();
        if let Some(w) = seen.get(&s.meta.writer) {
            return *w;
        }
        let Some(r) = self.ctx.registry.record(&Gid(s.meta.writer)) else {
            return Writer {
                takes: true,
                lifespan_ns: INFINITE_NS,
            };
        };
        let w = Writer {
            takes: r.kind == EntityKind::Publisher
                && r.type_name == self.ty.type_name
                && crate::registry::incompatible_with(&r, &self.qos).is_none(),
            lifespan_ns: r.qos.map_or(INFINITE_NS, |q| q.lifespan_ns),
        };
        seen.insert(s.meta.writer, w);
        w
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
                Err(e) if e.is_bad_input() => self.dropped_invalid(&s, &e),
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
                Err(e) if e.is_bad_input() => self.dropped_invalid(&s, &e),
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// `rmw_return_loaned_message_from_subscription`.
    pub fn return_loaned(&self, p: *mut std::ffi::c_void) -> RmwResult<()> {
        self.loans()?.give_back(p)
    }

    /// The warning for a sample whose bytes are not a message of our type (it is dropped).
    fn dropped_invalid(&self, s: &Sample, e: &dyn std::fmt::Display) {
        log!(
            RMW_LOG_SEVERITY_WARN,
            "{}: dropped a sample from writer {:?} that is not a valid {}: {e}",
            self.topic.to_string_lossy(),
            Gid(s.meta.writer),
            self.ty.type_name
        );
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

    fn has_callback(&self) -> bool {
        self.notifier.callback.lock().is_some()
    }

    /// Set (or clear, with `None`) the on-new-message callback. It is called at once with the
    /// number of messages already waiting, then as messages arrive, from a notifier thread
    /// (the ring has no per-delivery hook; the thread wakes on every change of the ring).
    pub fn set_on_new_message(&self, cb: Option<EventCallback>) {
        self.stop_notifier();
        let Some(cb) = cb else {
            return;
        };
        {
            let mut r = self.notifier.reported.lock();
            *self.notifier.callback.lock() = Some(cb);
            *r = self.target.len();
            let waiting = *r;
            drop(r);
            // Called without our locks held: the callback may take right away.
            if waiting > 0 {
                cb.call(waiting);
            }
        }
        self.notifier.stop.store(false, Ordering::SeqCst);
        let n = self.notifier.clone();
        let target = self.target.clone();
        let t = std::thread::Builder::new()
            .name("rmw_tracer-on-message".into())
            .spawn(move || {
                while !n.stop.load(Ordering::SeqCst) {
                    // `await_change` counts changes from its own start, so one that lands between
                    // the count below and the next call is seen at the next timeout at the
                    // latest: keep that short (the core has no "changed since" query).
                    target.await_change(Some(NOTIFIER_POLL));
                    let new = {
                        let mut r = n.reported.lock();
                        let len = target.len();
                        let new = len.saturating_sub(*r);
                        *r = (*r).max(len);
                        new
                    };
                    // Copied out first: the callback runs without our locks held.
                    let cb = *n.callback.lock();
                    if let (true, Some(cb)) = (new > 0, cb) {
                        cb.call(new);
                    }
                }
            });
        match t {
            Ok(t) => *self.notifier_thread.lock() = Some(t),
            Err(e) => crate::log::log!(
                RMW_LOG_SEVERITY_ERROR,
                "cannot start the callback thread: {e}"
            ),
        }
    }

    fn stop_notifier(&self) {
        self.notifier.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.notifier_thread.lock().take() {
            let _ = t.join();
        }
        *self.notifier.callback.lock() = None;
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.stop_notifier();
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
