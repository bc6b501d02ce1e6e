//! Seeking by an indexed field value touches only candidate chunks (issue 4 item 2), and the
//! summary read is all `info` needs: both measured by counting the bytes read.

mod common;

use common::*;
use tracer_mcap::*;

#[test]
fn field_seek_reads_only_candidate_chunks_and_their_field_index() {
    for c in [Compression::None, Compression::Zstd] {
        let s = sample_file(opts(c, Some(2_000)), 400);
        let src = Counting::new(&s.bytes[..]);
        let r = IndexedReader::open(&src).unwrap();
        let summary_bytes = src.bytes_read();
        assert!(
            summary_bytes < s.bytes.len() as u64 / 4,
            "summary read {summary_bytes} of {}",
            s.bytes.len()
        );
        let chunks = r.summary().chunk_indexes.clone();
        assert!(chunks.len() > 10);
        // sensor_time = 500_000 + 3 * log_time; pick the values of messages 200..210 on /chatter.
        let want: Vec<&(String, u64, u64, Vec<u8>)> = s
            .sent
            .iter()
            .filter(|x| x.0 == "/chatter")
            .skip(200)
            .take(10)
            .collect();
        let (lo, hi) = (want[0].2, want[9].2);
        src.reset();
        let q = Query {
            topics: Some(vec!["/chatter".into()]),
            field: Some(FieldRange {
                name: "sensor_time".into(),
                min: Some(FieldValue::Timestamp(lo)),
                max: Some(FieldValue::Timestamp(hi)),
            }),
            ..Default::default()
        };
        let mut stream = r.messages(&q).unwrap();
        let got: Vec<Message> = stream.by_ref().map(|m| m.unwrap()).collect();
        assert_eq!(got.len(), 10, "{c:?}");
        assert!(got
            .iter()
            .zip(&want)
            .all(|(m, w)| m.log_time == w.1 && m.data == w.3));
        let read = src.bytes_read();
        let candidates: Vec<&ChunkIndex> = chunks
            .iter()
            .filter(|ci| {
                r.summary().field_chunk_indexes.iter().any(|f| {
                    f.chunk_start_offset == ci.chunk_start_offset
                        && f.max_value >= lo
                        && f.min_value <= hi
                })
            })
            .collect();
        assert!(candidates.len() <= 3, "candidates {}", candidates.len());
        let budget: u64 = candidates
            .iter()
            .map(|ci| ci.chunk_length + ci.message_index_length)
            .sum();
        assert!(
            read <= budget,
            "{c:?}: read {read} bytes, candidate chunks + indexes are {budget}"
        );
        assert!(
            read < s.bytes.len() as u64 / 10,
            "{c:?}: read {read} of {}",
            s.bytes.len()
        );
        assert_eq!(stream.chunks_read(), candidates.len() as u64);
    }
}

#[test]
fn summary_only_reads_for_info() {
    let s = sample_file(opts(Compression::Zstd, Some(2_000)), 400);
    let src = Counting::new(&s.bytes[..]);
    let r = IndexedReader::open(&src).unwrap();
    let sum = r.summary();
    // magic + header record + footer tail + summary: nothing from the chunks.
    let header_len =
        9 + 8 + "ros2".len() as u64 + sum.header.as_ref().unwrap().library.len() as u64;
    assert_eq!(src.bytes_read(), 8 + header_len + 37 + sum.summary_len);
}

#[test]
fn unindexed_field_range_still_filters_by_scanning() {
    let s = sample_file(opts(Compression::Lz4, Some(2_000)), 50);
    let r = IndexedReader::open(&s.bytes[..]).unwrap();
    let q = Query {
        field: Some(FieldRange {
            name: "publish_time".into(),
            min: Some(FieldValue::Timestamp(1_100)),
            max: Some(FieldValue::Timestamp(1_200)),
        }),
        ..Default::default()
    };
    let got: Vec<Message> = r.messages(&q).unwrap().map(|m| m.unwrap()).collect();
    let want = s
        .sent
        .iter()
        .filter(|x| (1_100..=1_200).contains(&(x.1 - 1)))
        .count();
    assert_eq!(got.len(), want);
    assert!(got
        .iter()
        .all(|m| (1_100..=1_200).contains(&m.publish_time)));
    assert!(
        r.messages(&Query {
            field: Some(FieldRange {
                name: "route".into(),
                min: None,
                max: None
            }),
            ..Default::default()
        })
        .is_err(),
        "string fields are not seekable"
    );
}
