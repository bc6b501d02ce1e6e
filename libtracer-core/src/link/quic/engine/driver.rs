//! What drives the engines: their sockets and the process's QUIC `timerfd` (`clock.rs`) are
//! sources of the links' event loop (`link/unix_loop.rs`, through `link/foreign.rs`), the one
//! loop thread of the process (`tracer-io`) that waits on the Unix links' sockets too. So a
//! process has the same threads with one peer or five hundred, and one loop whatever its links
//! (docs/network.md section 4a, stage 3). On readiness the loop calls in here: a socket's
//! receipts (at most 64 per turn, `EngineShared::receive`; a socket with more gets the rest at
//! the loop's next turn, after the other sources), a socket's room after it was full
//! (`EngineShared::writable`), the timers due (`fire`). The engine never sleeps with a timeout
//! of its own (the `timerfd` is its only clock) and never polls; on the loop thread it never
//! waits for a connection a writer holds (`Conn::progress`).

use std::collections::HashMap;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::{Arc, OnceLock, Weak};
use std::time::Instant;

use mio::{Interest, Token};
use parking_lot::Mutex;

use super::clock::Clock;
use super::conn::Conn;
use super::udp::{RECEIPT, RECEIPTS_PER_CALL};
use super::EngineShared;
use crate::link::foreign::ForeignSource;
use crate::link::unix_loop;

/// Whether the caller is the loop's thread (which must never block). The engine's watchers and
/// the Unix links' readers share it.
pub(crate) use crate::link::unix_loop::on_loop;

/// The engines' share of the loop: the timers, and the loop's buffers for their receipts.
struct Driver {
    clock: Arc<Clock>,
    /// Every connection by its timer id, for the timers that fire.
    conns: Mutex<HashMap<u64, Weak<Conn>>>,
    /// Taken by the loop thread alone (a lock, not a thread-local, to say so plainly; never
    /// contended): a receipt's buffer, the endpoint's output, the timers due.
    scratch: Mutex<Scratch>,
}

struct Scratch {
    /// Receipt buffers, one per receipt of a call (`RECEIPTS_PER_CALL`).
    bufs: [Vec<u8>; RECEIPTS_PER_CALL],
    out: Vec<u8>,
    due: Vec<u64>,
}

static DRIVER: OnceLock<Result<Arc<Driver>, String>> = OnceLock::new();

fn driver() -> io::Result<&'static Arc<Driver>> {
    DRIVER
        .get_or_init(|| {
            let why = |e: io::Error| format!("cannot start the QUIC engine's timers: {e}");
            let driver = Arc::new(Driver {
                clock: Arc::new(Clock::new().map_err(why)?),
                conns: Mutex::default(),
                scratch: Mutex::new(Scratch {
                    bufs: std::array::from_fn(|_| vec![0u8; RECEIPT]),
                    out: Vec::new(),
                    due: Vec::new(),
                }),
            });
            // Kept for the process's life by `DRIVER`, so never removed.
            let source: Weak<dyn ForeignSource> = Arc::downgrade(&driver) as Weak<Driver>;
            unix_loop::add_foreign(driver.clock.raw_fd(), Interest::READABLE, source)
                .map_err(why)?;
            Ok(driver)
        })
        .as_ref()
        .map_err(|e| io::Error::other(e.clone()))
}

/// The process's QUIC clock (putting it on the loop, and starting the loop, on first use).
pub(super) fn clock() -> io::Result<Arc<Clock>> {
    driver().map(|d| d.clock.clone())
}

fn socket_fd(e: &EngineShared) -> RawFd {
    e.wire.udp.socket().as_raw_fd()
}

/// Wait on `e`'s socket for datagrams; its token, for `remove`. Edge-triggered: the loop reads
/// until the socket would block. A socket that was full is waited on for room too until the
/// stalled packets are sent (`Wire::watch_room`).
pub(super) fn add(e: &Arc<EngineShared>) -> io::Result<Token> {
    let source: Weak<dyn ForeignSource> = Arc::downgrade(e) as Weak<EngineShared>;
    unix_loop::add_foreign(socket_fd(e), Interest::READABLE, source)
}

/// Stop waiting on `e`'s socket (before it closes).
pub(super) fn remove(e: &EngineShared, t: Token) {
    unix_loop::remove_foreign(t, socket_fd(e));
}

/// Fire `c`'s timers when they are due.
pub(super) fn track(c: &Arc<Conn>) {
    if let Ok(d) = driver() {
        d.conns.lock().insert(c.id, Arc::downgrade(c));
    }
}

pub(super) fn untrack(id: u64) {
    if let Ok(d) = driver() {
        d.conns.lock().remove(&id);
    }
}

impl ForeignSource for EngineShared {
    fn ready(self: Arc<Self>, readable: bool, writable: bool) -> bool {
        if writable {
            self.writable();
        }
        if !readable {
            return false;
        }
        let Ok(d) = driver() else {
            return false;
        };
        let mut s = d.scratch.lock();
        let Scratch { bufs, out, .. } = &mut *s;
        self.receive(bufs, out)
    }
}

impl ForeignSource for Driver {
    /// The timers due: each connection's `handle_timeout`, its watcher, and what it sends.
    fn ready(self: Arc<Self>, _readable: bool, _writable: bool) -> bool {
        let mut s = self.scratch.lock();
        let due = &mut s.due;
        due.clear();
        self.clock.due(Instant::now(), due);
        for id in due.iter() {
            let c = self.conns.lock().get(id).and_then(Weak::upgrade);
            if let Some(c) = c {
                c.progress(true);
            }
        }
        false
    }
}
