//! Chunk compression: "" (none), "lz4" (LZ4 *frame* format, spec 1.6), "zstd".

use std::io::{Read, Write};

use crate::error::{McapError, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Compression {
    None,
    Lz4,
    #[default]
    Zstd,
}

impl Compression {
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "",
            Compression::Lz4 => "lz4",
            Compression::Zstd => "zstd",
        }
    }
    pub fn from_name(s: &str) -> Option<Self> {
        match s {
            "" | "none" => Some(Compression::None),
            "lz4" => Some(Compression::Lz4),
            "zstd" => Some(Compression::Zstd),
            _ => None,
        }
    }

    pub fn compress(self, data: &[u8], out: &mut Vec<u8>) -> std::io::Result<()> {
        match self {
            Compression::None => out.extend_from_slice(data),
            Compression::Zstd => {
                // Level 1: recording must keep up with the publishers; ratio is secondary.
                let z = zstd::bulk::compress(data, 1)?;
                out.extend_from_slice(&z);
            }
            Compression::Lz4 => {
                let mut enc = lz4_flex::frame::FrameEncoder::new(std::mem::take(out));
                enc.write_all(data)?;
                *out = enc.finish().map_err(std::io::Error::other)?;
            }
        }
        Ok(())
    }
}

/// Decompresses a chunk's records, refusing to produce more than `expected` bytes (the
/// chunk's `uncompressed_size`), so a lying header cannot exhaust memory.
pub fn decompress(name: &str, data: &[u8], expected: u64, chunk_offset: u64) -> Result<Vec<u8>> {
    let err = |reason: String| McapError::Decompress {
        offset: chunk_offset,
        reason,
    };
    let expected_usize =
        usize::try_from(expected).map_err(|_| err("uncompressed size too large".into()))?;
    let out = match name {
        "" => data.to_vec(),
        "zstd" => {
            let mut out = Vec::new();
            let dec = zstd::stream::read::Decoder::new(data).map_err(|e| err(e.to_string()))?;
            dec.take(expected.saturating_add(1))
                .read_to_end(&mut out)
                .map_err(|e| err(e.to_string()))?;
            out
        }
        "lz4" => {
            let mut out = Vec::new();
            lz4_flex::frame::FrameDecoder::new(data)
                .take(expected.saturating_add(1))
                .read_to_end(&mut out)
                .map_err(|e| err(e.to_string()))?;
            out
        }
        other => {
            return Err(McapError::UnknownCompression {
                offset: chunk_offset,
                name: other.to_string(),
            })
        }
    };
    if out.len() != expected_usize {
        return Err(err(format!(
            "uncompressed size is {}, the chunk says {expected}",
            out.len()
        )));
    }
    Ok(out)
}
