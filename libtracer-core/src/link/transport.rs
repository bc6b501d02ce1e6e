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
//! by the kernel). A keepalive thread sends PING on a link that has sent nothing for
//! `ping_interval`, and closes a link that has received nothing for `dead_after`, which finds a
//! hung (stopped, deadlocked) peer.

use std::collections::{HashMap, HashSet};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nix::sys::socket::{getsockopt, sockopt::PeerCredentials};
use nix::sys::time::{TimeVal, TimeValLike};
use parking_lot::{Condvar, Mutex};

use super::rendezvous::prepare_dir;
use super::unix::{hello, read_hello, refuse, run_reader, write_frame, HelloOutcome, UnixLink};
use super::{valid_node_name, Link, LinkError, LinkHandler, PeerIdentity};
use crate::wire::{ErrorCode, Frame};

/// Timing of a transport. The defaults find a hung peer within one second.
#[derive(Clone, Debug)]
pub struct TransportConfig {
    /// PING a link that has sent nothing for this long.
    pub ping_interval: Duration,
    /// Close a link that has received nothing for this long.
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
    readers: Vec<JoinHandle<()>>,
    stopped: bool,
}

struct Inner {
    dir: PathBuf,
    name: String,
    sock_path: PathBuf,
    sock_ino: u64,
    handler: Arc<dyn LinkHandler>,
    cfg: TransportConfig,
    table: Mutex<Table>,
    wake: Condvar,
    nonce: AtomicU64,
}

/// The Unix-socket transport of one graph. Dropping it (or `shutdown`) closes every link,
/// waits for their `on_down`, and removes its socket.
pub struct HostTransport {
    inner: Arc<Inner>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    /// The listening socket (a duplicate of the accept loop's descriptor): `shutdown(2)` on it
    /// wakes the blocked `accept`, which needs neither the socket file nor the directory.
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
        let inner = Arc::new(Inner {
            dir: dir.to_owned(),
            name: local_name.to_owned(),
            sock_path,
            sock_ino,
            handler,
            cfg,
            table: Mutex::new(Table::default()),
            wake: Condvar::new(),
            nonce: AtomicU64::new(1),
        });
        let peers = inner.scan();
        inner.table.lock().pending.extend(peers.iter().cloned());
        let t = HostTransport {
            inner: inner.clone(),
            threads: Mutex::new(Vec::new()),
            listener: wake_listener,
        };
        // On an error below, dropping `t` shuts down what was started and removes the socket.
        let weak = Arc::downgrade(&inner);
        t.spawn("tracer-accept", move || accept_loop(listener, weak))?;
        let weak = Arc::downgrade(&inner);
        t.spawn("tracer-keepalive", move || keepalive_loop(weak))?;
        // One thread per peer, so that peers slow to answer (each bounded by the handshake
        // timeout) cost one timeout in all, not one each.
        let mut connects = Vec::new();
        for peer in peers {
            let (i, p) = (inner.clone(), peer.clone());
            match std::thread::Builder::new()
                .name(format!("tracer-connect-{peer}"))
                .spawn(move || i.connect_to(&p))
            {
                Ok(h) => connects.push(h),
                // No thread to spare: connect from this one (slower, same outcome).
                Err(_) => inner.connect_to(&peer),
            }
        }
        for c in connects {
            let _ = c.join();
        }
        Ok(t)
    }

    fn spawn(&self, name: &str, f: impl FnOnce() + Send + 'static) -> io::Result<()> {
        let h = std::thread::Builder::new().name(name.to_owned()).spawn(f)?;
        self.threads.lock().push(h);
        Ok(())
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

    /// Close everything and remove the socket. Waits for every link's `on_down`, except that of
    /// a link whose reader thread is the caller. Idempotent.
    pub fn shutdown(&self) {
        let links: Vec<Arc<UnixLink>> = {
            let mut table = self.inner.table.lock();
            if table.stopped {
                return;
            }
            table.stopped = true;
            table.links.values().cloned().collect()
        };
        self.inner.wake.notify_all();
        // Wake the accept loop, which sees `stopped` and ends. Not by connecting to our socket
        // path: the directory may be gone, or the path another graph's by now. On Linux,
        // shutdown of a listening socket makes a blocked (or later) `accept` fail at once.
        let _ =
            nix::sys::socket::shutdown(self.listener.as_raw_fd(), nix::sys::socket::Shutdown::Both);
        for l in links {
            l.close();
        }
        let me = std::thread::current().id();
        let mut handles: Vec<JoinHandle<()>> = std::mem::take(&mut *self.threads.lock());
        handles.append(&mut std::mem::take(&mut self.inner.table.lock().readers));
        for h in handles {
            if h.thread().id() != me {
                let _ = h.join();
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

    /// Connect to `peer` and bring the link up; a refusal (the peer holds a link to us that is
    /// about to be found dead, or is itself connecting) is retried a few times.
    fn connect_to(self: &Arc<Self>, peer: &str) {
        let path = self.dir.join(format!("{peer}.sock"));
        for attempt in 0..10 {
            if self.table.lock().links.contains_key(peer) {
                break;
            }
            let stream = match connect_bounded(&path, self.cfg.handshake_timeout) {
                Ok(s) => s,
                Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
                    if let Ok(false) = probe_live(&path, self.cfg.handshake_timeout) {
                        let _ = std::fs::remove_file(&path);
                    }
                    break;
                }
                Err(_) => break,
            };
            match self.handshake_out(stream, peer) {
                Ok(()) => break,
                Err(Some(_refused)) if attempt < 9 => {
                    std::thread::sleep(Duration::from_millis(100))
                }
                Err(_) => break,
            }
        }
        self.table.lock().pending.remove(peer);
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
        // `on_up` runs on the link's reader thread; the caller (`start_with`) promises it has
        // run, so that the peer is mounted when the transport's start returns. Bounded: a
        // handler that hangs in `on_up` costs one handshake timeout.
        let _ = up_rx.recv_timeout(self.cfg.handshake_timeout);
        Ok(())
    }

    /// Acceptor side, on its own thread per connection.
    fn handshake_in(self: &Arc<Self>, stream: UnixStream) {
        let _ = stream.set_write_timeout(Some(self.cfg.handshake_timeout));
        let (h, dec, left) = match read_hello(&stream, self.cfg.handshake_timeout) {
            Ok(HelloOutcome::Hello(h, dec, left)) => (h, dec, left),
            _ => return,
        };
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
        // Told once the reader thread's `on_up` has returned.
        up: Option<mpsc::SyncSender<()>>,
    ) -> io::Result<()> {
        stream.set_write_timeout(Some(self.cfg.write_timeout))?;
        stream.set_read_timeout(None)?;
        let reader_stream = stream.try_clone()?;
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
        table.links.insert(name.clone(), link.clone());
        let handler = self.handler.clone();
        let weak = Arc::downgrade(self);
        let h = std::thread::Builder::new()
            .name(format!("tracer-link-{name}"))
            .spawn(move || {
                let after_up = move || {
                    if let Some(up) = up {
                        let _ = up.send(());
                    }
                };
                run_reader(
                    link,
                    reader_stream,
                    dec,
                    left,
                    handler,
                    after_up,
                    move |l| {
                        if let Some(inner) = weak.upgrade() {
                            let mut t = inner.table.lock();
                            if t.links
                                .get(&l.peer().name)
                                .is_some_and(|x| Arc::ptr_eq(x, l))
                            {
                                t.links.remove(&l.peer().name);
                            }
                        }
                    },
                )
            })?;
        table.readers.retain(|h| !h.is_finished());
        table.readers.push(h);
        Ok(())
    }
}

fn accept_loop(listener: UnixListener, inner: Weak<Inner>) {
    loop {
        let conn = listener.accept();
        let Some(inner) = inner.upgrade() else { return };
        if inner.table.lock().stopped {
            return;
        }
        match conn {
            Ok((stream, _)) => {
                let i = inner.clone();
                let _ = std::thread::Builder::new()
                    .name("tracer-hello".into())
                    .spawn(move || i.handshake_in(stream));
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            // Out of descriptors or memory: try again shortly rather than spin.
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

fn keepalive_loop(inner: Weak<Inner>) {
    loop {
        let Some(inner) = inner.upgrade() else { return };
        let tick = (inner.cfg.ping_interval / 2).max(Duration::from_millis(10));
        let links: Vec<Arc<UnixLink>> = {
            let mut table = inner.table.lock();
            if table.stopped {
                return;
            }
            inner.wake.wait_for(&mut table, tick);
            if table.stopped {
                return;
            }
            table.links.values().cloned().collect()
        };
        let dead_ms = inner.cfg.dead_after.as_millis() as u64;
        let ping_ms = inner.cfg.ping_interval.as_millis() as u64;
        for l in links {
            if l.peer_silent_for(dead_ms) {
                l.close();
            } else if l.ms_since_tx() >= ping_ms {
                l.try_send_liveness(&Frame::Ping {
                    nonce: inner.nonce.fetch_add(1, Ordering::Relaxed),
                });
            }
        }
    }
}
