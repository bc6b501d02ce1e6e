//! The sending side of a link on the runtime-free engine (stage 2 of docs/network.md section
//! 4a): the carriers and rules of `streams.rs` (section 7: a control stream, a reliable
//! stream per class opened on first use with its tag byte, datagrams for best effort and a
//! best-effort stream per class behind a one-sample mailbox, `mailbox.rs`; the bounded queues
//! of `queue.rs`, barriers), with no writer thread or task. A sender queues its frame and,
//! under the connection's lock, pumps the queues into quinn-proto's streams and sends the
//! packets itself; a corked sender (`engine/conn.rs`) leaves the pumping to the loop's flush,
//! and what flow control held back is pumped when the peer's credit comes (the link's
//! watcher calls [`Sending::pump`] on every progress). A closing link stops taking frames,
//! writes what is queued and finishes its streams (`Sending::close`, `Sending::finish`).

use std::cell::Cell;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use parking_lot::Mutex;
use quinn_proto::{Connection, Dir, StreamId, WriteError};

use super::engine::Conn;
use super::queue::{Kind, Next, Queue};
use super::routes::Route;
use super::streams::{barrier_nonce, ping, SendFail, Shed, CLASSES, CONTROL_PRIORITY};
use crate::wire::{EncodedFrame, Frame};
use mailbox::Mailbox;

mod mailbox;

thread_local! {
    /// The sending side whose connection this thread holds in `Sending::holding` (its
    /// address; 0: none).
    static HOLDING: Cell<usize> = const { Cell::new(0) };
}

/// Frames smaller than this are gathered into one write with their neighbours (quinn-proto
/// walks its send buffer's writes per frame it sends: `engine/stage.rs`); larger ones are
/// handed over as they are, without a copy.
const GATHER: usize = 16 << 10;

/// One ordered stream (the control stream or a reliable edge stream) and its queue.
struct Lane {
    queue: Queue,
    /// The tag byte an edge stream starts with; `None` for the control stream.
    tag: Option<u8>,
    priority: i32,
    /// A frame was queued since the last barrier marker.
    dirty: AtomicBool,
    io: Mutex<LaneIo>,
}

#[derive(Default)]
struct LaneIo {
    id: Option<StreamId>,
    tag_sent: bool,
    /// Taken from the queue, not yet taken by the stream (in order).
    chunks: VecDeque<Bytes>,
    /// Since when what is left has waited with the stream taking nothing.
    stuck: Option<Instant>,
    /// The stream's priority class is set.
    prioritized: bool,
    /// The stream is finished (the link closes).
    finished: bool,
}

impl Lane {
    fn new(tag: Option<u8>, priority: i32, bound: usize, id: Option<StreamId>) -> Lane {
        Lane {
            queue: Queue::new(bound),
            tag,
            priority,
            dirty: AtomicBool::new(false),
            io: Mutex::new(LaneIo {
                id,
                ..LaneIo::default()
            }),
        }
    }

    /// Hand the stream what is queued, as far as its credit goes, and note since when what is
    /// left has waited without the stream taking a byte (the write timeout's clock).
    /// `Err`: the stream is gone.
    fn pump(&self, conn: &mut Connection) -> Result<(), SendFail> {
        let mut io = self.io.lock();
        let moved = self.pump_io(conn, &mut io)?;
        let left = !io.chunks.is_empty() || !self.queue.try_peek_empty();
        io.stuck = match (left, moved) {
            (false, _) => None,
            (true, true) => Some(Instant::now()),
            (true, false) => io.stuck.or_else(|| Some(Instant::now())),
        };
        Ok(())
    }

    /// `pump`'s work: true when the stream took bytes.
    fn pump_io(&self, conn: &mut Connection, io: &mut LaneIo) -> Result<bool, SendFail> {
        let id = match io.id {
            Some(id) => id,
            None => {
                if self.queue.try_peek_empty() && io.chunks.is_empty() {
                    return Ok(false);
                }
                // At the peer's stream limit: tried again at the next progress.
                let Some(id) = conn.streams().open(Dir::Uni) else {
                    return Ok(false);
                };
                io.id = Some(id);
                id
            }
        };
        // Here, not where the lane is made: that may be inside the connection's watcher,
        // which holds the connection already.
        if !io.prioritized {
            let _ = conn.send_stream(id).set_priority(self.priority);
            io.prioritized = true;
        }
        if let (Some(tag), false) = (self.tag, io.tag_sent) {
            match conn.send_stream(id).write(&[tag]) {
                Ok(1) => io.tag_sent = true,
                Ok(_) | Err(WriteError::Blocked) => return Ok(false),
                Err(_) => return Err(SendFail::Closed),
            }
        }
        let mut moved = false;
        loop {
            if io.chunks.is_empty() && !self.refill(&mut io.chunks) {
                return Ok(moved);
            }
            match conn
                .send_stream(id)
                .write_chunks(io.chunks.make_contiguous())
            {
                Ok(w) => {
                    self.queue.release(w.bytes);
                    while io.chunks.front().is_some_and(Bytes::is_empty) {
                        io.chunks.pop_front();
                    }
                    if w.bytes == 0 {
                        return Ok(moved);
                    }
                    moved = true;
                }
                Err(WriteError::Blocked) => return Ok(moved),
                Err(_) => return Err(SendFail::Closed),
            }
        }
    }

    /// Take queued frames into `chunks`: small ones gathered into one, a large one as its
    /// head and payload. False when nothing was queued.
    fn refill(&self, chunks: &mut VecDeque<Bytes>) -> bool {
        let mut small = BytesMut::new();
        while small.len() < GATHER {
            let Next::Frame(enc) = self.queue.try_next() else {
                break;
            };
            if enc.len() < GATHER {
                small.extend_from_slice(&enc.head);
                if let Some(p) = &enc.payload {
                    small.extend_from_slice(p);
                }
                continue;
            }
            if !small.is_empty() {
                chunks.push_back(std::mem::take(&mut small).freeze());
            }
            chunks.push_back(Bytes::from(enc.head));
            if let Some(p) = enc.payload {
                chunks.push_back(p);
            }
            break;
        }
        if !small.is_empty() {
            chunks.push_back(small.freeze());
        }
        !chunks.is_empty()
    }
}

/// The sending side of one link on an engine connection.
pub(crate) struct Sending {
    conn: Arc<Conn>,
    write_timeout: Duration,
    queue_bytes: usize,
    control: Lane,
    reliable: [OnceLock<Lane>; CLASSES],
    /// Each class's best-effort stream (`mailbox.rs`).
    mailboxes: [Mutex<Mailbox>; CLASSES],
    /// Serialises barriers: markers and the barrier PING of one READ go out together.
    barrier: Mutex<u64>,
    pub(crate) shed: Arc<Shed>,
    /// A stream went (the peer stopped it, or the connection closed).
    failed: AtomicBool,
    /// Sent from inside `holding`, to queue at its end.
    deferred: Mutex<Vec<(Route, EncodedFrame)>>,
}

impl Sending {
    /// The sending side of `conn`, whose control stream `control` is open. Takes no lock of
    /// the connection (the link's watcher, which holds it, may make the link).
    pub(crate) fn new(
        conn: Arc<Conn>,
        control: StreamId,
        write_timeout: Duration,
        queue_bytes: usize,
    ) -> Sending {
        Sending {
            conn,
            write_timeout,
            queue_bytes,
            control: Lane::new(None, CONTROL_PRIORITY, queue_bytes, Some(control)),
            reliable: Default::default(),
            mailboxes: std::array::from_fn(|c| Mutex::new(Mailbox::new(c as u8))),
            barrier: Mutex::new(0),
            shed: Arc::new(Shed::default()),
            failed: AtomicBool::new(false),
            deferred: Mutex::new(Vec::new()),
        }
    }

    fn lane(&self, class: u8) -> &Lane {
        self.reliable[usize::from(class)].get_or_init(|| {
            Lane::new(
                Some(class),
                2 * i32::from(class) + 1,
                self.queue_bytes,
                None,
            )
        })
    }

    /// Queue `enc` where `route` says and send what the streams take, from this thread (or,
    /// corked, from the loop's next flush). How many queued deliveries it dropped. Called from
    /// inside [`Sending::holding`] (a callback the link's watcher runs, which holds the
    /// connection), the frame is kept and sent when the watcher is done.
    pub(crate) fn send(&self, route: Route, enc: EncodedFrame) -> Result<u64, SendFail> {
        if self.failed.load(Ordering::Acquire) {
            return Err(SendFail::Closed);
        }
        if HOLDING.with(Cell::get) == self.key() {
            self.deferred.lock().push((route, enc));
            return Ok(0);
        }
        let (dropped, best_effort) = self.enqueue(route, enc, self.write_timeout)?;
        let mut g = self.conn.lock();
        if let Some((c, enc)) = best_effort {
            self.best_effort(&mut g, c, enc);
        }
        if !g.corked() {
            self.pump(&mut g)?;
        }
        Ok(dropped)
    }

    /// Run `f` (the link's watcher handing frames to its strand, whose callbacks may send)
    /// with `conn`, this link's connection, held by the caller: what `f` sends is kept and
    /// queued at the end, under the same hold (a send from inside would wait for the lock its
    /// own thread holds). Kept frames do not wait for room there: a full queue fails them.
    pub(crate) fn holding<R>(
        &self,
        conn: &mut Connection,
        f: impl FnOnce(&mut Connection) -> R,
    ) -> R {
        let before = HOLDING.with(|h| h.replace(self.key()));
        let r = f(conn);
        HOLDING.with(|h| h.set(before));
        let kept = std::mem::take(&mut *self.deferred.lock());
        for (route, enc) in kept {
            match self.enqueue(route, enc, Duration::ZERO) {
                Ok((_, Some((c, enc)))) => self.best_effort(conn, c, enc),
                Ok(_) => {}
                Err(_) => self.failed.store(true, Ordering::Release),
            }
        }
        r
    }

    /// Whether this thread holds the connection in `holding` (a callback the watcher runs).
    pub(crate) fn held_here(&self) -> bool {
        HOLDING.with(Cell::get) == self.key()
    }

    /// Identifies this link's sending side to `holding`.
    fn key(&self) -> usize {
        std::ptr::from_ref(self) as usize
    }

    /// Queue `enc` on its stream (a kept frame waits up to `wait` for room): the deliveries it
    /// dropped, or the best-effort frame back with its class (a datagram or the mailbox, which
    /// need the connection).
    fn enqueue(
        &self,
        route: Route,
        enc: EncodedFrame,
        wait: Duration,
    ) -> Result<(u64, Option<(u8, EncodedFrame)>), SendFail> {
        let dropped = match route {
            Route::Control => self.control.queue.push(enc, Kind::Kept, wait)?,
            Route::Reliable(c) => self.reliable_push(c, enc, Kind::Kept, wait)?,
            Route::ReliableDelivery(c, edge) => {
                self.reliable_push(c, enc, Kind::Delivery(edge), wait)?
            }
            Route::Owed(c) => self.reliable_push(c, enc, Kind::Owed, wait)?,
            Route::BestEffort(c) => return Ok((0, Some((c, enc)))),
            Route::Barrier => self.barrier(enc, wait)?,
        };
        if dropped != 0 {
            self.shed.dropped.fetch_add(dropped, Ordering::Relaxed);
        }
        Ok((dropped, None))
    }

    /// A best-effort frame: one datagram if it fits, else the class's best-effort stream
    /// through its one-sample mailbox (never waits).
    fn best_effort(&self, conn: &mut Connection, c: u8, enc: EncodedFrame) {
        if self.datagram(conn, &enc) {
            return;
        }
        self.mailboxes[usize::from(c)]
            .lock()
            .offer(conn, enc, &self.shed);
    }

    fn reliable_push(
        &self,
        c: u8,
        enc: EncodedFrame,
        kind: Kind,
        wait: Duration,
    ) -> Result<u64, SendFail> {
        let lane = self.lane(c);
        let dropped = lane.queue.push(enc, kind, wait)?;
        lane.dirty.store(true, Ordering::Release);
        Ok(dropped)
    }

    /// A READ: a marker on every reliable stream written since the last barrier, the barrier
    /// PING naming them on the control stream, then the READ (wire.md section 5).
    fn barrier(&self, enc: EncodedFrame, wait: Duration) -> Result<u64, SendFail> {
        let mut n = self.barrier.lock();
        *n += 1;
        let (mut classes, mut dropped) = (0u8, 0);
        for (c, lane) in self.reliable.iter().enumerate() {
            if let Some(lane) = lane.get().filter(|l| l.dirty.swap(false, Ordering::AcqRel)) {
                dropped += lane.queue.push(ping(*n), Kind::Kept, wait)?;
                classes |= 1 << c;
            }
        }
        if classes != 0 {
            let marker = ping(barrier_nonce(*n, classes));
            self.control.queue.push(marker, Kind::Kept, wait)?;
        }
        self.control.queue.push(enc, Kind::Kept, wait)?;
        Ok(dropped)
    }

    /// A best-effort frame as one datagram, if the connection takes datagrams of its size.
    fn datagram(&self, conn: &mut Connection, enc: &EncodedFrame) -> bool {
        let Some(max) = conn.datagrams().max_size() else {
            return false;
        };
        if enc.len() > max {
            return false;
        }
        let mut b = BytesMut::with_capacity(enc.len());
        b.extend_from_slice(&enc.head);
        if let Some(p) = &enc.payload {
            b.extend_from_slice(p);
        }
        if conn.datagrams().send(b.freeze(), true).is_err() {
            return false;
        }
        self.shed.datagrams.fetch_add(1, Ordering::Relaxed);
        true
    }

    /// A PONG for the peer's PING: never waits (dropped when the control queue is full).
    pub(crate) fn pong(&self, nonce: u64) {
        if let Ok(enc) = crate::wire::encode_parts(&Frame::Pong { nonce }, crate::wire::MAX_FRAME) {
            let _ = self.control.queue.push(enc, Kind::Kept, Duration::ZERO);
        }
    }

    /// When the link must close for a stream that has taken no byte for the write timeout
    /// (docs/network.md section 4: it bounds a stall, not a transfer), if one is waiting: the
    /// link's watcher asks the engine to look by then (`Conn::wake_at`) and closes the link
    /// once `stalled`.
    pub(crate) fn stall_deadline(&self) -> Option<Instant> {
        std::iter::once(&self.control)
            .chain(self.reliable.iter().filter_map(OnceLock::get))
            .filter_map(|l| l.io.lock().stuck)
            .min()
            .map(|since| since + self.write_timeout)
    }

    /// Whether a stream has taken no byte for the write timeout.
    pub(crate) fn stalled(&self) -> bool {
        self.stall_deadline().is_some_and(|at| at <= Instant::now())
    }

    /// The most bytes any reliable stream's queue of this link held.
    pub(crate) fn queued_peak(&self) -> usize {
        self.reliable
            .iter()
            .filter_map(|l| l.get().map(|l| l.queue.peak()))
            .max()
            .unwrap_or(0)
    }

    /// Each reliable stream's queue bound.
    pub(crate) fn queue_bytes(&self) -> usize {
        self.queue_bytes
    }

    /// The link closes: take no more frames (a sender waiting for room fails at once); what
    /// is queued is still written (`pump`), then the streams are finished (`finish`).
    pub(crate) fn close(&self) {
        self.control.queue.close();
        for lane in self.reliable.iter().filter_map(OnceLock::get) {
            lane.queue.close();
        }
    }

    /// After `close`: finish every ordered stream whose queue is written out (the best-effort
    /// streams finish each sample's stream as they go).
    pub(crate) fn finish(&self, conn: &mut Connection) {
        let lanes = self.reliable.iter().filter_map(OnceLock::get);
        for lane in std::iter::once(&self.control).chain(lanes) {
            let mut io = lane.io.lock();
            if !io.chunks.is_empty() || !lane.queue.try_peek_empty() {
                continue;
            }
            if let (Some(id), false) = (io.id, io.finished) {
                let _ = conn.send_stream(id).finish();
                io.finished = true;
            }
        }
    }

    /// Hand every stream what is queued for it, as far as the peer's credit goes: from a
    /// sender, or from the link's watcher when the loop moved the connection (credit came, a
    /// corked flush is due).
    pub(crate) fn pump(&self, conn: &mut Connection) -> Result<(), SendFail> {
        let r = (|| {
            self.control.pump(conn)?;
            for lane in self.reliable.iter().rev().filter_map(OnceLock::get) {
                lane.pump(conn)?;
            }
            for m in self.mailboxes.iter().rev() {
                m.lock().pump(conn);
            }
            Ok(())
        })();
        if r.is_err() {
            self.failed.store(true, Ordering::Release);
        }
        r
    }
}

#[cfg(test)]
mod tests;
