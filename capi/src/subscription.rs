//! A native subscription: a local stream (its ring, sized by its QoS) fed by the edges the
//! context's watch makes: exact edges from each publisher's topic vertex for a topic, one
//! subtree edge per peer for a namespace (samples carry their path, `Sample::suffix`).

use std::sync::Arc;
use std::time::Duration;

use libtracer_core::{LandFn, Sample, Vertex};
use tracer_mcap::ros2::OfferedQos;
use tracer_recording::record::{self, SubTap, TapSource};
use tracer_recording::resume::Resume;
use tracer_recording::security::{dds_topic, Action, WriterCheck};
use tracer_recording::{EntityKind, Record};

use crate::context::Context;
use crate::env;
use crate::error::{CapiError, CapiResult};
use crate::qos::Qos;
use crate::watch::{Link, Wants};

pub struct Subscription {
    pub ctx: Arc<Context>,
    /// The topic, or the namespace of a namespace subscription (ROS names).
    pub name: String,
    /// Its vertex path (the base the samples' suffixes are relative to).
    base: String,
    target: String,
    vertex: Vertex,
    link: Arc<Link>,
    rec: Option<Record>,
    spin: crate::wait::Spin,
    /// `RMW_TRACER_RECORD`: what it takes is recorded (a topic subscription).
    tap: Option<SubTap>,
}

/// What a C subscription's recording tap asks: the definition from the publishers' `:schema`
/// (this context's own topic vertex, else the peer's the first message came from), and the
/// publishers' QoS from the watch's records.
struct TapFrom {
    ctx: Arc<Context>,
    topic: String,
    type_name: String,
    path: String,
}

impl TapSource for TapFrom {
    fn definition(&self, origin: Option<&str>) -> String {
        let local = self.ctx.graph.schema(&self.path).map(|s| s.definition);
        let found = match (local.filter(|d| !d.is_empty()), origin) {
            (Some(d), _) => Some(d),
            (None, Some(peer)) => self.ctx.watch.definition(peer, &self.path),
            (None, None) => None,
        };
        found.unwrap_or_else(|| {
            crate::env::log()(&format!(
                "recording {} without the definition of {}: no publisher gave it in its :schema",
                self.topic, self.type_name
            ));
            String::new()
        })
    }

    fn publishers_qos(&self) -> Vec<OfferedQos> {
        let records = self.ctx.watch.records();
        record::publishers_qos(records.iter().map(|(_, r)| r), &self.topic, &self.type_name)
    }
}

impl Subscription {
    /// A subscription to one topic of `type_name`.
    pub fn topic(
        ctx: Arc<Context>,
        topic: &str,
        type_name: &str,
        qos: Qos,
    ) -> CapiResult<Subscription> {
        let path = env::topic_path(topic)?;
        crate::publisher::check_type_name(type_name)?;
        let dds = dds_topic("rt", topic, "");
        ctx.permit(&[(Action::Subscribe, &dds)])?;
        let gid = ctx.gids.next();
        let mut rec = ctx.endpoint_record(EntityKind::Subscription, gid, topic, type_name);
        rec.qos = Some(qos.numbers());
        let wants = Wants::Topic {
            topic: topic.to_owned(),
            path: path.clone(),
            type_name: type_name.to_owned(),
            qos: qos.numbers(),
        };
        let writers = ctx.writer_check(topic, &dds);
        let source = TapFrom {
            ctx: ctx.clone(),
            topic: topic.to_owned(),
            type_name: type_name.to_owned(),
            path: path.clone(),
        };
        let mut sub =
            Subscription::new(ctx, topic, path.clone(), wants, qos, Some((rec, writers)))?;
        sub.tap = record::subscription_tap(topic, &path, type_name, Box::new(source));
        Ok(sub)
    }

    /// A subscription to every topic below `namespace` (`/` = everything).
    ///
    /// Not under SROS2: permissions name topics, and a subtree edge takes every topic below
    /// the namespace, those to come too, so no check made now could hold for it (refused with
    /// `TRACER_ERR_UNSUPPORTED`, docs/capi.md, "Security").
    pub fn namespace(ctx: Arc<Context>, namespace: &str, qos: Qos) -> CapiResult<Subscription> {
        if ctx.secured() {
            return Err(CapiError::Unsupported(
                "a namespace subscription under SROS2 (permissions name topics, a subtree takes any)",
            ));
        }
        let path = if namespace == "/" {
            "/".to_owned()
        } else {
            env::topic_path(namespace)?
        };
        let wants = Wants::Namespace {
            namespace: namespace.to_owned(),
            path: path.clone(),
        };
        Subscription::new(ctx, namespace, path, wants, qos, None)
    }

    fn new(
        ctx: Arc<Context>,
        name: &str,
        base: String,
        wants: Wants,
        qos: Qos,
        topic: Option<(Record, Option<WriterCheck>)>,
    ) -> CapiResult<Subscription> {
        let target = ctx.local_path("sub");
        let vertex = ctx.graph.create_stream(&target, qos.subscription_ring())?;
        // The edges' tag: the record's gid (a producer's edge filter judges each write by the
        // pair), or one of its own for a namespace subscription (no record: taken as unknown).
        let exact = topic.is_some();
        let (rec, writers) = topic.map_or((None, None), |(r, w)| (Some(r), w));
        let tag = rec.as_ref().map_or_else(|| ctx.gids.next(), |r| r.gid);
        let policy = qos.delivery(exact);
        // With the network on, a reliable subscription admits a writer's samples once each,
        // in order: the replay of an edge made again after a cut adds only what it had not got,
        // and a sequence jump (what never came) is counted as lost.
        let resume = (ctx.networked && qos.reliable).then(|| Arc::new(Resume::default()));
        if let Some(r) = resume.clone() {
            if let Err(e) = ctx
                .graph
                .set_stream_filter(&target, Some(Arc::new(move |s| r.admit(s))))
            {
                let _ = ctx.graph.remove(&target);
                return Err(e.into());
            }
        }
        let link = Arc::new(Link::new(
            wants,
            target.clone(),
            policy,
            tag,
            writers,
            resume,
        ));
        if let Some(r) = &rec {
            if let Err(e) = ctx.announce(r) {
                let _ = ctx.graph.remove(&target);
                return Err(e);
            }
        }
        ctx.watch.add(&link);
        if let Some(r) = &rec {
            ctx.watch.local(r, true);
        }
        Ok(Subscription {
            name: name.to_owned(),
            base,
            target,
            vertex,
            link,
            rec,
            spin: Default::default(),
            tap: None,
            ctx,
        })
    }

    /// Messages lost since the last call: dropped by the ring when it was full (KEEP_LAST, or
    /// KEEP_ALL past its byte budget) and, on a reliable subscription with the network on,
    /// skipped by a writer's sequence (a cut longer than the publisher's resend window).
    pub fn take_lost(&self) -> u64 {
        self.vertex.take_dropped() + self.link.resume.as_ref().map_or(0, |r| r.take_gaps())
    }

    /// The oldest sample, if any (recorded as taken, with `RMW_TRACER_RECORD`).
    pub fn take(&self) -> Option<Sample> {
        let s = self.vertex.pop()?;
        if let Some(t) = &self.tap {
            t.received(&s);
        }
        Some(s)
    }

    /// Wait until a sample is there (`None`: forever); Err(Timeout) when none came.
    pub fn wait(&self, timeout: Option<Duration>) -> CapiResult<()> {
        crate::wait::until_ready(&self.vertex, &self.spin, timeout)
    }

    /// The ring samples land in (`tracer_wait` watches its readiness).
    pub fn ring(&self) -> &Vertex {
        &self.vertex
    }

    /// The ROS topic a sample was published on: the subscription's own, or for a namespace
    /// subscription its base and the sample's suffix.
    pub fn topic_of(&self, s: &Sample) -> String {
        match &s.suffix {
            None => self.name.clone(),
            Some(sfx) => {
                let path = if self.base == "/" {
                    format!("/{sfx}")
                } else {
                    format!("{}/{sfx}", self.base)
                };
                env::path_topic(&path).unwrap_or(path)
            }
        }
    }

    /// Call `f` once per sample that lands, on the delivering thread (`None` removes it).
    pub fn set_on_land(&self, f: Option<LandFn>) -> CapiResult<()> {
        Ok(self.ctx.graph.set_on_land(&self.target, f)?)
    }

    pub fn queued(&self) -> usize {
        self.vertex.len()
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        let _ = self.ctx.graph.set_on_land(&self.target, None);
        self.link.unwire(&self.ctx.graph);
        if let Some(r) = &self.rec {
            self.ctx.watch.local(r, false);
            self.ctx.retract(r);
        }
        let _ = self.ctx.graph.remove(&self.target);
    }
}
