//! The background recorder (issue 4 item 3 API): writes never block on the disk, a full
//! queue drops and counts, the drop count lands in the file, and a recovered crash keeps
//! the chunks already written.

mod common;

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use tracer_mcap::*;

#[derive(Clone, Default)]
struct SlowSink {
    buf: Arc<Mutex<Vec<u8>>>,
    delay: Duration,
}
impl Write for SlowSink {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        std::thread::sleep(self.delay);
        self.buf.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn recorder_writes_every_message_with_fields() {
    let sink = SlowSink::default();
    let rec = Recorder::new(
        sink.clone(),
        RecorderOptions {
            write: opts(Compression::Zstd, Some(1_000)),
            ..Default::default()
        },
    )
    .unwrap();
    let s = rec
        .add_schema("std_msgs/msg/String", "ros2msg", STRING_SCHEMA.as_bytes())
        .unwrap();
    let ch = rec
        .add_channel(s, "/chatter", "cdr", &qos_metadata())
        .unwrap();
    let sensor = rec
        .add_field("sensor_time", FieldEncoding::Timestamp, true)
        .unwrap();
    let gid = rec.add_field("gid", FieldEncoding::Bytes, false).unwrap();
    for i in 0..500u64 {
        assert!(rec.write(
            ch,
            10 + i,
            5 + i,
            i as u32,
            cdr_string(&format!("m{i}")),
            vec![
                (sensor, FieldValue::Timestamp(i)),
                (gid, FieldValue::Bytes(vec![1; 16]))
            ]
        ));
    }
    let report = rec.finish();
    assert_eq!(
        report,
        RecorderReport {
            written: 500,
            dropped: 0,
            error: None
        }
    );
    let bytes = sink.buf.lock().unwrap().clone();
    let r = IndexedReader::open(&bytes[..]).unwrap();
    let msgs: Vec<Message> = r
        .messages(&Query::default())
        .unwrap()
        .map(|m| m.unwrap())
        .collect();
    assert_eq!(msgs.len(), 500);
    assert_eq!(msgs[7].publish_time, 12);
    let sid = r.summary().field_by_name("sensor_time").unwrap().record.id;
    assert_eq!(msgs[7].field(sid), Some(&FieldValue::Timestamp(7)));
    let md = r
        .summary()
        .metadata_indexes
        .iter()
        .position(|m| m.name == "tracer.recorder")
        .unwrap();
    assert_eq!(r.metadata(md).unwrap().metadata["dropped"], "0");
}

#[test]
fn full_queue_drops_and_counts_without_blocking() {
    let sink = SlowSink {
        delay: Duration::from_millis(20),
        ..Default::default()
    };
    let o = RecorderOptions {
        write: opts(Compression::None, Some(64)),
        max_queued_messages: 8,
        ..Default::default()
    };
    let rec = Recorder::new(sink.clone(), o).unwrap();
    let ch = rec
        .add_channel(0, "/fast", "cdr", &Default::default())
        .unwrap();
    let mut accepted = 0u64;
    for i in 0..2_000u64 {
        if rec.write(ch, i, i, 0, vec![0u8; 100], vec![]) {
            accepted += 1;
        }
    }
    assert!(
        rec.dropped() > 0,
        "a slow disk must show as drops, not as a blocked publisher"
    );
    assert_eq!(accepted + rec.dropped(), 2_000);
    let report = rec.finish();
    assert_eq!(report.written, accepted);
    let bytes = sink.buf.lock().unwrap().clone();
    let r = IndexedReader::open(&bytes[..]).unwrap();
    assert_eq!(
        r.summary().statistics.as_ref().unwrap().message_count,
        accepted
    );
    let md = r
        .summary()
        .metadata_indexes
        .iter()
        .position(|m| m.name == "tracer.recorder")
        .unwrap();
    assert_eq!(
        r.metadata(md).unwrap().metadata["dropped"],
        report.dropped.to_string()
    );
}

#[test]
fn crash_leaves_readable_chunks_and_recover_rebuilds_the_summary() {
    // A writer that is never finished (the process "dies" after flush): the chunks written
    // so far are complete records; recover turns them into a full file.
    let mut w = Writer::new(Vec::new(), opts(Compression::Lz4, Some(500))).unwrap();
    let s = w
        .add_schema("std_msgs/msg/String", "ros2msg", STRING_SCHEMA.as_bytes())
        .unwrap();
    let ch = w
        .add_channel(s, "/chatter", "cdr", &qos_metadata())
        .unwrap();
    let f = w
        .add_field("sensor_time", FieldEncoding::Timestamp, true)
        .unwrap();
    for i in 0..100u64 {
        w.write_message(
            &MessageHeader {
                channel_id: ch,
                sequence: i as u32,
                log_time: 100 + i,
                publish_time: 90 + i,
            },
            &cdr_string("x"),
            &[(f, FieldValue::Timestamp(i))],
        )
        .unwrap();
    }
    w.flush().unwrap();
    w.attach(
        &Attachment {
            log_time: 1,
            create_time: 2,
            name: "a".into(),
            media_type: "text/plain".into(),
            data: b"z".to_vec(),
        },
        &[(f, FieldValue::Timestamp(9))],
    )
    .unwrap();
    let mut partial = w.position() as usize;
    // Simulate the death by taking the bytes now and cutting a half-written record on.
    let full = w.into_inner().unwrap();
    let mut crashed = full[..partial].to_vec();
    crashed.extend_from_slice(&[op::CHUNK, 200, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3]);
    partial = crashed.len();
    assert!(IndexedReader::open(&crashed[..]).is_err());
    // Lenient open reads what is there without a summary.
    let (lenient, why) = IndexedReader::open_lenient(&crashed[..]).unwrap();
    assert!(why.is_some());
    let q = Query {
        topics: Some(vec!["/chatter".into()]),
        ..Default::default()
    };
    let mut s = lenient.messages(&q).unwrap();
    let mut n = 0;
    for m in s.by_ref() {
        if m.is_err() {
            break;
        }
        n += 1;
    }
    assert_eq!(n, 100, "every message before the torn record");
    let mut out = Vec::new();
    let rep = recover(&crashed[..], &mut out, WriteOptions::default()).unwrap();
    assert_eq!(rep.messages, 100);
    assert_eq!(rep.attachments, 1);
    assert!(rep
        .stopped
        .as_ref()
        .is_some_and(|(off, _)| (*off as usize) < partial));
    let r = IndexedReader::open(&out[..]).unwrap();
    let msgs: Vec<Message> = r
        .messages(&Query::default())
        .unwrap()
        .map(|m| m.unwrap())
        .collect();
    assert_eq!(msgs.len(), 100);
    assert_eq!(msgs[3].publish_time, 93, "fields survive recovery");
    let q = Query {
        field: Some(FieldRange {
            name: "sensor_time".into(),
            min: Some(FieldValue::Timestamp(10)),
            max: Some(FieldValue::Timestamp(19)),
        }),
        ..Default::default()
    };
    assert_eq!(
        r.messages(&q).unwrap().count(),
        10,
        "the recovered file has field indexes"
    );
    let a = r.attachment(0).unwrap();
    assert_eq!(a.attachment.data, b"z");
    assert!(
        a.fields.iter().any(|(_, v)| *v == FieldValue::Timestamp(2)),
        "true create_time kept"
    );
}

#[test]
fn recorder_is_shareable_across_publisher_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Recorder>();
    let sink = SlowSink::default();
    let rec = std::sync::Arc::new(Recorder::new(sink.clone(), RecorderOptions::default()).unwrap());
    let ch = rec
        .add_channel(0, "/t", "cdr", &Default::default())
        .unwrap();
    let threads: Vec<_> = (0..4u64)
        .map(|k| {
            let rec = rec.clone();
            std::thread::spawn(move || {
                for i in 0..250u64 {
                    assert!(rec.write(
                        ch,
                        k * 1000 + i,
                        k * 1000 + i,
                        i as u32,
                        vec![k as u8; 8],
                        vec![]
                    ));
                }
            })
        })
        .collect();
    threads.into_iter().for_each(|t| t.join().unwrap());
    assert_eq!(rec.finish().written, 1000);
    assert_eq!(rec.finish().written, 1000, "finish twice is harmless");
    let bytes = sink.buf.lock().unwrap().clone();
    let r = IndexedReader::open(&bytes[..]).unwrap();
    assert_eq!(r.summary().statistics.as_ref().unwrap().message_count, 1000);
}

#[test]
fn late_field_declaration_clashing_with_the_automatic_publish_time_keeps_recording() {
    let sink = SlowSink::default();
    let rec = Recorder::new(sink.clone(), RecorderOptions::default()).unwrap();
    let ch = rec
        .add_channel(0, "/t", "cdr", &Default::default())
        .unwrap();
    let note = rec.add_field("note", FieldEncoding::String, false).unwrap();
    // The writer adds an unindexed publish_time here (fields present, publish != log).
    assert!(rec.write(
        ch,
        10,
        5,
        0,
        vec![1u8],
        vec![(note, FieldValue::String("a".into()))]
    ));
    std::thread::sleep(Duration::from_millis(50));
    let pt = rec
        .add_field("publish_time", FieldEncoding::Timestamp, true)
        .unwrap();
    assert!(rec.write(
        ch,
        20,
        15,
        1,
        vec![2u8],
        vec![(pt, FieldValue::Timestamp(15))]
    ));
    let report = rec.finish();
    assert_eq!((report.written, report.dropped, report.error), (2, 0, None));
    let bytes = sink.buf.lock().unwrap().clone();
    let r = IndexedReader::open(&bytes[..]).unwrap();
    let msgs: Vec<Message> = r
        .messages(&Query::default())
        .unwrap()
        .map(|m| m.unwrap())
        .collect();
    assert_eq!(
        msgs.iter().map(|m| m.publish_time).collect::<Vec<_>>(),
        vec![5, 15]
    );
}
