//! The engine loop: one thread per process (`tracer-quic-io`) waits, with epoll (through
//! `mio`), on the socket of every engine and on the process's QUIC `timerfd` (`clock.rs`), so
//! a process has the same threads with one peer or five hundred. It reads the sockets, fires
//! the timers, and sends what that produces; it never sleeps with a timeout of its own (the
//! `timerfd` is the only clock) and never polls. Stage 1 of docs/network.md section 4a; stage
//! 3 puts these sources on the Unix links' loop (`unix_loop.rs`) instead of a thread of their
//! own.

use std::collections::HashMap;
use std::io;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::{Duration, Instant};

use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Registry, Token};
use parking_lot::Mutex;

use super::clock::Clock;
use super::conn::Conn;
use super::udp::RECEIPT;
use super::{EngineShared, WeakEngine};

const CLOCK: Token = Token(0);

thread_local! {
    static ON_LOOP: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether the caller is the engine loop's thread (which must never block).
pub(crate) fn on_loop() -> bool {
    ON_LOOP.with(std::cell::Cell::get)
}

struct Shared {
    registry: Registry,
    clock: Arc<Clock>,
    engines: Mutex<HashMap<Token, WeakEngine>>,
    /// Every connection by its timer id, for the timers that fire.
    conns: Mutex<HashMap<u64, Weak<Conn>>>,
    next_token: AtomicUsize,
}

static LOOP: OnceLock<Result<Arc<Shared>, String>> = OnceLock::new();

fn shared() -> io::Result<&'static Arc<Shared>> {
    LOOP.get_or_init(|| {
        let why = |e: io::Error| format!("cannot start the QUIC engine loop: {e}");
        let poll = Poll::new().map_err(why)?;
        let clock = Arc::new(Clock::new().map_err(why)?);
        poll.registry()
            .register(&mut SourceFd(&clock.raw_fd()), CLOCK, Interest::READABLE)
            .map_err(why)?;
        let shared = Arc::new(Shared {
            registry: poll.registry().try_clone().map_err(why)?,
            clock,
            engines: Mutex::default(),
            conns: Mutex::default(),
            next_token: AtomicUsize::new(1),
        });
        let s = shared.clone();
        std::thread::Builder::new()
            .name("tracer-quic-io".into())
            .spawn(move || run(poll, &s))
            .map_err(why)?;
        Ok(shared)
    })
    .as_ref()
    .map_err(|e| io::Error::other(e.clone()))
}

/// The process's QUIC clock (starting the loop on first use).
pub(super) fn clock() -> io::Result<Arc<Clock>> {
    shared().map(|s| s.clock.clone())
}

/// A token no engine had before.
pub(super) fn new_token() -> Token {
    match shared() {
        Ok(s) => Token(s.next_token.fetch_add(1, Ordering::Relaxed)),
        Err(_) => CLOCK,
    }
}

/// Wait on `e`'s socket. Edge-triggered: the loop reads until the socket would block, and a
/// socket that was full says when it has room (`EngineShared::writable`).
pub(super) fn add(e: &Arc<EngineShared>) -> io::Result<()> {
    let s = shared()?;
    s.engines.lock().insert(e.token, Arc::downgrade(e));
    let fd = e.wire.udp.socket().as_raw_fd();
    let r = s.registry.register(
        &mut SourceFd(&fd),
        e.token,
        Interest::READABLE | Interest::WRITABLE,
    );
    if r.is_err() {
        s.engines.lock().remove(&e.token);
    }
    r
}

/// Stop waiting on `e`'s socket (before it closes).
pub(super) fn remove(e: &EngineShared) {
    if let Ok(s) = shared() {
        let fd = e.wire.udp.socket().as_raw_fd();
        let _ = s.registry.deregister(&mut SourceFd(&fd));
        s.engines.lock().remove(&e.token);
    }
}

/// Fire `c`'s timers when they are due.
pub(super) fn track(c: &Arc<Conn>) {
    if let Ok(s) = shared() {
        s.conns.lock().insert(c.id, Arc::downgrade(c));
    }
}

pub(super) fn untrack(id: u64) {
    if let Ok(s) = shared() {
        s.conns.lock().remove(&id);
    }
}

fn run(mut poll: Poll, shared: &Shared) {
    ON_LOOP.with(|l| l.set(true));
    let mut events = Events::with_capacity(256);
    let mut buf = vec![0u8; RECEIPT];
    let mut out = Vec::new();
    // Engines whose socket had more when their turn ended.
    let mut again: Vec<Token> = Vec::new();
    let mut ready: Vec<(Token, bool, bool)> = Vec::new();
    let mut due: Vec<u64> = Vec::new();
    loop {
        let timeout = (!again.is_empty()).then_some(Duration::ZERO);
        if let Err(e) = poll.poll(&mut events, timeout) {
            if e.kind() != io::ErrorKind::Interrupted {
                // Not expected from epoll_wait; do not spin on it.
                std::thread::sleep(Duration::from_millis(10));
            }
            continue;
        }
        ready.clear();
        for ev in events.iter() {
            if ev.token() == CLOCK {
                fire(shared, &mut due);
            } else {
                ready.push((ev.token(), ev.is_readable(), ev.is_writable()));
            }
        }
        ready.extend(again.drain(..).map(|t| (t, true, false)));
        for &(t, readable, writable) in &ready {
            let Some(e) = shared.engines.lock().get(&t).and_then(Weak::upgrade) else {
                continue;
            };
            if writable {
                e.writable();
            }
            if readable && e.receive(&mut buf, &mut out) && !again.contains(&t) {
                again.push(t);
            }
        }
    }
}

/// The timers due: each connection's `handle_timeout`, its watcher, and what it sends.
fn fire(shared: &Shared, due: &mut Vec<u64>) {
    let now = Instant::now();
    due.clear();
    shared.clock.due(now, due);
    for id in due.iter() {
        let c = shared.conns.lock().get(id).and_then(Weak::upgrade);
        if let Some(c) = c {
            c.progress(true);
        }
    }
}
