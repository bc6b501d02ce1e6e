//! The host directory's question and answer over QUIC (stage 3 of docs/network.md section 4a): the
//! server on an engine of its own at the directory port, and the clients' kept connections
//! on the links' engine (no socket of their own), with the exchange and the bounds of
//! `directory.rs`: one question per bidirectional stream (`members\n`, finished), the answer
//! one line per member, finished; the handshake and each answer within the handshake timeout;
//! a client that asks nothing for that plus two poll intervals is closed; at most
//! `MAX_CLIENTS` connections.
//!
//! A connection's watcher runs on the engine loop and must not block, so the server reads the
//! members (files and `/proc/net/unix`) on the chores' thread (`chores.rs`) and writes the
//! answer from there; a client's futures (`dial`, `ask`, `closed`) run there too, woken by
//! their connection's watcher.

use std::net::SocketAddr;
use std::sync::{Arc, OnceLock, Weak};
use std::task::{Poll, Waker};
use std::time::Instant;

use bytes::{Buf, Bytes};
use parking_lot::Mutex;
use quinn_proto::{Connection, ConnectionError, Dir, Event, ReadError, StreamId};

use super::chores;
use super::directory::{members, MAX_ANSWER, REQUEST};
use super::engine::{Conn, Engine, Watcher};
use super::{tls, Inner};

/// The directory's server: an engine at the directory port whose connections are answered.
pub(super) fn serve(
    inner: &Arc<Inner>,
    sock: std::net::UdpSocket,
    max: usize,
) -> Result<Engine, String> {
    let sc = tls::server_config(&inner.identity, tls::ALPN_DIR, inner.dir_transport.clone())?;
    let me = Arc::downgrade(inner);
    let on_accept = Box::new(move |c: &Arc<Conn>| -> Option<Arc<dyn Watcher>> {
        let inner = me.upgrade()?;
        let from = super::peer_address(c.lock().remote_address());
        let s = Arc::new_cyclic(|me| Serving {
            me: me.clone(),
            inner: Arc::downgrade(&inner),
            from,
            conn: OnceLock::new(),
            st: Mutex::new(ServeState {
                connected: false,
                begun: Instant::now(),
                last: Instant::now(),
                req: None,
                answering: None,
            }),
        });
        let _ = s.conn.set(Arc::downgrade(c));
        Some(s)
    });
    Engine::on_socket(sock, Some(sc), max, on_accept).map_err(|e| e.to_string())
}

/// One client's connection to our directory.
struct Serving {
    /// Itself, for the chore that writes an answer.
    me: Weak<Serving>,
    inner: Weak<Inner>,
    from: SocketAddr,
    conn: OnceLock<Weak<Conn>>,
    st: Mutex<ServeState>,
}

struct ServeState {
    connected: bool,
    begun: Instant,
    /// The last answer (or the handshake): the idle bound counts from it.
    last: Instant,
    /// A question being read: its stream, what came so far, and when it was opened (the
    /// question and its answer are bounded together).
    req: Option<(StreamId, Vec<u8>, Instant)>,
    /// An answer being written: its stream, what is left of it, and when it was asked.
    answering: Option<(StreamId, Option<Bytes>, Instant)>,
}

impl Serving {
    fn close(conn: &mut Connection, code: u32, why: &'static [u8]) {
        conn.close(Instant::now(), code.into(), Bytes::from_static(why));
    }

    /// Write what the stream takes of the answer; finish it when all is written.
    fn pump(conn: &mut Connection, st: &mut ServeState) {
        let Some((id, Some(rest), _)) = st.answering.as_mut() else {
            return;
        };
        let id = *id;
        while !rest.is_empty() {
            match conn.send_stream(id).write(rest) {
                Ok(n) => rest.advance(n),
                Err(quinn_proto::WriteError::Blocked) => return,
                Err(_) => {
                    st.answering = None;
                    return Self::close(conn, 0, b"directory answer failed");
                }
            }
        }
        let _ = conn.send_stream(id).finish();
        st.answering = None;
        st.last = Instant::now();
    }

    /// The chores' thread: the members now, written as the answer to `id`.
    fn answer(self: Arc<Self>, c: Arc<Conn>, id: StreamId) {
        let Some(inner) = self.inner.upgrade() else {
            return;
        };
        let mut text = String::new();
        for (name, port) in members(inner.dir.as_path(), inner.cfg.host_scope.as_ref()) {
            text.push_str(&format!("{name} {port}\n"));
        }
        let mut g = c.lock();
        let mut st = self.st.lock();
        if let Some((at, rest @ None, _)) = st.answering.as_mut() {
            if *at == id {
                *rest = Some(Bytes::from(text));
                Self::pump(&mut g, &mut st);
            }
        }
        drop(st);
        drop(g);
    }
}

impl Watcher for Serving {
    fn progress(&self, conn: &mut Connection) {
        let Some(inner) = self.inner.upgrade() else {
            return Self::close(conn, 0, b"shutdown");
        };
        let Some(c) = self.conn.get().and_then(Weak::upgrade) else {
            return;
        };
        let mut st = self.st.lock();
        let now = Instant::now();
        while let Some(ev) = conn.poll() {
            match ev {
                Event::Connected => {
                    st.connected = true;
                    st.last = now;
                }
                // With SROS2 on, most likely a peer of another CA or of none: logged once.
                Event::ConnectionLost { reason } if !st.connected => {
                    inner.auth_failed(self.from, &reason)
                }
                _ => {}
            }
        }
        if conn.is_closed() {
            return;
        }
        let hs = inner.cfg.handshake_timeout;
        if !st.connected {
            if now >= st.begun + hs {
                return Self::close(conn, 0, b"handshake timed out");
            }
            return c.wake_at(st.begun + hs);
        }
        if st.req.is_none() && st.answering.is_none() {
            if let Some(id) = conn.streams().accept(Dir::Bi) {
                st.req = Some((id, Vec::new(), now));
            }
        }
        if let Some((id, mut got, opened)) = st.req.take() {
            let mut ended = false;
            let mut bad = false;
            if let Ok(mut chunks) = conn.recv_stream(id).read(true) {
                loop {
                    match chunks.next(REQUEST.len() + 1) {
                        Ok(Some(ch)) => {
                            got.extend_from_slice(&ch.bytes);
                            if got.len() > REQUEST.len() {
                                bad = true;
                                break;
                            }
                        }
                        Ok(None) => {
                            ended = true;
                            break;
                        }
                        Err(ReadError::Blocked) => break,
                        Err(ReadError::Reset(_)) => {
                            bad = true;
                            break;
                        }
                    }
                }
                let _ = chunks.finalize();
            }
            if bad || (ended && got != REQUEST) {
                return Self::close(conn, 1, b"bad directory request");
            }
            if ended {
                st.answering = Some((id, None, opened));
                if let Some(serving) = self.me.upgrade() {
                    let owner = c.clone();
                    chores::spawn(async move { serving.answer(owner, id) });
                }
            } else {
                if now >= opened + hs {
                    return Self::close(conn, 0, b"too slow");
                }
                c.wake_at(opened + hs);
                st.req = Some((id, got, opened));
            }
        }
        Self::pump(conn, &mut st);
        if let Some(asked) = st.answering.as_ref().map(|a| a.2) {
            if now >= asked + hs {
                return Self::close(conn, 0, b"too slow");
            }
            c.wake_at(asked + hs);
        }
        let quiet = hs + inner.cfg.poll_interval * 2;
        if st.req.is_none() && st.answering.is_none() {
            if now >= st.last + quiet {
                return Self::close(conn, 0, b"idle");
            }
            c.wake_at(st.last + quiet);
        }
    }
}

/// A client's kept connection to a host's directory, on the links' engine. Dropping it closes
/// the connection (its keep-alives would otherwise hold it open for ever).
pub(crate) struct DirClient {
    conn: Arc<Conn>,
    w: Arc<ClientWatch>,
}

#[derive(Default)]
struct ClientWatch {
    st: Mutex<ClientState>,
}

/// The question in flight: its stream, the answer so far, and how it ended.
type Asking = (StreamId, Vec<u8>, Option<Result<Vec<u8>, String>>);

#[derive(Default)]
struct ClientState {
    connected: bool,
    lost: Option<ConnectionError>,
    closed: bool,
    asking: Option<Asking>,
    /// Whoever waits on this connection (a peer loop's round, its wait for the connection's
    /// end, a probe's attempts): all woken at every progress.
    wakers: Vec<Waker>,
}

impl ClientState {
    fn wait(&mut self, w: &Waker) {
        if !self.wakers.iter().any(|x| x.will_wake(w)) {
            self.wakers.push(w.clone());
        }
    }
}

impl Watcher for ClientWatch {
    fn progress(&self, conn: &mut Connection) {
        let mut st = self.st.lock();
        while let Some(ev) = conn.poll() {
            match ev {
                Event::Connected => st.connected = true,
                Event::ConnectionLost { reason } => st.lost = Some(reason),
                _ => {}
            }
        }
        st.closed = conn.is_closed();
        if let Some((id, got, done @ None)) = st.asking.as_mut() {
            if let Ok(mut chunks) = conn.recv_stream(*id).read(true) {
                loop {
                    match chunks.next(MAX_ANSWER + 1) {
                        Ok(Some(ch)) => {
                            got.extend_from_slice(&ch.bytes);
                            if got.len() > MAX_ANSWER {
                                *done = Some(Err(format!(
                                    "directory answer of more than {MAX_ANSWER} bytes"
                                )));
                                break;
                            }
                        }
                        Ok(None) => {
                            *done = Some(Ok(std::mem::take(got)));
                            break;
                        }
                        Err(ReadError::Blocked) => break,
                        Err(ReadError::Reset(code)) => {
                            *done = Some(Err(format!("directory answer: reset ({code})")));
                            break;
                        }
                    }
                }
                let _ = chunks.finalize();
            }
        }
        st.wakers.drain(..).for_each(Waker::wake);
    }
}

impl DirClient {
    /// A connection to the directory at `addr` from the links' engine, made within `bound`.
    pub(crate) async fn dial(
        inner: &Inner,
        addr: SocketAddr,
        bound: std::time::Duration,
    ) -> Result<DirClient, String> {
        let engine = inner
            .engine
            .lock()
            .clone()
            .ok_or_else(|| "the transport is shut down".to_owned())?;
        let w = Arc::new(ClientWatch::default());
        let conn = engine.connect(inner.dir_client.clone(), addr, tls::SERVER_NAME, w.clone())?;
        drop(engine);
        let client = DirClient { conn, w };
        let up = std::future::poll_fn(|cx| {
            let mut st = client.w.st.lock();
            if st.connected {
                return Poll::Ready(Ok(()));
            }
            if st.closed || st.lost.is_some() {
                let why = st
                    .lost
                    .as_ref()
                    .map_or_else(|| "closed".to_owned(), ToString::to_string);
                return Poll::Ready(Err(format!("{addr}: {why}")));
            }
            st.wait(cx.waker());
            Poll::Pending
        });
        match chores::timeout(bound, up).await {
            Ok(Ok(())) => Ok(client),
            Ok(Err(why)) => Err(why),
            Err(_) => Err(format!("{addr}: no answer from the host directory")),
        }
    }

    /// Ask the directory for its members (the caller bounds the wait).
    pub(crate) async fn ask(&self) -> Result<Vec<u8>, String> {
        // A stream as soon as the directory gives credit for one (one at a time).
        std::future::poll_fn(|cx| {
            let mut g = self.conn.lock();
            if g.is_closed() {
                return Poll::Ready(Err("directory connection closed".to_owned()));
            }
            let Some(id) = g.streams().open(Dir::Bi) else {
                self.w.st.lock().wait(cx.waker());
                return Poll::Pending;
            };
            let mut s = g.send_stream(id);
            match s.write(REQUEST) {
                Ok(n) if n == REQUEST.len() => {}
                _ => return Poll::Ready(Err("directory request not taken".to_owned())),
            }
            let _ = s.finish();
            self.w.st.lock().asking = Some((id, Vec::new(), None));
            Poll::Ready(Ok(()))
        })
        .await?;
        std::future::poll_fn(|cx| {
            let mut st = self.w.st.lock();
            if let Some((_, _, Some(_))) = st.asking {
                let (_, _, done) = st.asking.take().expect("checked");
                return Poll::Ready(done.expect("checked"));
            }
            if st.closed || st.lost.is_some() {
                return Poll::Ready(Err("directory answer: connection lost".to_owned()));
            }
            st.wait(cx.waker());
            Poll::Pending
        })
        .await
    }

    /// Whether the connection is over.
    pub(crate) fn is_closed(&self) -> bool {
        let st = self.w.st.lock();
        st.closed || st.lost.is_some()
    }

    /// Whether it ended by its idle timeout (the host did not answer).
    pub(crate) fn timed_out(&self) -> bool {
        matches!(self.w.st.lock().lost, Some(ConnectionError::TimedOut))
    }

    /// Resolves when the connection is over.
    pub(crate) async fn closed(&self) {
        std::future::poll_fn(|cx| {
            let mut st = self.w.st.lock();
            if st.closed || st.lost.is_some() {
                return Poll::Ready(());
            }
            st.wait(cx.waker());
            Poll::Pending
        })
        .await
    }

    pub(crate) fn close(&self, why: &'static [u8]) {
        self.conn
            .lock()
            .close(Instant::now(), 0u32.into(), Bytes::from_static(why));
    }
}

impl Drop for DirClient {
    fn drop(&mut self) {
        if !self.conn.lock().is_closed() {
            self.close(b"done");
        }
    }
}

#[cfg(test)]
#[path = "dir_exchange_tests.rs"]
mod tests;
