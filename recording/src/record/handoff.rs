//! The hand-off between the data path and the recorder.
//!
//! `Recorder::write` wakes the recorder's thread on every message (a futex wake, about 2 us
//! on the 2-core test machine, plus the woken thread competing for the core), which measured
//! as a 10x slower `rmw_publish` of a 64-byte message (ros_tests/record_bench.py). So the data
//! path only sends the message into a crossbeam channel that nobody waits on (no lock, no
//! wake-up; the payload is shared by reference count), and a flusher thread
//! (`tracer-record`) drains it into the recorder every 2 ms while messages flow, backing
//! off to 64 ms when idle. Fields are built on the flusher thread too.
//!
//! Bounds: the channel holds at most the recorder's own queue bounds (messages and payload
//! bytes). A message that does not fit is handed to the recorder at once by the data path, so
//! the recorder alone decides drops and counts them (one count, in the file's
//! `tracer.recorder` metadata and the shutdown log).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crate::{Fields, MessageFields};
use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use libtracer_core::Payload;
use parking_lot::Mutex;
use tracer_mcap::recorder::ChannelId;
use tracer_mcap::Recorder;

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

struct Inner {
    rec: Arc<Recorder>,
    fields: Fields,
    max_messages: usize,
    max_bytes: usize,
    /// Payload bytes in the channel.
    bytes: AtomicUsize,
    /// Set by `stop`: the data path hands over at once from then on.
    stopped: AtomicBool,
}

pub struct Handoff {
    inner: Arc<Inner>,
    tx: Sender<Pending>,
    /// What `stop` drains after the flusher has gone (a push racing with it).
    rx: Receiver<Pending>,
    /// Dropped by `stop`: the flusher's wait ends at once.
    stop: Mutex<Option<Sender<()>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Inner {
    /// Forward everything in the channel now; how many.
    fn drain(&self, rx: &Receiver<Pending>) -> usize {
        let mut n = 0;
        for p in rx.try_iter() {
            self.bytes.fetch_sub(p.payload.len(), Ordering::Relaxed);
            self.forward(p);
            n += 1;
        }
        n
    }

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
            max_messages,
            max_bytes,
            bytes: AtomicUsize::new(0),
            stopped: AtomicBool::new(false),
        });
        let (tx, rx) = crossbeam_channel::unbounded();
        let (stop_tx, stop_rx) = crossbeam_channel::bounded::<()>(0);
        let (i2, r2) = (inner.clone(), rx.clone());
        let thread = std::thread::Builder::new()
            .name("tracer-record".into())
            .spawn(move || flusher(&i2, &r2, &stop_rx))?;
        Ok(Handoff {
            inner,
            tx,
            rx,
            stop: Mutex::new(Some(stop_tx)),
            thread: Mutex::new(Some(thread)),
        })
    }

    /// The data path: send, or hand over at once when the channel is at the bounds.
    pub fn push(&self, p: Pending) {
        let len = p.payload.len();
        let i = &self.inner;
        if i.stopped.load(Ordering::SeqCst)
            || self.tx.len() >= i.max_messages
            || i.bytes.load(Ordering::Relaxed).saturating_add(len) > i.max_bytes
        {
            i.forward(p);
            return;
        }
        i.bytes.fetch_add(len, Ordering::Relaxed);
        if let Err(back) = self.tx.send(p) {
            i.forward(back.into_inner());
            return;
        }
        // A `stop` that came between the check and the send may have drained already: what
        // is left is handed over here, so nothing sent is left behind.
        if i.stopped.load(Ordering::SeqCst) {
            i.drain(&self.rx);
        }
    }

    /// Hand over what is left and stop the flusher.
    pub fn stop(&self) {
        self.inner.stopped.store(true, Ordering::SeqCst);
        self.stop.lock().take();
        if let Some(t) = self.thread.lock().take() {
            let _ = t.join();
        }
        self.inner.drain(&self.rx);
    }
}

fn flusher(inner: &Inner, rx: &Receiver<Pending>, stop: &Receiver<()>) {
    let mut interval = BUSY_INTERVAL;
    loop {
        // Woken by the interval, or at once when `stop` drops the sender.
        let stopping = !matches!(stop.recv_timeout(interval), Err(RecvTimeoutError::Timeout));
        interval = if inner.drain(rx) == 0 {
            (interval * 2).min(IDLE_INTERVAL)
        } else {
            BUSY_INTERVAL
        };
        if stopping {
            return;
        }
    }
}
