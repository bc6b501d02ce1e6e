//! One link over a QUIC connection: the control stream (the bidirectional HELLO stream), the
//! edge streams and datagrams of `streams.rs` (the same length-prefixed codec as a Unix
//! socket), the reader tasks (one per stream and one for datagrams), and the dispatcher that
//! runs the handler's callbacks.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::runtime::Handle;
use tokio::sync::{mpsc, watch};

use super::hello::{HelloOutcome, HelloRx, HANDSHAKE_FRAME};
use super::receive::{accept_streams, read_datagrams, Control, ControlRx, Markers};
use super::streams::{Outgoing, Route, SendFail, Shed};
use super::Inner;
use crate::link::{
    close_handler_failed, close_malformed, run_callback, Link, LinkError, LinkHandler, PeerIdentity,
};
use crate::wire::{
    encode_parts, parts, EncodedFrame, Frame, FrameDecoder, MAX_FRAME, PROTOCOL_VERSION,
};

/// Largest chunk the reader takes from the stream at once.
pub(super) const READ_CHUNK: usize = 256 * 1024;
/// How long a closing link waits for the peer to acknowledge what was written (an ERROR that
/// explains the close) before it drops the connection.
pub(super) const LINGER: Duration = Duration::from_millis(500);
/// At most one line per link this often about reliable deliveries its queues dropped.
const DROPS_SAID_EVERY: Duration = Duration::from_secs(10);

/// What a reader task tells its dispatcher.
pub(crate) enum Event {
    Up(Arc<QuicLink>),
    Frame(Arc<QuicLink>, Frame),
    Malformed(Arc<QuicLink>, String),
    Down(Arc<QuicLink>),
}

impl Event {
    fn link(&self) -> &Arc<QuicLink> {
        match self {
            Event::Up(l) | Event::Frame(l, _) | Event::Malformed(l, _) | Event::Down(l) => l,
        }
    }
}

/// A link's readers' way to its dispatcher thread.
///
/// **A DELIVERY is landed by the reader itself** when nothing of its link is queued for or
/// running on the dispatcher: it only lands a sample in its target (a ring push and a wake-up,
/// or a sink, which must not block; as the Unix loop does, `strand.rs`), and the link's gate is
/// held meanwhile, so its callbacks still run one at a time and in order. That takes the
/// dispatcher thread's wake-up out of every delivery's path (docs/network.md section 11).
/// Everything else, and a delivery while anything of the link is queued, goes through the queue.
#[derive(Clone)]
pub(crate) struct ToDispatcher(pub(crate) mpsc::Sender<Event>);

impl ToDispatcher {
    /// Queue `ev` for the dispatcher (waiting while its queue is full); false when it is gone.
    pub(crate) async fn post(&self, ev: Event) -> bool {
        let link = ev.link().clone();
        *link.gate.lock() += 1;
        if self.0.send(ev).await.is_err() {
            *link.gate.lock() -= 1;
            return false;
        }
        true
    }

    /// A frame of `link`: landed here if it is a DELIVERY and the link is idle, else queued.
    pub(crate) async fn frame(&self, link: &Arc<QuicLink>, frame: Frame) -> bool {
        if link.inline && matches!(frame, Frame::Delivery { .. }) {
            let queued = link.gate.lock();
            if *queued == 0 {
                on_frame(link, frame);
                return true;
            }
        }
        self.post(Event::Frame(link.clone(), frame)).await
    }
}

/// One end of a QUIC link.
pub struct QuicLink {
    peer: PeerIdentity,
    pub(super) conn: quinn::Connection,
    out: Outgoing,
    /// The peer's barrier markers, as its edge streams hand frames up (wire.md section 5).
    pub(super) markers: Markers,
    peer_max: u32,
    pub(super) rt: Handle,
    write_timeout: Duration,
    closed: AtomicBool,
    /// `on_down` ran: frames still queued from the other streams are dropped.
    down: AtomicBool,
    pub(super) closing: watch::Sender<bool>,
    /// A callback panicked: no more callbacks but `on_down`.
    failed: AtomicBool,
    /// The reader ended because the peer closed the stream or the connection died (not
    /// because we closed the link): such a peer may be linked again at once.
    peer_ended: AtomicBool,
    handler: Arc<dyn LinkHandler>,
    owner: Weak<Inner>,
    /// The close task: what was written reaches the peer before the connection goes.
    linger: parking_lot::Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// Events of this link queued for or running on its dispatcher (`ToDispatcher`).
    gate: parking_lot::Mutex<usize>,
    /// The handler's deliveries never block: they may land on the runtime thread.
    inline: bool,
    /// Reliable deliveries dropped and not reported yet (`said_dropped`).
    drops: parking_lot::Mutex<DropReport>,
    /// Held while the parts of one message are queued: parts of two messages never interleave
    /// on an edge (docs/wire.md, "Messages of any size").
    parts: parking_lot::Mutex<()>,
    /// Edge streams being read (`receive::read_stream`): a peer that closed its link is let go
    /// once they have all been read to their ends.
    pub(super) edge_readers: watch::Sender<usize>,
}

/// What a link has said so far about the reliable deliveries its queues dropped (either kind
/// of link: `QuicLink::said_dropped`, `EngineLink`'s sends).
#[derive(Default)]
pub(crate) struct DropReport {
    /// Dropped since the last line.
    unsaid: u64,
    /// When the last line was logged; `None` before the first.
    said_at: Option<Instant>,
}

impl DropReport {
    /// `dropped` more: the line to log now, if one is due (the first drops of a link at once,
    /// then at most a line every `DROPS_SAID_EVERY`, with the count since the last line), so
    /// that whoever runs the publisher sees why its peer misses samples.
    pub(crate) fn note(&mut self, dropped: u64, peer: &str, queue_bytes: usize) -> Option<String> {
        self.unsaid += dropped;
        let now = Instant::now();
        if self
            .said_at
            .is_some_and(|at| now.duration_since(at) < DROPS_SAID_EVERY)
        {
            return None;
        }
        let first = self.said_at.replace(now).is_none();
        let count = std::mem::take(&mut self.unsaid);
        let since = if first {
            ""
        } else {
            " since the last line about them"
        };
        Some(format!(
            "link to {peer}: {count} reliable deliveries dropped{since}, oldest first: the path \
             or the peer takes them slower than they are published, and at most {} MiB waits \
             per stream (the subscriber counts them as lost messages)",
            queue_bytes >> 20
        ))
    }
}

impl QuicLink {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        peer: PeerIdentity,
        conn: quinn::Connection,
        send: quinn::SendStream,
        peer_max: u32,
        rt: Handle,
        write_timeout: Duration,
        queue_bytes: usize,
        handler: Arc<dyn LinkHandler>,
        owner: Weak<Inner>,
    ) -> QuicLink {
        let out = Outgoing::new(conn.clone(), send, rt.clone(), write_timeout, queue_bytes);
        QuicLink {
            peer,
            conn,
            out,
            markers: Markers::default(),
            peer_max,
            rt,
            write_timeout,
            closed: AtomicBool::new(false),
            down: AtomicBool::new(false),
            closing: watch::channel(false).0,
            failed: AtomicBool::new(false),
            peer_ended: AtomicBool::new(false),
            owner,
            linger: parking_lot::Mutex::new(None),
            gate: parking_lot::Mutex::new(0),
            inline: handler.deliveries_never_block(),
            handler,
            drops: parking_lot::Mutex::default(),
            parts: parking_lot::Mutex::default(),
            edge_readers: watch::Sender::new(0),
        }
    }

    /// The close task, once `close` has run (the transport's shutdown waits for it).
    pub(crate) fn take_linger(&self) -> Option<tokio::task::JoinHandle<()>> {
        self.linger.lock().take()
    }

    /// The link is lost to the network (its host vanished, or its directory no longer lists
    /// the peer): the connection goes at once, nothing more is written, and the reader ends as
    /// for a connection that died (`on_down`; the peer may be linked again at once).
    pub(crate) fn lost(&self) {
        self.conn.close(0u32.into(), b"peer lost");
    }

    /// Write `bytes` as they are (tests use it to send malformed input).
    pub fn send_raw(&self, bytes: &[u8]) -> Result<(), LinkError> {
        self.write(
            Route::Control,
            EncodedFrame {
                head: bytes.to_vec(),
                payload: None,
            },
        )
    }

    /// Send `bytes` as they are as one datagram (tests use it to send malformed input).
    pub fn send_raw_datagram(&self, bytes: &[u8]) -> Result<(), LinkError> {
        self.conn
            .send_datagram(Bytes::copy_from_slice(bytes))
            .map_err(|e| LinkError::Io(std::io::Error::other(e.to_string())))
    }

    /// What the sending side gave up (reliable overflow, best effort) or sent as datagrams, and
    /// the best-effort samples the receiving side dropped as stale.
    pub fn shed(&self) -> ShedCounts {
        let s: &Shed = &self.out.shed;
        ShedCounts {
            dropped: s.dropped.load(Ordering::Relaxed),
            queued_peak: self.out.queued_peak() as u64,
            datagrams: s.datagrams.load(Ordering::Relaxed),
            replaced: s.replaced.load(Ordering::Relaxed),
            abandoned: s.abandoned.load(Ordering::Relaxed),
            stale: self.markers.stale(),
        }
    }

    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// The peer's UDP address.
    pub fn remote_address(&self) -> std::net::SocketAddr {
        super::peer_address(self.conn.remote_address())
    }

    fn write(&self, route: Route, enc: EncodedFrame) -> Result<(), LinkError> {
        if self.is_closed() {
            return Err(LinkError::Closed(self.peer.name.clone()));
        }
        match self.out.send(route, enc) {
            Ok(0) => Ok(()),
            Ok(dropped) => {
                self.said_dropped(dropped);
                Ok(())
            }
            Err(SendFail::Closed) => {
                self.close();
                Err(LinkError::Closed(self.peer.name.clone()))
            }
            Err(SendFail::Blocked) => {
                self.close();
                Err(LinkError::Io(std::io::Error::other(format!(
                    "write blocked for {:?}",
                    self.write_timeout
                ))))
            }
        }
    }
}

impl QuicLink {
    /// The publisher's side of reliable overflow: the subscriber counts the drops as lost
    /// messages, and the sending process says so too (`DropReport`).
    fn said_dropped(&self, dropped: u64) {
        let line = (self.drops.lock()).note(dropped, &self.peer.name, self.out.queue_bytes());
        if let (Some(line), Some(owner)) = (line, self.owner.upgrade()) {
            owner.log(&line);
        }
    }
}

/// What a link's sending side did with samples it could not send at once (`QuicLink::shed`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ShedCounts {
    /// Reliable deliveries dropped, oldest first, from a stream queue that was full
    /// (docs/network.md section 7, "Reliable overflow").
    pub dropped: u64,
    /// The most bytes one reliable stream's queue of the link held (bounded by
    /// `QuicConfig::queue_bytes`, plus one delivery when nothing else could be dropped).
    pub queued_peak: u64,
    /// Sent as one datagram each.
    pub datagrams: u64,
    /// Replaced by a newer sample of their class before they were written (too large for a
    /// datagram, waiting for the class's stream).
    pub replaced: u64,
    /// Half written when a newer one came: their stream was reset.
    pub abandoned: u64,
    /// Received: best-effort samples from the peer dropped on arrival, as older than one of
    /// their writer already handed up (each goes on a stream of its own).
    pub stale: u64,
}

impl QuicLink {
    /// Encode `frame` and queue it where it goes; `owed`: a reliable edge's replayed delivery
    /// goes on its stream as owed, never dropped and dropping nothing (`queue.rs`).
    fn send_as(&self, frame: &Frame, owed: bool) -> Result<(), LinkError> {
        if self.is_closed() {
            return Err(LinkError::Closed(self.peer.name.clone()));
        }
        if parts::may_split(frame, self.peer_max) {
            if let Some(parts) = parts::split(frame, self.peer_max)? {
                return self.send_in_parts(frame, &parts, owed);
            }
        }
        let enc = encode_parts(frame, self.peer_max)?;
        let route = match self.out.route(frame) {
            Route::ReliableDelivery(class, _) if owed => Route::Owed(class),
            route => route,
        };
        self.write(route, enc)
    }

    /// The DELIVERY_PART frames of `whole`, in order on its class's reliable stream, none
    /// dropped: a part cannot be dropped or replaced alone, so a message in parts goes as a
    /// whole even on a best-effort edge (a datagram could not carry it anyway). The writer
    /// waits for room in the stream's queue as for any frame kept (`queue.rs`), so what waits
    /// stays within the queue's bound.
    fn send_in_parts(&self, whole: &Frame, parts: &[Frame], owed: bool) -> Result<(), LinkError> {
        let route = match self.out.route(whole) {
            Route::ReliableDelivery(class, _) | Route::BestEffort(class) if owed => {
                Route::Owed(class)
            }
            Route::ReliableDelivery(class, _) | Route::BestEffort(class) => Route::Reliable(class),
            route => route,
        };
        let _one_message = self.parts.lock();
        for part in parts {
            self.write(route, encode_parts(part, self.peer_max)?)?;
        }
        Ok(())
    }
}

impl Link for QuicLink {
    fn send(&self, frame: &Frame) -> Result<(), LinkError> {
        self.send_as(frame, false)
    }
    fn send_owed(&self, frame: &Frame) -> Result<(), LinkError> {
        self.send_as(frame, true)
    }
    fn peer(&self) -> &PeerIdentity {
        &self.peer
    }
    /// The reader stops at once (`on_down` follows); what was written still reaches the peer:
    /// the stream is finished and the connection closed once the peer has it, or after
    /// `LINGER`.
    fn close(&self) {
        if self.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        self.closing.send_replace(true);
        let writers = self.out.close();
        let conn = self.conn.clone();
        // Closing first, we wait for the peer to have read what we wrote: it closes the
        // connection once its link has read every stream to its end (`read_loop`), since an
        // acknowledgement says its QUIC has the bytes, not that its link read them. Closing
        // after the peer did, nothing is owed.
        let wait_for_peer = !self.peer_ended.load(Ordering::Acquire);
        let task = self.rt.spawn(async move {
            let linger = async {
                for w in writers {
                    let _ = w.await;
                }
                if wait_for_peer {
                    conn.closed().await;
                }
            };
            let _ = tokio::time::timeout(LINGER, linger).await;
            conn.close(0u32.into(), b"link closed");
        });
        *self.linger.lock() = Some(task);
    }
}

/// Our HELLO: with our permissions document when SROS2 is on, and our host directory's port.
pub(crate) fn hello(local: &str, permissions: Option<Bytes>, directory: u16) -> Frame {
    Frame::Hello {
        version: PROTOCOL_VERSION,
        node: local.to_owned(),
        max_frame: MAX_FRAME,
        // Shared memory never crosses a host.
        shm: false,
        permissions,
        directory: Some(directory),
    }
}

/// Write one frame during the handshake (no link yet).
pub(crate) async fn write_frame(send: &mut quinn::SendStream, frame: &Frame) -> Result<(), String> {
    let enc = encode_parts(frame, MAX_FRAME).map_err(|e| e.to_string())?;
    send.write_all(&enc.head).await.map_err(|e| e.to_string())?;
    if let Some(p) = enc.payload {
        send.write_chunk(p).await.map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Refuse a connection: ERROR{code, why}, then close once the peer has it (or after LINGER).
pub(crate) async fn refuse(
    conn: &quinn::Connection,
    send: &mut quinn::SendStream,
    code: crate::wire::ErrorCode,
    why: &str,
) {
    let _ = write_frame(send, &crate::link::refusal(code, why)).await;
    if send.finish().is_ok() {
        let _ = tokio::time::timeout(LINGER, send.stopped()).await;
    }
    conn.close(0u32.into(), b"refused");
}

/// Read until the first frame, by `deadline`. It must be HELLO (or ERROR: a refusal).
pub(crate) async fn read_hello(
    recv: &mut quinn::RecvStream,
    deadline: Instant,
) -> Result<HelloOutcome, String> {
    let mut rx = HelloRx::default();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let chunk =
            match tokio::time::timeout(left, recv.read_chunk(HANDSHAKE_FRAME as usize, true)).await
            {
                Err(_) => return Err("timed out waiting for HELLO".into()),
                Ok(Err(e)) => return Err(e.to_string()),
                Ok(Ok(None)) => return Err("stream closed before HELLO".into()),
                Ok(Ok(Some(c))) => c.bytes,
            };
        if let Some(outcome) = rx.push(chunk)? {
            return Ok(outcome);
        }
    }
}

/// The reader task of one link's control stream: `Up`, every frame in order, then `Down`, all
/// through the link's dispatcher queue (awaited: a full queue stops the reading, and QUIC flow
/// control the peer). It starts the readers of the edge streams and of datagrams after `Up`.
pub(crate) async fn read_loop(
    link: Arc<QuicLink>,
    mut recv: quinn::RecvStream,
    dec: FrameDecoder,
    mut pending: Bytes,
    tx: ToDispatcher,
) {
    let mut closing = link.closing.subscribe();
    if !tx.post(Event::Up(link.clone())).await {
        link.close();
        return;
    }
    link.rt.spawn(accept_streams(link.clone(), tx.clone()));
    link.rt.spawn(read_datagrams(link.clone(), tx.clone()));
    let mut rx = ControlRx::new(dec);
    // The peer closed its link: its edge streams are read to their ends before `Down`.
    let mut drain = false;
    'outer: loop {
        loop {
            match rx.next(&mut pending) {
                // A READ follows: hold the control stream until the named edge streams have
                // handed up what was written on them before it (wire.md section 5).
                Ok(Some(Control::Barrier { number, classes })) => {
                    let met = tokio::select! {
                        m = link.markers.wait(number, classes, link.write_timeout) => m,
                        _ = closing.wait_for(|c| *c) => break 'outer,
                    };
                    if !met {
                        let why = "a barrier's markers did not arrive".to_string();
                        tx.post(Event::Malformed(link.clone(), why)).await;
                        break 'outer;
                    }
                }
                Ok(Some(Control::Ping(nonce))) => link.out.pong(nonce),
                Ok(Some(Control::Frame(frame))) => {
                    // Learned before the graph sees it, so that the edge's deliveries and the
                    // answer find their stream.
                    link.out.learn(&frame);
                    if !tx.frame(&link, frame).await {
                        break 'outer;
                    }
                }
                Ok(None) => break,
                Err(why) => {
                    tx.post(Event::Malformed(link.clone(), why)).await;
                    break 'outer;
                }
            }
            if *closing.borrow() {
                break 'outer;
            }
        }
        // Biased: polled in order, no random pick per packet (tokio's `thread_rng_n` took 5-6%
        // of a receiving process's CPU at 1 MiB); the close is also checked between frames.
        tokio::select! {
            biased;
            r = recv.read_chunk(READ_CHUNK, true) => match r {
                Ok(Some(c)) => pending = c.bytes,
                // End of stream: the peer closed the link. What it wrote on its edge streams
                // before is read to their ends first (bounded by LINGER, as its close is).
                Ok(None) => {
                    link.peer_ended.store(true, Ordering::Release);
                    drain = true;
                    break;
                }
                // The connection died: nothing more will come.
                Err(_) => {
                    link.peer_ended.store(true, Ordering::Release);
                    break;
                }
            },
            _ = closing.wait_for(|c| *c) => break,
        }
    }
    if drain {
        super::receive::accept_pending(&link, &tx).await;
        let mut readers = link.edge_readers.subscribe();
        let drained = async move { readers.wait_for(|n| *n == 0).await.is_ok() };
        let _ = tokio::time::timeout(LINGER, drained).await;
    }
    // The dispatcher closes the link when it takes `Down` (after a `Malformed` it sent the
    // ERROR first).
    tx.post(Event::Down(link)).await;
}

/// One event on a dispatcher thread.
pub(crate) fn dispatch(ev: Event) {
    let link = ev.link().clone();
    match ev {
        Event::Up(l) => {
            let d: Arc<dyn Link> = l.clone();
            if !run_callback(|| l.handler.on_up(d)) {
                l.failed.store(true, Ordering::Release);
                close_handler_failed(&*l);
            }
        }
        Event::Frame(l, frame) => on_frame(&l, frame),
        // The reader leaves the closing to its dispatcher, so the ERROR goes out first.
        Event::Malformed(l, why) => close_malformed(&*l, &why),
        Event::Down(l) => {
            l.down.store(true, Ordering::Release);
            l.close();
            if let Some(inner) = l.owner.upgrade() {
                let it = super::AnyLink::Task(l.clone());
                inner.forget(&it, !l.peer_ended.load(Ordering::Acquire));
            }
            let d: Arc<dyn Link> = l.clone();
            let _ = run_callback(|| l.handler.on_down(&d));
            if let Some(inner) = l.owner.upgrade() {
                inner.down_done();
            }
        }
    }
    *link.gate.lock() -= 1;
}

/// `on_frame`, unless the link is down or its handler failed.
fn on_frame(l: &Arc<QuicLink>, frame: Frame) {
    if l.failed.load(Ordering::Acquire) || l.down.load(Ordering::Acquire) {
        return;
    }
    let d: Arc<dyn Link> = l.clone();
    if !run_callback(|| l.handler.on_frame(&d, frame)) {
        l.failed.store(true, Ordering::Release);
        close_handler_failed(&**l);
    }
}
