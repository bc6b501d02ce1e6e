//! One link over a QUIC connection of the engine (docs/network.md sections 4a and 7): the
//! `Link` seam over the connection, its sending side (`send/`), its receiving side
//! (`inbound.rs`) and a strand of `strand.rs` for its callbacks, run by the Unix links'
//! workers (a DELIVERY to an idle strand landed by the loop itself: the links' one loop,
//! `tracer-io`). Beside it, what it counts and logs of what it shed. The link is the
//! connection's watcher: each time the connection moves it reads, hands frames to the strand,
//! sends what it can, and asks to be woken for its own deadlines (a parked barrier, the write
//! timeout, the credentials' end, the linger of a close). The HELLO exchange that makes it is
//! `hello.rs`, the transport's rules around it `handshake.rs`.
//!
//! **Close and linger.** `close` stops the link for its handler at once (`on_down` follows)
//! but not for the wire: what was queued is still written, the streams are finished, and the
//! peer, once it has read them to their ends (all it was sent handed up), ends its link and
//! closes the connection; or ours closes it after `LINGER` (a deadline of the watcher's). A link
//! lost to the network (`QuicLink::lost`) or whose credentials ran out closes at once.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use parking_lot::Mutex;
use quinn_proto::{Connection, StreamId, VarInt};

use super::engine::{self, Conn, Watcher};
use super::expiry::Expiry;
use super::inbound::{Inbound, Sink};
use super::routes::{Route, Routes};
use super::send::Sending;
use super::streams::SendFail;
use super::NetLog;
use crate::link::strand::{Event, Hooks, Strand, StrandLink};
use crate::link::{Link, LinkError, LinkHandler, PeerIdentity};
use crate::wire::{encode_parts, parts, EncodedFrame, Frame, FrameDecoder};

/// Largest chunk the reader takes from a stream at once.
pub(super) const READ_CHUNK: usize = 256 * 1024;
/// How long a closing link waits for the peer to acknowledge what was written (an ERROR that
/// explains the close) before it drops the connection.
pub(super) const LINGER: Duration = Duration::from_millis(500);
/// At most one line per link this often about reliable deliveries its queues dropped.
const DROPS_SAID_EVERY: Duration = Duration::from_secs(10);

/// What a link has said so far about the reliable deliveries its queues dropped (`QuicLink`'s
/// sends).
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

/// What a link's sending side did with samples it could not send at once (`QuicLinkHandle::shed`).
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

pub(crate) struct QuicLink {
    peer: PeerIdentity,
    conn: Arc<Conn>,
    sending: Sending,
    routes: Routes,
    inbound: Inbound,
    peer_max: u32,
    closed: AtomicBool,
    /// `Down` went to the strand (once).
    down: AtomicBool,
    /// Closed from a callback the watcher ran (it holds the connection): closed on its way out.
    close_asked: AtomicBool,
    /// Until `on_down` has run (then let go: the strand holds the link).
    strand: Mutex<Option<Arc<Strand<QuicLink>>>>,
    /// Held while the parts of one message are queued: parts of two messages never
    /// interleave on an edge (docs/wire.md, "Messages of any size").
    parts: Mutex<()>,
    /// The link ended because the connection did (the peer closed it, it was lost, or a
    /// credential ran out), not because we closed it: the peer may be linked again at once.
    peer_ended: AtomicBool,
    /// Closing: the connection closes once the peer has read what was written (it closes
    /// the connection then), or by then.
    linger: Mutex<Option<Instant>>,
    /// The peer closed its link and we have read all it wrote: the connection closes now.
    peer_closed: AtomicBool,
    /// When the first credential the link stands on runs out (`expiry.rs`).
    expiry: Option<Expiry>,
    /// The line about the credential that ran out was logged (once, whichever end closed).
    expiry_said: AtomicBool,
    /// Where the link's diagnostics go (the transport's log).
    log: Option<NetLog>,
    /// Reliable deliveries dropped and not reported yet.
    drops: Mutex<DropReport>,
    /// The handler's deliveries never block: the engine loop may land them itself (one that
    /// may block, such as a test's gated one, would hold every link of the process, the Unix
    /// ones too: they share the loop).
    inline: bool,
}

/// What the link needs to be made: the connection after the HELLO exchange.
pub(crate) struct Made {
    pub peer: PeerIdentity,
    pub conn: Arc<Conn>,
    pub control: StreamId,
    pub peer_max: u32,
    /// The control stream's decoder after the HELLO, and what was read past it.
    pub dec: FrameDecoder,
    pub rest: Bytes,
    pub write_timeout: Duration,
    pub queue_bytes: usize,
    /// When the first credential the link stands on runs out: the link closes then.
    pub expiry: Option<Expiry>,
    /// Where the link's diagnostics go.
    pub log: Option<NetLog>,
}

impl QuicLink {
    /// The link, its strand started with `Up` queued. The caller makes it the connection's
    /// watcher (`Forward`), so that the link reads from then on.
    pub(crate) fn start(
        m: Made,
        handler: Arc<dyn LinkHandler>,
        hooks: Hooks<QuicLink>,
    ) -> Arc<QuicLink> {
        let link = Arc::new(QuicLink {
            peer: m.peer,
            sending: Sending::new(m.conn.clone(), m.control, m.write_timeout, m.queue_bytes),
            conn: m.conn,
            routes: Routes::default(),
            inbound: Inbound::new(m.control, m.dec, m.rest, m.write_timeout),
            peer_max: m.peer_max,
            closed: AtomicBool::new(false),
            down: AtomicBool::new(false),
            close_asked: AtomicBool::new(false),
            strand: Mutex::new(None),
            parts: Mutex::new(()),
            peer_ended: AtomicBool::new(false),
            linger: Mutex::new(None),
            peer_closed: AtomicBool::new(false),
            expiry: m.expiry,
            expiry_said: AtomicBool::new(false),
            log: m.log,
            drops: Mutex::default(),
            inline: handler.deliveries_never_block(),
        });
        // After `on_down` nothing goes to the strand: the link lets go of it.
        let mut hooks = hooks;
        let (done, weak) = (hooks.on_done.take(), Arc::downgrade(&link));
        hooks.on_done = Some(Box::new(move || {
            if let Some(l) = weak.upgrade() {
                l.strand.lock().take();
            }
            if let Some(f) = done {
                f();
            }
        }));
        let strand = Strand::new(link.clone(), handler, 0, hooks);
        *link.strand.lock() = Some(strand.clone());
        strand.push(Event::Up);
        link
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Log why the link closed when a credential ran out: once, whether our timer closed it or
    /// the peer's did first (the same credential ends both links at the same moment).
    fn say_expired(&self, end: &Expiry) {
        if !self.expiry_said.swap(true, Ordering::AcqRel) {
            if let Some(log) = &self.log {
                log(&end.closed_line(&self.peer.name));
            }
        }
    }

    /// Whether the link ended with its connection (not closed by us): no cooldown.
    pub(crate) fn peer_ended(&self) -> bool {
        self.peer_ended.load(Ordering::Acquire)
    }

    /// The link is lost to the network (its host vanished, or its directory no longer lists
    /// the peer): the connection goes at once, nothing more is written, and `on_down`
    /// follows as for a connection that died (the peer may be linked again at once).
    pub(crate) fn lost(&self) {
        if !self.closed.swap(true, Ordering::AcqRel) {
            self.peer_ended.store(true, Ordering::Release);
        }
        self.conn.lock().close(
            Instant::now(),
            VarInt::from_u32(0),
            Bytes::from_static(b"peer lost"),
        );
        self.down();
    }

    /// Whether the connection is closed (a closing link's linger is over).
    pub(crate) fn lingered(&self) -> bool {
        self.conn.lock().is_closed()
    }

    /// What the sending side gave up or sent as datagrams, and what the receiving side
    /// dropped as stale (`QuicLink::shed`'s counts).
    pub(crate) fn shed(&self) -> ShedCounts {
        let s = &self.sending.shed;
        ShedCounts {
            dropped: s.dropped.load(Ordering::Relaxed),
            queued_peak: self.sending.queued_peak() as u64,
            datagrams: s.datagrams.load(Ordering::Relaxed),
            replaced: s.replaced.load(Ordering::Relaxed),
            abandoned: s.abandoned.load(Ordering::Relaxed),
            stale: self.inbound.markers.stale(),
        }
    }

    /// Write `bytes` as they are on the control stream (tests send malformed input so).
    pub(crate) fn send_raw(&self, bytes: &[u8]) -> Result<(), LinkError> {
        if self.is_closed() {
            return Err(LinkError::Closed(self.peer.name.clone()));
        }
        let enc = EncodedFrame {
            head: bytes.to_vec(),
            payload: None,
        };
        self.write(Route::Control, enc)
    }

    /// Send `bytes` as they are as one datagram (tests send malformed input so).
    pub(crate) fn send_raw_datagram(&self, bytes: &[u8]) -> Result<(), LinkError> {
        let mut g = self.conn.lock();
        g.datagrams()
            .send(Bytes::copy_from_slice(bytes), true)
            .map_err(|e| LinkError::Io(std::io::Error::other(e.to_string())))
    }

    /// The peer's UDP address.
    pub(crate) fn remote_address(&self) -> std::net::SocketAddr {
        super::peer_address(self.conn.lock().remote_address())
    }

    fn send_as(&self, frame: &Frame, owed: bool) -> Result<(), LinkError> {
        if self.is_closed() {
            return Err(LinkError::Closed(self.peer.name.clone()));
        }
        if parts::may_split(frame, self.peer_max) {
            if let Some(parts) = parts::split(frame, self.peer_max)? {
                let route = match self.routes.route(frame) {
                    Route::ReliableDelivery(c, _) | Route::BestEffort(c) if owed => Route::Owed(c),
                    Route::ReliableDelivery(c, _) | Route::BestEffort(c) => Route::Reliable(c),
                    route => route,
                };
                let _one_message = self.parts.lock();
                for part in &parts {
                    self.write(route, encode_parts(part, self.peer_max)?)?;
                }
                return Ok(());
            }
        }
        let enc = encode_parts(frame, self.peer_max)?;
        let route = match self.routes.route(frame) {
            Route::ReliableDelivery(c, _) if owed => Route::Owed(c),
            route => route,
        };
        self.write(route, enc)
    }

    fn write(&self, route: Route, enc: EncodedFrame) -> Result<(), LinkError> {
        match self.sending.send(route, enc) {
            Ok(0) => Ok(()),
            Ok(dropped) => {
                // The publisher's side of reliable overflow (`DropReport`).
                let q = self.sending.queue_bytes();
                let line = self.drops.lock().note(dropped, &self.peer.name, q);
                if let (Some(line), Some(log)) = (line, &self.log) {
                    log(&line);
                }
                Ok(())
            }
            Err(SendFail::Closed) => {
                self.close();
                Err(LinkError::Closed(self.peer.name.clone()))
            }
            Err(SendFail::Blocked) => {
                self.close();
                Err(LinkError::Io(std::io::Error::other("write blocked")))
            }
        }
    }

    /// The link is over for its handler: `Down` goes to the strand, once.
    fn down(&self) {
        if self.down.swap(true, Ordering::AcqRel) {
            return;
        }
        let strand = self.strand.lock().clone();
        if let Some(strand) = strand {
            strand.push(Event::Down);
        }
    }

    /// The connection moved (the link is its watcher, through `Forward`).
    fn progress(&self, conn: &mut Connection) {
        let strand = self.strand.lock().clone();
        match strand {
            Some(strand) => {
                let sink = StrandSink {
                    link: self,
                    strand: &strand,
                };
                // Callbacks the loop runs here (a delivery landed) may send: kept until the end.
                self.sending
                    .holding(conn, |conn| self.inbound.progress(conn, &sink));
            }
            // `on_down` has run: only the linger is left.
            None => while conn.poll().is_some() {},
        }
        if self.close_asked.swap(false, Ordering::AcqRel) {
            // Closed from a callback run here: the linger starts now.
            self.start_linger();
            self.down();
        }
        self.settle(conn);
    }

    /// A close's first step on the connection: no more frames, the rest of the queues
    /// written, the streams finished as they empty, and a deadline for the whole.
    fn start_linger(&self) {
        *self.linger.lock() = Some(Instant::now() + LINGER);
        self.sending.close();
    }

    /// After any progress: write what the streams take, close the connection when the link
    /// must go (a stalled stream, a credential run out, a linger done), and ask to be woken
    /// by the link's next deadline.
    fn settle(&self, conn: &mut Connection) {
        if conn.is_closed() {
            return;
        }
        let mut wake = None;
        let mut why: Option<&'static [u8]> = None;
        if self.sending.pump(conn).is_err() || self.sending.stalled() {
            why = Some(b"stalled");
        } else if let Some(end) = self.expiry.filter(|_| !self.is_closed()) {
            match end.look_in() {
                Some(wait) => wake = Some(Instant::now() + wait),
                None => {
                    self.say_expired(&end);
                    // As a connection that died: linked again as soon as the directory
                    // lists the peer, and that handshake decides afresh.
                    self.peer_ended.store(true, Ordering::Release);
                    why = Some(b"credentials expired");
                }
            }
        }
        // Lingering, the peer closes the connection once it has read everything (its link
        // ends there, `Inbound`'s `Sink::ended`): an acknowledgement says the peer's QUIC has
        // the bytes, not that its link read them (a full strand holds them back).
        let lingering = *self.linger.lock();
        if let (None, Some(until)) = (why, lingering) {
            self.sending.finish(conn);
            if Instant::now() >= until {
                why = Some(b"link closed");
            } else {
                wake = Some(until);
            }
        }
        if self.peer_closed.swap(false, Ordering::AcqRel) {
            why = why.or(Some(b"link closed"));
        }
        if let Some(why) = why {
            self.closed.store(true, Ordering::Release);
            *self.linger.lock() = None;
            conn.close(Instant::now(), VarInt::from_u32(0), Bytes::from_static(why));
            self.down();
            return;
        }
        let next = [self.inbound.deadline(), self.sending.stall_deadline(), wake]
            .into_iter()
            .flatten()
            .min();
        if let Some(at) = next {
            self.conn.wake_at(at);
        }
    }
}

/// The connection's watcher until the link exists, then the link.
#[derive(Default)]
pub(crate) struct Forward(pub OnceLock<Arc<QuicLink>>);

impl Watcher for Forward {
    fn progress(&self, conn: &mut Connection) {
        if let Some(l) = self.0.get() {
            l.progress(conn);
        }
    }
}

/// The link's strand as the receiving side's sink.
struct StrandSink<'a> {
    link: &'a QuicLink,
    strand: &'a Arc<Strand<QuicLink>>,
}

impl Sink for StrandSink<'_> {
    /// Nothing more for the handler once the link is closed (what arrives while it lingers
    /// is read and dropped).
    fn frame(&self, frame: Frame) -> bool {
        if self.link.is_closed() {
            return true;
        }
        self.strand.push(Event::Frame(frame))
    }
    fn learn(&self, frame: &Frame) {
        self.link.routes.learn(frame);
    }
    fn ping(&self, nonce: u64) {
        self.link.sending.pong(nonce);
    }
    fn malformed(&self, why: String) {
        if !self.link.is_closed() {
            self.strand.push(Event::Malformed(why));
        }
    }
    fn lost(&self) {
        if !self.link.closed.swap(true, Ordering::AcqRel) {
            self.link.peer_ended.store(true, Ordering::Release);
        }
        // The peer closed at the moment a credential ran out: ours to say too.
        if let Some(end) = self.link.expiry.filter(|e| e.look_in().is_none()) {
            self.link.say_expired(&end);
        }
        self.link.down();
    }
    fn ended(&self) {
        self.lost();
        self.link.peer_closed.store(true, Ordering::Release);
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
    /// `on_down` follows on the strand; what was written still reaches the peer: the
    /// connection closes once the peer has it, or after `LINGER` (module docs). From a
    /// callback the watcher runs, which holds the connection, on the watcher's way out.
    fn close(&self) {
        if self.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        if self.sending.held_here() {
            self.close_asked.store(true, Ordering::Release);
            return;
        }
        {
            let mut g = self.conn.lock();
            self.start_linger();
            self.settle(&mut g);
        }
        self.down();
    }
}

impl StrandLink for QuicLink {
    /// Shared memory never crosses hosts: nothing to release.
    fn release_now(&self, _token: u64) {}
    fn resume(&self, _token: usize) {
        self.inbound.resume();
        self.conn.poke();
    }
    /// The loop lands a delivery itself only for a handler whose deliveries never block.
    fn on_reader(&self) -> bool {
        self.inline && engine::on_loop()
    }
}

/// A live link of a `QuicTransport` (`link_to`): its counts and test hooks.
#[derive(Clone)]
pub struct QuicLinkHandle(pub(super) Arc<QuicLink>);

impl QuicLinkHandle {
    /// The link as the handler sees it.
    pub fn link(&self) -> Arc<dyn Link> {
        self.0.clone()
    }

    /// What the sending side gave up or sent as datagrams, and what the receiving side
    /// dropped as stale.
    pub fn shed(&self) -> ShedCounts {
        self.0.shed()
    }

    pub fn is_closed(&self) -> bool {
        self.0.is_closed()
    }

    /// The peer's UDP address.
    pub fn remote_address(&self) -> std::net::SocketAddr {
        self.0.remote_address()
    }

    /// Write `bytes` as they are on the control stream (tests send malformed input so).
    pub fn send_raw(&self, bytes: &[u8]) -> Result<(), LinkError> {
        self.0.send_raw(bytes)
    }

    /// Send `bytes` as they are as one datagram (tests send malformed input so).
    pub fn send_raw_datagram(&self, bytes: &[u8]) -> Result<(), LinkError> {
        self.0.send_raw_datagram(bytes)
    }
}

#[cfg(test)]
#[path = "link_tests.rs"]
mod tests;
