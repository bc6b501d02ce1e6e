//! What a publisher or a subscription holds to record its messages: the session, the channel
//! and everything else resolved once at creation, so the data path does no lookup but the
//! duplicate check of a reception.

use std::sync::{Arc, OnceLock};

use libtracer_core::{Meta, Payload, Sample};
use tracer_mcap::recorder::ChannelId;
use tracer_mcap::ros2::OfferedQos;
use tracer_recording::fields::mcap_time;
use tracer_recording::StampLocator;

use super::handoff::Pending;
use super::session::{session, Session};
use crate::context::Shared;
use crate::gid::Gid;
use crate::qos::Qos;
use crate::registry::EntityKind;
use crate::topic::TopicType;

/// A publisher's tap: its messages are recorded as they are written.
pub struct PubTap {
    session: Arc<Session>,
    channel: ChannelId,
    stamp: Option<StampLocator>,
    /// The route of a published message: the topic vertex's path.
    route: Arc<str>,
}

/// A subscription's tap: each message it takes is recorded, once per process.
pub struct SubTap {
    session: Arc<Session>,
    ctx: Arc<Shared>,
    topic: String,
    type_name: String,
    definition: String,
    path: String,
    local_route: Arc<str>,
    /// Made at the first reception, when the registry knows the publishers' QoS.
    channel: OnceLock<Option<ChannelId>>,
    stamp: Option<StampLocator>,
}

fn offered(q: &Qos) -> OfferedQos {
    q.numbers().offered()
}

/// The tap of a new publisher, when this process records `topic`.
pub fn publisher_tap(
    topic: &str,
    path: &str,
    ty: &TopicType,
    qos: &Qos,
    gid: Gid,
) -> Option<PubTap> {
    let session = session()?;
    if !session.select.matches(topic) {
        return None;
    }
    let channel = session.channel(topic, &ty.type_name, &ty.definition, || vec![offered(qos)])?;
    session.published.write().insert(gid.0);
    Some(PubTap {
        session: session.clone(),
        channel,
        stamp: StampLocator::for_type(&ty.type_name, &ty.definition),
        route: Arc::from(path),
    })
}

/// The tap of a new subscription, when this process records `topic`.
pub fn subscription_tap(
    ctx: &Arc<Shared>,
    topic: &str,
    path: &str,
    ty: &TopicType,
) -> Option<SubTap> {
    let session = session()?;
    if !session.select.matches(topic) {
        return None;
    }
    Some(SubTap {
        session: session.clone(),
        ctx: ctx.clone(),
        topic: topic.to_owned(),
        type_name: ty.type_name.clone(),
        definition: ty.definition.clone(),
        path: path.to_owned(),
        local_route: Arc::from(path),
        channel: OnceLock::new(),
        stamp: StampLocator::for_type(&ty.type_name, &ty.definition),
    })
}

impl PubTap {
    /// Queue one published message (the payload is shared, not copied).
    pub fn published(&self, payload: &Payload, meta: &Meta) {
        let t = mcap_time(meta.source_timestamp_ns);
        self.session.handoff.push(Pending {
            channel: self.channel,
            log_time: t,
            publish_time: t,
            sequence: meta.sequence,
            sensor_time: self.stamp.and_then(|s| s.read(payload.as_ref())),
            payload: payload.clone(),
            gid: meta.writer,
            route: self.route.clone(),
        });
    }
}

impl SubTap {
    /// Queue one taken message, unless this process recorded it already: published by one
    /// of its own recorded publishers, or taken by another of its subscriptions.
    pub fn received(&self, s: &Sample) {
        let w = &s.meta.writer;
        if s.origin.is_none() && self.session.published.read().contains(w) {
            return;
        }
        if !self.session.first_reception(w, s.meta.sequence) {
            return;
        }
        let Some(channel) = *self.channel.get_or_init(|| {
            self.session
                .channel(&self.topic, &self.type_name, &self.definition, || {
                    self.publishers_qos()
                })
        }) else {
            return;
        };
        let route: Arc<str> = match &s.origin {
            Some(peer) => Arc::from(format!("/net/{peer}{}", self.path)),
            None => self.local_route.clone(),
        };
        self.session.handoff.push(Pending {
            channel,
            log_time: mcap_time(s.received_timestamp_ns),
            publish_time: mcap_time(s.meta.source_timestamp_ns),
            sequence: s.meta.sequence,
            sensor_time: self.stamp.and_then(|st| st.read(s.payload.as_ref())),
            payload: s.payload.clone(),
            gid: *w,
            route,
        });
    }

    /// The offered QoS of every publisher of the topic and type the registry knows.
    fn publishers_qos(&self) -> Vec<OfferedQos> {
        self.ctx
            .registry
            .snapshot()
            .into_iter()
            .filter(|(_, r)| {
                r.kind == EntityKind::Publisher
                    && r.topic == self.topic
                    && r.type_name == self.type_name
            })
            .filter_map(|(_, r)| r.qos.map(|n| n.offered()))
            .collect()
    }
}
