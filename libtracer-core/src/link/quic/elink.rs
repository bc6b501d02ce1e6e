//! A link on the runtime-free engine (stage 2 of docs/network.md section 4a): the `Link` seam
//! over an engine connection, its sending side (`send/`), its receiving side (`inbound.rs`)
//! and a strand of `strand.rs` for its callbacks, run by the Unix links' workers (a DELIVERY
//! to an idle strand landed by the engine loop itself). The link is the connection's watcher:
//! each time the connection moves it reads, hands frames to the strand, sends what it can,
//! and asks to be woken for its own deadlines (a parked barrier, the write timeout). The
//! HELLO exchange that makes it is `ehello.rs`; the transport does not make these links yet.
#![allow(dead_code, reason = "the transport makes these links from stage 2")]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use parking_lot::Mutex;
use quinn_proto::{Connection, StreamId, VarInt};

use super::engine::{self, Conn, Watcher};
use super::inbound::{Inbound, Sink};
use super::routes::{Route, Routes};
use super::send::Sending;
use super::streams::SendFail;
use crate::link::strand::{Event, Hooks, Strand, StrandLink};
use crate::link::{Link, LinkError, LinkHandler, PeerIdentity};
use crate::wire::{encode_parts, parts, Frame, FrameDecoder};

pub(crate) struct EngineLink {
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
    strand: OnceLock<Arc<Strand<EngineLink>>>,
    /// Held while the parts of one message are queued: parts of two messages never
    /// interleave on an edge (docs/wire.md, "Messages of any size").
    parts: Mutex<()>,
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
}

impl EngineLink {
    /// The link, its strand started with `Up` queued. The caller makes it the connection's
    /// watcher (`Forward`), so that the link reads from then on.
    pub(crate) fn start(
        m: Made,
        handler: Arc<dyn LinkHandler>,
        hooks: Hooks<EngineLink>,
    ) -> Arc<EngineLink> {
        let link = Arc::new(EngineLink {
            peer: m.peer,
            sending: Sending::new(m.conn.clone(), m.control, m.write_timeout, m.queue_bytes),
            conn: m.conn,
            routes: Routes::default(),
            inbound: Inbound::new(m.control, m.dec, m.rest, m.write_timeout),
            peer_max: m.peer_max,
            closed: AtomicBool::new(false),
            down: AtomicBool::new(false),
            close_asked: AtomicBool::new(false),
            strand: OnceLock::new(),
            parts: Mutex::new(()),
        });
        let strand = Strand::new(link.clone(), handler, 0, hooks);
        let _ = link.strand.set(strand.clone());
        strand.push(Event::Up);
        link
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
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

    fn write(&self, route: Route, enc: crate::wire::EncodedFrame) -> Result<(), LinkError> {
        match self.sending.send(route, enc) {
            Ok(_) => Ok(()),
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
        if let Some(strand) = self.strand.get() {
            strand.push(Event::Down);
        }
    }

    /// The connection moved (the link is its watcher, through `Forward`).
    fn progress(&self, conn: &mut Connection) {
        let Some(strand) = self.strand.get() else {
            return;
        };
        let sink = StrandSink { link: self, strand };
        // Callbacks the loop runs here (a delivery landed) may send: kept until the end.
        self.sending
            .holding(conn, |conn| self.inbound.progress(conn, &sink));
        let why: Option<&'static [u8]> = if self.close_asked.swap(false, Ordering::AcqRel) {
            Some(b"link closed")
        } else if self.sending.pump(conn).is_err() || self.sending.stalled() {
            Some(b"stalled")
        } else {
            None
        };
        if let Some(why) = why {
            self.closed.store(true, Ordering::Release);
            conn.close(Instant::now(), VarInt::from_u32(0), Bytes::from_static(why));
            self.down();
        }
        let next = [self.inbound.deadline(), self.sending.stall_deadline()]
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
pub(crate) struct Forward(pub OnceLock<Arc<EngineLink>>);

impl Watcher for Forward {
    fn progress(&self, conn: &mut Connection) {
        if let Some(l) = self.0.get() {
            l.progress(conn);
        }
    }
}

/// The link's strand as the receiving side's sink.
struct StrandSink<'a> {
    link: &'a EngineLink,
    strand: &'a Arc<Strand<EngineLink>>,
}

impl Sink for StrandSink<'_> {
    fn frame(&self, frame: Frame) -> bool {
        self.strand.push(Event::Frame(frame))
    }
    fn learn(&self, frame: &Frame) {
        self.link.routes.learn(frame);
    }
    fn ping(&self, nonce: u64) {
        self.link.sending.pong(nonce);
    }
    fn malformed(&self, why: String) {
        self.strand.push(Event::Malformed(why));
    }
    fn lost(&self) {
        self.link.closed.store(true, Ordering::Release);
        self.link.down();
    }
}

impl Link for EngineLink {
    fn send(&self, frame: &Frame) -> Result<(), LinkError> {
        self.send_as(frame, false)
    }
    fn send_owed(&self, frame: &Frame) -> Result<(), LinkError> {
        self.send_as(frame, true)
    }
    fn peer(&self) -> &PeerIdentity {
        &self.peer
    }
    /// The connection closes (what was queued and not sent is dropped: the linger of
    /// today's links is to come) and `on_down` follows on the strand. From a callback the
    /// watcher runs, which holds the connection, it closes on the watcher's way out.
    fn close(&self) {
        if self.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        if self.sending.held_here() {
            self.close_asked.store(true, Ordering::Release);
            return;
        }
        self.conn.lock().close(
            Instant::now(),
            VarInt::from_u32(0),
            Bytes::from_static(b"link closed"),
        );
        self.down();
    }
}

impl StrandLink for EngineLink {
    /// Shared memory never crosses hosts: nothing to release.
    fn release_now(&self, _token: u64) {}
    fn resume(&self, _token: usize) {
        self.inbound.resume();
        self.conn.poke();
    }
    fn on_reader(&self) -> bool {
        engine::on_loop()
    }
}

#[cfg(test)]
#[path = "elink_tests.rs"]
mod tests;
