//! Measurements for docs/mcap.md (issue 4 "How it is shown"), printed as numbers and ratios:
//!
//! 1. writer throughput against writing the same payload bytes raw to the same disk;
//! 2. `info` on a 1 GiB file: bytes read to get the whole summary;
//! 3. a field seek on the same file: bytes read against the candidate chunks' size.
//!
//! `measure <dir>`: writes its files in `<dir>` and deletes them at the end.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::Instant;

use tracer_mcap::*;

/// Payload bytes that compress like sensor data: a counter pattern plus noise.
fn payload(i: u64, len: usize, rng: &mut u64) -> Vec<u8> {
    let mut v = Vec::with_capacity(len);
    while v.len() < len {
        *rng ^= *rng << 13;
        *rng ^= *rng >> 7;
        *rng ^= *rng << 17;
        v.extend_from_slice(&(i ^ (*rng & 0xFF)).to_le_bytes());
    }
    v.truncate(len);
    v
}

fn write_mcap(path: &Path, c: Compression, n: u64, len: usize, fields: bool) -> Result<f64> {
    let mut rng = 0x1234_5678u64;
    let payloads: Vec<Vec<u8>> = (0..64).map(|i| payload(i, len, &mut rng)).collect();
    let t0 = Instant::now();
    let mut w = Writer::new(
        BufWriter::with_capacity(1 << 20, File::create(path)?),
        WriteOptions {
            compression: c,
            ..Default::default()
        },
    )?;
    let ch = w.add_channel(0, "/bench", "cdr", &Default::default())?;
    let st = w.add_field("sensor_time", FieldEncoding::Timestamp, true)?;
    for i in 0..n {
        let h = MessageHeader {
            channel_id: ch,
            sequence: i as u32,
            log_time: 1_000_000 + i * 1000,
            publish_time: 1_000_000 + i * 1000,
        };
        let f = if fields {
            vec![(st, FieldValue::Timestamp(5_000_000 + i * 1000))]
        } else {
            vec![]
        };
        w.write_message(&h, &payloads[(i % 64) as usize], &f)?;
    }
    let f = w.into_inner()?;
    f.into_inner()
        .map_err(|e| McapError::Io(e.into_error()))?
        .sync_all()?;
    Ok(t0.elapsed().as_secs_f64())
}

fn write_raw(path: &Path, n: u64, len: usize) -> std::io::Result<f64> {
    let mut rng = 0x1234_5678u64;
    let payloads: Vec<Vec<u8>> = (0..64).map(|i| payload(i, len, &mut rng)).collect();
    let t0 = Instant::now();
    let mut f = BufWriter::with_capacity(1 << 20, File::create(path)?);
    for i in 0..n {
        f.write_all(&payloads[(i % 64) as usize])?;
    }
    f.into_inner().map_err(|e| e.into_error())?.sync_all()?;
    Ok(t0.elapsed().as_secs_f64())
}

fn main() -> Result<()> {
    let dir = std::env::args().nth(1).unwrap_or_else(|| "/tmp".into());
    let dir = Path::new(&dir);
    let raw = dir.join("measure_raw.bin");
    let mc = dir.join("measure.mcap");
    println!("## writer throughput (each run ends with fsync)");
    let sizes: &[(usize, u64)] = if std::env::var_os("MEASURE_KEEP").is_some() {
        &[]
    } else {
        &[(64, 2_000_000), (4096, 65_536), (1 << 20, 256)]
    };
    for &(len, n) in sizes {
        let bytes = (len as u64 * n) as f64;
        let mut traw = f64::MAX;
        for _ in 0..3 {
            traw = traw.min(write_raw(&raw, n, len)?);
        }
        println!(
            "payload {len:>8} B x {n:>8}: raw {:>7.0} MiB/s",
            bytes / traw / 1048576.0
        );
        for c in [Compression::None, Compression::Lz4, Compression::Zstd] {
            for fields in [false, true] {
                // Best of three: the machine is shared, the least disturbed run counts.
                let mut t = f64::MAX;
                for _ in 0..3 {
                    t = t.min(write_mcap(&mc, c, n, len, fields)?);
                }
                let size = std::fs::metadata(&mc)?.len();
                println!(
                    "    mcap {:<5} fields={fields:<5}: {:>7.0} MiB/s of payload, {:>9.0} msg/s, {:.2}x raw time, file {:.1}% of payload",
                    if c.name().is_empty() { "none" } else { c.name() },
                    bytes / t / 1048576.0,
                    n as f64 / t,
                    t / traw,
                    100.0 * size as f64 / bytes
                );
            }
        }
    }
    let _ = std::fs::remove_file(&raw);

    println!("## Recorder::write cost on the publishing thread (writer thread draining to a file)");
    for (len, n) in [(64usize, 1_000_000u64), (1 << 20, 2_000)] {
        let path = dir.join("measure_rec.mcap");
        let rec = Recorder::create(&path, RecorderOptions::default())?;
        let ch = rec.add_channel(0, "/bench", "cdr", &Default::default())?;
        let st = rec.add_field("sensor_time", FieldEncoding::Timestamp, true)?;
        let mut rng = 7u64;
        let proto = payload(1, len, &mut rng);
        let mut lat: Vec<u64> = Vec::with_capacity(n as usize);
        let mut queued = 0u64;
        for i in 0..n {
            // The payload is built before timing: the caller already owns its CDR bytes.
            let data = proto.clone();
            let t0 = Instant::now();
            let ok = rec.write(
                ch,
                i,
                i,
                i as u32,
                data,
                vec![(st, FieldValue::Timestamp(i))],
            );
            lat.push(t0.elapsed().as_nanos() as u64);
            queued += ok as u64;
        }
        let report = rec.finish();
        lat.sort_unstable();
        let mean = lat.iter().sum::<u64>() as f64 / n as f64;
        println!(
            "payload {len:>8} B x {n:>7}: write() mean {mean:.0} ns, p50 {} ns, p99 {} ns, max {} us; queued {queued}, written {}, dropped {}",
            lat[lat.len() / 2],
            lat[lat.len() * 99 / 100],
            lat[lat.len() - 1] / 1000,
            report.written,
            report.dropped
        );
        let _ = std::fs::remove_file(&path);
    }

    println!("## 1 GiB file: info and field seek");
    let big = dir.join("measure_1gib.mcap");
    let n = (1u64 << 30) / 4096;
    let t = write_mcap(&big, Compression::None, n, 4096 - 31 - 30, true)?;
    let size = std::fs::metadata(&big)?.len();
    println!("wrote {size} bytes ({n} messages, 4 MiB chunks, sensor_time indexed) in {t:.1}s");
    let src = Counting::new(File::open(&big)?);
    let r = IndexedReader::open(&src)?;
    let info_bytes = src.bytes_read();
    println!(
        "info: read {info_bytes} bytes in {} reads = {:.5}% of the file (summary section {} bytes, {} chunk indexes)",
        src.reads(),
        100.0 * info_bytes as f64 / size as f64,
        r.summary().summary_len,
        r.summary().chunk_indexes.len()
    );
    // Seek to 100 messages in the middle of the file by sensor_time.
    let mid = 5_000_000 + (n / 2) * 1000;
    for (name, lo, hi) in [
        ("100 messages", mid, mid + 99 * 1000),
        ("1 message", mid, mid),
    ] {
        src.reset();
        let q = Query {
            field: Some(FieldRange {
                name: "sensor_time".into(),
                min: Some(FieldValue::Timestamp(lo)),
                max: Some(FieldValue::Timestamp(hi)),
            }),
            ..Default::default()
        };
        let mut s = r.messages(&q)?;
        let got = s.by_ref().filter(|m| m.is_ok()).count();
        let chunk_len = r.summary().chunk_indexes[0].chunk_length;
        println!(
            "field seek ({name}): {got} messages from {} chunk(s); read {} bytes in {} reads = {:.4}% of the file, {:.3}x one chunk",
            s.chunks_read(),
            src.bytes_read(),
            src.reads(),
            100.0 * src.bytes_read() as f64 / size as f64,
            src.bytes_read() as f64 / chunk_len as f64
        );
    }
    // Same seek on a zstd file: the candidate chunk must be read whole to decompress it.
    drop(r);
    if std::env::var_os("MEASURE_KEEP").is_some() {
        // Leaves the uncompressed 1 GiB file for `tracer info --io-stats` (caller deletes it).
        let keep = dir.join("measure_1gib_keep.mcap");
        std::fs::rename(&big, &keep)?;
        println!("kept {}", keep.display());
        return Ok(());
    }
    std::fs::remove_file(&big)?;
    let t = write_mcap(&big, Compression::Zstd, n, 4096 - 31 - 30, true)?;
    let size = std::fs::metadata(&big)?.len();
    let src = Counting::new(File::open(&big)?);
    let r = IndexedReader::open(&src)?;
    let info_bytes = src.bytes_read();
    src.reset();
    let q = Query {
        field: Some(FieldRange {
            name: "sensor_time".into(),
            min: Some(FieldValue::Timestamp(mid)),
            max: Some(FieldValue::Timestamp(mid + 99 * 1000)),
        }),
        ..Default::default()
    };
    let mut s = r.messages(&q)?;
    let got = s.by_ref().filter(|m| m.is_ok()).count();
    let cand: u64 = r
        .summary()
        .chunk_indexes
        .iter()
        .map(|c| c.chunk_length)
        .max()
        .unwrap_or(0);
    println!(
        "zstd file ({size} bytes of 1 GiB payload, written in {t:.1}s): info read {info_bytes} bytes; field seek {got} messages from {} chunk(s), read {} bytes = {:.4}% of the file ({:.2}x the largest chunk)",
        s.chunks_read(),
        src.bytes_read(),
        100.0 * src.bytes_read() as f64 / size as f64,
        src.bytes_read() as f64 / cand as f64
    );
    std::fs::remove_file(&big)?;
    let _ = std::fs::remove_file(&mc);
    Ok(())
}
