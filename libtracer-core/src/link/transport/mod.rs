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
//! Threads: none of its own once started, but for the one redial thread while a peer is due.
//! The listening socket, the incoming handshakes, the reading of every link and the liveness
//! check run on the process's one event loop (`unix_loop.rs`), the handler callbacks on its
//! few workers (`dispatch.rs`), whatever the number of peers. Only `start` connects to the
//! graphs already there from a few threads of its own (at most `CONNECTORS`), gone when it
//! returns.
//!
//! Here: the timing, the table of links, and the transport's start and shutdown. The socket
//! file in the directory is `socket.rs`'s, the connections to other graphs and their redial
//! `dial.rs`'s, the HELLO exchange on either side and the installing of a link `handshake.rs`'s.

mod dial;
mod handshake;
mod socket;

use std::collections::{HashMap, HashSet};
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

use super::abstract_names::{self, HostScope};
use super::redial::Redial;
use super::rendezvous::prepare_dir;
use super::unix::UnixLink;
use super::unix_loop::{self, Source};
use super::{dispatch, valid_node_name, Link, LinkError, LinkHandler};
use dial::Dialed;
use socket::{bind_listening, claim_name};

/// Threads `start` connects from at most (each handshake is bounded by the handshake timeout,
/// so this many silent peers cost one timeout, not one each).
const CONNECTORS: usize = 8;
/// How long a shutdown waits, over all its links, for room to write what they gathered: a
/// peer that keeps reading takes it well within, one that reads nothing is not waited for
/// longer (a Unix link takes a peer silent for 0.9 s for hung anyway, docs/wire.md "Liveness").
const DRAIN_AT_SHUTDOWN: Duration = Duration::from_millis(500);

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
    /// Also listen, and look for peers, in this scope of the abstract namespace, where graphs
    /// of every mount namespace (containers) and user of this network namespace meet
    /// (`abstract_names.rs`, docs/host.md). `None`: the directory only.
    pub scope: Option<HostScope>,
    /// Which local users' graphs this one links to.
    pub users: HostUsers,
}

/// Which users of this host a graph links to, by the kernel's credentials of the peer's socket.
/// Rights are the ACL's to grant (`Principal::Host`); this decides whether a link forms at all.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HostUsers {
    /// Any user's (LOCALHOST means this host, as with DDS).
    #[default]
    All,
    /// Only graphs of our own uid (`RMW_TRACER_HOST_USERS=self`).
    Own,
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
            scope: None,
            users: HostUsers::All,
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
    /// Our name in `cfg.scope`, when we listen there.
    abstract_name: Option<String>,
    handler: Arc<dyn LinkHandler>,
    pub(crate) cfg: TransportConfig,
    table: Mutex<Table>,
    /// Told when `live` falls.
    gone: Condvar,
    redial: Redial,
}

impl Inner {
    pub(crate) fn is_stopped(&self) -> bool {
        self.table.lock().stopped
    }
}

/// The Unix-socket transport of one graph. Dropping it (or `shutdown`) closes every link,
/// waits for their `on_down`, and removes its socket.
pub struct HostTransport {
    inner: Arc<Inner>,
    /// The listening socket (a duplicate of the event loop's descriptor): `shutdown(2)` on it
    /// makes the loop's `accept` fail, and the loop drops it; that needs neither the socket
    /// file nor the directory.
    listener: UnixListener,
    /// The same for the abstract listener, if any.
    abstract_listener: Option<UnixListener>,
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
        let remove_ours = |e: LinkError| {
            let _ = std::fs::remove_file(&sock_path);
            e
        };
        let abstract_name = cfg.scope.as_ref().and_then(|s| s.listener(local_name));
        let abstract_listener = match &abstract_name {
            Some(n) => Some(abstract_names::bind_listener(n, local_name).map_err(remove_ours)?),
            None => None,
        };
        let abstract_wake = match &abstract_listener {
            Some(l) => Some(l.try_clone().map_err(|e| remove_ours(e.into()))?),
            None => None,
        };
        unix_loop::start().map_err(|e| remove_ours(e.into()))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| remove_ours(e.into()))?;
        if let Some(l) = &abstract_listener {
            l.set_nonblocking(true).map_err(|e| remove_ours(e.into()))?;
        }
        let inner = Arc::new(Inner {
            dir: dir.to_owned(),
            name: local_name.to_owned(),
            sock_path,
            sock_ino,
            abstract_name,
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
            abstract_listener: abstract_wake,
        };
        // On an error below, dropping `t` shuts down what was started and removes the socket.
        for listener in std::iter::once(listener).chain(abstract_listener) {
            unix_loop::add(Source::Listener {
                listener,
                owner: Arc::downgrade(&inner),
            });
        }
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

    /// Our listening name in the abstract namespace (without its leading NUL), if we listen
    /// there.
    pub fn abstract_name(&self) -> Option<&str> {
        self.inner.abstract_name.as_deref()
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
        for l in std::iter::once(&self.listener).chain(&self.abstract_listener) {
            let _ = nix::sys::socket::shutdown(l.as_raw_fd(), nix::sys::socket::Shutdown::Both);
        }
        // What the links gathered goes out first (`UnixLink::drain_gathered`), within one
        // bound for all of them; never from the event loop, which must not wait.
        if !super::unix_loop::on_loop() {
            let until = std::time::Instant::now() + DRAIN_AT_SHUTDOWN;
            for l in &links {
                l.drain_gathered(until);
            }
        }
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
