//! Writes the files the Python checks (ros_tests/test_mcap*.py) read with independent
//! readers: `write_fixtures <dir>` creates `<name>.mcap` for each compression and chunking,
//! and `<name>.json` with what was written, so the checks compare values, not just counts.
//!
//! The CDR of std_msgs/String is written by hand: encapsulation 00 01 00 00 (little-endian
//! CDR), uint32 length including the NUL, the bytes, the NUL.

use std::collections::BTreeMap;
use std::path::PathBuf;

use tracer_mcap::*;

fn cdr_string(s: &str) -> Vec<u8> {
    let mut v = vec![0x00, 0x01, 0x00, 0x00];
    v.extend_from_slice(&((s.len() + 1) as u32).to_le_bytes());
    v.extend_from_slice(s.as_bytes());
    v.push(0);
    v
}

const QOS: &str = "- history: 3\n  depth: 0\n  reliability: 1\n  durability: 2\n  deadline:\n    sec: 9223372036\n    nsec: 854775807\n  lifespan:\n    sec: 9223372036\n    nsec: 854775807\n  liveliness: 1\n  liveliness_lease_duration:\n    sec: 9223372036\n    nsec: 854775807\n  avoid_ros_namespace_conventions: false";

fn write(path: &PathBuf, compression: Compression, chunk_size: Option<u64>) -> Result<String> {
    let f = std::io::BufWriter::new(std::fs::File::create(path)?);
    let mut w = Writer::new(
        f,
        WriteOptions {
            compression,
            chunk_size,
            ..Default::default()
        },
    )?;
    let schema = w.add_schema("std_msgs/msg/String", "ros2msg", b"string data\n")?;
    // /chatter: numeric QoS form (pre-Jazzy ros2 bag); /other: the Jazzy string form.
    let mut md = BTreeMap::new();
    md.insert("offered_qos_profiles".to_string(), QOS.to_string());
    let chatter = w.add_channel(schema, "/chatter", "cdr", &md)?;
    let best_effort = ros2::OfferedQos {
        reliability: ros2::Reliability::BestEffort,
        depth: 5,
        ..Default::default()
    };
    let other = w.add_channel(
        schema,
        "/other",
        "cdr",
        &ros2::channel_metadata(&[best_effort]),
    )?;
    let sensor = w.add_field("sensor_time", FieldEncoding::Timestamp, true)?;
    let route = w.add_field("route", FieldEncoding::String, false)?;
    let gid = w.add_field("gid", FieldEncoding::Bytes, false)?;
    let seq = w.add_field("sequence", FieldEncoding::Uint64, false)?;
    let base = 1_764_619_038_000_000_000u64;
    let mut expected = Vec::new();
    for i in 0..200u64 {
        let (ch, topic) = if i % 4 == 3 {
            (other, "/other")
        } else {
            (chatter, "/chatter")
        };
        let text = format!("Hello World: {i}");
        let t = base + i * 10_000_000;
        let h = MessageHeader {
            channel_id: ch,
            sequence: i as u32,
            log_time: t,
            publish_time: t - 1_000,
        };
        // Every fifth message carries no fields: a plain standard Message.
        let fields = if i % 5 == 4 {
            vec![]
        } else {
            vec![
                (sensor, FieldValue::Timestamp(t - 5_000)),
                (route, FieldValue::String(format!("/net/peer{topic}"))),
                (gid, FieldValue::Bytes(vec![i as u8; 16])),
                (seq, FieldValue::Uint64(i + 1)),
            ]
        };
        w.write_message(&h, &cdr_string(&text), &fields)?;
        expected.push(format!(
            "{{\"topic\":\"{topic}\",\"log_time\":{t},\"publish_time\":{},\"data\":\"{text}\",\"fields\":{}}}",
            t - 1_000,
            !fields.is_empty()
        ));
    }
    w.attach(
        &Attachment {
            log_time: base,
            create_time: base,
            name: "calibration.yaml".into(),
            media_type: "application/yaml".into(),
            data: b"fx: 525.0\n".to_vec(),
        },
        &[],
    )?;
    w.attach(
        &Attachment {
            log_time: base + 1,
            create_time: base + 2,
            name: "notes.txt".into(),
            media_type: "text/plain".into(),
            data: b"recorded by the fixture generator\n".to_vec(),
        },
        &[(route, FieldValue::String("fixture".into()))],
    )?;
    let mut meta = BTreeMap::new();
    meta.insert("robot".to_string(), "fixture-bot".to_string());
    w.write_metadata("session", &meta)?;
    w.finish()?;
    Ok(format!("[{}]", expected.join(",\n")))
}

fn main() -> std::process::ExitCode {
    let Some(dir) = std::env::args().nth(1).map(PathBuf::from) else {
        eprintln!("usage: write_fixtures <dir>");
        return std::process::ExitCode::from(2);
    };
    let cases = [
        ("zstd", Compression::Zstd, Some(2048)),
        ("lz4", Compression::Lz4, Some(2048)),
        ("none", Compression::None, Some(2048)),
        ("one_chunk", Compression::Zstd, Some(1 << 20)),
        ("unchunked", Compression::None, None),
    ];
    for (name, c, chunk) in cases {
        let path = dir.join(format!("{name}.mcap"));
        match write(&path, c, chunk) {
            Ok(json) => {
                if let Err(e) = std::fs::write(dir.join(format!("{name}.json")), json) {
                    eprintln!("{e}");
                    return std::process::ExitCode::FAILURE;
                }
                println!("{}", path.display());
            }
            Err(e) => {
                eprintln!("{}: {e}", path.display());
                return std::process::ExitCode::FAILURE;
            }
        }
    }
    std::process::ExitCode::SUCCESS
}
