//! The structural feed: `<v>/:children[]` reports descendants created and removed and schemas
//! set, as samples whose payload is the encoded `StructEvent` (the wire codec's encoding, so a
//! feed forwarded from a peer and a local one look the same).
//!
//! Event paths are relative to the watched vertex, as on the wire: the watcher of `/net`
//! sees a new peer as `Created { path: "<peer>", role: Mount }`.

use crate::error::Error;
use crate::payload::{Meta, Payload};
use crate::sample::{now_ns, Sample};
use crate::wire::codec;
use crate::wire::frame::StructEvent;

/// The one place the encoding is chosen.
pub fn encode_event(ev: &StructEvent) -> Vec<u8> {
    codec::encode_struct_event(ev)
}

pub fn decode_event(buf: &[u8]) -> Result<StructEvent, Error> {
    codec::decode_struct_event(buf).map_err(|e| Error::Malformed(e.to_string()))
}

impl StructEvent {
    /// The payload of a structural-feed sample.
    pub fn encode(&self) -> Vec<u8> {
        encode_event(self)
    }
    pub fn decode(buf: &[u8]) -> Result<StructEvent, Error> {
        decode_event(buf)
    }
    /// The path the event is about, relative to the watched vertex.
    pub fn path(&self) -> &str {
        match self {
            StructEvent::Created { path, .. }
            | StructEvent::Removed { path }
            | StructEvent::SchemaSet { path, .. } => path,
        }
    }
}

pub(crate) fn event_sample(ev: &StructEvent) -> Sample {
    Sample {
        payload: Payload::from(encode_event(ev)),
        meta: Meta {
            source_timestamp_ns: now_ns(),
            ..Meta::default()
        },
        received_timestamp_ns: now_ns(),
        suffix: None,
        origin: None,
        credit: Default::default(),
    }
}

/// Which event, for a node, relative to each watcher.
#[derive(Clone, Copy)]
pub(crate) enum What {
    Created,
    Removed,
    SchemaSet,
}
