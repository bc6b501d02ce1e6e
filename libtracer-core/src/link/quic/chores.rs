//! The transport's chores without a runtime (stage 3 of docs/network.md section 4a): the peer
//! loops (directory polls, host liveness), the role loop, the
//! connect attempts with their retries and the directory's answers run as futures on one
//! thread of the process (`tracer-quic-net`), and static peers' names are looked up on one
//! more (`tracer-quic-dns`, started with the first name: `getaddrinfo` blocks). Neither is a
//! tokio runtime: a task is polled when something wakes it (an engine connection's watcher,
//! a channel, its own deadline, one of SUBNET's sockets: [`Udp`]), and the thread sleeps in
//! `epoll_wait` (through `mio`) until the earliest deadline otherwise, so nothing spins and the
//! thread count is the same with one peer host or a hundred.
//!
//! The futures (`peer_host.rs`, `directory.rs`, `handshake.rs`, `subnet.rs`) keep time with
//! [`sleep`], [`sleep_until`] and [`timeout`]: deadlines of this thread's clock.

use std::collections::{BTreeMap, VecDeque};
use std::future::Future;
use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use mio::unix::SourceFd;
use mio::{Events, Interest, Token};
use parking_lot::Mutex;
use tokio::sync::oneshot;

type BoxFuture = Pin<Box<dyn Future<Output = ()> + Send>>;

struct Task {
    fut: Mutex<Option<BoxFuture>>,
    /// In the ready queue (a wake while queued adds nothing).
    queued: AtomicBool,
}

#[derive(Default)]
struct State {
    ready: VecDeque<Arc<Task>>,
    /// Sleeping futures by deadline (the key's second part tells equal deadlines apart).
    timers: BTreeMap<(Instant, u64), Waker>,
    next_timer: u64,
}

struct Chores {
    state: Mutex<State>,
    /// Wakes the thread from `epoll_wait` (a task woken, a deadline set, from another thread).
    waker: mio::Waker,
    registry: mio::Registry,
    /// Who waits on each registered socket ([`Udp`]).
    io: Mutex<std::collections::HashMap<Token, Vec<Waker>>>,
    next_token: std::sync::atomic::AtomicUsize,
}

const WAKE: Token = Token(0);

impl Chores {
    /// Wake the thread, unless it is the caller (it looks at its queue before it sleeps).
    fn nudge(&self) {
        if !on_chores() {
            let _ = self.waker.wake();
        }
    }
}

static CHORES: OnceLock<Result<Arc<Chores>, String>> = OnceLock::new();

thread_local! {
    static ON_CHORES: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

fn chores() -> io::Result<&'static Arc<Chores>> {
    CHORES
        .get_or_init(|| {
            let why = |e: io::Error| format!("cannot start the QUIC chores' thread: {e}");
            let poll = mio::Poll::new().map_err(why)?;
            let c = Arc::new(Chores {
                state: Mutex::default(),
                waker: mio::Waker::new(poll.registry(), WAKE).map_err(why)?,
                registry: poll.registry().try_clone().map_err(why)?,
                io: Mutex::default(),
                next_token: std::sync::atomic::AtomicUsize::new(1),
            });
            let run = c.clone();
            std::thread::Builder::new()
                .name("tracer-quic-net".into())
                .spawn(move || {
                    ON_CHORES.with(|o| o.set(true));
                    run.run(poll);
                })
                .map_err(|e| format!("cannot start the QUIC chores' thread: {e}"))?;
            Ok(c)
        })
        .as_ref()
        .map_err(|e| io::Error::other(e.clone()))
}

/// Start the thread (a transport on the engine does at start, so that a failure is its own).
pub(crate) fn start() -> io::Result<()> {
    chores().map(|_| ())
}

/// Whether the caller is the chores' thread.
pub(crate) fn on_chores() -> bool {
    ON_CHORES.with(std::cell::Cell::get)
}

impl Wake for Task {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if self.queued.swap(true, Ordering::AcqRel) {
            return;
        }
        if let Ok(c) = chores() {
            c.state.lock().ready.push_back(self.clone());
            c.nudge();
        }
    }
}

impl Chores {
    fn run(&self, mut poll: mio::Poll) {
        let mut due: Vec<Waker> = Vec::new();
        let mut events = Events::with_capacity(64);
        loop {
            let task = {
                let mut st = self.state.lock();
                loop {
                    let now = Instant::now();
                    while let Some(entry) = st.timers.first_entry() {
                        if entry.key().0 > now {
                            break;
                        }
                        due.push(entry.remove());
                    }
                    if !due.is_empty() {
                        // Waking takes the state's lock.
                        drop(st);
                        due.drain(..).for_each(Waker::wake);
                        st = self.state.lock();
                        continue;
                    }
                    if let Some(t) = st.ready.pop_front() {
                        break t;
                    }
                    let timeout = st
                        .timers
                        .keys()
                        .next()
                        .map(|k| k.0.saturating_duration_since(now));
                    drop(st);
                    self.wait(&mut poll, &mut events, timeout);
                    st = self.state.lock();
                }
            };
            task.queued.store(false, Ordering::Release);
            let waker = Waker::from(task.clone());
            let mut cx = Context::from_waker(&waker);
            let mut slot = task.fut.lock();
            let Some(fut) = slot.as_mut() else { continue };
            // A chore that panics ends alone, not the thread every other chore runs on.
            match std::panic::catch_unwind(AssertUnwindSafe(|| fut.as_mut().poll(&mut cx))) {
                Ok(Poll::Pending) => {}
                Ok(Poll::Ready(())) | Err(_) => *slot = None,
            }
        }
    }
}

impl Chores {
    /// Sleep until a socket is ready, a wake, or `timeout`; wake who waits on the sockets.
    fn wait(&self, poll: &mut mio::Poll, events: &mut Events, timeout: Option<Duration>) {
        let timeout = timeout.map(|t| Duration::from_millis(crate::link::lead::ceil_ms(t)));
        if let Err(e) = poll.poll(events, timeout) {
            if e.kind() != io::ErrorKind::Interrupted {
                // Not expected from epoll_wait; do not spin on it.
                std::thread::sleep(Duration::from_millis(10));
            }
            return;
        }
        let mut woken: Vec<Waker> = Vec::new();
        let mut io = self.io.lock();
        for ev in events.iter().filter(|ev| ev.token() != WAKE) {
            if let Some(w) = io.get_mut(&ev.token()) {
                woken.append(w);
            }
        }
        drop(io);
        woken.into_iter().for_each(Waker::wake);
    }
}

/// What a spawned future gives back when it ends (`None`: it was dropped, or panicked).
pub(crate) struct Joined<T>(oneshot::Receiver<T>);

impl<T> Future for Joined<T> {
    type Output = Option<T>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        Pin::new(&mut self.0).poll(cx).map(Result::ok)
    }
}

/// Run `fut` on the chores' thread. If the thread cannot be started (`start` said so first),
/// the future is dropped and its handle answers `None`.
pub(crate) fn spawn<F>(fut: F) -> Joined<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let (tx, rx) = oneshot::channel();
    let task = Arc::new(Task {
        fut: Mutex::new(Some(Box::pin(async move {
            let _ = tx.send(fut.await);
        }))),
        queued: AtomicBool::new(false),
    });
    task.wake_by_ref();
    Joined(rx)
}

/// [`spawn`] a chore whose end nobody waits for (a peer loop, the role loop).
pub(crate) fn detach<F>(fut: F)
where
    F: Future<Output = ()> + Send + 'static,
{
    drop(spawn(fut));
}

/// Ready at `at`, on the chores' thread's clock.
struct Deadline {
    at: Instant,
    key: Option<(Instant, u64)>,
}

impl Future for Deadline {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let Ok(c) = chores() else {
            return Poll::Ready(());
        };
        let mut st = c.state.lock();
        if let Some(k) = self.key.take() {
            st.timers.remove(&k);
        }
        if Instant::now() >= self.at {
            return Poll::Ready(());
        }
        st.next_timer += 1;
        let key = (self.at, st.next_timer);
        st.timers.insert(key, cx.waker().clone());
        self.key = Some(key);
        drop(st);
        // Polled elsewhere than on the thread (never, today): the thread's sleep is shorter now.
        c.nudge();
        Poll::Pending
    }
}

impl Drop for Deadline {
    fn drop(&mut self) {
        if let (Some(k), Ok(c)) = (self.key.take(), chores()) {
            c.state.lock().timers.remove(&k);
        }
    }
}

/// Ready at `at`, by the chores' clock.
pub(crate) async fn sleep_until(at: Instant) {
    Deadline { at, key: None }.await
}

/// Ready after `d` (as [`sleep_until`]).
pub(crate) async fn sleep(d: Duration) {
    sleep_until(Instant::now() + d).await
}

/// `fut` took longer than its bound.
#[derive(Debug)]
pub(crate) struct Elapsed;

/// `fut`'s output, or `Elapsed` after `d` (as [`sleep_until`]).
pub(crate) async fn timeout<F: Future>(d: Duration, fut: F) -> Result<F::Output, Elapsed> {
    tokio::select! {
        biased;
        out = fut => Ok(out),
        _ = sleep(d) => Err(Elapsed),
    }
}

type Lookup = (String, u16, oneshot::Sender<io::Result<Vec<SocketAddr>>>);

static RESOLVER: OnceLock<Result<Mutex<mpsc::Sender<Lookup>>, String>> = OnceLock::new();

/// `host`'s addresses with `port`, from the system resolver: on the resolver thread from the
/// chores' thread (it blocks; an address is taken as it is, without the thread).
pub(crate) async fn lookup_host(host: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
    // An address is no name: no thread for it.
    if let Ok(ip) = host.parse::<std::net::IpAddr>() {
        return Ok(vec![SocketAddr::new(ip, port)]);
    }
    let resolver = RESOLVER
        .get_or_init(|| {
            let (tx, rx) = mpsc::channel::<Lookup>();
            std::thread::Builder::new()
                .name("tracer-quic-dns".into())
                .spawn(move || {
                    for (host, port, back) in rx {
                        let r = (host.as_str(), port)
                            .to_socket_addrs()
                            .map(Iterator::collect);
                        let _ = back.send(r);
                    }
                })
                .map_err(|e| format!("cannot start the name resolver's thread: {e}"))?;
            Ok(Mutex::new(tx))
        })
        .as_ref()
        .map_err(|e| io::Error::other(e.clone()))?;
    let (tx, rx) = oneshot::channel();
    resolver
        .lock()
        .send((host.to_owned(), port, tx))
        .map_err(|_| io::Error::other("the name resolver's thread is gone"))?;
    rx.await
        .map_err(|_| io::Error::other("the name resolver's thread is gone"))?
}

/// Futures raced inside one task (a `JoinSet` without a runtime): each is polled when the
/// task is; dropping the set drops the ones still running.
pub(crate) struct Racing<T>(Vec<Pin<Box<dyn Future<Output = T> + Send>>>);

impl<T> Default for Racing<T> {
    fn default() -> Self {
        Racing(Vec::new())
    }
}

impl<T> Racing<T> {
    pub(crate) fn push(&mut self, f: impl Future<Output = T> + Send + 'static) {
        self.0.push(Box::pin(f));
    }

    /// The next to end; never ready while the set is empty.
    pub(crate) async fn next(&mut self) -> T {
        std::future::poll_fn(|cx| {
            for i in 0..self.0.len() {
                if let Poll::Ready(v) = self.0[i].as_mut().poll(cx) {
                    drop(self.0.swap_remove(i));
                    return Poll::Ready(v);
                }
            }
            Poll::Pending
        })
        .await
    }
}

/// A UDP socket whose sends and receipts a chore awaits (SUBNET's, on the engine): a
/// non-blocking socket in the chores' `epoll` set, tried first and awaited only when it
/// would block. Every use is on the chores' thread, which also waits on it, so no readiness
/// is missed between a try and the wait (edge-triggered: the wait follows the try that saw
/// it would block).
pub(crate) struct Udp {
    sock: std::net::UdpSocket,
    token: Token,
}

impl Udp {
    pub(crate) fn new(sock: std::net::UdpSocket) -> io::Result<Udp> {
        let c = chores()?;
        sock.set_nonblocking(true)?;
        let token = Token(c.next_token.fetch_add(1, Ordering::Relaxed));
        c.io.lock().insert(token, Vec::new());
        use std::os::fd::AsRawFd;
        let fd = sock.as_raw_fd();
        if let Err(e) = c.registry.register(
            &mut SourceFd(&fd),
            token,
            Interest::READABLE | Interest::WRITABLE,
        ) {
            c.io.lock().remove(&token);
            return Err(e);
        }
        Ok(Udp { sock, token })
    }

    pub(crate) fn socket(&self) -> &std::net::UdpSocket {
        &self.sock
    }

    /// `op` until it does not block.
    async fn ready<T>(
        &self,
        mut op: impl FnMut(&std::net::UdpSocket) -> io::Result<T>,
    ) -> io::Result<T> {
        std::future::poll_fn(|cx| match op(&self.sock) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                let Ok(c) = chores() else {
                    return Poll::Ready(Err(e));
                };
                if let Some(w) = c.io.lock().get_mut(&self.token) {
                    if !w.iter().any(|x| x.will_wake(cx.waker())) {
                        w.push(cx.waker().clone());
                    }
                }
                Poll::Pending
            }
            r => Poll::Ready(r),
        })
        .await
    }

    pub(crate) async fn recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        self.ready(|s| s.recv_from(buf)).await
    }

    pub(crate) async fn send_to(&self, bytes: &[u8], to: SocketAddr) -> io::Result<usize> {
        self.ready(|s| s.send_to(bytes, to)).await
    }
}

impl Drop for Udp {
    fn drop(&mut self) {
        if let Ok(c) = chores() {
            use std::os::fd::AsRawFd;
            let _ = c.registry.deregister(&mut SourceFd(&self.sock.as_raw_fd()));
            c.io.lock().remove(&self.token);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chores_sleep_race_and_join() {
        let j = spawn(async {
            assert!(on_chores());
            let t0 = Instant::now();
            sleep(Duration::from_millis(30)).await;
            let slept = t0.elapsed();
            let late = timeout(Duration::from_millis(10), sleep(Duration::from_secs(5))).await;
            let mut r = Racing::default();
            r.push(async {
                sleep(Duration::from_millis(40)).await;
                2
            });
            r.push(async {
                sleep(Duration::from_millis(5)).await;
                1
            });
            let first = r.next().await;
            (slept, late.is_err(), first)
        });
        let (tx, rx) = std::sync::mpsc::channel();
        spawn(async move {
            let _ = tx.send(j.await);
        });
        let (slept, late, first) = rx.recv_timeout(Duration::from_secs(5)).unwrap().unwrap();
        assert!(slept >= Duration::from_millis(30));
        assert!(late);
        assert_eq!(first, 1);
    }
}
