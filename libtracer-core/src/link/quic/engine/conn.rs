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
//! message (measured over a veth: 64 B bursts on the engine at 9 MB/s without it and the
//! gathering of `stage.rs`, 121-216 MB/s with both, against 45-71 MB/s for quinn's own
//! driver, which batches by being late: docs/network.md section 4a).
//!
//! **The loop never waits for a writer.** A writer may hold the lock for a while (a large
//! frame: a few MiB of packets built, encrypted and sent). The loop does not wait for it: it
//! leaves the connection's datagrams in the connection's inbox (and marks its timers due),
//! and goes on with the other connections; the holder takes them in before letting go, and
//! after letting go looks once more, so nothing is left behind (`ConnGuard`'s drop).

use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use parking_lot::{Mutex, MutexGuard};
use quinn_proto::{Connection, ConnectionEvent, ConnectionHandle, StreamId, Transmit};

use super::stage::{Stage, Staged};
use super::udp::Sent;
use super::{EngineShared, Wire};

/// What the owner of a connection does with its progress (the link layer's reader).
pub(crate) trait Watcher: Send + Sync {
    /// With the connection locked, after datagrams or a timer moved it: take its events
    /// (`Connection::poll`), read its streams and datagrams. Runs on the loop, or on the
    /// thread of a writer that held the connection when the loop left it something (so it
    /// must not block). What this writes is sent when it returns.
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
    /// Its owner (set once; let go when the connection is drained, so that a watcher that
    /// holds the connection does not keep both alive for ever).
    watcher: Mutex<Option<Arc<dyn Watcher>>>,
    /// Datagrams' events the loop left for the lock's holder (module docs).
    inbox: Mutex<Vec<ConnectionEvent>>,
    /// The connection's timers are due (set by the loop, taken by the lock's holder).
    due: AtomicBool,
    /// When the watcher asked to look again whatever happens (`wake_at`).
    wake: Mutex<Option<Instant>>,
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
    /// How long after an inline send writes are corked ([`CORK`]; tests lengthen it).
    cork: Duration,
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
                cork: CORK,
            }),
            watcher: Mutex::new(None),
            inbox: Mutex::new(Vec::new()),
            due: AtomicBool::new(false),
            wake: Mutex::new(None),
        }
    }

    /// Tests: write `data` to stream `id` and keep the packets built for it as a full socket
    /// would (`Sent::Full`), so that they go when the loop sees room: the stall path, which a
    /// loopback or veth socket (it frees each sent buffer at once) never takes by itself.
    #[cfg(test)]
    pub(super) fn hold_as_if_full(&self, id: StreamId, data: &[u8]) {
        let mut guard = self.core.lock();
        let core = &mut *guard;
        let n = core
            .conn
            .send_stream(id)
            .write(data)
            .expect("room in the stream");
        assert_eq!(n, data.len(), "the stream took the whole write");
        core.out.clear();
        let t = core
            .conn
            .poll_transmit(Instant::now(), 1, &mut core.out)
            .expect("a packet to send");
        core.stalled = Some((std::mem::take(&mut core.out), t));
        drop(guard);
        self.wire.stalled(self.id);
    }

    /// Tests: cork writes for `d` after an inline send instead of [`CORK`], so that a test
    /// can act while a cork is pending.
    #[cfg(test)]
    pub(super) fn set_cork(&self, d: Duration) {
        self.core.lock().cork = d;
    }

    /// Tests: the loop fires this connection's timer (taking its deadline out of the clock)
    /// while the caller holds the connection, as when quinn's own timer (pacing, an ACK's
    /// delay) comes due under a writer.
    #[cfg(test)]
    pub(super) fn fire_timer_while_held(&self) {
        self.wire.clock.set(self.id, None);
        self.progress(true);
    }

    /// Tests: the connection's deadline in the process's clock.
    #[cfg(test)]
    pub(super) fn clock_deadline(&self) -> Option<Instant> {
        self.wire.clock.deadline(self.id)
    }

    /// Let the watcher look again by `at` even if nothing happens on the connection (a
    /// barrier's or a handshake's deadline, a close's linger). Call it with the connection
    /// held (from the watcher, or under `lock`): the deadline is recorded when it is let go.
    pub(crate) fn wake_at(&self, at: Instant) {
        let mut w = self.wake.lock();
        *w = Some(w.map_or(at, |t| t.min(at)));
    }

    /// The connection's next deadline: its own timers', the watcher's, and `also`.
    fn next_deadline(&self, conn: &mut Connection, also: Option<Instant>) -> Option<Instant> {
        [conn.poll_timeout(), *self.wake.lock(), also]
            .into_iter()
            .flatten()
            .min()
    }

    /// The connection is over (drained, or its engine gone): let go of its watcher.
    pub(super) fn unwatch(&self) {
        let w = self.watcher.lock().take();
        drop(w);
    }

    /// Who takes this connection's progress (set once, before the first datagram reaches it).
    pub(super) fn watch(&self, w: Arc<dyn Watcher>) {
        self.watcher.lock().get_or_insert(w);
    }

    /// The connection, locked; what is written through it goes out when the guard drops (or
    /// within [`CORK`], when this connection's writer sent packets less than that ago).
    pub(crate) fn lock(&self) -> ConnGuard<'_> {
        ConnGuard {
            owner: self,
            core: Some(self.core.lock()),
            writer: true,
        }
    }

    /// The loop: an event of a datagram for this connection, taken in by `progress`.
    pub(super) fn deliver(&self, ev: ConnectionEvent) {
        self.inbox.lock().push(ev);
    }

    /// The loop: datagrams (`deliver`) or, with `timers`, its timers moved the connection.
    /// Taken in now unless a writer holds it, who then takes them in before letting go.
    pub(super) fn progress(&self, timers: bool) {
        if timers {
            self.due.store(true, Ordering::Release);
        }
        if let Some(core) = self.core.try_lock() {
            drop(ConnGuard {
                owner: self,
                core: Some(core),
                writer: false,
            });
        }
    }

    /// The loop: the socket has room again: send what waited for it now, unless someone holds
    /// the connection, who then sends it before letting go (marked due, as `progress` does; the
    /// loop, which serves every link of the process, never waits for a writer). The watcher is
    /// not run for this when the lock is free: room in a socket is no news to it.
    pub(super) fn unstall(&self) {
        match self.core.try_lock() {
            // Sent as the guard drops (no cork: not a writer).
            Some(core) => drop(ConnGuard {
                owner: self,
                core: Some(core),
                writer: false,
            }),
            None => self.progress(true),
        }
    }

    /// Let the watcher look at the connection again soon (from any thread): a link whose
    /// reading paused for a full strand resumes this way. Taken in now unless someone holds
    /// the connection, who then takes it in before letting go.
    pub(crate) fn poke(&self) {
        self.progress(true);
    }

    /// Whether the loop left anything for the lock's holder.
    fn waiting(&self) -> bool {
        self.due.load(Ordering::Acquire) || !self.inbox.lock().is_empty()
    }
}

pub(crate) struct ConnGuard<'a> {
    owner: &'a Conn,
    /// Always `Some` until the drop lets go.
    core: Option<MutexGuard<'a, Core>>,
    /// Held by a writer (autocork applies), not by the loop.
    writer: bool,
}

impl Deref for ConnGuard<'_> {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        &self.core().conn
    }
}

impl DerefMut for ConnGuard<'_> {
    fn deref_mut(&mut self) -> &mut Connection {
        &mut self.core_mut().conn
    }
}

impl ConnGuard<'_> {
    fn core(&self) -> &Core {
        self.core.as_ref().expect("held until the drop")
    }

    fn core_mut(&mut self) -> &mut Core {
        self.core.as_mut().expect("held until the drop")
    }

    /// Take in what the loop left (datagrams, due timers) and let the watcher see the
    /// progress; false when there was nothing.
    fn absorb(&mut self) -> bool {
        let owner = self.owner;
        let events = std::mem::take(&mut *owner.inbox.lock());
        let due = owner.due.swap(false, Ordering::AcqRel);
        if events.is_empty() && !due {
            return false;
        }
        let core = self.core_mut();
        for ev in events {
            core.conn.handle_event(ev);
        }
        if due {
            let now = Instant::now();
            core.conn.handle_timeout(now);
            let mut w = owner.wake.lock();
            if w.is_some_and(|t| t <= now) {
                *w = None;
            }
        }
        let w = owner.watcher.lock().clone();
        if let Some(w) = w {
            w.progress(&mut core.conn);
        }
        true
    }

    /// Send what the connection has to send (as many packets per `sendmsg` as GSO takes),
    /// settle its endpoint events, and record its next deadline.
    pub(crate) fn flush(&mut self) {
        let owner = self.owner;
        let wire = &owner.wire;
        let writer = self.writer;
        let core = self.core_mut();
        core.corked = None;
        if let Some((buf, t)) = core.stalled.take() {
            if send(wire, &buf, &t) == Sent::Full {
                core.stalled = Some((buf, t));
                wire.stalled(owner.id);
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
                wire.stalled(owner.id);
            }
            if writer {
                core.sent_inline = Some(now);
            }
        }
        // Lock order: the connection, then the endpoint.
        while let Some(ev) = core.conn.poll_endpoint_events() {
            if let Some(back) = wire.endpoint.lock().handle_event(owner.handle, ev) {
                core.conn.handle_event(back);
            }
        }
        let next = owner.next_deadline(&mut core.conn, None);
        wire.clock.set(owner.id, next);
    }

    /// Write `data` to stream `id` gathered with the other small writes of this flush
    /// (`stage.rs`); `Took(0)`: the stream's stage is full, wait for its credit
    /// (`StreamEvent::Writable`) as for a blocked write.
    pub(crate) fn stage(&mut self, id: StreamId, data: &[u8]) -> Staged {
        let core = self.core_mut();
        core.stage.stage(&mut core.conn, id, data)
    }

    /// Whether a writer's sending now would be corked (module docs): it then leaves its
    /// frames queued for the loop's flush, which gathers them.
    pub(crate) fn corked(&self) -> bool {
        let core = self.core();
        self.writer
            && core
                .sent_inline
                .is_some_and(|at| at + core.cork > Instant::now())
    }

    /// Tests: when what is written waits for the loop (autocork), if it does.
    #[cfg(test)]
    pub(super) fn corked_until(&self) -> Option<Instant> {
        self.core().corked
    }

    /// A writer lets go: send now, or leave it to the loop by the cork's deadline (module docs).
    /// `absorbed`: this guard took in what the loop left (`absorb`).
    fn release(&mut self, absorbed: bool) {
        let owner = self.owner;
        let writer = self.writer;
        let core = self.core_mut();
        let cork = core
            .sent_inline
            .map(|at| at + core.cork)
            .filter(|until| writer && *until > Instant::now());
        let Some(until) = cork else {
            self.flush();
            return;
        };
        // The cork's deadline goes into the clock when the cork starts, and again whenever
        // this guard took in the loop's news: the loop takes a connection's deadline out of
        // the clock as it fires it, and quinn's own timer (pacing, an ACK's delay) can come
        // before the cork's. Fired while a writer held the connection, it left no deadline
        // behind for the cork, and what was written would wait for the peer's next packet.
        // (Not at every corked write: a burst's writes would each pay a clock update.)
        if core.corked.is_none() || absorbed {
            let until = *core.corked.get_or_insert(until);
            let next = owner.next_deadline(&mut core.conn, Some(until));
            owner.wire.clock.set(owner.id, next);
        }
    }
}

impl Drop for ConnGuard<'_> {
    /// Take in what the loop left, send (or cork), let go; then look once more, since the loop
    /// may have left something after the last look and found the lock taken.
    fn drop(&mut self) {
        let owner = self.owner;
        loop {
            let absorbed = self.absorb();
            self.release(absorbed);
            let drained = self.core().conn.is_drained();
            drop(self.core.take());
            if drained {
                if let Some(e) = owner.engine.upgrade() {
                    e.forget(owner);
                }
                owner.unwatch();
                return;
            }
            if !owner.waiting() {
                return;
            }
            match owner.core.try_lock() {
                Some(core) => {
                    self.core = Some(core);
                    // What is left is the loop's business: no cork for it.
                    self.writer = false;
                }
                // Its holder takes it in.
                None => return,
            }
        }
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
