#![forbid(unsafe_code)]
//! MCAP writer and indexed reader with the message-fields extension (docs/mcap.md).
//!
//! - `writer::Writer`: chunked or unchunked files with every index, statistics, CRCs.
//! - `recorder::Recorder`: the writer on a background thread behind a bounded, counted-drop
//!   queue (what rmw_tracer and `tracer record` use).
//! - `reader::IndexedReader`: summary-first reads, time/topic/field queries, attachments.
//! - `linear::LinearReader`: front-to-back reading; `recover::recover` rebuilds a summary.

pub mod codec;
pub mod compression;
pub mod error;
pub mod field;
mod fuzz_support;
pub mod io;
pub mod linear;
pub mod reader;
pub mod recorder;
pub mod records;
pub mod recover;
pub mod ros2;
pub mod summary;
pub mod writer;

pub use compression::Compression;
pub use error::{McapError, Result};
pub use field::{FieldEncoding, FieldValue};
pub use fuzz_support::exercise_read;
pub use io::{Counting, ReadAt};
pub use linear::{Item, LinearReader, Message, ReadOptions};
pub use reader::{AttachmentRead, FieldRange, IndexedReader, Query, ScanStrategy};
pub use recorder::{Recorder, RecorderOptions, RecorderReport};
pub use records::*;
pub use recover::{recover, recover_with, RecoverReport};
pub use summary::Summary;
pub use writer::{PublishTimeField, WriteOptions, Writer};
