//! A link over a Unix-domain stream socket: the HELLO handshake and the writer (caller's thread,
//! one vectored write per frame under a per-link lock). The reading side of every link of the
//! process is the event loop of `unix_loop.rs`.
//!
//! Shared memory (docs/wire.md, SEGMENT / SHM_DELIVERY / RELEASE) is this link's own business:
//! a DELIVERY whose payload is a slot of our pool goes as a reference when the peer maps
//! segments (and is of our uid), its segment's descriptor passed once; a reference received
//! becomes an ordinary DELIVERY whose payload is a read-only view, released when dropped.

use std::collections::{HashMap, HashSet};
use std::io::{self, IoSlice};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tracer_shm::fdpass::{send_with_fd, FdReceiver};
use tracer_shm::Release;

use nix::errno::Errno;
use nix::sys::socket::{sendmsg, MsgFlags};
use parking_lot::Mutex;

use super::{Link, LinkError, PeerIdentity};
use crate::payload::Payload;
use crate::wire::{
    encode_head, encode_parts, EncodeError, ErrorCode, Frame, FrameDecoder, ShmRef, Tokens,
    MAX_FRAME, PROTOCOL_VERSION,
};

/// Read buffer of a link's reader (large bodies bypass it, see `FrameDecoder::body_window`).
pub(crate) const READ_BUF: usize = 64 * 1024;
/// Frame bound before the HELLO exchange: a HELLO, or an ERROR with its longest message.
pub(crate) const HANDSHAKE_FRAME: u32 = 8 * 1024;
/// Nonces of our PINGs (any value does; they only have to differ).
static NONCE: AtomicU64 = AtomicU64::new(1);

/// How this end sends shared-memory references to the peer.
pub(crate) struct ShmSend {
    /// The peer maps segments (HELLO) and has our uid.
    pub enabled: bool,
    /// References out at once; past it, copies.
    pub max_out: usize,
}

/// What the write lock guards: the socket's byte stream, which segments it announced, the
/// buffer frame heads are encoded into (kept, so a send allocates nothing), and what the
/// liveness check needs to know of it.
#[derive(Default)]
struct WriteState {
    announced: HashSet<u32>,
    head: Vec<u8>,
    /// Frames written that want the peer to read them (all but PONG).
    sent: u64,
    /// `sent` when our last PING was written (the PING included): its PONG proves that the
    /// peer has read everything up to it.
    probed: u64,
}

/// What was written, for the liveness check (docs/wire.md, "Liveness").
#[derive(Clone, Copy, PartialEq)]
enum Wrote {
    /// A frame the peer owes us a sign of life for.
    Frame,
    /// Our PING: as `Frame`, and its PONG answers for everything written so far.
    Ping,
    /// A PONG: an answer, which owes nothing.
    Pong,
}

/// One end of a Unix-socket link.
pub struct UnixLink {
    peer: PeerIdentity,
    stream: UnixStream,
    write_lock: Mutex<WriteState>,
    shm: ShmSend,
    /// References out to the peer, by token: each holds its sample's slot until RELEASE.
    out: Mutex<HashMap<u64, Payload>>,
    next_token: AtomicU64,
    /// The peer's announced frame bound: nothing larger is sent.
    peer_max: u32,
    closed: AtomicBool,
    epoch: Instant,
    last_rx_ms: AtomicU64,
    last_tx_ms: AtomicU64,
    /// When our last PING was written.
    last_ping_ms: AtomicU64,
    /// 0: the peer has answered for every frame we wrote (a PONG to a PING written after
    /// them). Otherwise 1 + the time of the first frame it has not answered for yet: the
    /// event loop watches only such links (written under the write lock).
    owed_ms: AtomicU64,
    /// The event loop is not reading this link (its strand is full): silence then is ours,
    /// not the peer's.
    paused: AtomicBool,
}

impl UnixLink {
    pub(crate) fn new(
        peer: PeerIdentity,
        stream: UnixStream,
        peer_max: u32,
        epoch: Instant,
        shm: ShmSend,
    ) -> Self {
        let now = epoch.elapsed().as_millis() as u64;
        UnixLink {
            peer,
            stream,
            write_lock: Mutex::new(WriteState::default()),
            shm,
            out: Mutex::new(HashMap::new()),
            next_token: AtomicU64::new(1),
            peer_max,
            closed: AtomicBool::new(false),
            epoch,
            last_rx_ms: AtomicU64::new(now),
            last_tx_ms: AtomicU64::new(now),
            last_ping_ms: AtomicU64::new(now),
            // Our HELLO is out: the first PING checks that the peer reads us.
            owed_ms: AtomicU64::new(now + 1),
            paused: AtomicBool::new(false),
        }
    }

    /// Write `bytes` as they are (conformance tests use it to send malformed input).
    pub fn send_raw(&self, bytes: &[u8]) -> Result<(), LinkError> {
        self.write_parts(bytes, &[])
    }

    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// References to our shared memory the peer holds now (tests, diagnostics).
    pub fn shm_refs_out(&self) -> usize {
        self.out.lock().len()
    }

    /// Whether samples of our pool go to this peer as references.
    pub fn sends_shm(&self) -> bool {
        self.shm.enabled
    }

    fn now_ms(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }

    fn ms_since_rx(&self) -> u64 {
        self.now_ms()
            .saturating_sub(self.last_rx_ms.load(Ordering::Relaxed))
    }

    pub(crate) fn ms_since_tx(&self) -> u64 {
        self.now_ms()
            .saturating_sub(self.last_tx_ms.load(Ordering::Relaxed))
    }

    pub(crate) fn ms_since_ping(&self) -> u64 {
        self.now_ms()
            .saturating_sub(self.last_ping_ms.load(Ordering::Relaxed))
    }

    /// How long the peer has owed us a sign of life for a frame we wrote (None: it owes
    /// nothing, and the link needs no watching).
    pub(crate) fn owed_for_ms(&self) -> Option<u64> {
        match self.owed_ms.load(Ordering::SeqCst) {
            0 => None,
            t => Some(self.now_ms().saturating_sub(t - 1)),
        }
    }

    /// A PONG came: if nothing was written since our last PING, the peer has read all we
    /// wrote and owes nothing more. Never blocks (the event loop calls it): while a write is
    /// in progress the link stays owed, and the next PING settles it.
    pub(crate) fn answered(&self) {
        if let Some(ws) = self.write_lock.try_lock() {
            if ws.sent == ws.probed {
                self.owed_ms.store(0, Ordering::SeqCst);
            }
        }
    }

    /// Under the write lock, after a frame was written.
    fn wrote(&self, ws: &mut WriteState, what: Wrote) {
        if what == Wrote::Pong {
            return;
        }
        let now = self.now_ms();
        ws.sent += 1;
        self.last_tx_ms.store(now, Ordering::Relaxed);
        if what == Wrote::Ping {
            ws.probed = ws.sent;
            self.last_ping_ms.store(now, Ordering::Relaxed);
        }
        if self.owed_ms.load(Ordering::SeqCst) == 0 {
            self.owed_ms.store(now + 1, Ordering::SeqCst);
            super::unix_loop::watch();
        }
    }

    /// Whether the peer has been silent for `dead_ms` while we were listening.
    pub(crate) fn peer_silent_for(&self, dead_ms: u64) -> bool {
        !self.paused.load(Ordering::Relaxed) && self.ms_since_rx() >= dead_ms
    }

    pub(crate) fn touch_rx(&self) {
        self.last_rx_ms.store(self.now_ms(), Ordering::Relaxed);
    }

    /// The loop stops (true) or starts again (false) reading this link. Whatever the peer sent
    /// meanwhile is still unread: the time paused is not counted as its silence.
    pub(crate) fn set_paused(&self, paused: bool) {
        self.paused.store(paused, Ordering::Relaxed);
        if !paused {
            self.touch_rx();
        }
    }

    /// The socket, for the event loop's reads.
    pub(crate) fn socket(&self) -> std::os::fd::BorrowedFd<'_> {
        self.stream.as_fd()
    }

    /// The liveness check's PING (never blocks, see `send_pong`).
    pub(crate) fn send_ping(&self) {
        let ping = Frame::Ping {
            nonce: NONCE.fetch_add(1, Ordering::Relaxed),
        };
        let _ = self.try_send_now(&ping, Wrote::Ping);
    }

    /// Answer a PING, or skip it: a PONG only shows the peer that we are alive, and it needs
    /// none while a write is in progress (bytes are flowing, or the link is stuck and the
    /// peer's own check will notice) or while the socket buffer is full (the peer has bytes of
    /// ours to read already). Never blocks: the event loop serves every link, and a loop stuck
    /// on a PONG into a full buffer would stop reading, and then take the peer for silent.
    pub(crate) fn send_pong(&self, nonce: u64) {
        let _ = self.try_send_now(&Frame::Pong { nonce }, Wrote::Pong);
    }

    /// A RELEASE from the event loop, which never blocks (`unix_rx::Releaser`): false when it
    /// could not be written now (the caller hands it to a worker).
    pub(crate) fn try_release(&self, token: u64) -> bool {
        self.try_send_now(
            &Frame::Release {
                tokens: Tokens::one(token),
            },
            Wrote::Frame,
        )
    }

    /// Write a small frame now or not at all: false when a write is in progress or the socket
    /// buffer is full; true when it was written or the link is closed (nothing more to do).
    fn try_send_now(&self, frame: &Frame, what: Wrote) -> bool {
        if self.is_closed() {
            return true;
        }
        let Some(mut guard) = self.write_lock.try_lock() else {
            return false;
        };
        let ws = &mut *guard;
        if encode_head(frame, self.peer_max, &mut ws.head).is_err() {
            return true;
        }
        let head: &[u8] = &ws.head;
        let flags = MsgFlags::MSG_NOSIGNAL | MsgFlags::MSG_DONTWAIT;
        let r = loop {
            match sendmsg::<()>(
                self.stream.as_raw_fd(),
                &[IoSlice::new(head)],
                &[],
                flags,
                None,
            ) {
                Err(Errno::EINTR) => continue,
                Err(Errno::EAGAIN) => return false,
                Ok(n) if n == head.len() => break Ok(()),
                // A few bytes fitted (a small frame is one small buffer, so this is rare): the
                // frame must be completed, or the stream would lose its framing.
                Ok(n) => break write_all2(&self.stream, &head[n..], &[]),
                Err(e) => break Err(io::Error::from(e)),
            }
        };
        match r {
            Ok(()) => self.wrote(&mut guard, what),
            Err(_) => {
                drop(guard);
                self.close();
            }
        }
        true
    }

    fn write_parts(&self, head: &[u8], payload: &[u8]) -> Result<(), LinkError> {
        self.locked_write(|_| Ok(()), |_, ()| write_all2(&self.stream, head, payload))
    }

    /// Under the write lock: `encode` (its failure fails the send, the link stays up), then
    /// `write` (its failure closes the link).
    fn locked_write<T>(
        &self,
        encode: impl FnOnce(&mut WriteState) -> Result<T, EncodeError>,
        write: impl FnOnce(&mut WriteState, T) -> io::Result<()>,
    ) -> Result<(), LinkError> {
        if self.is_closed() {
            return Err(LinkError::Closed(self.peer.name.clone()));
        }
        let mut guard = self.write_lock.lock();
        // Closed while we waited for the lock (a blocked write timed out): fail at once.
        if self.is_closed() {
            return Err(LinkError::Closed(self.peer.name.clone()));
        }
        let encoded = encode(&mut guard)?;
        let r = write(&mut guard, encoded);
        if r.is_ok() {
            self.wrote(&mut guard, Wrote::Frame);
        }
        drop(guard);
        match r {
            Ok(()) => Ok(()),
            Err(e) => {
                self.close();
                Err(
                    if self.is_closed() && e.kind() == io::ErrorKind::BrokenPipe {
                        LinkError::Closed(self.peer.name.clone())
                    } else {
                        LinkError::Io(e)
                    },
                )
            }
        }
    }
}

impl UnixLink {
    /// Send a DELIVERY of a pool slot as SHM_DELIVERY (announcing its segment first, once).
    /// `Ok(false)`: not sent, the caller sends the bytes (the peer holds `max_out` references).
    fn send_reference(
        &self,
        edge: u64,
        meta: &crate::payload::Meta,
        suffix: &Option<String>,
        payload: &Payload,
        slot: &tracer_shm::Slot,
    ) -> Result<bool, LinkError> {
        let token = self.next_token.fetch_add(1, Ordering::Relaxed);
        {
            let mut out = self.out.lock();
            if out.len() >= self.shm.max_out {
                return Ok(false);
            }
            // Before the write: the peer may release it as soon as the frame is out.
            out.insert(token, payload.clone());
        }
        let frame = Frame::ShmDelivery {
            edge,
            meta: *meta,
            suffix: suffix.clone(),
            shm: ShmRef {
                segment: slot.segment().0,
                offset: slot.offset(),
                len: slot.len() as u32,
                token,
            },
        };
        let seg = slot.segment().0;
        let r = self.locked_write(
            |ws| encode_head(&frame, self.peer_max, &mut ws.head).map(drop),
            |ws, ()| {
                if !ws.announced.contains(&seg) {
                    // Once per segment: its own (allocated) encoding.
                    let announce = Frame::Segment {
                        id: seg,
                        size: slot.segment_size(),
                    };
                    let a = encode_parts(&announce, self.peer_max).map_err(io::Error::other)?;
                    write_with_fd(&self.stream, &a.head, slot)?;
                    ws.announced.insert(seg);
                }
                write_all2(&self.stream, &ws.head, &[])
            },
        );
        if r.is_err() {
            self.out.lock().remove(&token);
        }
        r.map(|()| true)
    }

    /// The peer returned references: their slots may be reused (once nobody else holds them).
    /// False when a token was not out (the peer broke the protocol).
    pub(crate) fn released(&self, tokens: &[u64]) -> bool {
        let mut ok = true;
        for t in tokens {
            // Each slot goes back to the pool outside the lock (one lock per token: a RELEASE
            // carries one token or a few).
            let gone = self.out.lock().remove(t);
            ok &= gone.is_some();
            drop(gone);
        }
        ok
    }
}

/// A view of the peer's memory was dropped: tell the peer (if the link is still up; when it is
/// not, the peer released everything already).
impl Release for UnixLink {
    fn release(&self, token: u64) {
        if !self.is_closed() {
            let _ = self.send(&Frame::Release {
                tokens: Tokens::one(token),
            });
        }
    }
}

/// Write a SEGMENT frame's bytes with the segment's descriptor attached to the first of them.
fn write_with_fd(w: &UnixStream, head: &[u8], slot: &tracer_shm::Slot) -> io::Result<()> {
    let n = loop {
        match send_with_fd(
            w.as_fd(),
            &[IoSlice::new(head)],
            slot.segment_fd(),
            MsgFlags::MSG_NOSIGNAL,
        ) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => break n,
            Err(Errno::EINTR) => continue,
            Err(e) => return Err(e.into()),
        }
    };
    write_all2(w, &head[n..], &[])
}

/// Write `a` then `b` completely, as few syscalls as the kernel allows: one vectored `sendmsg`
/// when both fit in the socket buffer, so a payload is never copied into an intermediate buffer.
///
/// Always with MSG_NOSIGNAL: a write into a socket whose peer is gone must be an EPIPE error,
/// not SIGPIPE, whose default action kills the process (C and C++ programs keep that default,
/// and a library has no business changing a program's signal dispositions). `write`/`writev`
/// on a socket raise it; std's `UnixStream::write` happens to use `send(MSG_NOSIGNAL)`, but its
/// `write_vectored` is a plain `writev`.
fn write_all2(w: &UnixStream, mut a: &[u8], mut b: &[u8]) -> io::Result<()> {
    let fd = w.as_raw_fd();
    while !a.is_empty() || !b.is_empty() {
        let both = [IoSlice::new(a), IoSlice::new(b)];
        let iov: &[IoSlice<'_>] = match (a.is_empty(), b.is_empty()) {
            (false, false) => &both,
            (false, true) => &both[..1],
            _ => &both[1..],
        };
        let n = match sendmsg::<()>(fd, iov, &[], MsgFlags::MSG_NOSIGNAL, None) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => n,
            Err(Errno::EINTR) => continue,
            Err(e) => return Err(e.into()),
        };
        let from_a = n.min(a.len());
        a = &a[from_a..];
        b = &b[n - from_a..];
    }
    Ok(())
}

impl Link for UnixLink {
    fn send(&self, frame: &Frame) -> Result<(), LinkError> {
        if self.is_closed() {
            return Err(LinkError::Closed(self.peer.name.clone()));
        }
        if let Frame::Delivery {
            edge,
            meta,
            suffix,
            payload,
        } = frame
        {
            if let (true, Some(slot)) = (self.shm.enabled, payload.slot()) {
                if self.send_reference(*edge, meta, suffix, payload, slot)? {
                    return Ok(());
                }
            }
        }
        self.locked_write(
            |ws| encode_head(frame, self.peer_max, &mut ws.head),
            |ws, payload| write_all2(&self.stream, &ws.head, payload.map_or(&[], |p| p.as_ref())),
        )
    }
    fn peer(&self) -> &PeerIdentity {
        &self.peer
    }
    fn close(&self) {
        if !self.closed.swap(true, Ordering::AcqRel) {
            // Wakes our reader (EOF) and any writer blocked on a full socket.
            let _ = self.stream.shutdown(std::net::Shutdown::Both);
            // The peer holds nothing of ours any more (it may be dead): every slot it had goes
            // back to the pool.
            let out = std::mem::take(&mut *self.out.lock());
            drop(out);
        }
    }
}

/// Bytes read during the handshake beyond the HELLO: the reader starts with them.
pub(crate) struct Leftover {
    pub buf: Vec<u8>,
    pub start: usize,
    pub end: usize,
    /// Descriptors that came with those bytes (a SEGMENT right after the peer's HELLO).
    pub fds: Vec<OwnedFd>,
}

/// What the peer said in its HELLO.
pub(crate) struct PeerHello {
    pub node: String,
    pub max_frame: u32,
    pub shm: bool,
}

/// Our HELLO; `shm`: we map segments sent to us.
pub(crate) fn hello(local: &str, shm: bool) -> Frame {
    Frame::Hello {
        version: PROTOCOL_VERSION,
        node: local.to_owned(),
        max_frame: MAX_FRAME,
        shm,
        permissions: None,
    }
}

pub(crate) fn write_frame(stream: &UnixStream, frame: &Frame) -> io::Result<()> {
    let enc = encode_parts(frame, MAX_FRAME).map_err(io::Error::other)?;
    write_all2(stream, &enc.head, enc.payload.as_deref().unwrap_or(&[]))
}

pub(crate) enum HelloOutcome {
    Hello(PeerHello, FrameDecoder, Leftover),
    /// The peer answered ERROR: it refused this connection (duplicate link, bad name).
    Refused(String),
}

/// Read frames until the first one, within `timeout`. It must be HELLO (or ERROR: a refusal).
pub(crate) fn read_hello(stream: &UnixStream, timeout: Duration) -> Result<HelloOutcome, String> {
    let deadline = Instant::now() + timeout;
    // Until the peer has said who it is, nothing large is accepted (nor allocated for).
    let mut dec = FrameDecoder::new(HANDSHAKE_FRAME);
    let mut buf = vec![0u8; READ_BUF];
    // Through recvmsg: a descriptor sent right after the peer's HELLO must not be lost.
    let mut recv = FdReceiver::default();
    let mut fds = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err("timed out waiting for HELLO".into());
        }
        stream
            .set_read_timeout(Some(left))
            .map_err(|e| e.to_string())?;
        let n = match recv.recv(stream.as_fd(), &mut buf, &mut fds) {
            Ok(0) => return Err("connection closed before HELLO".into()),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                return Err("timed out waiting for HELLO".into())
            }
            Err(e) => return Err(e.to_string()),
        };
        let taken = dec.push(&buf[..n]);
        match dec.pop() {
            Ok(None) => continue,
            Ok(Some(frame)) => {
                stream.set_read_timeout(None).map_err(|e| e.to_string())?;
                let left = Leftover {
                    buf,
                    start: taken,
                    end: n,
                    fds,
                };
                return check_hello(frame, dec, left);
            }
            Err(e) => return Err(e.to_string()),
        }
    }
}

/// The first frame of a connection: HELLO (checked, the decoder then takes full-size frames),
/// or ERROR (a refusal); anything else fails the handshake.
pub(crate) fn check_hello(
    frame: Frame,
    mut dec: FrameDecoder,
    left: Leftover,
) -> Result<HelloOutcome, String> {
    match frame {
        // PERMISSIONS never travels on a Unix link (docs/wire.md, HELLO): ignored.
        Frame::Hello {
            version,
            node,
            max_frame,
            shm,
            ..
        } => {
            dec.set_max_frame(MAX_FRAME);
            if version < 1 {
                return Err(format!("peer speaks protocol version {version}"));
            }
            if max_frame < 1024 {
                return Err(format!(
                    "peer frame bound {max_frame} is below the 1 KiB minimum"
                ));
            }
            Ok(HelloOutcome::Hello(
                PeerHello {
                    node,
                    max_frame,
                    shm,
                },
                dec,
                left,
            ))
        }
        Frame::Error { message, .. } => Ok(HelloOutcome::Refused(message)),
        other => Err(format!("first frame is not HELLO: {other:?}")),
    }
}

pub(crate) fn refuse(stream: &UnixStream, code: ErrorCode, why: &str) {
    let _ = write_frame(stream, &super::refusal(code, why));
    let _ = stream.shutdown(std::net::Shutdown::Both);
}
