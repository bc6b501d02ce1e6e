//! The hand-off between the data path and the recorder.
//!
//! `Recorder::write` wakes the recorder's thread on every message (a futex wake, about 2 us
//! on the 2-core test machine, plus the woken thread competing for the core), which measured
//! as a 10x slower `rmw_publish` of a 64-byte message (ros_tests/record_bench.py). So the data
//! path only appends the message to a batch here (a lock and a push; the payload is shared by
//! reference count), and a flusher thread (`rmw_tracer-record`) hands batches to the recorder
//! every 2 ms while messages flow, backing off to 64 ms when idle. Fields are built on the
//! flusher thread too.
//!
//! Bounds: the batch holds at most the recorder's own queue bounds. A message that does not
//! fit is handed to the recorder at once by the data path, so the recorder alone decides drops
//! and counts them (one count, in the file's `tracer.recorder` metadata and the shutdown log).

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use libtracer_core::Payload;
use parking_lot::{Condvar, Mutex};
use tracer_mcap::recorder::ChannelId;
use tracer_mcap::Recorder;
use tracer_recording::{Fields, MessageFields};

const BUSY_INTERVAL: Duration = Duration::from_millis(2);
const IDLE_INTERVAL: Duration = Duration::from_millis(64);

/// One message on its way to the recorder.
pub struct Pending {
    pub channel: ChannelId,
    pub log_time: u64,
    pub publish_time: u64,
    pub sequence: u64,
    pub payload: Payload,
    pub sensor_time: Option<u64>,
    pub gid: [u8; 16],
    pub route: Arc<str>,
}

#[derive(Default)]
struct Batch {
    items: Vec<Pending>,
    bytes: usize,
    stop: bool,
}

struct Inner {
    rec: Arc<Recorder>,
    fields: Fields,
    batch: Mutex<Batch>,
    cv: Condvar,
    max_messages: usize,
    max_bytes: usize,
}

pub struct Handoff {
    inner: Arc<Inner>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Inner {
    fn forward(&self, p: Pending) {
        let fields = self.fields.values(&MessageFields {
            sensor_time: p.sensor_time,
            gid: p.gid,
            sequence: p.sequence,
            route: &p.route,
        });
        self.rec.write(
            p.channel,
            p.log_time,
            p.publish_time,
            p.sequence as u32,
            p.payload,
            fields,
        );
    }
}

impl Handoff {
    pub fn start(
        rec: Arc<Recorder>,
        fields: Fields,
        max_messages: usize,
        max_bytes: usize,
    ) -> std::io::Result<Handoff> {
        let inner = Arc::new(Inner {
            rec,
            fields,
            batch: Mutex::new(Batch::default()),
            cv: Condvar::new(),
            max_messages,
            max_bytes,
        });
        let i2 = inner.clone();
        let thread = std::thread::Builder::new()
            .name("rmw_tracer-record".into())
            .spawn(move || flusher(&i2))?;
        Ok(Handoff {
            inner,
            thread: Mutex::new(Some(thread)),
        })
    }

    /// The data path: append, or hand over at once when the batch is at the bounds.
    pub fn push(&self, p: Pending) {
        let len = p.payload.len();
        let mut b = self.inner.batch.lock();
        if b.stop
            || b.items.len() >= self.inner.max_messages
            || b.bytes.saturating_add(len) > self.inner.max_bytes
        {
            drop(b);
            self.inner.forward(p);
            return;
        }
        b.bytes += len;
        b.items.push(p);
    }

    /// Hand over what is left and stop the flusher.
    pub fn stop(&self) {
        self.inner.batch.lock().stop = true;
        self.inner.cv.notify_all();
        if let Some(t) = self.thread.lock().take() {
            let _ = t.join();
        }
    }
}

fn flusher(inner: &Inner) {
    let mut interval = BUSY_INTERVAL;
    let mut taken = Vec::new();
    loop {
        let stop = {
            let mut b = inner.batch.lock();
            if !b.stop {
                inner.cv.wait_for(&mut b, interval);
            }
            std::mem::swap(&mut taken, &mut b.items);
            b.bytes = 0;
            b.stop
        };
        interval = if taken.is_empty() {
            (interval * 2).min(IDLE_INTERVAL)
        } else {
            BUSY_INTERVAL
        };
        for p in taken.drain(..) {
            inner.forward(p);
        }
        if stop {
            return;
        }
    }
}
