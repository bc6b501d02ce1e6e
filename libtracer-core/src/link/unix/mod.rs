//! A link over a Unix-domain stream socket: the HELLO handshake and the writer (caller's thread,
//! one vectored write per frame under a per-link lock, small frames gathered into one write
//! while the peer is behind: `gather.rs`). The reading side of every link of the process is the
//! event loop of `unix_loop.rs`.
//!
//! Shared memory (docs/wire.md, SEGMENT / SHM_DELIVERY / RELEASE) is this link's own business:
//! a DELIVERY whose payload is a slot of our pool goes as a reference when the peer maps
//! segments (and is of our uid), its segment's descriptor passed once; a reference received
//! becomes an ordinary DELIVERY whose payload is a read-only view, released when dropped. A
//! segment made for one message is retired on every link that announced it once it is gone.
//!
//! Here: the link, its writer and what the liveness check reads of it. The HELLO exchange is
//! `handshake.rs`'s, the sending of shared-memory references `shm.rs`'s, the gathering of small
//! frames `gather.rs`'s.

mod gather;
mod handshake;
pub(crate) mod quarantine;
mod shm;
#[cfg(test)]
mod tests;

use std::collections::{HashMap, HashSet};
use std::io::{self, IoSlice};
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use nix::errno::Errno;
use nix::sys::socket::{sendmsg, setsockopt, sockopt, MsgFlags};
use parking_lot::Mutex;

use super::dispatch::Job;
use super::{Link, LinkError, PeerIdentity};
use crate::payload::Payload;
use crate::wire::{encode_head, parts, EncodeError, Frame, Tokens};

use gather::{Flush, Gathered};
pub(crate) use handshake::{
    check_hello, hello, read_hello, refuse, write_frame, HelloOutcome, Leftover, PeerHello,
};
use shm::Retirer;
pub(crate) use shm::ShmSend;

/// Read buffer of a link's reader (large bodies bypass it, see `FrameDecoder::body_window`).
pub(crate) const READ_BUF: usize = 64 * 1024;
/// Frame bound before the HELLO exchange: a HELLO, or an ERROR with its longest message.
pub(crate) const HANDSHAKE_FRAME: u32 = 8 * 1024;
/// Nonces of our PINGs (any value does; they only have to differ).
static NONCE: AtomicU64 = AtomicU64::new(1);

/// What the write lock guards: the socket's byte stream, which segments it announced, the
/// buffer frame heads are encoded into (kept, so a send allocates nothing), the gathered frames
/// being written, and what the liveness check needs to know of it.
#[derive(Default)]
struct WriteState {
    announced: HashSet<u32>,
    head: Vec<u8>,
    /// Gathered frames taken for one write (`gather.rs`; kept for its capacity).
    out: Vec<u8>,
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
    /// Small frames waiting for one write while the peer is behind (`gather.rs`). Taken after
    /// the write lock, never before it.
    gather: Mutex<Gathered>,
    /// Held while the parts of one message are written (each under the write lock, so that
    /// PINGs and PONGs still pass between them): parts of two messages never interleave.
    parts: Mutex<()>,
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
    /// The same in microseconds, for the gathering (`peer_behind`).
    last_tx_us: AtomicU64,
    /// When our last PING was written.
    last_ping_ms: AtomicU64,
    /// 0: the peer has answered for every frame we wrote (a PONG to a PING written after
    /// them). Otherwise 1 + the time of the first frame it has not answered for yet: the
    /// event loop watches only such links (written under the write lock).
    owed_ms: AtomicU64,
    /// The event loop is not reading this link (its strand is full): silence then is ours,
    /// not the peer's.
    paused: AtomicBool,
    /// This link's `gather::Flush`, scheduled when a gathering starts.
    flush: Arc<dyn Job>,
    /// What the segments made for one message that this link announced tell when they go.
    retirer: Arc<Retirer>,
}

/// The send buffer a link asks for: the kernel doubles it (for its own overhead) and caps the
/// request at `net.core.wmem_max` (208 KiB by default), so a link's socket holds about twice
/// the default (208 KiB) of frames before a write into it blocks. A KEEP_ALL window of 256
/// small messages fits in it (docs/rmw-mapping.md, "Flow control").
const SEND_BUFFER: usize = 212_992;

impl UnixLink {
    pub(crate) fn new(
        peer: PeerIdentity,
        stream: UnixStream,
        peer_max: u32,
        epoch: Instant,
        shm: ShmSend,
    ) -> Arc<Self> {
        let now = epoch.elapsed().as_millis() as u64;
        // Best effort: a socket keeps the buffer it has when the kernel refuses.
        let _ = setsockopt(&stream, sockopt::SndBuf, &SEND_BUFFER);
        Arc::new_cyclic(|me| UnixLink {
            peer,
            stream,
            write_lock: Mutex::new(WriteState::default()),
            gather: Mutex::new(Gathered::default()),
            parts: Mutex::new(()),
            shm,
            out: Mutex::new(HashMap::new()),
            next_token: AtomicU64::new(1),
            peer_max,
            closed: AtomicBool::new(false),
            epoch,
            last_rx_ms: AtomicU64::new(now),
            last_tx_ms: AtomicU64::new(now),
            last_tx_us: AtomicU64::new(now * 1000),
            last_ping_ms: AtomicU64::new(now),
            // Our HELLO is out: the first PING checks that the peer reads us.
            owed_ms: AtomicU64::new(now + 1),
            paused: AtomicBool::new(false),
            flush: Arc::new(Flush(me.clone())),
            retirer: Arc::new(Retirer(me.clone())),
        })
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
        let elapsed = self.epoch.elapsed();
        let now = elapsed.as_millis() as u64;
        ws.sent += 1;
        self.last_tx_ms.store(now, Ordering::Relaxed);
        self.last_tx_us
            .store(elapsed.as_micros() as u64, Ordering::Relaxed);
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
        // Written ahead of anything gathered: a PING, PONG or RELEASE carries no order (the
        // PING's PONG then answers for what was written before it, not for what is gathered).
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

    /// The DELIVERY_PART frames of one message, in order: parts of two messages never
    /// interleave on an edge (docs/wire.md, "Messages of any size").
    fn send_in_parts(&self, parts: &[Frame]) -> Result<(), LinkError> {
        let _one_message = self.parts.lock();
        for part in parts {
            self.locked_write(
                |ws| encode_head(part, self.peer_max, &mut ws.head),
                |ws, chunk| write_all2(&self.stream, &ws.head, chunk.map_or(&[], |p| p.as_ref())),
            )?;
            // A sign of life: the peer has read all of this part but what a socket buffer
            // holds. Our writes hold the PINGs of the liveness check back meanwhile, and the
            // peer's PONGs come only after them, so without this a message that takes longer
            // than the check's 900 ms to pass would be taken for a hung peer.
            self.touch_rx();
        }
        Ok(())
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
        let r = self
            .write_gathered(&mut guard)
            .and_then(|()| write(&mut guard, encoded));
        if r.is_ok() {
            self.wrote(&mut guard, Wrote::Frame);
        }
        drop(guard);
        self.after_write(r)
    }

    /// A write's outcome: its failure closes the link.
    fn after_write(&self, r: io::Result<()>) -> Result<(), LinkError> {
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
        if parts::may_split(frame, self.peer_max) {
            if let Some(parts) = parts::split(frame, self.peer_max)? {
                return self.send_in_parts(&parts);
            }
        }
        self.send_frame(frame)
    }
    fn peer(&self) -> &PeerIdentity {
        &self.peer
    }
    fn close(&self) {
        if !self.closed.swap(true, Ordering::AcqRel) {
            // What is gathered was sent as far as its writers know (a node that publishes,
            // then shuts down): one try to write it, which never blocks (the event loop closes
            // links too) and may leave a frame cut short, which the peer's reader drops at EOF.
            if let (Some(_ws), Some(mut g)) = (self.write_lock.try_lock(), self.gather.try_lock()) {
                let _ = gather::write_all_until(&self.stream, g.bytes(), Instant::now());
                g.clear();
            }
            // Wakes our reader (EOF) and any writer blocked on a full socket.
            let _ = self.stream.shutdown(std::net::Shutdown::Both);
            // The peer may still read what it holds of ours (a reader we took for hung resumes):
            // its slots are reused only once its process is gone (`quarantine.rs`).
            let out = std::mem::take(&mut *self.out.lock());
            quarantine::hold(self.peer.pid, out.into_values().collect());
        }
    }
}
