//! `HostTransport`: zero-configuration Unix-socket links between the graphs of one host.
//!
//! Formation: bind and listen, then publish the socket as `<dir>/<name>.sock`, so that a socket
//! under that name is always listening; then connect to every other `*.sock` in the directory
//! (a socket that refuses belongs to a dead process and is removed). Both
//! ends exchange HELLO. When two graphs connect to each other at once, the connection
//! initiated by the node with the smaller name wins: an acceptor refuses an incoming
//! connection when it already has a link to that peer, or when it is itself connecting to that
//! peer and its name is the smaller one. Outgoing connections are registered before the
//! listener is served, which makes the rule see every race (docs/wire.md walks through it).
//!
//! Liveness: EOF or a socket error ends a link at once (a killed process's sockets are closed
//! by the kernel). What the kernel cannot tell, a peer alive but hung (stopped, its event loop
//! wedged), matters only while the peer has frames of ours to read: such a link is PINGed every
//! `ping_interval` until the peer answers for all of them, and closed when it has owed an
//! answer for `dead_after` with nothing heard meanwhile. An idle link sends nothing.
//!
//! Redial: a connection that could not be made (the peer's queue full, a handshake that timed
//! out or was dropped, as when hundreds of graphs start at once), or a link lost while the peer
//! may live on (closed by either side's liveness check), is tried again with a backoff
//! (`redial.rs`) for as long as the peer's socket is there and live.
//!
//! Threads: none of its own once started, but for the one redial thread while a peer is due. The listening socket, the incoming handshakes, the
//! reading of every link and the liveness check run on the process's one event loop
//! (`unix_loop.rs`), the handler callbacks on its few workers (`dispatch.rs`), whatever the
//! number of peers. Only `start` connects to the graphs already there from a few threads of its
//! own (at most `CONNECTORS`), gone when it returns.

use std::collections::{HashMap, HashSet};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use nix::sys::socket::{getsockopt, sockopt::PeerCredentials};
use nix::sys::time::{TimeVal, TimeValLike};
use parking_lot::{Condvar, Mutex};

use super::redial::Redial;
use super::rendezvous::prepare_dir;
use super::strand::Hooks;
use super::unix::{hello, read_hello, refuse, write_frame, HelloOutcome, UnixLink};
use super::unix_loop::{self, Source};
use super::unix_rx::NewLink;
use super::{dispatch, valid_node_name, Link, LinkError, LinkHandler, PeerIdentity};
use crate::wire::ErrorCode;

/// Threads `start` connects from at most (each handshake is bounded by the handshake timeout,
/// so this many silent peers cost one timeout, not one each).
const CONNECTORS: usize = 8;

/// Timing of a transport. The defaults find a hung peer within one second.
#[derive(Clone, Debug)]
pub struct TransportConfig {
    /// PING a link whose peer has owed us an answer for this long, and again this often.
    pub ping_interval: Duration,
    /// Close a link whose peer has owed an answer for this long with nothing heard meanwhile.
    pub dead_after: Duration,
    /// Bound on the HELLO exchange of one connection.
    pub handshake_timeout: Duration,
    /// A write blocked this long (the peer stopped reading) fails and closes the link.
    pub write_timeout: Duration,
    /// Say in HELLO that we map shared-memory segments (docs/wire.md, SHM). Default: this
    /// process can (`tracer_shm::can_map`, false with `TRACER_SHM=off`).
    pub accept_shm: bool,
    /// References to our shared memory one peer may hold at once; past it, samples go as
    /// copies. Bounds what a stopped reader pins in our pool beyond its ring.
    pub shm_refs_per_link: usize,
}

impl Default for TransportConfig {
    fn default() -> Self {
        TransportConfig {
            ping_interval: Duration::from_millis(200),
            dead_after: Duration::from_millis(900),
            handshake_timeout: Duration::from_secs(2),
            write_timeout: Duration::from_secs(10),
            accept_shm: tracer_shm::can_map(),
            shm_refs_per_link: 256,
        }
    }
}

#[derive(Default)]
struct Table {
    links: HashMap<String, Arc<UnixLink>>,
    /// Peers we are connecting to, registered before the listener is served.
    pending: HashSet<String>,
    /// Links installed whose `on_down` has not returned yet.
    live: usize,
    stopped: bool,
}

pub(crate) struct Inner {
    dir: PathBuf,
    name: String,
    sock_path: PathBuf,
    sock_ino: u64,
    handler: Arc<dyn LinkHandler>,
    pub(crate) cfg: TransportConfig,
    table: Mutex<Table>,
    /// Told when `live` falls.
    gone: Condvar,
    redial: Redial,
}

/// How a connection attempt ended.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Dialed {
    /// A link to the peer is up (ours, or the one it made to us).
    Linked,
    /// No live graph behind the name (no socket, or a stale one, removed): nothing to retry.
    Gone,
    /// It failed while the peer may be alive: try again later.
    Retry,
}

/// The Unix-socket transport of one graph. Dropping it (or `shutdown`) closes every link,
/// waits for their `on_down`, and removes its socket.
pub struct HostTransport {
    inner: Arc<Inner>,
    /// The listening socket (a duplicate of the event loop's descriptor): `shutdown(2)` on it
    /// makes the loop's `accept` fail, and the loop drops it; that needs neither the socket
    /// file nor the directory.
    listener: UnixListener,
}

impl HostTransport {
    /// Join the rendezvous directory `dir` as `local_name` with the default timing.
    pub fn start(
        dir: &Path,
        local_name: &str,
        handler: Arc<dyn LinkHandler>,
    ) -> Result<HostTransport, LinkError> {
        Self::start_with(dir, local_name, handler, TransportConfig::default())
    }

    /// As `start`; returns once the connections to the graphs already there have either come up
    /// (their `on_up` has been called) or failed.
    pub fn start_with(
        dir: &Path,
        local_name: &str,
        handler: Arc<dyn LinkHandler>,
        cfg: TransportConfig,
    ) -> Result<HostTransport, LinkError> {
        if !valid_node_name(local_name) {
            return Err(LinkError::InvalidName(local_name.to_owned()));
        }
        prepare_dir(dir)?;
        let sock_path = dir.join(format!("{local_name}.sock"));
        claim_name(&sock_path, local_name, cfg.handshake_timeout)?;
        let listener = bind_listening(dir, &sock_path, local_name)?;
        let bound = listener
            .try_clone()
            .and_then(|l| Ok((l, std::fs::symlink_metadata(&sock_path)?.ino())));
        let (wake_listener, sock_ino) = match bound {
            Ok(x) => x,
            Err(e) => {
                let _ = std::fs::remove_file(&sock_path);
                return Err(e.into());
            }
        };
        unix_loop::start()?;
        listener.set_nonblocking(true)?;
        let inner = Arc::new(Inner {
            dir: dir.to_owned(),
            name: local_name.to_owned(),
            sock_path,
            sock_ino,
            handler,
            cfg,
            table: Mutex::new(Table::default()),
            gone: Condvar::new(),
            redial: Redial::default(),
        });
        let peers = inner.scan();
        inner.table.lock().pending.extend(peers.iter().cloned());
        let t = HostTransport {
            inner: inner.clone(),
            listener: wake_listener,
        };
        // On an error below, dropping `t` shuts down what was started and removes the socket.
        unix_loop::add(Source::Listener {
            listener,
            owner: Arc::downgrade(&inner),
        });
        // A few threads share the peers, so that peers slow to answer (each bounded by the
        // handshake timeout) cost about one timeout in all, not one each.
        let queue = Arc::new(Mutex::new(peers));
        let n = queue.lock().len().min(CONNECTORS);
        let mut connects = Vec::new();
        for _ in 0..n {
            let (i, q) = (inner.clone(), queue.clone());
            let work = move || loop {
                let Some(peer) = q.lock().pop() else { return };
                if i.connect_to(&peer) == Dialed::Retry {
                    i.redial(&peer, 0);
                }
            };
            match std::thread::Builder::new()
                .name("tracer-connect".into())
                .spawn(work)
            {
                Ok(h) => connects.push(h),
                // No thread to spare: the others (or this one, below) take its share.
                Err(_) => break,
            }
        }
        for c in connects {
            let _ = c.join();
        }
        // Whatever no thread took (none could be started): from this one.
        while let Some(peer) = queue.lock().pop() {
            if inner.connect_to(&peer) == Dialed::Retry {
                inner.redial(&peer, 0);
            }
        }
        Ok(t)
    }

    pub fn name(&self) -> &str {
        &self.inner.name
    }

    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    pub fn socket_path(&self) -> &Path {
        &self.inner.sock_path
    }

    /// Names of the peers with a live link, sorted.
    pub fn peers(&self) -> Vec<String> {
        let mut v: Vec<String> = self.inner.table.lock().links.keys().cloned().collect();
        v.sort();
        v
    }

    /// The live link to `peer`.
    pub fn link_to(&self, peer: &str) -> Option<Arc<UnixLink>> {
        self.inner.table.lock().links.get(peer).cloned()
    }

    /// Close everything and remove the socket. Waits for every link's `on_down`, except when
    /// called from inside a handler callback (a worker thread), where waiting could wait for
    /// the caller itself. Idempotent.
    pub fn shutdown(&self) {
        let links: Vec<Arc<UnixLink>> = {
            let mut table = self.inner.table.lock();
            if table.stopped {
                return;
            }
            table.stopped = true;
            table.links.values().cloned().collect()
        };
        self.inner.redial.stop();
        // The event loop drops the listener when its accept fails: on Linux, shutdown of a
        // listening socket makes every later `accept` fail at once. Not by connecting to our
        // socket path: the directory may be gone, or the path another graph's by now.
        let _ =
            nix::sys::socket::shutdown(self.listener.as_raw_fd(), nix::sys::socket::Shutdown::Both);
        for l in links {
            l.close();
        }
        if !dispatch::on_worker() {
            let mut table = self.inner.table.lock();
            while table.live > 0 {
                self.inner.gone.wait(&mut table);
            }
        }
        // Only our own socket: a newer graph may have taken the name after a stale removal.
        if std::fs::symlink_metadata(&self.inner.sock_path)
            .is_ok_and(|m| m.ino() == self.inner.sock_ino)
        {
            let _ = std::fs::remove_file(&self.inner.sock_path);
        }
    }
}

impl Drop for HostTransport {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Make sure `<name>.sock` is ours to bind: absent, or stale (refuses connections).
fn claim_name(sock_path: &Path, name: &str, timeout: Duration) -> Result<(), LinkError> {
    match std::fs::symlink_metadata(sock_path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e.into()),
        Ok(_) => {}
    }
    if probe_live(sock_path, timeout)? {
        return Err(LinkError::NameTaken(name.to_owned()));
    }
    match std::fs::remove_file(sock_path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e.into()),
        _ => Ok(()),
    }
}

/// Bind and listen under a name of our own in `dir`, then hard-link the socket to
/// `<name>.sock` and drop the first name. A socket found under `<name>.sock` is therefore always
/// listening: one caught between `bind` and `listen` (which refuses connections) would look
/// stale to a graph starting at the same moment, and be removed under us. The link fails if the
/// name was taken meanwhile, as a bind would.
fn bind_listening(dir: &Path, sock_path: &Path, name: &str) -> Result<UnixListener, LinkError> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    // Not `*.sock`, so never scanned; short, whatever the node name's length (sun_path is
    // 108 bytes).
    let tmp = dir.join(format!(
        ".{}-{}.bind",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    // Only a dead process of our pid can have left this name.
    let _ = std::fs::remove_file(&tmp);
    let listener = UnixListener::bind(&tmp)?;
    let linked = std::fs::hard_link(&tmp, sock_path);
    let _ = std::fs::remove_file(&tmp);
    match linked {
        Ok(()) => Ok(listener),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            Err(LinkError::NameTaken(name.to_owned()))
        }
        Err(e) => Err(e.into()),
    }
}

/// Whether a live listener is behind `path`. Refused means dead: a graph publishes its socket
/// only once it listens (`bind_listening`). A listener whose queue stays full is alive
/// (stopped or busy), not stale.
fn probe_live(path: &Path, timeout: Duration) -> Result<bool, LinkError> {
    match connect_bounded(path, timeout) {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => Ok(false),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// `connect` bounded by `timeout`. A Unix-socket connect waits (without limit, by default) while
/// the listener's queue is full, which is where a graph that stopped accepting (SIGSTOP, a
/// debugger, a deadlock) ends up once others have kept connecting to it; the socket's send
/// timeout bounds that wait, and it then fails with `WouldBlock`.
fn connect_bounded(path: &Path, timeout: Duration) -> io::Result<UnixStream> {
    use nix::sys::socket::{connect, setsockopt, socket, sockopt, AddressFamily, SockFlag};
    use nix::sys::socket::{SockType, UnixAddr};
    let fd = socket(
        AddressFamily::Unix,
        SockType::Stream,
        SockFlag::SOCK_CLOEXEC,
        None,
    )?;
    // A zero timeval would mean no timeout at all.
    let us = timeout.as_micros().clamp(1, i64::MAX as u128) as i64;
    setsockopt(&fd, sockopt::SendTimeout, &TimeVal::microseconds(us))?;
    connect(fd.as_raw_fd(), &UnixAddr::new(path)?)?;
    Ok(UnixStream::from(fd))
}

fn peer_identity(stream: &UnixStream, name: String) -> io::Result<PeerIdentity> {
    let c = getsockopt(stream, PeerCredentials).map_err(io::Error::from)?;
    Ok(PeerIdentity {
        name,
        uid: c.uid(),
        gid: c.gid(),
        pid: c.pid() as u32,
        remote: None,
    })
}

impl Inner {
    /// Names of the other sockets in the directory.
    fn scan(&self) -> Vec<String> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut names: Vec<String> = entries
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                e.file_name()
                    .to_str()
                    .and_then(|n| n.strip_suffix(".sock"))
                    .map(str::to_owned)
            })
            .filter(|n| n != &self.name && valid_node_name(n))
            .collect();
        names.sort();
        names
    }

    /// Connect to `peer` (registered in `pending` by the caller) and bring the link up; a
    /// refusal (the peer holds a link to us that is about to be found dead, or is itself
    /// connecting) is retried a few times.
    fn connect_to(self: &Arc<Self>, peer: &str) -> Dialed {
        let path = self.dir.join(format!("{peer}.sock"));
        let mut outcome = Dialed::Retry;
        for attempt in 0..10 {
            {
                let table = self.table.lock();
                if table.links.contains_key(peer) {
                    outcome = Dialed::Linked;
                    break;
                }
                if table.stopped {
                    outcome = Dialed::Gone;
                    break;
                }
            }
            let stream = match connect_bounded(&path, self.cfg.handshake_timeout) {
                Ok(s) => s,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    outcome = Dialed::Gone;
                    break;
                }
                Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
                    if let Ok(false) = probe_live(&path, self.cfg.handshake_timeout) {
                        let _ = std::fs::remove_file(&path);
                        outcome = Dialed::Gone;
                    }
                    break;
                }
                // The queue stayed full (a stopped or very busy graph), or no descriptor.
                Err(_) => break,
            };
            match self.handshake_out(stream, peer) {
                Ok(()) => {
                    outcome = Dialed::Linked;
                    break;
                }
                Err(Some(_refused)) if attempt < 9 => {
                    std::thread::sleep(Duration::from_millis(100))
                }
                Err(_) => break,
            }
        }
        self.table.lock().pending.remove(peer);
        outcome
    }

    /// Try `peer` again after the backoff for `failed` attempts, from the redial thread (made
    /// now if none runs).
    fn redial(self: &Arc<Self>, peer: &str, failed: u32) {
        if !self.redial.schedule(peer, failed) {
            return;
        }
        let inner = self.clone();
        let work = move || {
            while let Some((peer, failed)) = inner.redial.next() {
                {
                    let mut table = inner.table.lock();
                    if table.stopped || table.links.contains_key(&peer) {
                        continue;
                    }
                    // Seen by the tie-break, as the connections made at start are.
                    table.pending.insert(peer.clone());
                }
                if inner.connect_to(&peer) == Dialed::Retry {
                    inner.redial.schedule(&peer, failed + 1);
                }
            }
        };
        if std::thread::Builder::new()
            .name("tracer-redial".into())
            .spawn(work)
            .is_err()
        {
            self.redial.thread_failed();
        }
    }

    /// Initiator side. `Err(Some(reason))`: the peer refused; `Err(None)`: it failed.
    fn handshake_out(
        self: &Arc<Self>,
        stream: UnixStream,
        peer: &str,
    ) -> Result<(), Option<String>> {
        let _ = stream.set_write_timeout(Some(self.cfg.handshake_timeout));
        write_frame(&stream, &hello(&self.name, self.cfg.accept_shm)).map_err(|_| None)?;
        let (h, dec, left) = match read_hello(&stream, self.cfg.handshake_timeout) {
            Ok(HelloOutcome::Hello(h, dec, left)) => (h, dec, left),
            Ok(HelloOutcome::Refused(why)) => return Err(Some(why)),
            Err(_) => return Err(None),
        };
        if h.node != peer {
            refuse(
                &stream,
                ErrorCode::Malformed,
                "HELLO names a node other than the socket's",
            );
            return Err(None);
        }
        let id = peer_identity(&stream, h.node.clone()).map_err(|_| None)?;
        let (up_tx, up_rx) = mpsc::sync_channel(1);
        {
            let mut table = self.table.lock();
            if table.stopped || table.links.contains_key(peer) {
                // The tie-break makes the second case unreachable; keep the link that exists.
                drop(table);
                let _ = stream.shutdown(std::net::Shutdown::Both);
                return Ok(());
            }
            self.install(&mut table, stream, id, &h, (dec, left), Some(up_tx))
                .map_err(|_| None)?;
        }
        // `on_up` runs on a worker; the caller (`start_with`) promises it has
        // run, so that the peer is mounted when the transport's start returns. Bounded: a
        // handler that hangs in `on_up` costs one handshake timeout.
        let _ = up_rx.recv_timeout(self.cfg.handshake_timeout);
        Ok(())
    }

    pub(crate) fn is_stopped(&self) -> bool {
        self.table.lock().stopped
    }

    /// Acceptor side, on the event loop once the connection's HELLO is in: refuse, or answer
    /// and install the link.
    pub(crate) fn accept_hello(
        self: &Arc<Self>,
        stream: UnixStream,
        h: super::unix::PeerHello,
        dec: crate::wire::FrameDecoder,
        left: super::unix::Leftover,
    ) {
        let _ = stream.set_write_timeout(Some(self.cfg.handshake_timeout));
        if !valid_node_name(&h.node) || h.node == self.name {
            refuse(
                &stream,
                ErrorCode::PermissionDenied,
                "invalid or clashing node name",
            );
            return;
        }
        let Ok(id) = peer_identity(&stream, h.node.clone()) else {
            return;
        };
        let mut table = self.table.lock();
        if table.stopped {
            return;
        }
        if table.links.contains_key(&h.node) {
            drop(table);
            refuse(
                &stream,
                ErrorCode::Internal,
                "duplicate link: a link to you is already up",
            );
            return;
        }
        if table.pending.contains(&h.node) && self.name.as_str() < h.node.as_str() {
            drop(table);
            refuse(
                &stream,
                ErrorCode::Internal,
                "duplicate link: my connection to you wins (smaller name)",
            );
            return;
        }
        // Reply while holding the table so no second connection from the peer slips in.
        if write_frame(&stream, &hello(&self.name, self.cfg.accept_shm)).is_err() {
            return;
        }
        let _ = self.install(&mut table, stream, id, &h, (dec, left), None);
    }

    fn install(
        self: &Arc<Self>,
        table: &mut Table,
        stream: UnixStream,
        id: PeerIdentity,
        hello: &super::unix::PeerHello,
        // What the handshake read past the HELLO: the decoder's state and the bytes after.
        (dec, left): (crate::wire::FrameDecoder, super::unix::Leftover),
        // Told once the link's `on_up` has returned.
        up: Option<mpsc::SyncSender<()>>,
    ) -> io::Result<()> {
        stream.set_write_timeout(Some(self.cfg.write_timeout))?;
        stream.set_read_timeout(None)?;
        let name = id.name.clone();
        // References only to a peer that maps them and is of our own uid: a segment holds
        // samples of every topic of this process, and another user may be granted only some.
        let shm = super::unix::ShmSend {
            enabled: hello.shm && id.uid == nix::unistd::geteuid().as_raw(),
            max_out: self.cfg.shm_refs_per_link,
        };
        let link = Arc::new(UnixLink::new(
            id,
            stream,
            hello.max_frame,
            Instant::now(),
            shm,
        ));
        table.links.insert(name, link.clone());
        table.live += 1;
        let weak = Arc::downgrade(self);
        let done = weak.clone();
        super::unix_rx::add_link(NewLink {
            link,
            dec,
            left,
            handler: self.handler.clone(),
            ping: self.cfg.ping_interval,
            dead_after: self.cfg.dead_after,
            hooks: Hooks {
                after_up: Some(Box::new(move || {
                    if let Some(up) = up {
                        let _ = up.send(());
                    }
                })),
                on_exit: Some(Box::new(move |l| {
                    if let Some(inner) = weak.upgrade() {
                        let mut t = inner.table.lock();
                        let peer = &l.peer().name;
                        if t.links.get(peer).is_some_and(|x| Arc::ptr_eq(x, l)) {
                            t.links.remove(peer);
                        }
                        // The peer may live on (a liveness check closed the link, on either
                        // side): link again while its socket is live. A peer that exited has
                        // removed its socket, or left a stale one, and is not tried again.
                        let again = !t.stopped && !t.links.contains_key(peer);
                        drop(t);
                        if again {
                            inner.redial(peer, 0);
                        }
                    }
                })),
                on_done: Some(Box::new(move || {
                    if let Some(inner) = done.upgrade() {
                        inner.table.lock().live -= 1;
                        inner.gone.notify_all();
                    }
                })),
            },
        });
        Ok(())
    }
}
