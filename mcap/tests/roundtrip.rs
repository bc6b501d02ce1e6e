//! Writer -> reader round trips: every compression, chunked and unchunked, the extension
//! records, attachments, metadata, statistics, summary offsets and CRCs (issue 4 item 1-2).

mod common;

use std::collections::BTreeSet;

use common::*;
use tracer_mcap::*;

fn all_messages(bytes: &[u8], q: &Query) -> Vec<Message> {
    let r = IndexedReader::open(bytes).unwrap();
    r.messages(q).unwrap().map(|m| m.unwrap()).collect()
}

#[test]
fn every_compression_chunked_and_unchunked_round_trips() {
    for (c, chunk) in [
        (Compression::Zstd, Some(512)),
        (Compression::Lz4, Some(512)),
        (Compression::None, Some(512)),
        (Compression::Zstd, Some(1 << 20)),
        (Compression::None, None),
    ] {
        let s = sample_file(opts(c, chunk), 50);
        let r = IndexedReader::open(&s.bytes[..]).unwrap();
        let sum = r.summary();
        let st = sum.statistics.clone().unwrap();
        assert_eq!(st.message_count, 100, "{c:?} {chunk:?}");
        assert_eq!(st.channel_message_counts.values().sum::<u64>(), 100);
        assert_eq!(st.attachment_count, 2);
        assert_eq!(st.metadata_count, 1);
        assert_eq!(sum.header.as_ref().unwrap().profile, "ros2");
        if chunk.is_some() {
            assert!(st.chunk_count >= 1);
            assert_eq!(sum.chunk_indexes.len() as u32, st.chunk_count);
            assert!(sum
                .chunk_indexes
                .iter()
                .all(|ci| ci.compression == c.name()));
            assert!(!sum.field_chunk_indexes.is_empty());
        } else {
            assert!(sum.chunk_indexes.is_empty());
        }
        let msgs = all_messages(&s.bytes, &Query::default());
        assert_eq!(msgs.len(), 100);
        let sensor = sum.field_by_name("sensor_time").unwrap().record.id;
        let pt = sum.field_by_name("publish_time").unwrap().record.id;
        for (m, (topic, t, st, payload)) in msgs.iter().zip(&s.sent) {
            assert_eq!(&sum.channels[&m.channel_id].topic, topic);
            assert_eq!(m.log_time, *t);
            assert_eq!(
                m.raw_publish_time, SENTINEL,
                "spec 2.6: sentinel when fields follow"
            );
            assert_eq!(
                m.publish_time,
                t - 1,
                "D15: true publish time from the publish_time field"
            );
            assert_eq!(m.field(sensor), Some(&FieldValue::Timestamp(*st)));
            assert!(m.field(pt).is_some());
            assert_eq!(&m.data, payload);
        }
    }
}

#[test]
fn summary_groups_offsets_and_crcs_are_consistent() {
    let s = sample_file(opts(Compression::Zstd, Some(300)), 20);
    let r = IndexedReader::open(&s.bytes[..]).unwrap();
    let sum = r.summary();
    let groups: Vec<u8> = sum.summary_offsets.iter().map(|o| o.group_opcode).collect();
    // D11 order: Schema, Channel, Field, Statistics, Chunk Index, Field Chunk Index, Attachment Index, Metadata Index.
    assert_eq!(groups, vec![0x03, 0x04, 0x10, 0x0B, 0x08, 0x13, 0x0A, 0x0D]);
    for so in &sum.summary_offsets {
        let first = s.bytes[so.group_start as usize];
        assert_eq!(first, so.group_opcode);
    }
    // D7: message_index_length spans the whole index run after the chunk.
    for ci in &sum.chunk_indexes {
        let run_end = ci.chunk_start_offset + ci.chunk_length + ci.message_index_length;
        let next = s.bytes[run_end as usize];
        assert!(
            next == op::CHUNK
                || next == op::DATA_END
                || next == op::ATTACHMENT
                || next == op::METADATA,
            "opcode {next:#x}"
        );
    }
    // Flipping one summary byte breaks the summary CRC.
    let mut bad = s.bytes.clone();
    let at = sum.summary_offsets[3].group_start as usize + 12;
    bad[at] ^= 0xFF;
    assert!(matches!(
        IndexedReader::open(&bad[..]),
        Err(McapError::Crc {
            what: "summary",
            ..
        })
    ));
    // The linear reader checks the data section CRC and reports no warning on a good file.
    let warnings: Vec<String> = LinearReader::new(&s.bytes[..], ReadOptions::default())
        .unwrap()
        .filter_map(|i| match i.unwrap() {
            Item::Warning(w) => Some(w),
            _ => None,
        })
        .collect();
    assert!(warnings.is_empty(), "{warnings:?}");
}

#[test]
fn statistics_field_value_bounds_d18() {
    let s = sample_file(opts(Compression::Lz4, Some(400)), 30);
    let r = IndexedReader::open(&s.bytes[..]).unwrap();
    let sum = r.summary();
    let sensor = sum.field_by_name("sensor_time").unwrap().record.id;
    let bounds = sum
        .statistics
        .as_ref()
        .unwrap()
        .field_value_bounds
        .as_ref()
        .unwrap();
    let lo = s.sent.iter().map(|x| x.2).min().unwrap();
    let hi = s.sent.iter().map(|x| x.2).max().unwrap();
    assert_eq!(bounds[&sensor], (lo, hi));
    // A file without indexed fields keeps the standard Statistics layout (no extra bytes).
    let mut w = Writer::new(Vec::new(), WriteOptions::default()).unwrap();
    let c = w.add_channel(0, "/t", "cdr", &Default::default()).unwrap();
    w.write_message(
        &MessageHeader {
            channel_id: c,
            sequence: 0,
            log_time: 1,
            publish_time: 1,
        },
        b"x",
        &[],
    )
    .unwrap();
    let b = w.into_inner().unwrap();
    let r = IndexedReader::open(&b[..]).unwrap();
    assert_eq!(
        r.summary().statistics.as_ref().unwrap().field_value_bounds,
        None
    );
    let m: Vec<Message> = r
        .messages(&Query::default())
        .unwrap()
        .map(|m| m.unwrap())
        .collect();
    assert_eq!(
        m[0].raw_publish_time, 1,
        "no fields: literal publish time, no sentinel"
    );
}

#[test]
fn topic_and_time_queries_with_both_strategies() {
    let s = sample_file(opts(Compression::None, Some(256)), 60);
    for strategy in [ScanStrategy::Full, ScanStrategy::Index, ScanStrategy::Auto] {
        let q = Query {
            topics: Some(vec!["/chatter".into()]),
            start: Some(1_100),
            end: Some(1_300),
            strategy,
            ..Default::default()
        };
        let got = all_messages(&s.bytes, &q);
        let want: Vec<&(String, u64, u64, Vec<u8>)> = s
            .sent
            .iter()
            .filter(|x| x.0 == "/chatter" && x.1 >= 1_100 && x.1 < 1_300)
            .collect();
        assert_eq!(got.len(), want.len(), "{strategy:?}");
        assert!(got
            .iter()
            .zip(&want)
            .all(|(m, w)| m.log_time == w.1 && m.data == w.3));
    }
}

#[test]
fn attachments_and_metadata_through_the_index_d13() {
    let s = sample_file(opts(Compression::Zstd, Some(4096)), 5);
    let r = IndexedReader::open(&s.bytes[..]).unwrap();
    let sum = r.summary();
    let names: Vec<&str> = sum
        .attachment_indexes
        .iter()
        .map(|a| a.name.as_str())
        .collect();
    assert_eq!(names, ["calib.yaml", "notes.txt"]);
    assert_eq!(
        sum.attachment_indexes[1].create_time, SENTINEL,
        "D13: index copies the sentinel"
    );
    let plain = r.attachment(0).unwrap();
    assert_eq!(plain.attachment.data, b"k: 1\n");
    assert!(plain.fields.is_empty());
    let with = r.attachment(1).unwrap();
    assert!(with.warnings.is_empty());
    let route = sum.field_by_name("route").unwrap().record.id;
    let ct = sum.field_by_name("create_time").unwrap().record.id;
    assert_eq!(
        with.fields.iter().find(|f| f.0 == route).unwrap().1,
        FieldValue::String("from-test".into())
    );
    assert_eq!(
        with.fields.iter().find(|f| f.0 == ct).unwrap().1,
        FieldValue::Timestamp(77),
        "true create_time as a field"
    );
    assert_eq!(r.metadata(0).unwrap().metadata["robot"], "r2");
}

#[test]
fn message_and_fields_never_straddle_a_chunk_d17() {
    // Chunk size 1 byte: every message closes its chunk right after its fields record.
    let s = sample_file(opts(Compression::None, Some(1)), 10);
    let r = IndexedReader::open(&s.bytes[..]).unwrap();
    assert!(r.summary().chunk_indexes.len() >= 20);
    let warnings: Vec<String> = LinearReader::new(&s.bytes[..], ReadOptions::default())
        .unwrap()
        .filter_map(|i| match i.unwrap() {
            Item::Warning(w) => Some(w),
            _ => None,
        })
        .collect();
    assert!(warnings.is_empty(), "{warnings:?}");
}

#[test]
fn writer_rules_d2_d14_and_validation() {
    let mut w = Writer::new(Vec::new(), WriteOptions::default()).unwrap();
    let f = w.add_field("x", FieldEncoding::Uint32, false).unwrap();
    assert_eq!(w.add_field("x", FieldEncoding::Uint32, false).unwrap(), f);
    assert!(
        matches!(
            w.add_field("x", FieldEncoding::Int32, false),
            Err(McapError::InvalidArgument(_))
        ),
        "D2"
    );
    assert!(
        w.add_field("s", FieldEncoding::String, true).is_err(),
        "only 64-bit encodings index"
    );
    let c = w.add_channel(0, "/t", "cdr", &Default::default()).unwrap();
    let h = MessageHeader {
        channel_id: c,
        sequence: 0,
        log_time: 1,
        publish_time: SENTINEL,
    };
    assert!(
        matches!(
            w.write_message(&h, b"", &[]),
            Err(McapError::InvalidArgument(_))
        ),
        "D14"
    );
    let h = MessageHeader {
        publish_time: 1,
        ..h
    };
    assert!(
        w.write_message(&h, b"", &[(f, FieldValue::Uint64(1))])
            .is_err(),
        "value must match the encoding"
    );
    assert!(
        w.write_message(&h, b"", &[(99, FieldValue::Uint32(1))])
            .is_err(),
        "undeclared field"
    );
    assert!(
        w.write_message(&MessageHeader { channel_id: 9, ..h }, b"", &[])
            .is_err(),
        "undeclared channel"
    );
    // Validation errors do not poison the writer.
    w.write_message(&h, b"ok", &[(f, FieldValue::Uint32(1))])
        .unwrap();
    let b = w.into_inner().unwrap();
    let r = IndexedReader::open(&b[..]).unwrap();
    assert_eq!(r.summary().statistics.as_ref().unwrap().message_count, 1);
}

struct FailAfter {
    left: usize,
    inner: Vec<u8>,
}
impl std::io::Write for FailAfter {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        if b.len() > self.left {
            return Err(std::io::Error::other("disk full"));
        }
        self.left -= b.len();
        self.inner.extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn failed_write_poisons_finish_twice_is_harmless_drop_finishes() {
    let mut w = Writer::new(
        FailAfter {
            left: 200,
            inner: Vec::new(),
        },
        opts(Compression::None, Some(64)),
    )
    .unwrap();
    let c = w.add_channel(0, "/t", "cdr", &Default::default()).unwrap();
    let h = MessageHeader {
        channel_id: c,
        sequence: 0,
        log_time: 1,
        publish_time: 1,
    };
    let mut failed = false;
    for _ in 0..20 {
        if w.write_message(&h, &[7u8; 50], &[]).is_err() {
            failed = true;
            break;
        }
    }
    assert!(failed);
    assert!(matches!(
        w.write_message(&h, b"x", &[]),
        Err(McapError::Poisoned)
    ));
    assert!(matches!(
        w.add_channel(0, "/u", "cdr", &Default::default()),
        Err(McapError::Poisoned)
    ));
    assert!(matches!(w.finish(), Err(McapError::Poisoned)));

    let mut w = Writer::new(Vec::new(), WriteOptions::default()).unwrap();
    w.finish().unwrap();
    w.finish().unwrap();
    assert!(matches!(
        w.write_metadata("m", &Default::default()),
        Err(McapError::Finished)
    ));

    // Drop finishes: a file written through a shared buffer is complete after the drop.
    #[derive(Clone, Default)]
    struct Shared(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);
    impl std::io::Write for Shared {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let buf = Shared::default();
    {
        let mut w = Writer::new(buf.clone(), WriteOptions::default()).unwrap();
        let c = w.add_channel(0, "/t", "cdr", &Default::default()).unwrap();
        w.write_message(
            &MessageHeader {
                channel_id: c,
                sequence: 0,
                log_time: 1,
                publish_time: 1,
            },
            b"x",
            &[],
        )
        .unwrap();
    }
    let bytes = buf.0.lock().unwrap().clone();
    let r = IndexedReader::open(&bytes[..]).unwrap();
    assert_eq!(r.summary().statistics.as_ref().unwrap().message_count, 1);
}

#[test]
fn every_field_encoding_round_trips() {
    let vals = [
        FieldValue::Bool(true),
        FieldValue::Int8(-3),
        FieldValue::Int16(-300),
        FieldValue::Int32(-70000),
        FieldValue::Int64(-5),
        FieldValue::Uint8(3),
        FieldValue::Uint16(300),
        FieldValue::Uint32(70000),
        FieldValue::Uint64(u64::MAX - 1),
        FieldValue::Float16(0x3C00),
        FieldValue::Float32(1.5),
        FieldValue::Float64(-2.25),
        FieldValue::Timestamp(42),
        FieldValue::String("héllo".into()),
        FieldValue::Bytes(vec![0, 1, 2, 255]),
    ];
    for chunk in [Some(1 << 16), None] {
        let mut w = Writer::new(Vec::new(), opts(Compression::Lz4, chunk)).unwrap();
        let c = w.add_channel(0, "/t", "cdr", &Default::default()).unwrap();
        let mut fs = Vec::new();
        for v in &vals {
            let e = v.encoding().unwrap();
            let id = w.add_field(e.name(), e, e.indexable()).unwrap();
            fs.push((id, v.clone()));
        }
        w.write_message(
            &MessageHeader {
                channel_id: c,
                sequence: 1,
                log_time: 10,
                publish_time: 10,
            },
            b"p",
            &fs,
        )
        .unwrap();
        let b = w.into_inner().unwrap();
        let got = all_messages(&b, &Query::default());
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].fields, fs);
        assert_eq!(
            got[0].publish_time, 10,
            "no publish_time field: falls back to log_time"
        );
        let ids: BTreeSet<u16> = got[0].fields.iter().map(|f| f.0).collect();
        assert_eq!(ids.len(), vals.len());
    }
}
