//! The fields every recorded message carries (docs/mcap.md, "Recording").
//!
//! | field | encoding | indexed | value |
//! |---|---|---|---|
//! | `publish_time` | timestamp | no | the publisher's source timestamp (added by the writer: `PublishTimeField::Always`) |
//! | `sensor_time` | timestamp | yes | `header.stamp` ([`crate::StampLocator`]); absent for types without one |
//! | `publisher_gid` | bytes | no | the 16-byte gid of the writer |
//! | `sequence` | uint64 | no | the publisher's publication sequence number (from 1) |
//! | `route` | string | no | how it came: the topic path for a local write, `/net/<peer><path>` for a delivery over a link |

//!
//! A *plain* recording (`RMW_TRACER_RECORD_FIELDS=off`, `tracer record --plain`) declares no
//! field and writes no Message Fields record: every message is a standard MCAP message with
//! its true `publish_time`, for tools that read the field sentinel as a time.

use tracer_mcap::recorder::{FieldId, Recorder};
use tracer_mcap::{FieldEncoding, FieldValue, PublishTimeField, RecorderOptions, Result};

/// The field ids, declared once per recorder; none for a plain recording.
#[derive(Clone, Copy, Debug)]
pub struct Fields {
    ids: Option<FieldIds>,
}

#[derive(Clone, Copy, Debug)]
struct FieldIds {
    sensor_time: FieldId,
    publisher_gid: FieldId,
    sequence: FieldId,
    route: FieldId,
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
            ids: Some(FieldIds {
                sensor_time: rec.add_field("sensor_time", FieldEncoding::Timestamp, true)?,
                publisher_gid: rec.add_field("publisher_gid", FieldEncoding::Bytes, false)?,
                sequence: rec.add_field("sequence", FieldEncoding::Uint64, false)?,
                route: rec.add_field("route", FieldEncoding::String, false)?,
            }),
        })
    }

    /// No fields: a plain recording (use [`recorder_options`] with `plain = true`).
    pub fn none() -> Fields {
        Fields { ids: None }
    }

    /// The entries in ascending id order (the writer's order, D5); empty when plain.
    pub fn values(&self, m: &MessageFields<'_>) -> Vec<(FieldId, FieldValue)> {
        let Some(ids) = &self.ids else {
            return Vec::new();
        };
        let mut v = Vec::with_capacity(4);
        if let Some(t) = m.sensor_time {
            v.push((ids.sensor_time, FieldValue::Timestamp(t)));
        }
        v.push((ids.publisher_gid, FieldValue::Bytes(m.gid.to_vec())));
        v.push((ids.sequence, FieldValue::Uint64(m.sequence)));
        v.push((ids.route, FieldValue::String(m.route.to_owned())));
        v
    }
}

/// Recorder options both recorders start from: the `publish_time` field on every message, or
/// for a plain recording no field at all (the literal publish time).
pub fn recorder_options(plain: bool) -> RecorderOptions {
    let mut o = RecorderOptions::default();
    o.write.publish_time_field = if plain {
        PublishTimeField::Never
    } else {
        PublishTimeField::Always
    };
    o
}

/// With or without fields, for `plain`.
pub fn fields_for(rec: &Recorder, plain: bool) -> Result<Fields> {
    if plain {
        Ok(Fields::none())
    } else {
        Fields::declare(rec)
    }
}

/// `RMW_TRACER_RECORD_FIELDS`: `on` (the default; also `1`, `true`, empty) or `off` (`0`,
/// `false`, `plain`): true when the recording is plain.
pub fn parse_fields_switch(v: &str) -> std::result::Result<bool, String> {
    match v.trim().to_ascii_lowercase().as_str() {
        "" | "on" | "1" | "true" => Ok(false),
        "off" | "0" | "false" | "plain" => Ok(true),
        other => Err(format!("{other:?}: expected on or off")),
    }
}

/// Nanoseconds as MCAP wants them (a time before the epoch is 0).
pub fn mcap_time(ns: i64) -> u64 {
    u64::try_from(ns).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_recordings_have_no_fields() {
        let rec = Recorder::new(Vec::new(), recorder_options(true)).unwrap();
        let f = fields_for(&rec, true).unwrap();
        let m = MessageFields {
            sensor_time: Some(1),
            gid: [0; 16],
            sequence: 1,
            route: "/a",
        };
        assert!(f.values(&m).is_empty());
        let rec = Recorder::new(Vec::new(), recorder_options(false)).unwrap();
        assert_eq!(fields_for(&rec, false).unwrap().values(&m).len(), 4);
        assert_eq!(parse_fields_switch("OFF"), Ok(true));
        assert_eq!(parse_fields_switch(""), Ok(false));
        assert!(parse_fields_switch("maybe").is_err());
    }
}
