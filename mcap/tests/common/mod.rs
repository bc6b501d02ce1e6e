//! Builders shared by the integration tests.
#![allow(dead_code)]

use std::collections::BTreeMap;

use tracer_mcap::*;

pub const STRING_SCHEMA: &str = "string data\n";

/// CDR of std_msgs/String, written by hand: encapsulation header 00 01 00 00 (CDR little
/// endian), uint32 length including the NUL, the bytes, the NUL.
pub fn cdr_string(s: &str) -> Vec<u8> {
    let mut v = vec![0x00, 0x01, 0x00, 0x00];
    v.extend_from_slice(&((s.len() + 1) as u32).to_le_bytes());
    v.extend_from_slice(s.as_bytes());
    v.push(0);
    v
}

pub fn qos_metadata() -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    m.insert(
        "offered_qos_profiles".to_string(),
        "- history: 3\n  depth: 0\n  reliability: 1\n  durability: 2\n  deadline:\n    sec: 9223372036\n    nsec: 854775807\n  lifespan:\n    sec: 9223372036\n    nsec: 854775807\n  liveliness: 1\n  liveliness_lease_duration:\n    sec: 9223372036\n    nsec: 854775807\n  avoid_ros_namespace_conventions: false".to_string(),
    );
    m
}

pub struct Sample {
    pub bytes: Vec<u8>,
    /// (topic, log_time, sensor_time, payload)
    pub sent: Vec<(String, u64, u64, Vec<u8>)>,
}

/// Two topics, `n` messages each, every message with fields: an indexed `sensor_time`
/// that increases with log time, a `route` string, and the automatic `publish_time`.
pub fn sample_file(opts: WriteOptions, n: u64) -> Sample {
    let mut w = Writer::new(Vec::new(), opts).unwrap();
    let sid = w
        .add_schema("std_msgs/msg/String", "ros2msg", STRING_SCHEMA.as_bytes())
        .unwrap();
    let a = w
        .add_channel(sid, "/chatter", "cdr", &qos_metadata())
        .unwrap();
    let b = w
        .add_channel(sid, "/other", "cdr", &qos_metadata())
        .unwrap();
    let sensor = w
        .add_field("sensor_time", FieldEncoding::Timestamp, true)
        .unwrap();
    let route = w.add_field("route", FieldEncoding::String, false).unwrap();
    let mut sent = Vec::new();
    for i in 0..n {
        for (ch, topic) in [(a, "/chatter"), (b, "/other")] {
            let t = 1_000 + i * 10 + ch as u64;
            let payload = cdr_string(&format!("hello {i} on {topic}"));
            let h = MessageHeader {
                channel_id: ch,
                sequence: i as u32,
                log_time: t,
                publish_time: t - 1,
            };
            let st = 500_000 + t * 3;
            w.write_message(
                &h,
                &payload,
                &[
                    (sensor, FieldValue::Timestamp(st)),
                    (route, FieldValue::String(format!("/net/peer{ch}{topic}"))),
                ],
            )
            .unwrap();
            sent.push((topic.to_string(), t, st, payload));
        }
    }
    w.attach(
        &Attachment {
            log_time: 5,
            create_time: 0,
            name: "calib.yaml".into(),
            media_type: "application/yaml".into(),
            data: b"k: 1\n".to_vec(),
        },
        &[],
    )
    .unwrap();
    w.attach(
        &Attachment {
            log_time: 6,
            create_time: 77,
            name: "notes.txt".into(),
            media_type: "text/plain".into(),
            data: b"fields!".to_vec(),
        },
        &[(route, FieldValue::String("from-test".into()))],
    )
    .unwrap();
    let mut md = BTreeMap::new();
    md.insert("robot".to_string(), "r2".to_string());
    w.write_metadata("info", &md).unwrap();
    Sample {
        bytes: w.into_inner().unwrap(),
        sent,
    }
}

pub fn opts(compression: Compression, chunk_size: Option<u64>) -> WriteOptions {
    WriteOptions {
        compression,
        chunk_size,
        ..Default::default()
    }
}
