//! [`ProbeMode::Inline`](super::probe::ProbeMode): the probe's ping-pong on `quinn-proto`
//! alone, driven by the one thread that uses it: it writes to the stream, builds and sends
//! the packets itself (`poll_transmit`, `sendmsg`), and blocks in `recvmmsg` on the socket
//! until the next datagram or the connection's next timer. No tokio, no quinn runtime, no
//! wake-up of another thread: what a link would cost if the caller's thread sent inline and
//! read its own socket, the design docs/network.md section 11 weighs against the hand-off.
//!
//! The socket is quinn-udp's, as quinn's own: as many packets per `sendmsg` as one UDP GSO
//! send takes (45 of quinn's largest, [`gso_segments`]; quinn 0.11 itself stops at 10,
//! `MAX_TRANSMIT_SEGMENTS`) and several packets per receipt (UDP GRO, split at the stride the
//! kernel reports), so its large-message figures are the floor of that design too, not only
//! its small-message ones.

use std::io::{ErrorKind, IoSliceMut};
use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use quinn_proto::{
    ClientConfig, Connection, ConnectionHandle, DatagramEvent, Dir, Endpoint, EndpointConfig,
    Event, ServerConfig, StreamEvent, StreamId, Transmit, WriteError,
};
use quinn_udp::{RecvMeta, UdpSocketState};

use super::engine::{datagrams, gso_segments, send_transmit, Sent, RECEIPT};
use super::probe::{answered, body_len, client_bind, echoed, Round, IDLE};
use super::tuning;

/// A whole connection round, as long as the peer is silent, before we give up.
const STALL: Duration = Duration::from_secs(10);
/// One endpoint on one socket with at most one connection, driven by the calling thread.
struct Driver {
    sock: UdpSocket,
    /// quinn-udp's view of `sock`: GSO on send, GRO and ECN on receipt.
    udp: UdpSocketState,
    ep: Endpoint,
    server: Option<Arc<ServerConfig>>,
    conn: Option<(ConnectionHandle, Connection)>,
    stream: Option<StreamId>,
    /// Bytes read from the stream, not yet taken as messages.
    inbox: Vec<u8>,
    lost: bool,
    out: Vec<u8>,
    datagram: Vec<u8>,
}

impl Driver {
    fn new(addr: SocketAddr, server: Option<ServerConfig>) -> Result<Driver, String> {
        let sock = tuning::bind(addr).map_err(|e| e.to_string())?;
        let udp = UdpSocketState::new((&sock).into()).map_err(|e| e.to_string())?;
        // quinn-udp made it non-blocking (for a runtime's readiness); this driver blocks in
        // its receive until a datagram or its read timeout, so that it measures a wait, not
        // a spin.
        sock.set_nonblocking(false).map_err(|e| e.to_string())?;
        let server = server.map(Arc::new);
        let ep = Endpoint::new(
            Arc::new(EndpointConfig::default()),
            server.clone(),
            true,
            None,
        );
        Ok(Driver {
            sock,
            udp,
            ep,
            server,
            conn: None,
            stream: None,
            inbox: Vec::new(),
            lost: false,
            out: Vec::new(),
            datagram: vec![0; RECEIPT],
        })
    }

    /// Send what the connection has to send, and settle its endpoint events.
    fn flush(&mut self) -> Result<(), String> {
        let Some((ch, conn)) = self.conn.as_mut() else {
            return Ok(());
        };
        loop {
            self.out.clear();
            let segments = gso_segments(&self.udp);
            let Some(t) = conn.poll_transmit(Instant::now(), segments, &mut self.out) else {
                break;
            };
            send(&self.udp, &self.sock, &self.out, &t)?;
        }
        while let Some(ev) = conn.poll_endpoint_events() {
            if let Some(back) = self.ep.handle_event(*ch, ev) {
                conn.handle_event(back);
            }
        }
        Ok(())
    }

    /// Flush, then wait for one datagram (or the connection's next timer, or `patience`) and
    /// take it in; then take the connection's events and whatever its stream has for us.
    fn step(&mut self, patience: Duration) -> Result<(), String> {
        self.flush()?;
        let now = Instant::now();
        let deadline = self
            .conn
            .as_mut()
            .and_then(|(_, c)| c.poll_timeout())
            .map_or(now + patience, |t| t.min(now + patience));
        let wait = deadline.saturating_duration_since(now);
        if wait.is_zero() {
            self.timeout();
        } else {
            self.sock
                .set_read_timeout(Some(wait))
                .map_err(|e| e.to_string())?;
            let mut meta = [RecvMeta::default()];
            let got = self.udp.recv(
                (&self.sock).into(),
                &mut [IoSliceMut::new(&mut self.datagram)],
                &mut meta,
            );
            match got {
                Ok(_) => {
                    // Each datagram of a GRO receipt on its own, at the kernel's stride.
                    let [m] = meta;
                    for data in datagrams(&self.datagram, &m) {
                        self.datagram_in(data, &m)?;
                    }
                }
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    self.timeout()
                }
                Err(e) => return Err(e.to_string()),
            }
        }
        self.events();
        self.flush()
    }

    fn timeout(&mut self) {
        if let Some((_, c)) = self.conn.as_mut() {
            if c.poll_timeout().is_some_and(|t| t <= Instant::now()) {
                c.handle_timeout(Instant::now());
            }
        }
    }

    fn datagram_in(&mut self, data: BytesMut, m: &RecvMeta) -> Result<(), String> {
        let ecn = m
            .ecn
            .and_then(|e| quinn_proto::EcnCodepoint::from_bits(e as u8));
        self.out.clear();
        match self
            .ep
            .handle(Instant::now(), m.addr, m.dst_ip, ecn, data, &mut self.out)
        {
            Some(DatagramEvent::ConnectionEvent(ch, ev)) => {
                if let Some((mine, c)) = self.conn.as_mut() {
                    if *mine == ch {
                        c.handle_event(ev);
                    }
                }
            }
            Some(DatagramEvent::NewConnection(incoming)) => {
                self.out.clear();
                match self
                    .ep
                    .accept(incoming, Instant::now(), &mut self.out, self.server.clone())
                {
                    // A new connection replaces the one before (the probe serves one peer).
                    Ok(c) => {
                        self.conn = Some(c);
                        self.stream = None;
                        self.inbox.clear();
                        self.lost = false;
                    }
                    Err(e) => {
                        if let Some(t) = e.response {
                            send(&self.udp, &self.sock, &self.out, &t)?;
                        }
                    }
                }
            }
            Some(DatagramEvent::Response(t)) => send(&self.udp, &self.sock, &self.out, &t)?,
            None => {}
        }
        Ok(())
    }

    /// The connection's events: a lost connection, the peer's stream, data to read.
    fn events(&mut self) {
        let Some((_, c)) = self.conn.as_mut() else {
            return;
        };
        while let Some(ev) = c.poll() {
            match ev {
                Event::ConnectionLost { .. } => self.lost = true,
                Event::Stream(StreamEvent::Opened { dir: Dir::Bi }) => {
                    if let Some(id) = c.streams().accept(Dir::Bi) {
                        self.stream = Some(id);
                    }
                }
                _ => {}
            }
        }
        let Some(id) = self.stream else {
            return;
        };
        let mut rs = c.recv_stream(id);
        let Ok(mut chunks) = rs.read(true) else {
            return;
        };
        // Until the stream has nothing more for now (blocked), ended, or was reset.
        while let Ok(Some(chunk)) = chunks.next(usize::MAX) {
            self.inbox.extend_from_slice(&chunk.bytes);
        }
        // Whether to send flow-control credit is decided by the next flush.
        let _ = chunks.finalize();
    }

    /// Write all of `data` to the stream, stepping the connection while flow control holds it.
    fn write_all(&mut self, mut data: &[u8]) -> Result<(), String> {
        let started = Instant::now();
        while !data.is_empty() {
            let (id, c) = match (self.stream, self.conn.as_mut()) {
                (Some(id), Some((_, c))) => (id, c),
                _ => return Err("no stream".into()),
            };
            match c.send_stream(id).write(data) {
                Ok(n) => data = &data[n..],
                Err(WriteError::Blocked) => {
                    if started.elapsed() > STALL {
                        return Err("the stream took nothing for 10 s".into());
                    }
                    self.step(Duration::from_millis(100))?;
                }
                Err(e) => return Err(format!("write: {e}")),
            }
            if self.lost {
                return Err("connection lost".into());
            }
        }
        Ok(())
    }

    /// Take one whole message (length first) from what the stream gave, stepping until it has.
    fn message(&mut self, patience: Duration) -> Result<Option<Vec<u8>>, String> {
        let started = Instant::now();
        loop {
            if let Some(&prefix) = self.inbox.first_chunk::<4>() {
                let n = body_len(prefix)?;
                if self.inbox.len() >= 4 + n {
                    return Ok(Some(self.inbox.drain(..4 + n).collect()));
                }
            }
            if self.lost || started.elapsed() > patience {
                return Ok(None);
            }
            self.step(patience)?;
        }
    }
}

/// Send what quinn-proto built into `out` for `t` (the engine's send); a full socket buffer
/// drops the datagram as the network would, and QUIC repairs it.
fn send(udp: &UdpSocketState, sock: &UdpSocket, out: &[u8], t: &Transmit) -> Result<(), String> {
    send_transmit(udp, sock, out, t)
        .map(|_: Sent| ())
        .map_err(|e| format!("send: {e}"))
}

/// The inline echo at `addr`, one connection at a time (a new one replaces the one before),
/// until nothing came for `IDLE`.
pub(super) fn echo(addr: SocketAddr, server: ServerConfig) -> Result<(), String> {
    let mut d = Driver::new(addr, Some(server))?;
    let mut last = Instant::now();
    while last.elapsed() < IDLE {
        match d.message(Duration::from_secs(1))? {
            Some(m) => {
                last = Instant::now();
                if echoed(&m) {
                    d.write_all(&m)?;
                }
            }
            None if d.lost => {
                d.conn = None;
                d.lost = false;
            }
            None => {}
        }
    }
    Ok(())
}

/// The inline ping: `warm` unmeasured rounds of `plan`, then `measured` timed ones.
pub(super) fn ping(
    addr: SocketAddr,
    client: ClientConfig,
    server_name: &str,
    plan: &Round,
    warm: usize,
    measured: usize,
) -> Result<Vec<Duration>, String> {
    let mut d = Driver::new(client_bind(addr), None)?;
    let c =
        d.ep.connect(Instant::now(), client, addr, server_name)
            .map_err(|e| e.to_string())?;
    d.conn = Some(c);
    let started = Instant::now();
    while d.conn.as_ref().is_none_or(|(_, c)| c.is_handshaking()) {
        if d.lost || started.elapsed() > STALL {
            return Err("no QUIC handshake within 10 s".into());
        }
        d.step(Duration::from_millis(100))?;
    }
    d.stream = d.conn.as_mut().and_then(|(_, c)| c.streams().open(Dir::Bi));
    let mut times = Vec::with_capacity(warm + measured);
    for _ in 0..warm + measured {
        let t0 = Instant::now();
        for _ in 0..plan.count {
            d.write_all(&plan.body)?;
        }
        d.write_all(&plan.tail)?;
        let m = d.message(STALL)?;
        answered(m.is_some(), m.as_deref().unwrap_or_default(), plan.reply)?;
        times.push(t0.elapsed());
    }
    if let Some((_, c)) = d.conn.as_mut() {
        c.close(Instant::now(), 0u32.into(), Bytes::from_static(b"done"));
    }
    d.flush()?;
    Ok(times.split_off(warm))
}
