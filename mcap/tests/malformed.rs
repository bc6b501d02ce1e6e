//! Truncated, corrupt and foreign input (issue 4 item 2): unknown opcodes are skipped, a
//! truncated file gives an error naming the offset after yielding what is readable, and no
//! input makes the reader panic (exercise_read over random and mutated bytes).

mod common;

use common::*;
use tracer_mcap::codec;
use tracer_mcap::*;

fn linear_messages(bytes: &[u8]) -> (usize, Option<McapError>, Vec<String>) {
    let mut n = 0;
    let mut warnings = Vec::new();
    for it in LinearReader::new(bytes, ReadOptions::default()).unwrap() {
        match it {
            Ok(Item::Message(_)) => n += 1,
            Ok(Item::Warning(w)) => warnings.push(w),
            Ok(_) => {}
            Err(e) => return (n, Some(e), warnings),
        }
    }
    (n, None, warnings)
}

#[test]
fn truncated_file_reads_complete_chunks_and_names_the_offset() {
    let s = sample_file(opts(Compression::Zstd, Some(600)), 40);
    let r = IndexedReader::open(&s.bytes[..]).unwrap();
    let chunks = r.summary().chunk_indexes.clone();
    // Cut in the middle of the third chunk: the first two chunks' messages are all read.
    let third = &chunks[2];
    let cut = (third.chunk_start_offset + third.chunk_length / 2) as usize;
    let bytes = &s.bytes[..cut];
    let (n, err, _) = linear_messages(bytes);
    let before: usize = chunks[..2]
        .iter()
        .map(|c| c.message_index_offsets.len())
        .sum::<usize>()
        .max(1);
    assert!(n >= before, "read {n}");
    match err {
        Some(McapError::Truncated { offset, .. }) => assert_eq!(offset, third.chunk_start_offset),
        other => panic!("expected Truncated at the third chunk, got {other:?}"),
    }
    // The indexed reader refuses the file with an error that names the offset.
    let e = IndexedReader::open(bytes).err().unwrap();
    assert!(e.to_string().contains("offset"), "{e}");
}

#[test]
fn every_truncation_point_is_an_error_or_a_warning_never_a_panic() {
    let s = sample_file(opts(Compression::Lz4, Some(200)), 6);
    let summary_start = IndexedReader::open(&s.bytes[..])
        .unwrap()
        .summary()
        .footer
        .unwrap()
        .summary_start as usize;
    for cut in 0..s.bytes.len() {
        let b = &s.bytes[..cut];
        if (8..summary_start).contains(&cut) {
            // Before the end of Data End the reader must say the file is incomplete.
            let (_, err, warnings) = linear_messages(b);
            assert!(err.is_some() || !warnings.is_empty(), "cut {cut}");
        }
        if cut % 9 == 0 {
            exercise_read(b);
        }
    }
}

#[test]
fn unknown_opcodes_are_skipped_in_data_section_chunks_and_summary() {
    // Hand-assemble: magic, header, private record 0x80, channel, chunk containing an
    // unknown 0x7F record between messages, data end, summary with an unknown record.
    let mut f = MAGIC.to_vec();
    codec::header(
        &mut f,
        &Header {
            profile: "ros2".into(),
            library: "test".into(),
        },
    );
    codec::put_record(&mut f, 0x80, |o| o.extend_from_slice(b"private"));
    let ch = Channel {
        id: 1,
        schema_id: 0,
        topic: "/t".into(),
        message_encoding: "cdr".into(),
        metadata: Default::default(),
    };
    codec::channel(&mut f, &ch);
    let mut recs = Vec::new();
    codec::message(
        &mut recs,
        &MessageHeader {
            channel_id: 1,
            sequence: 0,
            log_time: 1,
            publish_time: 1,
        },
        b"a",
    );
    codec::put_record(&mut recs, 0x7F, |o| o.extend_from_slice(&[1, 2, 3]));
    codec::message(
        &mut recs,
        &MessageHeader {
            channel_id: 1,
            sequence: 1,
            log_time: 2,
            publish_time: 2,
        },
        b"b",
    );
    let chunk_at = f.len() as u64;
    codec::chunk(
        &mut f,
        &ChunkHeader {
            message_start_time: 1,
            message_end_time: 2,
            uncompressed_size: recs.len() as u64,
            uncompressed_crc: crc32fast::hash(&recs),
            compression: "".into(),
            compressed_size: 0,
        },
        &recs,
    );
    let chunk_len = f.len() as u64 - chunk_at;
    codec::put_record(&mut f, 0x7E, |o| o.extend_from_slice(b"after the chunk"));
    codec::data_end(
        &mut f,
        &DataEnd {
            data_section_crc: 0,
        },
    );
    let summary_start = f.len() as u64;
    codec::channel(&mut f, &ch);
    codec::put_record(&mut f, 0x7D, |o| {
        o.extend_from_slice(b"future summary record")
    });
    codec::chunk_index(
        &mut f,
        &ChunkIndex {
            message_start_time: 1,
            message_end_time: 2,
            chunk_start_offset: chunk_at,
            chunk_length: chunk_len,
            message_index_offsets: Default::default(),
            message_index_length: 0,
            compression: "".into(),
            compressed_size: recs.len() as u64,
            uncompressed_size: recs.len() as u64,
        },
    );
    codec::footer(
        &mut f,
        &Footer {
            summary_start,
            summary_offset_start: 0,
            summary_crc: 0,
        },
    );
    f.extend_from_slice(&MAGIC);

    let (n, err, _) = linear_messages(&f);
    assert_eq!((n, err.is_none()), (2, true));
    let r = IndexedReader::open(&f[..]).unwrap();
    let got: Vec<Vec<u8>> = r
        .messages(&Query::default())
        .unwrap()
        .map(|m| m.unwrap().data)
        .collect();
    assert_eq!(got, vec![b"a".to_vec(), b"b".to_vec()]);
}

#[test]
fn sentinel_without_fields_record_warns_spec_2_12() {
    // A message with the sentinel and no Message Fields after it (an old tool dropped it).
    let mut f = MAGIC.to_vec();
    codec::header(
        &mut f,
        &Header {
            profile: "".into(),
            library: "test".into(),
        },
    );
    codec::channel(
        &mut f,
        &Channel {
            id: 1,
            schema_id: 0,
            topic: "/t".into(),
            message_encoding: "cdr".into(),
            metadata: Default::default(),
        },
    );
    codec::message(
        &mut f,
        &MessageHeader {
            channel_id: 1,
            sequence: 0,
            log_time: 5,
            publish_time: SENTINEL,
        },
        b"x",
    );
    codec::message(
        &mut f,
        &MessageHeader {
            channel_id: 1,
            sequence: 1,
            log_time: 6,
            publish_time: 6,
        },
        b"y",
    );
    codec::message_fields(
        &mut f,
        &MessageFields {
            channel_id: 1,
            entries: vec![],
        },
    );
    codec::data_end(
        &mut f,
        &DataEnd {
            data_section_crc: 0,
        },
    );
    codec::footer(
        &mut f,
        &Footer {
            summary_start: 0,
            summary_offset_start: 0,
            summary_crc: 0,
        },
    );
    f.extend_from_slice(&MAGIC);
    let items: Vec<Item> = LinearReader::new(&f[..], ReadOptions::default())
        .unwrap()
        .map(|i| i.unwrap())
        .collect();
    let warnings: Vec<&String> = items
        .iter()
        .filter_map(|i| {
            if let Item::Warning(w) = i {
                Some(w)
            } else {
                None
            }
        })
        .collect();
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("sentinel") && w.contains("no Message Fields")),
        "{warnings:?}"
    );
    assert!(
        warnings.iter().any(|w| w.contains("without a sentinel")),
        "orphan fields record: {warnings:?}"
    );
    let msgs: Vec<&Message> = items
        .iter()
        .filter_map(|i| {
            if let Item::Message(m) = i {
                Some(m)
            } else {
                None
            }
        })
        .collect();
    assert_eq!(msgs[0].publish_time, 5, "falls back to log_time");
    // Without a summary the indexed reader reads linearly and still finds both messages.
    let r = IndexedReader::open(&f[..]).unwrap();
    let mut s = r.messages(&Query::default()).unwrap();
    let n = s.by_ref().count();
    assert_eq!(n, 2);
    assert!(!s.take_warnings().is_empty());
}

#[test]
fn corrupt_chunk_crc_names_the_chunk_offset() {
    let s = sample_file(opts(Compression::None, Some(300)), 10);
    let r = IndexedReader::open(&s.bytes[..]).unwrap();
    let ci = r.summary().chunk_indexes[1].clone();
    let mut bad = s.bytes.clone();
    bad[(ci.chunk_start_offset + ci.chunk_length - 3) as usize] ^= 0x55;
    let r = IndexedReader::open(&bad[..]).unwrap();
    let q = Query {
        strategy: ScanStrategy::Full,
        ..Default::default()
    };
    let err = r.messages(&q).unwrap().find_map(|m| m.err()).unwrap();
    match err {
        McapError::Crc {
            offset,
            what: "Chunk",
            ..
        } => assert_eq!(offset, ci.chunk_start_offset),
        e => panic!("{e}"),
    }
}

#[test]
fn bad_magic_and_tiny_inputs_are_clear_errors() {
    assert!(matches!(
        IndexedReader::open(&b"not an mcap file at all, really not"[..]),
        Err(McapError::BadMagic { offset: 0 })
    ));
    assert!(matches!(
        IndexedReader::open(&b"\x89MC"[..]),
        Err(McapError::Truncated { .. })
    ));
    assert!(matches!(
        LinearReader::new(&b""[..], ReadOptions::default())
            .unwrap()
            .next(),
        Some(Err(McapError::Truncated { .. }))
    ));
}

/// xorshift64*: deterministic inputs without a dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

#[test]
fn exercise_read_survives_random_and_mutated_inputs() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let seeds: Vec<Vec<u8>> = [
        opts(Compression::Zstd, Some(300)),
        opts(Compression::Lz4, Some(300)),
        opts(Compression::None, Some(300)),
        opts(Compression::None, None),
    ]
    .into_iter()
    .map(|o| sample_file(o, 8).bytes)
    .collect();
    for i in 0..600 {
        let mut b = seeds[i % seeds.len()].clone();
        let flips = 1 + (rng.next() % 8) as usize;
        for _ in 0..flips {
            let at = (rng.next() % b.len() as u64) as usize;
            match rng.next() % 4 {
                0 => b[at] ^= 1 << (rng.next() % 8),
                1 => b[at] = 0xFF,
                2 => b[at] = 0,
                _ => {
                    let end = (at + 1 + (rng.next() % 16) as usize).min(b.len());
                    b.drain(at..end);
                }
            }
            if b.is_empty() {
                break;
            }
        }
        exercise_read(&b);
    }
    for _ in 0..300 {
        let n = (rng.next() % 512) as usize;
        let mut b: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
        if rng.next().is_multiple_of(2) && b.len() > 16 {
            b[..8].copy_from_slice(&MAGIC);
        }
        exercise_read(&b);
    }
}

#[test]
fn fuzz_regressions_stay_fixed() {
    // Inputs the fuzzer once crashed on (mcap/fuzz, target `read`).
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz_regressions");
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        exercise_read(&std::fs::read(e.unwrap().path()).unwrap());
        n += 1;
    }
    assert!(n > 0);
}
