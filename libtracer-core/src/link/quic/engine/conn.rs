//! One connection of an engine: a `quinn_proto::Connection` behind its own lock. Whoever holds
//! the lock (a publisher writing a frame, the loop after a receipt or a timer) sends what the
//! connection has to send before letting go (`ConnGuard`'s drop), on its own thread: a
//! publish puts its packets on the wire without waking any other thread.
//!
//! **Autocork.** A writer that sent packets less than [`CORK`] ago does not send again at
//! once: what it wrote waits at most until `CORK` after that send, when the loop sends it
//! (the connection's timer), together with whatever else was written meanwhile. So a lone
//! message (a round trip, a message after a quiet spell) goes out inline at once, and a burst
//! of small messages goes out as full packets, not as one packet and one `sendmsg` per
//! message (measured: 64 B bursts on the engine at 9 MB/s without it, against 40-73 MB/s for
//! quinn's own driver, which batches by being late).

use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::{Duration, Instant};

use parking_lot::{Mutex, MutexGuard};
use quinn_proto::{Connection, ConnectionHandle, StreamId, Transmit};

use super::stage::{Stage, Staged};
use super::udp::Sent;
use super::{EngineShared, Wire};

/// What the owner of a connection does with its progress (the link layer's reader).
pub(crate) trait Watcher: Send + Sync {
    /// On the loop, with the connection locked, after datagrams or a timer moved it: take
    /// its events (`Connection::poll`), read its streams and datagrams. What this writes is
    /// sent when it returns.
    fn progress(&self, conn: &mut Connection);
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// How long after a writer's send its next writes wait to go out together (module docs). Well
/// under a round trip between hosts (50 µs and more on a veth), so a round trip never waits for
/// it; long enough to gather a burst's small messages (a few µs each) into full packets.
pub(super) const CORK: Duration = Duration::from_micros(25);

pub(crate) struct Conn {
    /// The key of its timer in the process's clock and of the loop's table.
    pub(super) id: u64,
    pub(super) handle: ConnectionHandle,
    wire: Arc<Wire>,
    engine: Weak<EngineShared>,
    core: Mutex<Core>,
    watcher: OnceLock<Arc<dyn Watcher>>,
}

struct Core {
    conn: Connection,
    /// Packets built but not sent: the socket's buffer was full (the loop sends them when it
    /// is writable). Nothing more is built meanwhile, so the order holds.
    stalled: Option<(Vec<u8>, Transmit)>,
    /// The buffer packets are built in (kept, so a send allocates nothing).
    out: Vec<u8>,
    /// Small writes gathered per stream until the flush (`stage.rs`).
    stage: Stage,
    /// When a writer last sent packets itself (the autocork's clock).
    sent_inline: Option<Instant>,
    /// Written data waits for the loop to send it by then (autocork).
    corked: Option<Instant>,
}

impl Conn {
    pub(super) fn new(
        handle: ConnectionHandle,
        conn: Connection,
        wire: Arc<Wire>,
        engine: Weak<EngineShared>,
    ) -> Conn {
        Conn {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            handle,
            wire,
            engine,
            core: Mutex::new(Core {
                conn,
                stalled: None,
                out: Vec::new(),
                stage: Stage::default(),
                sent_inline: None,
                corked: None,
            }),
            watcher: OnceLock::new(),
        }
    }

    /// Who takes this connection's progress (set once, before the first datagram reaches it).
    pub(super) fn watch(&self, w: Arc<dyn Watcher>) {
        let _ = self.watcher.set(w);
    }

    /// The connection, locked; what is written through it goes out when the guard drops (or
    /// within [`CORK`], when this connection's writer sent packets less than that ago).
    pub(crate) fn lock(&self) -> ConnGuard<'_> {
        ConnGuard {
            owner: self,
            core: self.core.lock(),
            writer: true,
        }
    }

    /// The loop: datagrams moved the connection (`handle_event` under the lock).
    pub(super) fn handle_event(&self, ev: quinn_proto::ConnectionEvent) {
        self.core.lock().conn.handle_event(ev);
    }

    /// The loop: datagrams or a timer moved the connection; let its watcher take the progress,
    /// then send, and forget the connection once it is drained.
    pub(super) fn progress(&self, now: Option<Instant>) {
        let drained = {
            let mut g = self.lock();
            g.writer = false;
            if let Some(now) = now {
                g.core.conn.handle_timeout(now);
            }
            if let Some(w) = self.watcher.get() {
                w.progress(&mut g.core.conn);
            }
            g.flush();
            g.core.conn.is_drained()
        };
        if drained {
            if let Some(e) = self.engine.upgrade() {
                e.forget(self);
            }
        }
    }
}

pub(crate) struct ConnGuard<'a> {
    owner: &'a Conn,
    core: MutexGuard<'a, Core>,
    /// Held by a writer (autocork applies), not by the loop.
    writer: bool,
}

impl Deref for ConnGuard<'_> {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        &self.core.conn
    }
}

impl DerefMut for ConnGuard<'_> {
    fn deref_mut(&mut self) -> &mut Connection {
        &mut self.core.conn
    }
}

impl ConnGuard<'_> {
    /// Send what the connection has to send (as many packets per `sendmsg` as GSO takes),
    /// settle its endpoint events, and record its next deadline.
    pub(crate) fn flush(&mut self) {
        let wire = &self.owner.wire;
        let writer = self.writer;
        let core = &mut *self.core;
        core.corked = None;
        if let Some((buf, t)) = core.stalled.take() {
            if send(wire, &buf, &t) == Sent::Full {
                core.stalled = Some((buf, t));
                wire.stalled(self.owner.id);
            }
        }
        core.stage.write_out(&mut core.conn);
        let now = Instant::now();
        while core.stalled.is_none() {
            core.out.clear();
            let Some(t) = core
                .conn
                .poll_transmit(now, wire.udp.segments(), &mut core.out)
            else {
                break;
            };
            if send(wire, &core.out, &t) == Sent::Full {
                core.stalled = Some((std::mem::take(&mut core.out), t));
                wire.stalled(self.owner.id);
            }
            if writer {
                core.sent_inline = Some(now);
            }
        }
        // Lock order: the connection, then the endpoint.
        while let Some(ev) = core.conn.poll_endpoint_events() {
            if let Some(back) = wire.endpoint.lock().handle_event(self.owner.handle, ev) {
                core.conn.handle_event(back);
            }
        }
        wire.clock.set(self.owner.id, core.conn.poll_timeout());
    }

    /// Write `data` to stream `id` gathered with the other small writes of this flush
    /// (`stage.rs`); `Took(0)`: the stream's stage is full, wait for its credit
    /// (`StreamEvent::Writable`) as for a blocked write.
    pub(crate) fn stage(&mut self, id: StreamId, data: &[u8]) -> Staged {
        let core = &mut *self.core;
        core.stage.stage(&mut core.conn, id, data)
    }

    /// A writer lets go: send now, or leave it to the loop by the cork's deadline (module docs).
    fn release(&mut self) {
        let core = &mut *self.core;
        let cork = core
            .sent_inline
            .map(|at| at + CORK)
            .filter(|until| self.writer && *until > Instant::now());
        let Some(until) = cork else {
            self.flush();
            return;
        };
        if core.corked.is_none() {
            core.corked = Some(until);
            let next = core.conn.poll_timeout().map_or(until, |t| t.min(until));
            self.owner.wire.clock.set(self.owner.id, Some(next));
        }
    }
}

impl Drop for ConnGuard<'_> {
    fn drop(&mut self) {
        self.release();
    }
}

/// One transmit; an error other than a full buffer (no route, the device refusing the
/// packet) loses the packets, as the network may: QUIC's loss recovery resends them.
fn send(wire: &Wire, out: &[u8], t: &Transmit) -> Sent {
    match wire.udp.send(out, t) {
        Ok(s) => s,
        Err(_) => Sent::Sent,
    }
}
