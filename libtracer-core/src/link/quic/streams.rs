//! The sending side of a QUIC link (docs/network.md section 7, wire.md section 5): the
//! streams and datagrams that carry its frames (which one carries each: `routes.rs`), and the
//! writers that drain them.
//!
//! ```text
//! control stream (bidi, HELLO)   requests, answers, everything not of an edge      priority 100
//! reliable stream of class c     DELIVERY / STRUCTURE of reliable edges of class c   2c + 1
//!                                and the answer to their SUBSCRIBE; in class 3 (the
//!                                default) also every WRITE (service calls, replies)
//! best-effort stream of class c  best-effort DELIVERY too large for a datagram      2c
//! datagram                       best-effort DELIVERY that fits (one frame each)    (before streams)
//! ```
//!
//! Each unidirectional stream starts with one tag byte (the adapter's framing): `c` for the
//! reliable stream of class `c`, `8 + c` for a best-effort one. Then frames, as on the control
//! stream. A reliable stream is opened once per link and class; a best-effort sample has a
//! stream of its own, finished once written, or reset (abandoned) when a newer sample of its
//! class is waiting while it is half written. A reset drops all its stream holds that is not yet
//! acknowledged, so a shared stream would lose whole samples uncounted.
//!
//! A delivery never waits for the network: the frame is queued and a writer task on the
//! runtime writes it. A reliable stream's queue is bounded (`queue.rs`): a delivery that does
//! not fit drops the oldest queued deliveries (counted; the subscriber sees the sequence gap
//! as lost messages), and only frames that are never dropped (a WRITE, an answer, a marker)
//! wait for room. A best-effort send never waits: the newest sample of a class replaces one
//! still waiting.
//!
//! **The write timeout bounds a stall, not a transfer.** A writer, and a send waiting for room,
//! give up (and the link closes) only when the stream has taken no byte for the whole write
//! timeout: the peer stopped reading, or the path is gone. A large frame on a slow but live path
//! takes as long as it takes, as a Unix socket's `SO_SNDTIMEO` bounds each write call, not a
//! frame. (Bounding the whole frame cut a 4 MiB image at 10 s on any path slower than
//! 0.4 MB/s; the link came back, the resend window sent the image again from its first byte,
//! and it never arrived: docs/network.md section 9.)

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use parking_lot::Mutex;
use tokio::runtime::Handle;
use tokio::sync::Notify;

use super::queue::{Kind, Queue};
pub(crate) use super::routes::Route;
use super::routes::Routes;
use crate::wire::{EncodedFrame, Frame};

/// Priority classes of the delivery policy.
pub(crate) const CLASSES: usize = 8;
/// Tag of the first best-effort stream; tags at or above `2 * CLASSES` are malformed.
pub(crate) const BEST_EFFORT_TAG: u8 = CLASSES as u8;
/// quinn priority of the control stream: above every edge stream.
pub(crate) const CONTROL_PRIORITY: i32 = 100;
/// Top 16 bits of a barrier PING's nonce on the control stream (wire.md section 5).
const BARRIER_MAGIC: u64 = 0xB1A7;

/// A barrier PING's nonce: `0xB1A7 | number (40 bits) | class set (8 bits)`.
pub(crate) fn barrier_nonce(number: u64, classes: u8) -> u64 {
    (BARRIER_MAGIC << 48) | ((number & 0xFF_FFFF_FFFF) << 8) | u64::from(classes)
}

/// The barrier a control-stream PING stands for, if it is one: (number, class set).
pub(crate) fn parse_barrier(nonce: u64) -> Option<(u64, u8)> {
    (nonce >> 48 == BARRIER_MAGIC).then_some(((nonce >> 8) & 0xFF_FFFF_FFFF, nonce as u8))
}

/// Counters of the frames a link's sending side gave up.
#[derive(Default)]
pub(crate) struct Shed {
    /// Reliable deliveries dropped, oldest first, from a full stream queue.
    pub dropped: AtomicU64,
    /// Best-effort samples replaced by a newer one of their class before they were written.
    pub replaced: AtomicU64,
    /// Best-effort streams reset with a sample half written (a newer one was waiting).
    pub abandoned: AtomicU64,
    /// Best-effort samples sent as datagrams.
    pub datagrams: AtomicU64,
}

/// One ordered stream (the control stream or a reliable edge stream) and its writer task.
struct Writer {
    queue: Arc<Queue>,
    /// A frame was queued since the last barrier marker (reliable streams only).
    dirty: AtomicBool,
    task: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

/// The newest waiting best-effort sample of one class, and its writer task.
struct BestEffortWriter {
    slot: Arc<Mutex<Slot>>,
    wake: Arc<Notify>,
    task: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

#[derive(Default)]
struct Slot {
    next: Option<EncodedFrame>,
    closed: bool,
}

/// The sending side of one link.
pub(crate) struct Outgoing {
    conn: quinn::Connection,
    rt: Handle,
    write_timeout: Duration,
    /// Each reliable stream's queue bound.
    queue_bytes: usize,
    control: Writer,
    reliable: [Mutex<Option<Arc<Writer>>>; CLASSES],
    best_effort: [Mutex<Option<Arc<BestEffortWriter>>>; CLASSES],
    routes: Routes,
    /// Serialises barriers: markers and the barrier PING of one READ go out together.
    barrier: Mutex<u64>,
    pub(crate) shed: Arc<Shed>,
}

/// Why a send failed: the caller closes the link.
#[derive(Debug)]
pub(crate) enum SendFail {
    Closed,
    Blocked,
}

impl Outgoing {
    pub(crate) fn new(
        conn: quinn::Connection,
        control: quinn::SendStream,
        rt: Handle,
        write_timeout: Duration,
        queue_bytes: usize,
    ) -> Outgoing {
        let _ = control.set_priority(CONTROL_PRIORITY);
        let control = Writer::start(
            &rt,
            &conn,
            StreamSource::Ready(control),
            write_timeout,
            queue_bytes,
        );
        Outgoing {
            conn,
            rt,
            write_timeout,
            queue_bytes,
            control,
            reliable: Default::default(),
            best_effort: Default::default(),
            routes: Routes::default(),
            barrier: Mutex::new(0),
            shed: Arc::new(Shed::default()),
        }
    }

    /// A frame the peer sent on the control stream, seen before the graph handles it
    /// (`Routes::learn`).
    pub(crate) fn learn(&self, frame: &Frame) {
        self.routes.learn(frame);
    }

    /// Where `frame` goes (`Routes::route`).
    pub(crate) fn route(&self, frame: &Frame) -> Route {
        self.routes.route(frame)
    }

    /// Queue `enc` (the encoding of `frame`) where `route` says. How many queued deliveries
    /// it dropped to make room (counted in `shed` too).
    pub(crate) fn send(&self, route: Route, enc: EncodedFrame) -> Result<u64, SendFail> {
        match route {
            Route::Control => self.control.push(enc, self.write_timeout).map(|()| 0),
            Route::Reliable(c) => self.reliable(c, enc, Kind::Kept),
            Route::ReliableDelivery(c, edge) => self.reliable(c, enc, Kind::Delivery(edge)),
            Route::Owed(c) => self.reliable(c, enc, Kind::Owed),
            Route::BestEffort(c) => {
                if let Some(dg) = self.try_datagram(&enc) {
                    return dg.map(|()| 0);
                }
                self.best_effort_writer(c).offer(enc, &self.shed);
                Ok(0)
            }
            Route::Barrier => {
                let mut n = self.barrier.lock();
                *n += 1;
                let (mut classes, mut dropped) = (0u8, 0);
                for c in 0..CLASSES {
                    let w = self.reliable[c].lock().clone();
                    if let Some(w) = w.filter(|w| w.dirty.swap(false, Ordering::AcqRel)) {
                        dropped +=
                            self.count(w.queue.push(ping(*n), Kind::Kept, self.write_timeout)?);
                        classes |= 1 << c;
                    }
                }
                if classes != 0 {
                    self.control
                        .push(ping(barrier_nonce(*n, classes)), self.write_timeout)?;
                }
                self.control.push(enc, self.write_timeout)?;
                Ok(dropped)
            }
        }
    }

    /// Queue `enc` as `kind` on the reliable stream of class `c` (a barrier that follows then
    /// covers it).
    fn reliable(&self, c: u8, enc: EncodedFrame, kind: Kind) -> Result<u64, SendFail> {
        let w = self.reliable_writer(c);
        let dropped = self.count(w.queue.push(enc, kind, self.write_timeout)?);
        w.dirty.store(true, Ordering::Release);
        Ok(dropped)
    }

    fn count(&self, dropped: u64) -> u64 {
        if dropped != 0 {
            self.shed.dropped.fetch_add(dropped, Ordering::Relaxed);
        }
        dropped
    }

    /// Each reliable stream's queue bound.
    pub(crate) fn queue_bytes(&self) -> usize {
        self.queue_bytes
    }

    /// The most bytes any reliable stream's queue of this link held.
    pub(crate) fn queued_peak(&self) -> usize {
        self.reliable
            .iter()
            .filter_map(|w| w.lock().as_ref().map(|w| w.queue.peak()))
            .max()
            .unwrap_or(0)
    }

    /// A PONG (from a reader task): never waits; dropped when the control queue is full.
    pub(crate) fn pong(&self, nonce: u64) {
        if let Ok(enc) = crate::wire::encode_parts(&Frame::Pong { nonce }, crate::wire::MAX_FRAME) {
            let _ = self.control.push(enc, Duration::ZERO);
        }
    }

    /// A best-effort frame as one datagram, if the connection takes datagrams of its size.
    /// `None`: it goes on the best-effort stream instead.
    fn try_datagram(&self, enc: &EncodedFrame) -> Option<Result<(), SendFail>> {
        let max = self.conn.max_datagram_size()?;
        if enc.len() > max {
            return None;
        }
        let mut b = BytesMut::with_capacity(enc.len());
        b.extend_from_slice(&enc.head);
        if let Some(p) = &enc.payload {
            b.extend_from_slice(p);
        }
        match self.conn.send_datagram(b.freeze()) {
            Ok(()) => {
                self.shed.datagrams.fetch_add(1, Ordering::Relaxed);
                Some(Ok(()))
            }
            Err(quinn::SendDatagramError::ConnectionLost(_)) => Some(Err(SendFail::Closed)),
            // Too large after all (the path's size shrank) or not allowed: the stream.
            Err(_) => None,
        }
    }

    fn reliable_writer(&self, class: u8) -> Arc<Writer> {
        let c = usize::from(class) % CLASSES;
        let mut w = self.reliable[c].lock();
        w.get_or_insert_with(|| {
            Arc::new(Writer::start(
                &self.rt,
                &self.conn,
                StreamSource::Open {
                    tag: c as u8,
                    priority: 2 * c as i32 + 1,
                },
                self.write_timeout,
                self.queue_bytes,
            ))
        })
        .clone()
    }

    fn best_effort_writer(&self, class: u8) -> Arc<BestEffortWriter> {
        let c = usize::from(class) % CLASSES;
        let mut w = self.best_effort[c].lock();
        w.get_or_insert_with(|| {
            Arc::new(BestEffortWriter::start(
                &self.rt,
                &self.conn,
                c as u8,
                self.shed.clone(),
            ))
        })
        .clone()
    }

    /// Stop taking frames; the writers drain what is queued, finish their streams and end.
    /// The control stream ends last, once every edge writer has: the peer takes its end for
    /// "every edge stream is open and written" and reads those to their ends before it lets the
    /// link go down (`link::read_loop`). Its writer ending first, before an edge writer had even
    /// opened its stream, lost the peer a whole stream (0 of 2000 in `link_quic_streams`, 1 run
    /// in 25 under load). So a sender blocked on the control queue is told of the close only
    /// then, not at once as on an edge queue (`Writer::close`); the link refuses new sends from
    /// the moment it closes. The handles of the writer tasks, to wait for.
    pub(crate) fn close(&self) -> Vec<tokio::task::JoinHandle<()>> {
        let mut edges = Vec::new();
        for w in &self.reliable {
            if let Some(w) = w.lock().as_ref() {
                edges.extend(w.close());
            }
        }
        for w in &self.best_effort {
            if let Some(w) = w.lock().as_ref() {
                edges.extend(w.close());
            }
        }
        let queue = self.control.queue.clone();
        let control = self.control.task.lock().take();
        vec![self.rt.spawn(async move {
            for e in edges {
                let _ = e.await;
            }
            queue.close();
            if let Some(c) = control {
                let _ = c.await;
            }
        })]
    }
}

pub(crate) fn ping(nonce: u64) -> EncodedFrame {
    crate::wire::encode_parts(&Frame::Ping { nonce }, crate::wire::MAX_FRAME)
        .expect("a PING always encodes")
}

/// A writer's stream: the control stream, already open, or an edge stream it opens itself.
enum StreamSource {
    Ready(quinn::SendStream),
    Open { tag: u8, priority: i32 },
}

async fn open_tagged(
    conn: &quinn::Connection,
    tag: u8,
    priority: i32,
) -> Option<quinn::SendStream> {
    let mut s = conn.open_uni().await.ok()?;
    let _ = s.set_priority(priority);
    s.write_all(&[tag]).await.ok()?;
    Some(s)
}

/// Write one frame, handing its bytes back to `queue` as the stream takes them; fails when the
/// stream takes nothing for `stall` (or fails). What was not written is released too.
async fn write_steady(
    s: &mut quinn::SendStream,
    enc: EncodedFrame,
    stall: Duration,
    room: &Queue,
) -> Result<(), ()> {
    let mut left = enc.len();
    let mut chunks = [Bytes::from(enc.head), enc.payload.unwrap_or_default()];
    let mut next = 0;
    let result = loop {
        while next < chunks.len() && chunks[next].is_empty() {
            next += 1;
        }
        if next == chunks.len() {
            break Ok(());
        }
        match tokio::time::timeout(stall, s.write_chunks(&mut chunks[next..])).await {
            Ok(Ok(w)) => {
                room.release(w.bytes);
                left -= w.bytes;
            }
            Ok(Err(_)) | Err(_) => break Err(()),
        }
    };
    room.release(left);
    result
}

async fn write_enc(s: &mut quinn::SendStream, enc: EncodedFrame) -> Result<(), quinn::WriteError> {
    s.write_all(&enc.head).await?;
    if let Some(p) = enc.payload {
        s.write_chunk(p).await?;
    }
    Ok(())
}

impl Writer {
    fn start(
        rt: &Handle,
        conn: &quinn::Connection,
        source: StreamSource,
        write_timeout: Duration,
        queue_bytes: usize,
    ) -> Writer {
        let queue = Arc::new(Queue::new(queue_bytes));
        let conn = conn.clone();
        let q = queue.clone();
        let task = rt.spawn(async move {
            let stream = match source {
                StreamSource::Ready(s) => Some(s),
                StreamSource::Open { tag, priority } => open_tagged(&conn, tag, priority).await,
            };
            let Some(mut s) = stream else {
                conn.close(0u32.into(), b"cannot open a stream");
                return;
            };
            while let Some(enc) = q.next().await {
                if write_steady(&mut s, enc, write_timeout, &q).await.is_err() {
                    // Nothing taken for the write timeout (the peer stopped reading) or the
                    // stream failed: the link is lost; the connection's end tells the reader.
                    conn.close(0u32.into(), b"write failed");
                    return;
                }
            }
            // Closed: what was queued is written; finish, and let the peer have it.
            if s.finish().is_ok() {
                let _ = s.stopped().await;
            }
        });
        Writer {
            queue,
            dirty: AtomicBool::new(false),
            task: Mutex::new(Some(task)),
        }
    }

    /// Queue a frame that is never dropped (the control stream's).
    fn push(&self, enc: EncodedFrame, wait: Duration) -> Result<(), SendFail> {
        self.queue.push(enc, Kind::Kept, wait).map(|_| ())
    }

    fn close(&self) -> Option<tokio::task::JoinHandle<()>> {
        // A sender waiting for room is told at once; the writer drains what is queued.
        self.queue.close();
        self.task.lock().take()
    }
}

impl BestEffortWriter {
    fn start(
        rt: &Handle,
        conn: &quinn::Connection,
        class: u8,
        shed: Arc<Shed>,
    ) -> BestEffortWriter {
        let slot = Arc::new(Mutex::new(Slot::default()));
        let wake = Arc::new(Notify::new());
        let conn = conn.clone();
        let (sl, wk) = (slot.clone(), wake.clone());
        let tag = BEST_EFFORT_TAG + class;
        let priority = 2 * i32::from(class);
        let task = rt.spawn(async move {
            let mut stream: Option<quinn::SendStream> = None;
            loop {
                // `None`: nothing waits (yet); `Some(None)`: closed and drained.
                let next = {
                    let mut s = sl.lock();
                    match s.next.take() {
                        Some(enc) => Some(Some(enc)),
                        None if s.closed => Some(None),
                        None => None,
                    }
                };
                let enc = match next {
                    Some(Some(enc)) => enc,
                    Some(None) => break,
                    None => {
                        wk.notified().await;
                        continue;
                    }
                };
                if stream.is_none() {
                    stream = open_tagged(&conn, tag, priority).await;
                }
                let Some(s) = stream.as_mut() else { return };
                // A newer sample waits while this one is stuck (flow control, a slow path):
                // abandon this one, reset its stream, go on with the newer. (A wake-up left
                // from the offer just taken is not a newer sample: the slot says.)
                let newer = async {
                    loop {
                        wk.notified().await;
                        if sl.lock().next.is_some() {
                            break;
                        }
                    }
                };
                tokio::select! {
                    // Whole: its stream is finished and the next sample takes a new one, since
                    // a reset drops everything on its stream not yet acknowledged and would
                    // lose this sample uncounted with a newer one half written.
                    r = write_enc(s, enc) => {
                        if r.is_ok() {
                            let _ = s.finish();
                        }
                        stream = None;
                    }
                    _ = newer => {
                        let _ = s.reset(0u32.into());
                        stream = None;
                        shed.abandoned.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
            if let Some(mut s) = stream {
                if s.finish().is_ok() {
                    let _ = s.stopped().await;
                }
            }
        });
        BestEffortWriter {
            slot,
            wake,
            task: Mutex::new(Some(task)),
        }
    }

    /// The newest sample of the class: replaces one still waiting (counted), never waits.
    fn offer(&self, enc: EncodedFrame, shed: &Shed) {
        {
            let mut s = self.slot.lock();
            if s.closed {
                return;
            }
            if s.next.replace(enc).is_some() {
                shed.replaced.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.wake.notify_one();
    }

    fn close(&self) -> Option<tokio::task::JoinHandle<()>> {
        self.slot.lock().closed = true;
        self.wake.notify_one();
        self.task.lock().take()
    }
}
