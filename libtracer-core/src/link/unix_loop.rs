//! The event loop of the links: one thread per process (`tracer-io`) waits, with epoll (through
//! `mio`), on every listening socket, incoming handshake and link of every `HostTransport` of the
//! process, and beside them on the sources of other modules (`foreign.rs`): the QUIC engine's
//! UDP sockets and its `timerfd` (`quic/engine/driver.rs`). So a process has one loop thread for
//! every link, Unix or QUIC, and the same threads with one peer or two hundred. It also runs the
//! liveness check of every Unix link (docs/wire.md, "Liveness"): only links whose peer owes us a
//! sign of life are watched, so with every link idle the loop sleeps until a socket, a QUIC
//! timer or a command wakes it, and an idle process costs nothing per peer.
//!
//! The loop never blocks: it reads with `MSG_DONTWAIT` (the sockets stay in blocking mode for the
//! writers, which write from their own threads), decodes, does the link's own business itself
//! (PING answered, PONG dropped, SEGMENT mapped, RELEASE returned, SHM_DELIVERY turned into a
//! DELIVERY of a view) and gives every other frame to the link's **strand** (`strand.rs`): a
//! queue that one of the workers of `dispatch.rs` drains, one event at a time, so a link's
//! callbacks run in order and each completely before the next (docs/wire.md section 5, the
//! ruling `Graph::sync_peers` builds on), while a callback that blocks holds up only its own
//! link. The one callback the loop runs itself is a DELIVERY to a link whose strand is idle
//! (nothing queued, no worker on it): landing a sample in its target does not block, and the hop
//! to a worker would cost every message a thread wake-up. A QUIC link's deliveries are landed
//! the same way, by the engine's watcher on this thread; `on_loop` is true for both, so what
//! such a landing sets off (a Unix view evicted from a ring, whose RELEASE must not wait for the
//! socket: `unix_rx::Releaser`) knows it must not block, whichever link brought the sample.
//!
//! Back-pressure (`strand.rs`): when a link's strand is full the loop stops reading that link
//! until a worker has drained it; a link the loop does not read is not taken for silent by the
//! liveness check. Reading itself is `unix_rx.rs`. Fairness: a Unix link and a foreign source
//! each stop after a bounded share of a turn (a read buffer, 64 QUIC receipts) and get the rest
//! at the next turn, which then does not sleep.

use std::cell::Cell;
use std::collections::HashMap;
use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::{Duration, Instant};

use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token};
use parking_lot::Mutex;
use tracer_shm::fdpass::FdReceiver;

use super::foreign::{Foreign, ForeignSource};
use super::strand::Event;
use super::transport::Inner;
use super::unix::{check_hello, HelloOutcome, Leftover, HANDSHAKE_FRAME, READ_BUF};
use super::unix_rx::{LinkRx, Pumped, MAX_WAITING_FDS};
use super::{dispatch, Link};
use crate::wire::FrameDecoder;

/// Incoming connections that have not said HELLO yet, over all transports of the process (each
/// is dropped after its transport's handshake timeout); past it, new ones are closed at once.
const MAX_HANDSHAKES: usize = 64;
/// The liveness check's tick, while there is something to watch, when no transport asks for a
/// shorter one (half the default PING interval).
const DEFAULT_TICK_MS: u64 = 100;

/// No source's token: `new_token`'s answer when the loop cannot start (the loop thread's waker
/// has its own instance, `lead.rs`, and no token in the links').
const NO_SOURCE: Token = Token(0);
/// A leading thread's poke (`lead.rs`).
pub(super) const POKE: Token = Token(1);

/// What the loop waits on.
pub(crate) enum Source {
    /// A transport's listening socket (non-blocking).
    Listener {
        listener: UnixListener,
        owner: Weak<Inner>,
    },
    /// An accepted connection until its HELLO.
    Hello(Box<HelloRx>),
    /// An established link.
    Link(Box<LinkRx>),
}

enum Cmd {
    Add(Token, Source),
    /// The strand of this link was drained: read it again.
    Resume(Token),
}

struct Shared {
    cmds: Mutex<Vec<Cmd>>,
    next_token: AtomicUsize,
    tick_ms: AtomicU64,
    /// The loop ticks (some link is owed, a handshake or an accept is pending); when it is
    /// false the loop sleeps until woken, and the first link to become owed wakes it.
    watching: AtomicBool,
    /// The other modules' sources (the QUIC engine's).
    foreign: Foreign,
    /// What a turn works on, whichever thread turns: the loop thread, or a thread waiting in
    /// rmw_wait that leads the loop meanwhile (`lead.rs`).
    state: Mutex<LoopState>,
    /// The loop's epoll instance for a leading thread, and its poke.
    lead: super::lead::Shared,
}

static LOOP: OnceLock<Result<Arc<Shared>, String>> = OnceLock::new();

thread_local! {
    static ON_LOOP: Cell<bool> = const { Cell::new(false) };
}

/// Whether the caller is the loop thread, or a thread that leads the loop now (which must
/// never block).
pub(crate) fn on_loop() -> bool {
    ON_LOOP.with(|l| l.get())
}

/// Runs `f` as the loop: `on_loop` is true meanwhile.
fn as_loop<R>(f: impl FnOnce() -> R) -> R {
    let was = ON_LOOP.with(|l| l.replace(true));
    let r = f();
    ON_LOOP.with(|l| l.set(was));
    r
}

fn shared() -> Result<&'static Arc<Shared>, String> {
    LOOP.get_or_init(|| {
        let poll = Poll::new().map_err(|e| format!("cannot create the link event loop: {e}"))?;
        let why = |e: io::Error| format!("cannot create the link event loop: {e}");
        let registry = || poll.registry().try_clone().map_err(why);
        let shared = Arc::new(Shared {
            cmds: Mutex::new(Vec::new()),
            next_token: AtomicUsize::new(2),
            tick_ms: AtomicU64::new(DEFAULT_TICK_MS),
            watching: AtomicBool::new(true),
            foreign: Foreign::new(registry()?),
            state: Mutex::new(LoopState {
                registry: registry()?,
                sources: HashMap::new(),
                hellos: 0,
                again: Vec::with_capacity(64),
                again_foreign: Vec::new(),
                check: Vec::with_capacity(64),
                accept_retry: false,
                ready: Vec::with_capacity(256),
                foreign: Vec::with_capacity(64),
            }),
            lead: super::lead::Shared::new(poll.registry(), POKE).map_err(why)?,
        });
        crate::ready::on_leader_poke(poke_leader);
        let s = shared.clone();
        // Started by the first transport of either kind, or the first QUIC engine (a process
        // may have only QUIC links); named for what it serves, every link of the process.
        std::thread::Builder::new()
            .name("tracer-io".into())
            .spawn(move || {
                ON_LOOP.with(|l| l.set(true));
                run(poll, &s)
            })
            .map_err(|e| format!("cannot start the link event loop: {e}"))?;
        Ok(shared)
    })
    .as_ref()
    .map_err(Clone::clone)
}

/// Start the loop and the workers now (a transport does at start, so that a failure is its
/// error rather than a link that never comes up).
pub(crate) fn start() -> io::Result<()> {
    shared().map_err(io::Error::other)?;
    dispatch::start().map_err(io::Error::other)
}

/// Hand `source` to the loop.
pub(crate) fn add(source: Source) {
    if let Ok(s) = shared() {
        s.command(Cmd::Add(new_token(), source));
    }
}

/// Hand `source` to the loop under `t` (from `new_token`).
pub(crate) fn add_as(t: Token, source: Source) {
    match shared() {
        Ok(s) => s.command(Cmd::Add(t, source)),
        // Unreachable (a transport starts the loop first): a link goes down.
        Err(_) => {
            if let Source::Link(rx) = source {
                rx.link.close();
                rx.strand.push(Event::Down);
            }
        }
    }
}

/// The strand of the link `token` was drained: read it again.
pub(crate) fn resume(token: usize) {
    if let Ok(s) = shared() {
        s.command(Cmd::Resume(Token(token)));
    }
}

/// A token no source had before (0 is no source's, 1 the leader's poke).
pub(crate) fn new_token() -> Token {
    match shared() {
        Ok(s) => Token(s.next_token.fetch_add(1, Ordering::Relaxed)),
        Err(_) => NO_SOURCE,
    }
}

/// Wait on `fd` for `interest` and call `source` when it is ready, on the loop thread (starting
/// the loop if need be); the token is for `remove_foreign`. The caller keeps `source` alive and
/// removes it before `fd` closes.
#[cfg_attr(not(feature = "quic"), allow(dead_code))]
pub(crate) fn add_foreign(
    fd: RawFd,
    interest: Interest,
    source: Weak<dyn ForeignSource>,
) -> io::Result<Token> {
    let s = shared().map_err(io::Error::other)?;
    let t = Token(s.next_token.fetch_add(1, Ordering::Relaxed));
    s.foreign.add(t, fd, interest, source)?;
    Ok(t)
}

/// Wait on `fd` (from `add_foreign`'s token `t`) for `interest` from now on. Edge-triggered
/// as before: an interest that holds at once (a socket with room, newly waited for as
/// writable) brings its event at once.
#[cfg_attr(not(feature = "quic"), allow(dead_code))]
pub(crate) fn modify_foreign(t: Token, fd: RawFd, interest: Interest) -> io::Result<()> {
    let s = shared().map_err(io::Error::other)?;
    s.foreign.modify(t, fd, interest)
}

/// Stop waiting on `fd` (from `add_foreign`'s token `t`).
#[cfg_attr(not(feature = "quic"), allow(dead_code))]
pub(crate) fn remove_foreign(t: Token, fd: RawFd) {
    if let Some(Ok(s)) = LOOP.get() {
        s.foreign.remove(t, fd);
    }
}

/// A link has become owed (`UnixLink::wrote`): make sure the loop ticks. One atomic swap; the
/// loop is woken only when it had stopped ticking.
pub(crate) fn watch() {
    if let Some(Ok(s)) = LOOP.get() {
        if !s.watching.swap(true, Ordering::SeqCst) {
            s.lead.wake();
        }
    }
}

/// Ask the liveness check to tick at least every `ms` milliseconds (10 at the least).
pub(crate) fn tick_at_most(ms: u64) {
    if let Ok(s) = shared() {
        s.tick_ms.fetch_min(ms.max(10), Ordering::Relaxed);
    }
}

/// This thread leads the loop (`lead.rs`) until dropped.
pub(crate) struct Leader(&'static Shared);

/// Lead the loop, if it runs and no other thread leads it.
pub(crate) fn try_lead() -> Option<Leader> {
    let s = LOOP.get()?.as_ref().ok()?;
    s.lead.try_take().then_some(Leader(s))
}

/// Wake the leading thread (its waiter was notified).
fn poke_leader() {
    if let Some(Ok(s)) = LOOP.get() {
        s.lead.poke();
    }
}

impl Leader {
    /// Wait in the loop's epoll up to `timeout` unless `ready` (looked at once more when the
    /// wait is committed), and take the turn the events bring; false when epoll failed.
    pub(crate) fn wait(&self, timeout: Option<Duration>, ready: &dyn Fn() -> bool) -> bool {
        let s = self.0;
        s.lead.wait(timeout, ready, |events| {
            let more = as_loop(|| s.turn(events));
            // A source has more than this turn took: the loop thread takes it from here (the
            // leader is going back to its readiness).
            if more {
                s.lead.wake();
            }
        })
    }
}

impl Drop for Leader {
    fn drop(&mut self) {
        self.0.lead.give_back();
    }
}

impl Shared {
    /// One turn under the state's lock; true when some source has more than it took.
    fn turn(&self, events: &mut dyn Iterator<Item = (Token, bool, bool)>) -> bool {
        let mut st = self.state.lock();
        st.turn(self, events);
        st.has_more()
    }

    fn command(&self, c: Cmd) {
        self.cmds.lock().push(c);
        // A loop that cannot be woken still turns at its next tick.
        self.lead.wake();
    }
}

/// What a turn of the loop works on. The loop thread owns it but for the turns a leading
/// thread takes (`lead.rs`), each under this lock, so that a source is never serviced by two
/// threads at once and every turn runs as the loop thread's did.
pub(super) struct LoopState {
    registry: mio::Registry,
    sources: HashMap<Token, Source>,
    /// Sources in the Hello state.
    hellos: usize,
    /// Links that still had bytes when their turn ended.
    again: Vec<Token>,
    /// Foreign sources that still had datagrams when their turn ended.
    again_foreign: Vec<Token>,
    /// The tick's list of sources to look at (kept, so a tick allocates nothing).
    check: Vec<Token>,
    /// An accept failed for lack of descriptors or memory: the next tick tries again.
    accept_retry: bool,
    /// The sources to service this turn; kept across turns, so a turn allocates nothing.
    ready: Vec<Token>,
    /// The foreign sources to call this turn, with their readiness (readable, writable).
    foreign: Vec<(Token, bool, bool)>,
}

/// The loop thread: waits, turns, ticks.
fn run(mut poll: Poll, shared: &Shared) {
    let mut events = Events::with_capacity(256);
    // None: nothing to watch, no tick until something is.
    let mut next_tick = Some(Instant::now());
    // Some source had more than this thread's last turn took (a leader's turn that leaves
    // more wakes this thread by its waker).
    let mut more = false;
    loop {
        let now = Instant::now();
        if next_tick.is_none() && shared.watching.load(Ordering::SeqCst) {
            next_tick = Some(now + Duration::from_millis(shared.tick_ms.load(Ordering::Relaxed)));
        }
        let timeout = if more {
            Some(Duration::ZERO)
        } else {
            next_tick.map(|t| t.saturating_duration_since(now))
        };
        if let Err(e) = shared.lead.loop_wait(&mut poll, &mut events, timeout) {
            if e.kind() != io::ErrorKind::Interrupted {
                // Not expected from epoll_wait; do not spin on it.
                std::thread::sleep(Duration::from_millis(10));
            }
            continue;
        }
        let mut evs = events
            .iter()
            .map(|e| (e.token(), e.is_readable(), e.is_writable()));
        more = shared.turn(&mut evs);
        if next_tick.is_some_and(|t| Instant::now() >= t) {
            next_tick = None;
            // Told before looking, so that a link owed after the look wakes us (`watch`).
            shared.watching.store(false, Ordering::SeqCst);
            let mut st = shared.state.lock();
            if st.tick() {
                shared.watching.store(true, Ordering::SeqCst);
            }
            // The tick services sources too.
            more |= st.has_more();
        }
    }
}

impl LoopState {
    /// Some source has more than its turn took.
    fn has_more(&self) -> bool {
        !self.again.is_empty() || !self.again_foreign.is_empty()
    }

    /// One turn: the sources `events` name (token, readable, writable), those left with more
    /// by the last turn, and the commands.
    fn turn(&mut self, shared: &Shared, events: &mut dyn Iterator<Item = (Token, bool, bool)>) {
        let mut ready = std::mem::take(&mut self.ready);
        let mut foreign = std::mem::take(&mut self.foreign);
        ready.clear();
        foreign.clear();
        for (t, readable, writable) in events {
            if self.sources.contains_key(&t) {
                ready.push(t);
            } else if t == POKE {
                shared.lead.poked();
            } else {
                foreign.push((t, readable, writable));
            }
        }
        ready.append(&mut self.again);
        foreign.extend(self.again_foreign.drain(..).map(|t| (t, true, false)));
        for c in std::mem::take(&mut *shared.cmds.lock()) {
            match c {
                Cmd::Add(t, s) => {
                    if self.insert(t, s) {
                        ready.push(t);
                    }
                }
                Cmd::Resume(t) => {
                    if let Some(Source::Link(rx)) = self.sources.get_mut(&t) {
                        rx.paused = false;
                        rx.link.set_paused(false);
                        ready.push(t);
                    }
                }
            }
        }
        ready.sort_unstable();
        ready.dedup();
        for &t in &ready {
            self.service(t);
        }
        for &(t, readable, writable) in &foreign {
            let more = shared.foreign.run(t, readable, writable) == Some(true);
            if more && !self.again_foreign.contains(&t) {
                self.again_foreign.push(t);
            }
        }
        self.ready = ready;
        self.foreign = foreign;
    }

    /// Register and keep `s`; false when it could not be registered (it is dropped, which
    /// closes it; a link is brought down).
    fn insert(&mut self, t: Token, s: Source) -> bool {
        let fd = match &s {
            Source::Listener { listener, .. } => listener.as_raw_fd(),
            Source::Hello(h) => h.stream.as_raw_fd(),
            Source::Link(rx) => rx.link.socket().as_raw_fd(),
        };
        let r = self
            .registry
            .register(&mut SourceFd(&fd), t, Interest::READABLE);
        if r.is_err() {
            if let Source::Link(rx) = s {
                rx.link.close();
                rx.strand.push(Event::Down);
            }
            return false;
        }
        if matches!(s, Source::Hello(_)) {
            self.hellos += 1;
        }
        self.sources.insert(t, s);
        // A new link is owed (our HELLO), a handshake has a deadline: tick.
        watch();
        true
    }

    fn remove(&mut self, t: Token) -> Option<Source> {
        let s = self.sources.remove(&t)?;
        let fd = match &s {
            Source::Listener { listener, .. } => listener.as_raw_fd(),
            Source::Hello(h) => h.stream.as_raw_fd(),
            Source::Link(rx) => rx.link.socket().as_raw_fd(),
        };
        let _ = self.registry.deregister(&mut SourceFd(&fd));
        if matches!(s, Source::Hello(_)) {
            self.hellos -= 1;
        }
        Some(s)
    }

    fn service(&mut self, t: Token) {
        let Some(src) = self.sources.get_mut(&t) else {
            return;
        };
        match src {
            Source::Listener { listener, owner } => {
                let (accepted, keep, retry) = accept_all(listener, owner);
                if !keep {
                    self.remove(t);
                }
                self.accept_retry |= retry;
                for (stream, owner) in accepted {
                    if self.hellos >= MAX_HANDSHAKES {
                        // Dropped: closed at once.
                        continue;
                    }
                    let Some(timeout) = owner.upgrade().map(|i| i.cfg.handshake_timeout) else {
                        continue;
                    };
                    let h = HelloRx::new(stream, owner, Instant::now() + timeout);
                    let t = new_token();
                    if self.insert(t, Source::Hello(Box::new(h))) {
                        // Its HELLO may be in already.
                        self.service(t);
                    }
                }
            }
            Source::Hello(h) => match h.read() {
                HelloStep::Wait => {}
                HelloStep::Drop => {
                    self.remove(t);
                }
                HelloStep::Done(hello, dec, left) => {
                    if let Some(Source::Hello(h)) = self.remove(t) {
                        let HelloRx { stream, owner, .. } = *h;
                        if let Some(inner) = owner.upgrade() {
                            // Writes our small HELLO on a fresh socket (bounded by the
                            // handshake timeout, never near it) and hands the link back to us.
                            inner.accept_hello(stream, hello, dec, left);
                        }
                    }
                }
            },
            Source::Link(rx) => match rx.pump() {
                Pumped::Idle => {}
                Pumped::More => self.again.push(t),
                Pumped::Ended => {
                    if let Some(Source::Link(rx)) = self.remove(t) {
                        rx.strand.push(Event::Down);
                    }
                }
            },
        }
    }

    /// The liveness check of every owed link, the handshake deadlines, and, after an accept
    /// failed for lack of descriptors, another look at the listeners. True while there is
    /// something left to watch (the loop then ticks again).
    ///
    /// A link whose peer owes us a sign of life (it has frames of ours it has not answered for,
    /// `UnixLink::owed_for_ms`) is PINGed every `ping_ms`, and closed once it has owed for
    /// `dead_ms` with nothing at all heard meanwhile; its PONG to a PING after our last frame
    /// settles it, and it is not watched again until we write to it. A link we do not read (its
    /// strand is full) PINGs the peer, so that our silence is not taken for a hang either.
    fn tick(&mut self) -> bool {
        let now = Instant::now();
        // Kept across ticks: a tick allocates nothing.
        let mut check = std::mem::take(&mut self.check);
        check.clear();
        // Slots a closed link's reader may still read come back once its process is gone.
        let mut watching = self.hellos > 0 || self.accept_retry || super::unix::quarantine::sweep();
        let retry = std::mem::take(&mut self.accept_retry);
        for (t, s) in &self.sources {
            match s {
                Source::Link(rx) => {
                    let l = &rx.link;
                    if rx.paused {
                        watching = true;
                        if l.ms_since_tx() >= rx.ping_ms {
                            l.send_ping();
                        }
                    } else if let Some(owed) = l.owed_for_ms() {
                        watching = true;
                        if owed >= rx.dead_ms && l.peer_silent_for(rx.dead_ms) {
                            l.close();
                            check.push(*t);
                        } else if owed >= rx.ping_ms && l.ms_since_ping() >= rx.ping_ms {
                            l.send_ping();
                        }
                    }
                }
                Source::Hello(h) if now >= h.deadline => check.push(*t),
                Source::Hello(_) => {}
                Source::Listener { .. } if retry => check.push(*t),
                Source::Listener { .. } => {}
            }
        }
        for &t in &check {
            match self.sources.get(&t) {
                Some(Source::Hello(_)) => {
                    self.remove(t);
                }
                _ => self.service(t),
            }
        }
        self.check = check;
        watching || self.hellos > 0 || self.accept_retry
    }
}

/// Accept every waiting connection. Then: false when the transport is gone or shut down (its
/// listener is dropped); true when an accept failed for lack of descriptors or memory (the
/// listener is edge-triggered: the next tick tries again).
fn accept_all(
    listener: &UnixListener,
    owner: &Weak<Inner>,
) -> (Vec<(UnixStream, Weak<Inner>)>, bool, bool) {
    let mut out = Vec::new();
    loop {
        if owner.upgrade().is_none_or(|i| i.is_stopped()) {
            return (out, false, false);
        }
        match listener.accept() {
            // Accepted sockets are blocking (accept4 without SOCK_NONBLOCK), which the writers
            // want; the loop reads them with MSG_DONTWAIT.
            Ok((s, _)) => out.push((s, owner.clone())),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return (out, true, false),
            // Shut down (EINVAL): the transport is stopping.
            Err(e) if e.kind() == io::ErrorKind::InvalidInput => return (out, false, false),
            // Out of descriptors or memory.
            Err(_) => return (out, true, true),
        }
    }
}

/// An accepted connection until its HELLO: at most `HANDSHAKE_FRAME` before it, within the
/// transport's handshake timeout.
pub(crate) struct HelloRx {
    stream: UnixStream,
    owner: Weak<Inner>,
    dec: FrameDecoder,
    buf: Vec<u8>,
    recv: FdReceiver,
    fds: Vec<OwnedFd>,
    deadline: Instant,
}

enum HelloStep {
    Wait,
    Drop,
    Done(super::unix::PeerHello, FrameDecoder, Leftover),
}

impl HelloRx {
    fn new(stream: UnixStream, owner: Weak<Inner>, deadline: Instant) -> HelloRx {
        HelloRx {
            stream,
            owner,
            dec: FrameDecoder::new(HANDSHAKE_FRAME),
            buf: vec![0u8; READ_BUF],
            recv: FdReceiver::default(),
            fds: Vec::new(),
            deadline,
        }
    }

    fn read(&mut self) -> HelloStep {
        loop {
            let n = match self
                .recv
                .try_recv(self.stream.as_fd(), &mut self.buf, &mut self.fds)
            {
                Ok(0) => return HelloStep::Drop,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return HelloStep::Wait,
                Err(_) => return HelloStep::Drop,
            };
            if self.fds.len() > MAX_WAITING_FDS {
                return HelloStep::Drop;
            }
            let taken = self.dec.push(&self.buf[..n]);
            match self.dec.pop() {
                Ok(None) => continue,
                Ok(Some(frame)) => {
                    let dec = std::mem::replace(&mut self.dec, FrameDecoder::new(HANDSHAKE_FRAME));
                    let left = Leftover {
                        buf: std::mem::take(&mut self.buf),
                        start: taken,
                        end: n,
                        fds: std::mem::take(&mut self.fds),
                    };
                    return match check_hello(frame, dec, left) {
                        Ok(HelloOutcome::Hello(h, dec, left)) => HelloStep::Done(h, dec, left),
                        // Anything but HELLO first: dropped.
                        _ => HelloStep::Drop,
                    };
                }
                Err(_) => return HelloStep::Drop,
            }
        }
    }
}
