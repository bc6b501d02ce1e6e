//! `exercise_read`: drives every read path over arbitrary bytes. The fuzz target and the
//! malformed-input tests call it; it must return (no panic, no hang) with bounded memory.

use crate::field::FieldValue;
use crate::linear::{LinearReader, ReadOptions};
use crate::reader::{FieldRange, IndexedReader, Query, ScanStrategy};

/// Work caps so one input cannot run for long: items per reader and messages per query.
const MAX_ITEMS: usize = 100_000;

pub fn exercise_read(data: &[u8]) {
    // Decompression and merging are capped relative to a fuzz input's size.
    let opts = ReadOptions {
        max_chunk_bytes: 4 << 20,
        verify_crc: true,
        max_cluster_bytes: 16 << 20,
    };
    if let Ok(lin) = LinearReader::new(data, opts) {
        for item in lin.take(MAX_ITEMS) {
            if item.is_err() {
                break;
            }
        }
    }
    // Recovery reads linearly and drives the writer with whatever it found; the result must
    // be a file the indexed reader opens.
    let mut out = Vec::new();
    let w = crate::writer::WriteOptions::default();
    if crate::recover::recover_with(data, &mut out, w, opts).is_ok() {
        assert!(
            IndexedReader::with_options(&out[..], opts).is_ok(),
            "recover wrote an unreadable file"
        );
    }
    let lenient = ReadOptions {
        verify_crc: false,
        ..opts
    };
    for o in [opts, lenient] {
        let Ok(r) = IndexedReader::with_options(data, o) else {
            continue;
        };
        for strategy in [ScanStrategy::Full, ScanStrategy::Index] {
            if let Ok(s) = r.messages(&Query {
                strategy,
                ..Default::default()
            }) {
                s.take(MAX_ITEMS).take_while(|m| m.is_ok()).for_each(drop);
            }
        }
        let topics: Vec<String> = r
            .summary()
            .channels
            .values()
            .take(1)
            .map(|c| c.topic.clone())
            .collect();
        if let Ok(s) = r.messages(&Query {
            topics: Some(topics),
            start: Some(1),
            end: Some(u64::MAX / 2),
            ..Default::default()
        }) {
            s.take(MAX_ITEMS).take_while(|m| m.is_ok()).for_each(drop);
        }
        let names: Vec<String> = r
            .summary()
            .fields
            .values()
            .take(4)
            .map(|d| d.record.name.clone())
            .collect();
        for name in names {
            let q = Query {
                field: Some(FieldRange {
                    name,
                    min: Some(FieldValue::Uint64(1)),
                    max: Some(FieldValue::Uint64(u64::MAX / 3)),
                }),
                ..Default::default()
            };
            if let Ok(s) = r.messages(&q) {
                s.take(MAX_ITEMS).take_while(|m| m.is_ok()).for_each(drop);
            }
        }
        for i in 0..r.summary().attachment_indexes.len().min(64) {
            let _ = r.attachment(i);
        }
        for i in 0..r.summary().metadata_indexes.len().min(64) {
            let _ = r.metadata(i);
        }
    }
}
