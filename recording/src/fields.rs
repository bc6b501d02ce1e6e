//! The fields every recorded message carries (docs/mcap.md, "Recording").
//!
//! | field | encoding | indexed | value |
//! |---|---|---|---|
//! | `publish_time` | timestamp | no | the publisher's source timestamp (added by the writer: `PublishTimeField::Always`) |
//! | `sensor_time` | timestamp | yes | `header.stamp` ([`crate::StampLocator`]); absent for types without one |
//! | `publisher_gid` | bytes | no | the 16-byte gid of the writer |
//! | `sequence` | uint64 | no | the publisher's publication sequence number (from 1) |
//! | `route` | string | no | how it came: the topic path for a local write, `/net/<peer><path>` for a delivery over a link |

use tracer_mcap::recorder::{FieldId, Recorder};
use tracer_mcap::{FieldEncoding, FieldValue, PublishTimeField, RecorderOptions, Result};

/// The field ids, declared once per recorder.
#[derive(Clone, Copy, Debug)]
pub struct Fields {
    pub sensor_time: FieldId,
    pub publisher_gid: FieldId,
    pub sequence: FieldId,
    pub route: FieldId,
}

/// What one message contributes to its fields record.
pub struct MessageFields<'a> {
    pub sensor_time: Option<u64>,
    pub gid: [u8; 16],
    pub sequence: u64,
    pub route: &'a str,
}

impl Fields {
    pub fn declare(rec: &Recorder) -> Result<Fields> {
        Ok(Fields {
            sensor_time: rec.add_field("sensor_time", FieldEncoding::Timestamp, true)?,
            publisher_gid: rec.add_field("publisher_gid", FieldEncoding::Bytes, false)?,
            sequence: rec.add_field("sequence", FieldEncoding::Uint64, false)?,
            route: rec.add_field("route", FieldEncoding::String, false)?,
        })
    }

    /// The entries in ascending id order (the writer's order, D5).
    pub fn values(&self, m: &MessageFields<'_>) -> Vec<(FieldId, FieldValue)> {
        let mut v = Vec::with_capacity(4);
        if let Some(t) = m.sensor_time {
            v.push((self.sensor_time, FieldValue::Timestamp(t)));
        }
        v.push((self.publisher_gid, FieldValue::Bytes(m.gid.to_vec())));
        v.push((self.sequence, FieldValue::Uint64(m.sequence)));
        v.push((self.route, FieldValue::String(m.route.to_owned())));
        v
    }
}

/// Recorder options both recorders start from: the `publish_time` field on every message.
pub fn recorder_options() -> RecorderOptions {
    let mut o = RecorderOptions::default();
    o.write.publish_time_field = PublishTimeField::Always;
    o
}

/// Nanoseconds as MCAP wants them (a time before the epoch is 0).
pub fn mcap_time(ns: i64) -> u64 {
    u64::try_from(ns).unwrap_or(0)
}
