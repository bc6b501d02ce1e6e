//! One error type for reading and writing. Every read error names the file offset.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum McapError {
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
    #[error("not an MCAP file: bad magic at offset {offset}")]
    BadMagic { offset: u64 },
    #[error("truncated at offset {offset}: needs {needed} bytes, {available} available")]
    Truncated {
        offset: u64,
        needed: u64,
        available: u64,
    },
    #[error("corrupt record at offset {offset}: {reason}")]
    Corrupt { offset: u64, reason: String },
    #[error("CRC mismatch in {what} at offset {offset}: stored {expected:#010x}, computed {actual:#010x}")]
    Crc {
        offset: u64,
        what: &'static str,
        expected: u32,
        actual: u32,
    },
    #[error("chunk at offset {offset}: unsupported compression {name:?}")]
    UnknownCompression { offset: u64, name: String },
    #[error("chunk at offset {offset}: decompression failed: {reason}")]
    Decompress { offset: u64, reason: String },
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    #[error("the writer failed earlier and refuses further writes")]
    Poisoned,
    #[error("the writer is finished")]
    Finished,
    #[error("no summary in this file (use a linear scan or `tracer recover`)")]
    NoSummary,
}

pub type Result<T, E = McapError> = std::result::Result<T, E>;
