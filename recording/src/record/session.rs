//! The process-wide recording session.
//!
//! Environment (read once, at the first context of the process: `rmw_init`, or
//! `tracer_context_create` in the C API):
//! - `RMW_TRACER_RECORD=<file>`: record to that file (created or truncated). Unset or empty:
//!   no recording, and nothing on the data path but one `Option` test.
//! - `RMW_TRACER_RECORD_TOPICS=<name|glob>,...`: only these topics (default: all).
//! - `RMW_TRACER_RECORD_COMPRESSION=zstd|lz4|none` (default zstd).
//! - `RMW_TRACER_RECORD_FIELDS=on|off` (default on): off writes a plain file, no message fields.
//! - `RMW_TRACER_RECORD_QUEUE=<messages>` and `RMW_TRACER_RECORD_QUEUE_BYTES=<bytes>`: the
//!   recorder's queue bounds (default 65 536 messages, 256 MiB of payload). Tiny values show
//!   the counted drops.
//!
//! One file per process, whatever the number of contexts: it is finished when the last live
//! context shuts down (`rmw_shutdown`, `tracer_context_destroy`), or at process exit
//! (`atexit`) if none ever does. A
//! context created after the file was finished records nothing (a warning says so). A crash
//! leaves the chunks written so far readable (`tracer recover` rebuilds the summary).

use std::collections::HashMap;
use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use super::handoff::Handoff;
use super::{Host, Level};
use crate::Selection;
use parking_lot::{Mutex, RwLock};
use tracer_mcap::recorder::ChannelId;
use tracer_mcap::ros2::{channel_metadata, OfferedQos};
use tracer_mcap::{Compression, Recorder};

pub const RECORD_ENV: &str = "RMW_TRACER_RECORD";
pub const TOPICS_ENV: &str = "RMW_TRACER_RECORD_TOPICS";
pub const COMPRESSION_ENV: &str = "RMW_TRACER_RECORD_COMPRESSION";
pub const QUEUE_ENV: &str = "RMW_TRACER_RECORD_QUEUE";
pub const QUEUE_BYTES_ENV: &str = "RMW_TRACER_RECORD_QUEUE_BYTES";
pub const FIELDS_ENV: &str = "RMW_TRACER_RECORD_FIELDS";

pub struct Session {
    rec: Arc<Recorder>,
    pub handoff: Handoff,
    pub select: Selection,
    path: PathBuf,
    /// (ROS topic, type) -> channel: one channel per pair, whoever registers it first.
    channels: Mutex<HashMap<(String, String), ChannelId>>,
    /// Gids of this process's recorded publishers: a local subscription's sample from one of
    /// them was recorded when it was published.
    pub published: RwLock<HashSet<[u8; 16]>>,
    /// Per writer, the sequence numbers already recorded as received (see [`Window`]).
    seen: Mutex<HashMap<[u8; 16], Window>>,
    finished: AtomicBool,
    /// The library's log.
    host: &'static Host,
}

static SESSION: OnceLock<Option<Arc<Session>>> = OnceLock::new();
static LIVE_CONTEXTS: AtomicUsize = AtomicUsize::new(0);

/// The session, if this process records and the file is not finished yet (opened by the
/// first context, [`context_started`]).
pub fn session() -> Option<&'static Arc<Session>> {
    SESSION
        .get()?
        .as_ref()
        .filter(|s| !s.finished.load(Ordering::Acquire))
}

/// A context starts (`rmw_init`, `tracer_context_create`): opens the file on the first call
/// when `RMW_TRACER_RECORD` is set; `host` is the library's log and exit hook.
pub fn context_started(host: &'static Host) {
    let opened = SESSION.get_or_init(|| open_from_env(host));
    match opened {
        Some(s) if s.finished.load(Ordering::Acquire) => (host.log)(
            Level::Warn,
            &format!(
                "recording to {} already finished; this context is not recorded",
                s.path.display()
            ),
        ),
        Some(_) => {
            LIVE_CONTEXTS.fetch_add(1, Ordering::AcqRel);
        }
        None => {}
    }
}

/// A context shuts down (`rmw_shutdown`, `tracer_context_destroy`): the last live one
/// finishes the file.
pub fn context_shutdown() {
    let Some(Some(s)) = SESSION.get() else {
        return;
    };
    let was = LIVE_CONTEXTS
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
        .unwrap_or(0);
    if was == 1 {
        s.finish();
    }
}

/// Process exit: finish whatever is still open.
pub fn at_exit() {
    if let Some(Some(s)) = SESSION.get() {
        s.finish();
    }
}

fn open_from_env(host: &'static Host) -> Option<Arc<Session>> {
    let path = std::env::var_os(RECORD_ENV).filter(|p| !p.is_empty())?;
    let path = PathBuf::from(path);
    match Session::open(path.clone(), host) {
        Ok(s) => {
            (host.at_exit)(at_exit);
            (host.log)(Level::Info, &format!("recording to {}", path.display()));
            Some(Arc::new(s))
        }
        Err(e) => {
            (host.log)(
                Level::Error,
                &format!("{RECORD_ENV}={}: cannot record: {e}", path.display()),
            );
            None
        }
    }
}

/// The variable `var` as a positive number: `None` when unset, an error naming it otherwise.
fn positive_env(var: &str) -> Result<Option<usize>, String> {
    let Ok(v) = std::env::var(var) else {
        return Ok(None);
    };
    match v.parse::<usize>() {
        Ok(n) if n > 0 => Ok(Some(n)),
        _ => Err(format!("{var}={v}: expected a positive number")),
    }
}

impl Session {
    pub fn open(path: PathBuf, host: &'static Host) -> Result<Session, String> {
        let plain =
            crate::fields::parse_fields_switch(&std::env::var(FIELDS_ENV).unwrap_or_default())
                .map_err(|e| format!("{FIELDS_ENV}={e}"))?;
        let mut opts = crate::fields::recorder_options(plain);
        if let Some(c) = std::env::var(COMPRESSION_ENV)
            .ok()
            .filter(|c| !c.is_empty())
        {
            opts.write.compression = match c.as_str() {
                "zstd" => Compression::Zstd,
                "lz4" => Compression::Lz4,
                "none" => Compression::None,
                other => {
                    return Err(format!(
                        "{COMPRESSION_ENV}={other}: expected zstd, lz4 or none"
                    ))
                }
            };
        }
        if let Some(n) = positive_env(QUEUE_ENV)? {
            opts.max_queued_messages = n;
        }
        if let Some(n) = positive_env(QUEUE_BYTES_ENV)? {
            opts.max_queued_bytes = n;
        }
        let (max_messages, max_bytes) = (opts.max_queued_messages, opts.max_queued_bytes);
        let rec = Arc::new(Recorder::create(&path, opts).map_err(|e| e.to_string())?);
        let fields = crate::fields::fields_for(&rec, plain).map_err(|e| e.to_string())?;
        let handoff = Handoff::start(rec.clone(), fields, max_messages, max_bytes)
            .map_err(|e| format!("cannot start the record thread: {e}"))?;
        let select = Selection::parse(&std::env::var(TOPICS_ENV).unwrap_or_default());
        Ok(Session {
            rec,
            handoff,
            select,
            path,
            channels: Mutex::new(HashMap::new()),
            published: RwLock::new(HashSet::new()),
            seen: Mutex::new(HashMap::new()),
            finished: AtomicBool::new(false),
            host,
        })
    }

    /// The channel of (topic, type), registered on first use with the type's `ros2msg`
    /// definition and `offered_qos` (what the first registrant knows of the publishers).
    pub fn channel(
        &self,
        topic: &str,
        type_name: &str,
        definition: &str,
        offered_qos: impl FnOnce() -> Vec<OfferedQos>,
    ) -> Option<ChannelId> {
        let key = (topic.to_owned(), type_name.to_owned());
        let mut ch = self.channels.lock();
        if let Some(id) = ch.get(&key) {
            return Some(*id);
        }
        let made = self
            .rec
            .add_schema(type_name, "ros2msg", definition.as_bytes())
            .and_then(|s| {
                self.rec
                    .add_channel(s, topic, "cdr", &channel_metadata(&offered_qos()))
            });
        match made {
            Ok(id) => {
                ch.insert(key, id);
                Some(id)
            }
            Err(e) => {
                (self.host.log)(
                    Level::Warn,
                    &format!("recording {topic} ({type_name}): cannot add the channel: {e}"),
                );
                None
            }
        }
    }

    /// Whether `(writer, sequence)` is received for the first time by this process (several
    /// subscriptions of one topic take the same message; it is recorded once).
    pub fn first_reception(&self, writer: &[u8; 16], sequence: u64) -> bool {
        self.seen
            .lock()
            .entry(*writer)
            .or_default()
            .first_time(sequence)
    }

    /// Drain, write the summary, report. Later calls do nothing.
    pub fn finish(&self) {
        if self.finished.swap(true, Ordering::AcqRel) {
            return;
        }
        self.handoff.stop();
        let r = self.rec.finish();
        let path = self.path.display();
        let (level, text) = match (&r.error, r.dropped) {
            (Some(e), _) => (
                Level::Error,
                format!(
                    "recording to {path} failed: {e} ({} messages written, {} dropped)",
                    r.written, r.dropped
                ),
            ),
            (None, 0) => (
                Level::Info,
                format!("recorded {} messages to {path}", r.written),
            ),
            (None, d) => (
                Level::Warn,
                format!(
                    "recorded {} messages to {path}; {d} dropped (recorder queue full)",
                    r.written
                ),
            ),
        };
        (self.host.log)(level, &text);
    }
}

/// The sequence numbers of one writer already recorded: the highest and a window of
/// [`Window::SPAN`] numbers below it. Each subscription takes a writer's messages in order, so a
/// second subscription of the same topic lags the first by at most its ring; a number further
/// below the highest than the window counts as seen (only a lagging duplicate can be that old).
#[derive(Clone, Debug)]
pub struct Window {
    hi: u64,
    bits: [u64; Window::WORDS],
}

impl Default for Window {
    fn default() -> Self {
        Window {
            hi: 0,
            bits: [0; Window::WORDS],
        }
    }
}

impl Window {
    const WORDS: usize = 16;
    pub const SPAN: u64 = 64 * Window::WORDS as u64;

    fn bit(seq: u64) -> (usize, u64) {
        let i = seq % Window::SPAN;
        ((i / 64) as usize, 1 << (i % 64))
    }

    pub fn first_time(&mut self, seq: u64) -> bool {
        if seq > self.hi {
            if seq - self.hi >= Window::SPAN {
                self.bits = [0; Window::WORDS];
            } else {
                for s in self.hi + 1..seq {
                    let (w, b) = Window::bit(s);
                    self.bits[w] &= !b;
                }
            }
            let (w, b) = Window::bit(seq);
            self.bits[w] |= b;
            self.hi = seq;
            return true;
        }
        if self.hi - seq >= Window::SPAN {
            return false;
        }
        let (w, b) = Window::bit(seq);
        if self.bits[w] & b != 0 {
            return false;
        }
        self.bits[w] |= b;
        true
    }
}
