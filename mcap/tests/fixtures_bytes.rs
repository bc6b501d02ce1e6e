//! Byte-level fixtures computed by hand from the layouts in shared/spec/mcap.md (1.3, 2.3,
//! 2.5): the encoder must produce exactly these bytes and the decoder must read them back.

use std::collections::BTreeMap;

use tracer_mcap::codec;
use tracer_mcap::field::{decode_entries, FieldDef, FieldTable};
use tracer_mcap::*;

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.split_whitespace().collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

#[test]
fn field_record_with_flags_byte_spec_2_0() {
    // Spec 2.5 worked example plus our flags byte (2.0): content 2+16+13+1+1 = 33 = 0x21.
    let f = Field {
        id: 1,
        name: "publish_time".into(),
        encoding: "timestamp".into(),
        length: 8,
        flags: Some(1),
    };
    let mut out = Vec::new();
    codec::field(&mut out, &f);
    let mut want = hex("10 21 00 00 00 00 00 00 00 01 00 0C 00 00 00");
    want.extend_from_slice(b"publish_time");
    want.extend_from_slice(&hex("09 00 00 00"));
    want.extend_from_slice(b"timestamp");
    want.extend_from_slice(&hex("08 01"));
    assert_eq!(out, want);
    assert_eq!(codec::dec_field(&out[9..], 9).unwrap(), f);
    assert!(f.indexed());
}

#[test]
fn field_record_without_flags_final_pr_revision_is_read() {
    // The final PR revision (de4a98a3) has no flags byte: the 0x20-byte example of spec 2.5.
    let mut content = hex("01 00 0C 00 00 00");
    content.extend_from_slice(b"publish_time");
    content.extend_from_slice(&hex("09 00 00 00"));
    content.extend_from_slice(b"timestamp");
    content.push(8);
    assert_eq!(content.len(), 0x20);
    let f = codec::dec_field(&content, 0).unwrap();
    assert_eq!(f.flags, None);
    assert!(!f.indexed());
}

#[test]
fn message_fields_worked_example_spec_2_5() {
    let mut table = FieldTable::new();
    table.insert(
        1,
        FieldDef::new(Field {
            id: 1,
            name: "publish_time".into(),
            encoding: "timestamp".into(),
            length: 8,
            flags: Some(0),
        }),
    );
    table.insert(
        2,
        FieldDef::new(Field {
            id: 2,
            name: "note".into(),
            encoding: "string".into(),
            length: 0x80,
            flags: Some(0),
        }),
    );
    let entries = field::encode_entries(&[
        (2, FieldValue::String("ab".into())),
        (1, FieldValue::Timestamp(100)),
    ]);
    let mut out = Vec::new();
    codec::message_fields(
        &mut out,
        &MessageFields {
            channel_id: 3,
            entries,
        },
    );
    let want = hex("11 18 00 00 00 00 00 00 00  03 00  12 00 00 00
         01 00 64 00 00 00 00 00 00 00  02 00 02 00 00 00 61 62");
    assert_eq!(out, want, "D5: entries in ascending field id order");
    let mf = codec::dec_message_fields(&out[9..], 9).unwrap();
    let mut w = Vec::new();
    let vals = decode_entries(&mf.entries, &table, &mut w);
    assert!(w.is_empty());
    assert_eq!(
        vals,
        vec![
            (1, FieldValue::Timestamp(100)),
            (2, FieldValue::String("ab".into()))
        ]
    );
}

#[test]
fn message_footer_data_end_hand_bytes() {
    let mut out = Vec::new();
    codec::message(
        &mut out,
        &MessageHeader {
            channel_id: 3,
            sequence: 7,
            log_time: 0x0102,
            publish_time: SENTINEL,
        },
        b"hi",
    );
    let want = hex("05 18 00 00 00 00 00 00 00 03 00 07 00 00 00 02 01 00 00 00 00 00 00 FF FF FF FF FF FF FF FF 68 69");
    assert_eq!(out, want);
    let mut f = Vec::new();
    codec::footer(
        &mut f,
        &Footer {
            summary_start: 0x10,
            summary_offset_start: 0x20,
            summary_crc: 0xAABBCCDD,
        },
    );
    assert_eq!(f, hex("02 14 00 00 00 00 00 00 00 10 00 00 00 00 00 00 00 20 00 00 00 00 00 00 00 DD CC BB AA"));
    let mut d = Vec::new();
    codec::data_end(
        &mut d,
        &DataEnd {
            data_section_crc: 1,
        },
    );
    assert_eq!(d, hex("0F 04 00 00 00 00 00 00 00 01 00 00 00"));
}

#[test]
fn channel_and_field_index_hand_bytes() {
    let mut md = BTreeMap::new();
    md.insert("k".to_string(), "v".to_string());
    let mut out = Vec::new();
    codec::channel(
        &mut out,
        &Channel {
            id: 1,
            schema_id: 2,
            topic: "/a".into(),
            message_encoding: "cdr".into(),
            metadata: md,
        },
    );
    // content: id 2 + schema 2 + topic 4+2 + encoding 4+3 + map 4+(4+1+4+1) = 31 = 0x1F
    let want = hex("04 1F 00 00 00 00 00 00 00 01 00 02 00 02 00 00 00 2F 61 03 00 00 00 63 64 72 0A 00 00 00 01 00 00 00 6B 01 00 00 00 76");
    assert_eq!(out, want);
    let mut fi = Vec::new();
    codec::field_index(
        &mut fi,
        &FieldIndex {
            channel_id: 1,
            field_id: 2,
            records: vec![(5, 9)],
        },
    );
    assert_eq!(fi, hex("12 18 00 00 00 00 00 00 00 01 00 02 00 10 00 00 00 05 00 00 00 00 00 00 00 09 00 00 00 00 00 00 00"));
    assert_eq!(
        codec::dec_field_index(&fi[9..], 9).unwrap().records,
        vec![(5, 9)]
    );
}

#[test]
fn attachment_crc_covers_log_time_through_data_spec_1_5() {
    let a = Attachment {
        log_time: 1,
        create_time: 2,
        name: "n".into(),
        media_type: "m".into(),
        data: b"xyz".to_vec(),
    };
    let mut out = Vec::new();
    codec::attachment(&mut out, &a);
    let content = &out[9..];
    let crc = u32::from_le_bytes(content[content.len() - 4..].try_into().unwrap());
    assert_eq!(crc, crc32fast::hash(&content[..content.len() - 4]));
    assert_eq!(codec::dec_attachment(content, 9).unwrap(), a);
    let mut bad = content.to_vec();
    bad[20] ^= 1;
    assert!(matches!(
        codec::dec_attachment(&bad, 9),
        Err(McapError::Crc { .. })
    ));
}

#[test]
fn every_record_round_trips() {
    let mut m = BTreeMap::new();
    m.insert(3u16, 99u64);
    let mut smap = BTreeMap::new();
    smap.insert("a".to_string(), "b".to_string());
    let ci = ChunkIndex {
        message_start_time: 1,
        message_end_time: 2,
        chunk_start_offset: 3,
        chunk_length: 4,
        message_index_offsets: m.clone(),
        message_index_length: 5,
        compression: "zstd".into(),
        compressed_size: 6,
        uncompressed_size: 7,
    };
    let mut o = Vec::new();
    codec::chunk_index(&mut o, &ci);
    assert_eq!(codec::dec_chunk_index(&o[9..], 9).unwrap(), ci);
    let h = Header {
        profile: "ros2".into(),
        library: "x".into(),
    };
    let mut o = Vec::new();
    codec::header(&mut o, &h);
    assert_eq!(codec::dec_header(&o[9..], 9).unwrap(), h);
    let s = Schema {
        id: 1,
        name: "a/msg/B".into(),
        encoding: "ros2msg".into(),
        data: b"int32 x\n".to_vec(),
    };
    let mut o = Vec::new();
    codec::schema(&mut o, &s);
    assert_eq!(codec::dec_schema(&o[9..], 9).unwrap(), s);
    let mi = MessageIndex {
        channel_id: 2,
        records: vec![(1, 2), (3, 4)],
    };
    let mut o = Vec::new();
    codec::message_index(&mut o, &mi);
    assert_eq!(codec::dec_message_index(&o[9..], 9).unwrap(), mi);
    let ai = AttachmentIndex {
        offset: 1,
        length: 2,
        log_time: 3,
        create_time: SENTINEL,
        data_size: 5,
        name: "n".into(),
        media_type: "t".into(),
    };
    let mut o = Vec::new();
    codec::attachment_index(&mut o, &ai);
    assert_eq!(codec::dec_attachment_index(&o[9..], 9).unwrap(), ai);
    for bounds in [None, Some([(1u16, (2u64, 3u64))].into_iter().collect())] {
        let st = Statistics {
            message_count: 1,
            schema_count: 2,
            channel_count: 3,
            attachment_count: 4,
            metadata_count: 5,
            chunk_count: 6,
            message_start_time: 7,
            message_end_time: 8,
            channel_message_counts: m.clone(),
            field_value_bounds: bounds,
        };
        let mut o = Vec::new();
        codec::statistics(&mut o, &st);
        assert_eq!(codec::dec_statistics(&o[9..], 9).unwrap(), st);
    }
    let md = Metadata {
        name: "n".into(),
        metadata: smap,
    };
    let mut o = Vec::new();
    codec::metadata(&mut o, &md);
    assert_eq!(codec::dec_metadata(&o[9..], 9).unwrap(), md);
    let mdi = MetadataIndex {
        offset: 1,
        length: 2,
        name: "n".into(),
    };
    let mut o = Vec::new();
    codec::metadata_index(&mut o, &mdi);
    assert_eq!(codec::dec_metadata_index(&o[9..], 9).unwrap(), mdi);
    let so = SummaryOffset {
        group_opcode: 0x13,
        group_start: 1,
        group_length: 2,
    };
    let mut o = Vec::new();
    codec::summary_offset(&mut o, &so);
    assert_eq!(o.len(), 9 + 17);
    assert_eq!(codec::dec_summary_offset(&o[9..], 9).unwrap(), so);
    let fci = FieldChunkIndex {
        field_id: 1,
        chunk_start_offset: 2,
        min_value: 3,
        max_value: 4,
        message_index_offsets: m,
        message_index_length: 5,
    };
    let mut o = Vec::new();
    codec::field_chunk_index(&mut o, &fci);
    assert_eq!(codec::dec_field_chunk_index(&o[9..], 9).unwrap(), fci);
    let af = AttachmentFields {
        entries: vec![1, 0, 5],
    };
    let mut o = Vec::new();
    codec::attachment_fields(&mut o, &af);
    assert_eq!(o[0], ext_op::ATTACHMENT_FIELDS);
    assert_eq!(codec::dec_attachment_fields(&o[9..], 9).unwrap(), af);
    let ch = ChunkHeader {
        message_start_time: 1,
        message_end_time: 2,
        uncompressed_size: 3,
        uncompressed_crc: 4,
        compression: "".into(),
        compressed_size: 3,
    };
    let mut o = Vec::new();
    codec::chunk(&mut o, &ch, b"abc");
    let (h2, recs) = codec::dec_chunk(&o[9..], 9).unwrap();
    assert_eq!((h2, recs), (ch, &b"abc"[..]));
}

#[test]
fn records_with_trailing_bytes_are_read_spec_1_1_pad() {
    let s = Schema {
        id: 1,
        name: "a".into(),
        encoding: "b".into(),
        data: vec![1],
    };
    let mut o = Vec::new();
    codec::schema(&mut o, &s);
    let mut content = o[9..].to_vec();
    content.extend_from_slice(&[0xEE; 5]);
    assert_eq!(codec::dec_schema(&content, 9).unwrap(), s);
}

#[test]
fn float_order_is_total_order_d9() {
    use std::cmp::Ordering::*;
    let e = FieldEncoding::Float64;
    assert_eq!(e.compare_raw((-1.0f64).to_bits(), 1.0f64.to_bits()), Less);
    assert_eq!(e.compare_raw((-0.0f64).to_bits(), 0.0f64.to_bits()), Less);
    assert_eq!(FieldEncoding::Int64.compare_raw((-5i64) as u64, 3), Less);
    assert_eq!(
        FieldEncoding::Uint64.compare_raw((-5i64) as u64, 3),
        Greater
    );
}

#[test]
fn direct_message_fields_encoding_matches_sorted_entries_d5() {
    let a = (3u16, FieldValue::Uint8(7));
    let b = (1u16, FieldValue::String("x".into()));
    let extra = (2u16, FieldValue::Timestamp(9));
    for (fields, extra) in [
        (vec![b.clone(), a.clone()], Some(extra.clone())),
        (vec![a.clone(), b.clone()], None),
        (vec![b.clone()], Some((5u16, FieldValue::Bool(true)))),
        (vec![], Some(extra.clone())),
    ] {
        let mut all = fields.clone();
        all.extend(extra.clone());
        let mut want = Vec::new();
        codec::message_fields(
            &mut want,
            &MessageFields {
                channel_id: 4,
                entries: field::encode_entries(&all),
            },
        );
        let mut got = Vec::new();
        codec::message_fields_from(&mut got, 4, &fields, extra.as_ref());
        assert_eq!(got, want);
    }
}
