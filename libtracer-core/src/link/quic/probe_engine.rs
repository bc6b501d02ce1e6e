//! [`ProbeMode::Engine`](super::probe::ProbeMode): the probe's ping-pong on the runtime-free
//! engine (`engine/`, docs/network.md section 4a), in the shape a link will have on it: the
//! thread that sends writes the stream and sends the packets itself, under the connection's
//! lock; the engine loop reads the socket and hands each whole message to the thread that
//! waits for it (one wake-up per receipt, as a subscription's waiting thread is woken). So its
//! figures are the floor of that design with the hand-off on receipt that a middleware keeps,
//! beside `inline` (no hand-off at all) and `thread` (quinn's, a hand-off both ways).

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use parking_lot::{Condvar, Mutex};
use quinn_proto::VarInt;
use quinn_proto::{ClientConfig, Connection, Dir, Event, ServerConfig, StreamEvent, StreamId};

use super::engine::{Conn, Engine, Staged, Watcher};
use super::probe::{answered, body_len, client_bind, echoed, Round, IDLE};

/// A whole connection round, as long as the peer is silent, before we give up.
const STALL: Duration = Duration::from_secs(10);

/// One end's stream, as the loop reads it.
#[derive(Default)]
struct Pipe {
    state: Mutex<PipeState>,
    changed: Condvar,
}

#[derive(Default)]
struct PipeState {
    connected: bool,
    lost: bool,
    /// The one bidirectional stream (the ping opens it, the echo accepts it).
    stream: Option<StreamId>,
    /// Bytes read, not yet whole messages.
    inbox: Vec<u8>,
    messages: VecDeque<Vec<u8>>,
    /// Times the stream took more after flow control held a write back.
    writable: u64,
}

impl Watcher for Pipe {
    fn progress(&self, conn: &mut Connection) {
        let mut s = self.state.lock();
        while let Some(ev) = conn.poll() {
            match ev {
                Event::Connected => s.connected = true,
                Event::ConnectionLost { .. } => s.lost = true,
                Event::Stream(StreamEvent::Opened { dir: Dir::Bi }) => {
                    if let Some(id) = conn.streams().accept(Dir::Bi) {
                        s.stream = Some(id);
                    }
                }
                Event::Stream(StreamEvent::Writable { .. }) => s.writable += 1,
                _ => {}
            }
        }
        if let Some(id) = s.stream {
            let mut rs = conn.recv_stream(id);
            if let Ok(mut chunks) = rs.read(true) {
                while let Ok(Some(c)) = chunks.next(usize::MAX) {
                    s.inbox.extend_from_slice(&c.bytes);
                }
                // Whether to send flow-control credit is decided by the flush that follows.
                let _ = chunks.finalize();
            };
        }
        // Whole messages out, then what is left moved to the front once: draining each message
        // from the front would move the rest every time (quadratic in a burst).
        let mut at = 0;
        while let Some(&prefix) = s.inbox[at..].first_chunk::<4>() {
            let Ok(n) = body_len(prefix) else {
                s.lost = true;
                break;
            };
            if s.inbox.len() - at < 4 + n {
                break;
            }
            let m = s.inbox[at..at + 4 + n].to_vec();
            s.messages.push_back(m);
            at += 4 + n;
        }
        s.inbox.drain(..at);
        self.changed.notify_all();
    }
}

impl Pipe {
    /// The next whole message, waiting up to `patience`; `None` if none came or the
    /// connection went.
    fn message(&self, patience: Duration) -> Option<Vec<u8>> {
        let deadline = Instant::now() + patience;
        let mut s = self.state.lock();
        loop {
            if let Some(m) = s.messages.pop_front() {
                return Some(m);
            }
            if s.lost || self.changed.wait_until(&mut s, deadline).timed_out() {
                return None;
            }
        }
    }

    /// Write all of `data` from this thread, waiting for credit while flow control holds it.
    fn write_all(&self, conn: &Conn, mut data: &[u8]) -> Result<(), String> {
        let id = self.state.lock().stream.ok_or("no stream")?;
        let mut last = Instant::now();
        while !data.is_empty() {
            let seen = self.state.lock().writable;
            let r = conn.lock().stage(id, data);
            match r {
                Staged::Took(n) if n > 0 => {
                    data = &data[n..];
                    last = Instant::now();
                }
                Staged::Took(_) => {
                    let mut s = self.state.lock();
                    while s.writable == seen && !s.lost {
                        if self.changed.wait_until(&mut s, last + STALL).timed_out() {
                            return Err("the stream took nothing for 10 s".into());
                        }
                    }
                    if s.lost {
                        return Err("connection lost".into());
                    }
                }
                Staged::Gone => return Err("the stream is gone".into()),
            }
        }
        Ok(())
    }
}

/// The engine echo at `addr`: each connection served by a thread of its own, which takes the
/// messages the loop hands it and writes the echo back itself; until nothing came for `IDLE`.
pub(super) fn echo(addr: SocketAddr, server: ServerConfig) -> Result<(), String> {
    let active = Arc::new(Mutex::new(Instant::now()));
    let seen = active.clone();
    let engine = Engine::bind(
        addr,
        Some(server),
        64,
        Box::new(move |conn| {
            let pipe = Arc::new(Pipe::default());
            let (conn, p, seen) = (conn.clone(), pipe.clone(), seen.clone());
            std::thread::spawn(move || loop {
                match p.message(Duration::from_secs(1)) {
                    Some(m) => {
                        *seen.lock() = Instant::now();
                        if echoed(&m) && p.write_all(&conn, &m).is_err() {
                            return;
                        }
                    }
                    None if p.state.lock().lost => return,
                    None => {}
                }
            });
            Some(pipe as Arc<dyn Watcher>)
        }),
    )
    .map_err(|e| e.to_string())?;
    while active.lock().elapsed() < IDLE || engine.connections() > 0 {
        std::thread::sleep(Duration::from_secs(1));
    }
    Ok(())
}

/// The engine ping: `warm` unmeasured rounds of `plan`, then `measured` timed ones.
pub(super) fn ping(
    addr: SocketAddr,
    client: ClientConfig,
    server_name: &str,
    plan: &Round,
    warm: usize,
    measured: usize,
) -> Result<Vec<Duration>, String> {
    let engine =
        Engine::bind(client_bind(addr), None, 1, Box::new(|_| None)).map_err(|e| e.to_string())?;
    let pipe = Arc::new(Pipe::default());
    let conn = engine.connect(client, addr, server_name, pipe.clone())?;
    {
        let deadline = Instant::now() + STALL;
        let mut s = pipe.state.lock();
        while !s.connected {
            if s.lost || pipe.changed.wait_until(&mut s, deadline).timed_out() {
                return Err("no QUIC handshake within 10 s".into());
            }
        }
    }
    let id = conn.lock().streams().open(Dir::Bi).ok_or("no stream")?;
    pipe.state.lock().stream = Some(id);
    let mut times = Vec::with_capacity(warm + measured);
    for _ in 0..warm + measured {
        let t0 = Instant::now();
        for _ in 0..plan.count {
            pipe.write_all(&conn, &plan.body)?;
        }
        pipe.write_all(&conn, &plan.tail)?;
        let m = pipe.message(STALL);
        answered(m.is_some(), m.as_deref().unwrap_or_default(), plan.reply)?;
        times.push(t0.elapsed());
    }
    conn.lock().close(
        Instant::now(),
        VarInt::from_u32(0),
        Bytes::from_static(b"done"),
    );
    // Let the close reach the echo before the process exits.
    std::thread::sleep(Duration::from_millis(50));
    Ok(times.split_off(warm))
}
