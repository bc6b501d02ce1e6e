//! A recorder: a `Writer` on a background thread fed through a bounded queue. `write` never
//! touches the disk and never blocks on it: when the queue is full the message is dropped
//! and counted, and the count is written into the file (metadata `tracer.recorder`) and
//! returned by `finish`. Used by rmw_tracer (`RMW_TRACER_RECORD`) and `tracer record`.
//!
//! Ids are handed out by the caller-side registry at once, so registering a channel on a
//! publisher's creation path does not wait for the writer thread either.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fs::File;
use std::io::BufWriter;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::error::{McapError, Result};
use crate::field::{FieldEncoding, FieldValue};
use crate::records::{Attachment, MessageHeader};
use crate::writer::{WriteOptions, Writer};

/// Ids as the recorder hands them out; the writer thread maps them to the file's ids.
pub type ChannelId = u16;
pub type FieldId = u16;
pub type SchemaId = u16;

/// Message payload: anything that owns bytes (`Vec<u8>`, `bytes::Bytes`, `Arc<[u8]>`), so a
/// caller that already holds the serialized message passes it without a copy.
pub type Payload = Box<dyn AsRef<[u8]> + Send>;

#[derive(Debug, Clone)]
pub struct RecorderOptions {
    pub write: WriteOptions,
    /// Queue bound in messages.
    pub max_queued_messages: usize,
    /// Queue bound in payload bytes.
    pub max_queued_bytes: usize,
    /// Close the open chunk and flush when no message came for this long, so an idle
    /// recorder's data is on disk if the process dies.
    pub idle_flush: Duration,
}

impl Default for RecorderOptions {
    fn default() -> Self {
        RecorderOptions {
            write: WriteOptions::default(),
            max_queued_messages: 65_536,
            max_queued_bytes: 256 << 20,
            idle_flush: Duration::from_secs(1),
        }
    }
}

enum Cmd {
    Schema {
        name: String,
        encoding: String,
        data: Vec<u8>,
    },
    Channel {
        schema: SchemaId,
        topic: String,
        encoding: String,
        metadata: BTreeMap<String, String>,
    },
    Field {
        name: String,
        encoding: FieldEncoding,
        indexed: bool,
    },
    Message {
        header: MessageHeader,
        data: Payload,
        fields: Vec<(FieldId, FieldValue)>,
    },
    Attachment {
        attachment: Attachment,
        fields: Vec<(FieldId, FieldValue)>,
    },
    Metadata {
        name: String,
        metadata: BTreeMap<String, String>,
    },
}

#[derive(Default)]
struct Queue {
    items: VecDeque<Cmd>,
    messages: usize,
    bytes: usize,
    closed: bool,
}

struct Shared {
    q: Mutex<Queue>,
    cv: Condvar,
    dropped: AtomicU64,
    written: AtomicU64,
    error: Mutex<Option<String>>,
}

/// (schema, topic, message encoding, metadata) identifies a channel.
type ChannelKey = (SchemaId, String, String, Vec<(String, String)>);

#[derive(Default)]
struct Registry {
    schemas: HashMap<(String, String, Vec<u8>), SchemaId>,
    channels: HashMap<ChannelKey, ChannelId>,
    fields: HashMap<String, (FieldId, FieldEncoding, bool)>,
}

/// What the recorder did, returned by `finish`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecorderReport {
    pub written: u64,
    pub dropped: u64,
    /// The first write error; after it the recorder drops (and counts) everything.
    pub error: Option<String>,
}

pub struct Recorder {
    shared: Arc<Shared>,
    registry: Mutex<Registry>,
    opts: RecorderOptions,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Recorder {
    /// Creates `path` and starts the writer thread.
    pub fn create(path: impl AsRef<Path>, opts: RecorderOptions) -> Result<Recorder> {
        let file = File::create(path.as_ref())?;
        Self::new(BufWriter::with_capacity(1 << 20, file), opts)
    }

    /// Starts the writer thread on any output.
    pub fn new<W: std::io::Write + Send + 'static>(
        out: W,
        opts: RecorderOptions,
    ) -> Result<Recorder> {
        let writer = Writer::new(out, opts.write.clone())?;
        let shared = Arc::new(Shared {
            q: Mutex::new(Queue::default()),
            cv: Condvar::new(),
            dropped: AtomicU64::new(0),
            written: AtomicU64::new(0),
            error: Mutex::new(None),
        });
        let s2 = shared.clone();
        let idle = opts.idle_flush;
        let thread = std::thread::Builder::new()
            .name("mcap-recorder".into())
            .spawn(move || run(writer, s2, idle))?;
        Ok(Recorder {
            shared,
            registry: Mutex::new(Registry::default()),
            opts,
            thread: Mutex::new(Some(thread)),
        })
    }

    fn push_control(&self, cmd: Cmd) -> Result<()> {
        let mut q = self.shared.q.lock();
        if q.closed {
            return Err(McapError::Finished);
        }
        q.items.push_back(cmd);
        drop(q);
        self.shared.cv.notify_one();
        Ok(())
    }

    /// Registers a schema (`ros2msg` text for ROS types); identical content, same id.
    pub fn add_schema(&self, name: &str, encoding: &str, data: &[u8]) -> Result<SchemaId> {
        let mut r = self.registry.lock();
        let key = (name.to_string(), encoding.to_string(), data.to_vec());
        if let Some(id) = r.schemas.get(&key) {
            return Ok(*id);
        }
        let id = SchemaId::try_from(r.schemas.len() + 1)
            .map_err(|_| McapError::InvalidArgument("too many schemas".into()))?;
        self.push_control(Cmd::Schema {
            name: key.0.clone(),
            encoding: key.1.clone(),
            data: key.2.clone(),
        })?;
        r.schemas.insert(key, id);
        Ok(id)
    }

    /// Registers a channel (`cdr`, with `offered_qos_profiles` in `metadata` for ros2).
    pub fn add_channel(
        &self,
        schema: SchemaId,
        topic: &str,
        message_encoding: &str,
        metadata: &BTreeMap<String, String>,
    ) -> Result<ChannelId> {
        let mut r = self.registry.lock();
        if schema != 0 && !r.schemas.values().any(|s| *s == schema) {
            return Err(McapError::InvalidArgument(format!(
                "schema {schema} was never added"
            )));
        }
        let key = (
            schema,
            topic.to_string(),
            message_encoding.to_string(),
            metadata
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect::<Vec<_>>(),
        );
        if let Some(id) = r.channels.get(&key) {
            return Ok(*id);
        }
        let id = ChannelId::try_from(r.channels.len() + 1)
            .map_err(|_| McapError::InvalidArgument("too many channels".into()))?;
        self.push_control(Cmd::Channel {
            schema,
            topic: topic.into(),
            encoding: message_encoding.into(),
            metadata: metadata.clone(),
        })?;
        r.channels.insert(key, id);
        Ok(id)
    }

    /// Declares a field; the same name again returns its id (another encoding is an error).
    pub fn add_field(&self, name: &str, encoding: FieldEncoding, indexed: bool) -> Result<FieldId> {
        if indexed && !encoding.indexable() {
            return Err(McapError::InvalidArgument(format!(
                "field {name:?}: {} cannot be indexed",
                encoding.name()
            )));
        }
        let mut r = self.registry.lock();
        if let Some((id, e, i)) = r.fields.get(name) {
            if *e != encoding || *i != indexed {
                return Err(McapError::InvalidArgument(format!(
                    "field {name:?} already declared as {} (indexed: {i})",
                    e.name()
                )));
            }
            return Ok(*id);
        }
        let id = FieldId::try_from(r.fields.len() + 1)
            .map_err(|_| McapError::InvalidArgument("too many fields".into()))?;
        self.push_control(Cmd::Field {
            name: name.into(),
            encoding,
            indexed,
        })?;
        r.fields.insert(name.into(), (id, encoding, indexed));
        Ok(id)
    }

    /// Queues one message. Returns false when it was dropped (queue full, or the recorder
    /// failed or closed); drops are counted. Never blocks on the disk.
    pub fn write(
        &self,
        channel: ChannelId,
        log_time: u64,
        publish_time: u64,
        sequence: u32,
        data: impl AsRef<[u8]> + Send + 'static,
        fields: Vec<(FieldId, FieldValue)>,
    ) -> bool {
        let len = data.as_ref().len();
        let mut q = self.shared.q.lock();
        if q.closed
            || q.messages >= self.opts.max_queued_messages
            || q.bytes.saturating_add(len) > self.opts.max_queued_bytes
        {
            drop(q);
            self.shared.dropped.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        q.messages += 1;
        q.bytes += len;
        q.items.push_back(Cmd::Message {
            header: MessageHeader {
                channel_id: channel,
                sequence,
                log_time,
                publish_time,
            },
            data: Box::new(data),
            fields,
        });
        drop(q);
        self.shared.cv.notify_one();
        true
    }

    pub fn attach(&self, attachment: Attachment, fields: Vec<(FieldId, FieldValue)>) -> Result<()> {
        self.push_control(Cmd::Attachment { attachment, fields })
    }

    pub fn write_metadata(&self, name: &str, metadata: BTreeMap<String, String>) -> Result<()> {
        self.push_control(Cmd::Metadata {
            name: name.into(),
            metadata,
        })
    }

    /// Messages dropped so far.
    pub fn dropped(&self) -> u64 {
        self.shared.dropped.load(Ordering::Relaxed)
    }
    /// Messages written so far.
    pub fn written(&self) -> u64 {
        self.shared.written.load(Ordering::Relaxed)
    }

    /// Drains the queue, writes the drop count and the summary, and joins the thread.
    /// Takes `&self` so a recorder shared in an `Arc` can be finished at shutdown; later
    /// calls return the same report.
    pub fn finish(&self) -> RecorderReport {
        {
            let mut q = self.shared.q.lock();
            q.closed = true;
        }
        self.shared.cv.notify_all();
        let thread = self.thread.lock().take();
        if let Some(t) = thread {
            if t.join().is_err() {
                self.shared
                    .error
                    .lock()
                    .get_or_insert_with(|| "writer thread panicked".into());
            }
        }
        RecorderReport {
            written: self.written(),
            dropped: self.dropped(),
            error: self.shared.error.lock().clone(),
        }
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.finish();
    }
}

fn run<W: std::io::Write>(mut w: Writer<W>, s: Arc<Shared>, idle: Duration) {
    // Recorder ids are 1.. in registration order, as the writer assigns them; the maps only
    // guard against the two ever diverging.
    let mut schema_map: HashMap<SchemaId, u16> = HashMap::new();
    let mut channel_map: HashMap<ChannelId, u16> = HashMap::new();
    let mut field_map: HashMap<FieldId, u16> = HashMap::new();
    let (mut n_schema, mut n_channel, mut n_field) = (0u16, 0u16, 0u16);
    let mut failed = false;
    let mut dirty = false;
    let mut last = Instant::now();
    let mut batch: VecDeque<Cmd> = VecDeque::new();
    loop {
        let closed = {
            let mut q = s.q.lock();
            while q.items.is_empty() && !q.closed {
                if dirty && last.elapsed() >= idle {
                    break;
                }
                let timeout = if dirty {
                    idle.saturating_sub(last.elapsed())
                        .max(Duration::from_millis(1))
                } else {
                    idle
                };
                s.cv.wait_for(&mut q, timeout);
            }
            std::mem::swap(&mut batch, &mut q.items);
            q.messages = 0;
            q.bytes = 0;
            q.closed
        };
        if batch.is_empty() && dirty && !failed {
            if let Err(e) = w.flush() {
                fail(&s, &mut failed, e);
            }
            dirty = false;
        }
        for cmd in batch.drain(..) {
            if failed {
                if matches!(cmd, Cmd::Message { .. }) {
                    s.dropped.fetch_add(1, Ordering::Relaxed);
                }
                continue;
            }
            let r: Result<()> = match cmd {
                Cmd::Schema {
                    name,
                    encoding,
                    data,
                } => w.add_schema(&name, &encoding, &data).map(|id| {
                    n_schema += 1;
                    schema_map.insert(n_schema, id);
                }),
                Cmd::Channel {
                    schema,
                    topic,
                    encoding,
                    metadata,
                } => {
                    let sid = if schema == 0 {
                        0
                    } else {
                        schema_map.get(&schema).copied().unwrap_or(0)
                    };
                    w.add_channel(sid, &topic, &encoding, &metadata).map(|id| {
                        n_channel += 1;
                        channel_map.insert(n_channel, id);
                    })
                }
                Cmd::Field {
                    name,
                    encoding,
                    indexed,
                } => {
                    n_field += 1;
                    match w.add_field(&name, encoding, indexed) {
                        Ok(id) => {
                            field_map.insert(n_field, id);
                            Ok(())
                        }
                        // The writer declared the name itself (the automatic publish_time,
                        // D15) with another index flag: use its declaration, keep recording.
                        Err(McapError::InvalidArgument(_)) if w.field_id(&name).is_some() => {
                            field_map.insert(n_field, w.field_id(&name).expect("checked"));
                            Ok(())
                        }
                        Err(e) => Err(e),
                    }
                }
                Cmd::Message {
                    mut header,
                    data,
                    fields,
                } => {
                    header.channel_id = channel_map
                        .get(&header.channel_id)
                        .copied()
                        .unwrap_or(header.channel_id);
                    let fields: Vec<_> = fields
                        .into_iter()
                        .map(|(id, v)| (field_map.get(&id).copied().unwrap_or(id), v))
                        .collect();
                    dirty = true;
                    last = Instant::now();
                    match w.write_message(&header, (*data).as_ref(), &fields) {
                        Ok(()) => {
                            s.written.fetch_add(1, Ordering::Relaxed);
                            Ok(())
                        }
                        // A bad message (e.g. reserved publish time) is dropped, not fatal.
                        Err(McapError::InvalidArgument(_)) => {
                            s.dropped.fetch_add(1, Ordering::Relaxed);
                            Ok(())
                        }
                        Err(e) => Err(e),
                    }
                }
                Cmd::Attachment { attachment, fields } => {
                    let fields: Vec<_> = fields
                        .into_iter()
                        .map(|(id, v)| (field_map.get(&id).copied().unwrap_or(id), v))
                        .collect();
                    w.attach(&attachment, &fields)
                }
                Cmd::Metadata { name, metadata } => w.write_metadata(&name, &metadata),
            };
            if let Err(e) = r {
                fail(&s, &mut failed, e);
            }
        }
        if closed {
            break;
        }
    }
    if !failed {
        let mut m = BTreeMap::new();
        m.insert(
            "written".to_string(),
            s.written.load(Ordering::Relaxed).to_string(),
        );
        m.insert(
            "dropped".to_string(),
            s.dropped.load(Ordering::Relaxed).to_string(),
        );
        let r = w
            .write_metadata("tracer.recorder", &m)
            .and_then(|_| w.finish());
        if let Err(e) = r {
            fail(&s, &mut failed, e);
        }
    }
}

fn fail(s: &Shared, failed: &mut bool, e: McapError) {
    *failed = true;
    s.error.lock().get_or_insert_with(|| e.to_string());
}
