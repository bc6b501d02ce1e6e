//! The QUIC engine without a runtime (docs/network.md section 4a): one UDP socket
//! (`quinn-udp`: GSO, GRO, ECN) and one `quinn_proto::Endpoint` with its connections, driven by
//! whoever uses them. A thread that writes to a connection sends the packets itself
//! (`Conn::lock`, `conn.rs`); the process's one event loop, the links' (`driver.rs`), reads the
//! sockets and fires the timers (`clock.rs`). The engine is quinn's protocol state machine; what is ours is
//! only who drives it, and when.
//!
//! Locks: a connection's, then the endpoint's, then the engine's table, never the other way:
//! the loop lets go of the endpoint before it takes a connection.

mod clock;
mod conn;
mod driver;
mod stage;
mod udp;

pub(super) use udp::{datagrams, gso_segments, send_transmit, Sent, RECEIPT};

#[cfg(test)]
pub(crate) mod test_pair;
#[cfg(test)]
mod tests;

use std::collections::{HashMap, HashSet};
use std::io;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use parking_lot::Mutex;
use quinn_proto::{
    ClientConfig, ConnectionHandle, DatagramEvent, Endpoint, EndpointConfig, Incoming, ServerConfig,
};

pub(crate) use conn::{Conn, Watcher};
pub(crate) use driver::on_loop;
use quinn_udp::RecvMeta;
pub(crate) use stage::Staged;
use udp::{Udp, RECEIPTS_PER_CALL};

/// Receipts one socket gets per turn of the loop before the other sources get theirs.
const RECEIPTS_PER_TURN: usize = 64;

/// What a connection's packets go through: shared by the engine and its connections (which
/// send from the caller's thread).
pub(super) struct Wire {
    udp: Udp,
    endpoint: Mutex<Endpoint>,
    clock: Arc<clock::Clock>,
    /// Connections whose packets wait for room in the socket's buffer, and whether the loop
    /// waits for that room.
    stalled: Mutex<Stalled>,
    /// The socket's token in the loop (`driver::add`), once it is there; taken out of the loop
    /// by the engine's drop.
    token: OnceLock<mio::Token>,
}

#[derive(Default)]
struct Stalled {
    ids: HashSet<u64>,
    /// The socket is in the loop as writable too.
    watched: bool,
}

impl Wire {
    /// `id`'s packets wait for room: the loop waits for it (if it did not already).
    fn stalled(&self, id: u64) {
        let mut s = self.stalled.lock();
        s.ids.insert(id);
        if !s.watched {
            s.watched = true;
            self.watch_room(true);
        }
    }

    /// The loop waits on the socket for room too (`on`), or for datagrams alone. Only from a
    /// stall to the first room nobody waited for (`EngineShared::writable`): a socket always
    /// waited for as writable brings an event each time the kernel frees a sent buffer (an
    /// edge per send: `sock_def_write_space`), which woke the loop thread once per round trip
    /// for nothing. Called under `stalled`'s lock, so the last word is the state's. An interest
    /// that holds at once brings its event at once, so room made between the full send and
    /// this call is not missed.
    fn watch_room(&self, on: bool) {
        let Some(&t) = self.token.get() else { return };
        let interest = if on {
            mio::Interest::READABLE | mio::Interest::WRITABLE
        } else {
            mio::Interest::READABLE
        };
        // It fails only for a descriptor that is not in the loop, which this one is until the
        // engine goes; were it to, the stalled packets would go with the connection's next
        // flush instead (a send, an ACK, a timer).
        let _ = crate::link::unix_loop::modify_foreign(t, self.udp.socket().as_raw_fd(), interest);
    }
}

/// Who takes a connection the engine accepted; `None` refuses it.
pub(crate) type OnAccept = Box<dyn Fn(&Arc<Conn>) -> Option<Arc<dyn Watcher>> + Send + Sync>;

pub(super) struct EngineShared {
    wire: Arc<Wire>,
    conns: Mutex<HashMap<ConnectionHandle, Arc<Conn>>>,
    server: Option<Arc<ServerConfig>>,
    on_accept: OnAccept,
    max_conns: usize,
}

/// One endpoint on one socket, driven by the links' event loop. Dropping it closes every
/// connection (a CONNECTION_CLOSE sent at once) and takes its socket out of the loop.
pub(crate) struct Engine {
    shared: Arc<EngineShared>,
}

impl Engine {
    /// An engine bound at `addr`; with `server`, it accepts up to `max_conns` connections (each
    /// given to `on_accept`), further ones refused.
    pub(crate) fn bind(
        addr: SocketAddr,
        server: Option<ServerConfig>,
        max_conns: usize,
        on_accept: OnAccept,
    ) -> io::Result<Engine> {
        Engine::on(Udp::bind(addr)?, server, max_conns, on_accept)
    }

    /// [`Engine::bind`] on a socket bound already.
    pub(crate) fn on_socket(
        sock: std::net::UdpSocket,
        server: Option<ServerConfig>,
        max_conns: usize,
        on_accept: OnAccept,
    ) -> io::Result<Engine> {
        Engine::on(Udp::on(sock)?, server, max_conns, on_accept)
    }

    fn on(
        udp: Udp,
        server: Option<ServerConfig>,
        max_conns: usize,
        on_accept: OnAccept,
    ) -> io::Result<Engine> {
        let clock = driver::clock()?;
        let server = server.map(Arc::new);
        let endpoint = Endpoint::new(
            Arc::new(EndpointConfig::default()),
            server.clone(),
            true,
            None,
        );
        let shared = Arc::new(EngineShared {
            wire: Arc::new(Wire {
                udp,
                endpoint: Mutex::new(endpoint),
                clock,
                stalled: Mutex::default(),
                token: OnceLock::new(),
            }),
            conns: Mutex::default(),
            server,
            on_accept,
            max_conns,
        });
        let _ = shared.wire.token.set(driver::add(&shared)?);
        Ok(Engine { shared })
    }

    /// The address of the engine's socket (the links' port is the one the directory lists).
    pub(crate) fn local_addr(&self) -> io::Result<SocketAddr> {
        self.shared.wire.udp.local_addr()
    }

    /// Connections the engine has, in any state until drained.
    pub(crate) fn connections(&self) -> usize {
        self.shared.conns.lock().len()
    }

    /// Start a connection to `addr`; `watcher` takes its progress from the first packet on.
    pub(crate) fn connect(
        &self,
        cfg: ClientConfig,
        addr: SocketAddr,
        server_name: &str,
        watcher: Arc<dyn Watcher>,
    ) -> Result<Arc<Conn>, String> {
        let addr = self.shared.wire.udp.destination(addr)?;
        let (handle, conn) = self
            .shared
            .wire
            .endpoint
            .lock()
            .connect(Instant::now(), cfg, addr, server_name)
            .map_err(|e| e.to_string())?;
        let c = self.shared.adopt(handle, conn);
        c.watch(watcher);
        // The Initial goes out now, from this thread.
        c.lock().flush();
        Ok(c)
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        let conns: Vec<Arc<Conn>> = self.shared.conns.lock().values().cloned().collect();
        for c in conns {
            let mut g = c.lock();
            g.close(
                Instant::now(),
                0u32.into(),
                bytes::Bytes::from_static(b"closed"),
            );
            // Now, not corked: the loop will not see this engine again.
            g.flush();
            drop(g);
            c.unwatch();
        }
        if let Some(&t) = self.shared.wire.token.get() {
            driver::remove(&self.shared, t);
        }
    }
}

impl EngineShared {
    fn adopt(
        self: &Arc<Self>,
        handle: ConnectionHandle,
        conn: quinn_proto::Connection,
    ) -> Arc<Conn> {
        let c = Arc::new(Conn::new(
            handle,
            conn,
            self.wire.clone(),
            Arc::downgrade(self),
        ));
        self.conns.lock().insert(handle, c.clone());
        driver::track(&c);
        c
    }

    /// A drained connection leaves the table (and the loop's), if its entry is still its own.
    /// This runs at every let-go of a drained connection (`ConnGuard`'s drop), and its owner
    /// may lock it long after it drained (its link: closed again, woken, asked its address);
    /// the endpoint freed its handle when it drained and gives it to the next connection
    /// accepted or dialled. That connection's entry must stay, or every datagram for it is
    /// dropped here while it still sends: a link up on one end only (docs/network.md section
    /// 7, "A link only one end uses").
    fn forget(&self, c: &Conn) {
        {
            let mut conns = self.conns.lock();
            if conns.get(&c.handle).is_some_and(|x| x.id == c.id) {
                conns.remove(&c.handle);
            }
        }
        driver::untrack(c.id);
        self.wire.clock.set(c.id, None);
    }

    /// The loop: read the socket until it would block or the turn's share is used; true when
    /// there may be more.
    fn receive(
        self: &Arc<Self>,
        bufs: &mut [Vec<u8>; RECEIPTS_PER_CALL],
        out: &mut Vec<u8>,
    ) -> bool {
        let mut touched: Vec<Arc<Conn>> = Vec::new();
        let mut metas = [RecvMeta::default(); RECEIPTS_PER_CALL];
        let mut more = true;
        let mut taken = 0;
        while taken < RECEIPTS_PER_TURN {
            let n = match self.wire.udp.recv(bufs, &mut metas) {
                Ok(n) => n,
                // An error the socket reports once (an ICMP error of an earlier send), taken
                // by this call: datagrams may wait behind it, and the edge would not come again
                // for them, so read on.
                Err(_) => {
                    taken += 1;
                    continue;
                }
            };
            taken += n;
            let now = Instant::now();
            for (meta, buf) in metas.iter().zip(bufs.iter()).take(n) {
                self.handle_receipt(meta, buf, now, out, &mut touched);
            }
            // Fewer than asked for: the socket was empty (`RECEIPTS_PER_CALL`).
            if n < RECEIPTS_PER_CALL {
                more = false;
                break;
            }
        }
        // Progress once per connection per turn: one flush answers every packet of the turn.
        for c in touched {
            c.progress(false);
        }
        more
    }

    /// One receipt's datagrams, each on its own at the kernel's stride (GRO), to the endpoint:
    /// a connection's (noted in `touched`, once each), a new one, or a stateless answer.
    fn handle_receipt(
        self: &Arc<Self>,
        meta: &RecvMeta,
        buf: &[u8],
        now: Instant,
        out: &mut Vec<u8>,
        touched: &mut Vec<Arc<Conn>>,
    ) {
        let ecn = meta
            .ecn
            .and_then(|e| quinn_proto::EcnCodepoint::from_bits(e as u8));
        for data in udp::datagrams(buf, meta) {
            out.clear();
            let ev = self
                .wire
                .endpoint
                .lock()
                .handle(now, meta.addr, meta.dst_ip, ecn, data, out);
            match ev {
                Some(DatagramEvent::ConnectionEvent(h, ev)) => {
                    let c = self.conns.lock().get(&h).cloned();
                    if let Some(c) = c {
                        c.deliver(ev);
                        if !touched.iter().any(|t| Arc::ptr_eq(t, &c)) {
                            touched.push(c);
                        }
                    }
                }
                Some(DatagramEvent::NewConnection(incoming)) => {
                    if let Some(c) = self.accept(incoming, now, out) {
                        touched.push(c);
                    }
                }
                Some(DatagramEvent::Response(t)) => {
                    let _ = self.wire.udp.send(out, &t);
                }
                None => {}
            }
        }
    }

    fn accept(
        self: &Arc<Self>,
        incoming: Incoming,
        now: Instant,
        out: &mut Vec<u8>,
    ) -> Option<Arc<Conn>> {
        let full = self.conns.lock().len() >= self.max_conns;
        let mut ep = self.wire.endpoint.lock();
        if full || self.server.is_none() {
            let t = ep.refuse(incoming, out);
            drop(ep);
            let _ = self.wire.udp.send(out, &t);
            return None;
        }
        match ep.accept(incoming, now, out, self.server.clone()) {
            Ok((handle, conn)) => {
                drop(ep);
                let c = self.adopt(handle, conn);
                match (self.on_accept)(&c) {
                    Some(w) => c.watch(w),
                    None => c
                        .lock()
                        .close(now, 0u32.into(), bytes::Bytes::from_static(b"refused")),
                }
                Some(c)
            }
            Err(e) => {
                drop(ep);
                if let Some(t) = e.response {
                    let _ = self.wire.udp.send(out, &t);
                }
                None
            }
        }
    }

    /// The loop: the socket has room again; send what waited for it (`Conn::unstall`: not by
    /// waiting for a connection a writer holds).
    fn writable(&self) {
        let ids: Vec<u64> = {
            let mut s = self.wire.stalled.lock();
            // Room with nothing waiting for it: a burst is over, the loop waits for datagrams
            // alone again. Not as soon as the stalled packets are out: a burst fills the
            // socket again and again, and each stall would cost two `epoll_ctl` more.
            if s.ids.is_empty() {
                if s.watched {
                    s.watched = false;
                    self.wire.watch_room(false);
                }
                return;
            }
            s.ids.drain().collect()
        };
        let conns: Vec<Arc<Conn>> = {
            let t = self.conns.lock();
            t.values()
                .filter(|c| ids.contains(&c.id))
                .cloned()
                .collect()
        };
        for c in conns {
            c.unstall();
        }
    }
}
