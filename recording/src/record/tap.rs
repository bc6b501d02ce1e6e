//! What a publisher or a subscription holds to record its messages: the session, the channel
//! and everything else resolved once, so the data path does no lookup but the duplicate check
//! of a reception. A subscription's channel is made at its first reception, when the library
//! knows the publishers' QoS (and, in the C API, the type's definition: [`TapSource`]).

use std::sync::{Arc, OnceLock};

use libtracer_core::{Meta, Payload, Sample};
use tracer_mcap::recorder::ChannelId;
use tracer_mcap::ros2::OfferedQos;

use super::handoff::Pending;
use super::session::{session, Session};
use crate::fields::mcap_time;
use crate::{EntityKind, Record, StampLocator};

/// A publisher's tap: its messages are recorded as they are written.
pub struct PubTap {
    session: Arc<Session>,
    channel: ChannelId,
    stamp: Option<StampLocator>,
    /// The route of a published message: the topic vertex's path.
    route: Arc<str>,
}

/// What a subscription's tap asks of its library when the first message is taken.
pub trait TapSource: Send + Sync {
    /// The type's `ros2msg` definition ("" when not known), the first message having come
    /// from `origin` (a peer; `None`: this process).
    fn definition(&self, origin: Option<&str>) -> String;
    /// The offered QoS of every publisher of the topic and type the library knows.
    fn publishers_qos(&self) -> Vec<OfferedQos>;
}

/// The offered QoS of every publisher of `topic` and `type_name` among `records` (what a
/// [`TapSource`] answers from its registry).
pub fn publishers_qos<'a>(
    records: impl IntoIterator<Item = &'a Record>,
    topic: &str,
    type_name: &str,
) -> Vec<OfferedQos> {
    records
        .into_iter()
        .filter(|r| r.kind == EntityKind::Publisher && r.topic == topic && r.type_name == type_name)
        .filter_map(|r| r.qos.map(|n| n.offered()))
        .collect()
}

/// A subscription's tap: each message it takes is recorded, once per process.
pub struct SubTap {
    session: Arc<Session>,
    source: Box<dyn TapSource>,
    topic: String,
    type_name: String,
    path: String,
    local_route: Arc<str>,
    /// Made at the first reception.
    resolved: OnceLock<Option<(ChannelId, Option<StampLocator>)>>,
}

/// The tap of a new publisher of `topic` (at the vertex `path`; `gid` its writer id), when this
/// process records it.
pub fn publisher_tap(
    topic: &str,
    path: &str,
    type_name: &str,
    definition: &str,
    offered: OfferedQos,
    gid: [u8; 16],
) -> Option<PubTap> {
    let session = session()?;
    if !session.select.matches(topic) {
        return None;
    }
    let channel = session.channel(topic, type_name, definition, || vec![offered])?;
    session.published.write().insert(gid);
    Some(PubTap {
        session: session.clone(),
        channel,
        stamp: StampLocator::for_type(type_name, definition),
        route: Arc::from(path),
    })
}

/// The tap of a new subscription of `topic` (its vertex `path`), when this process records it.
pub fn subscription_tap(
    topic: &str,
    path: &str,
    type_name: &str,
    source: Box<dyn TapSource>,
) -> Option<SubTap> {
    let session = session()?;
    if !session.select.matches(topic) {
        return None;
    }
    Some(SubTap {
        session: session.clone(),
        source,
        topic: topic.to_owned(),
        type_name: type_name.to_owned(),
        path: path.to_owned(),
        local_route: Arc::from(path),
        resolved: OnceLock::new(),
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
        let Some((channel, stamp)) = *self.resolved.get_or_init(|| {
            let definition = self.source.definition(s.origin.as_deref());
            let channel =
                self.session
                    .channel(&self.topic, &self.type_name, &definition, || {
                        self.source.publishers_qos()
                    })?;
            Some((
                channel,
                StampLocator::for_type(&self.type_name, &definition),
            ))
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
            sensor_time: stamp.and_then(|st| st.read(s.payload.as_ref())),
            payload: s.payload.clone(),
            gid: *w,
            route,
        });
    }
}
