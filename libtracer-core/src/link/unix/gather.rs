//! Small frames gathered into one write while the peer is behind (docs/wire.md section 5,
//! "Gathered writes").
//!
//! Why: a write to a Unix socket costs a system call and a kernel buffer (about a kilobyte of
//! accounting whatever its length) per frame, and the reader frees one buffer per frame; a
//! publisher of 64 B messages spent half of its CPU in `sendmsg` (perf, 2026-12-05). While the
//! peer still has bytes of ours to read, a new frame would only queue behind them: it waits in
//! the link's gathering instead, and one write carries the lot.
//!
//! The rules (`UnixLink::send_frame`; the unit tests in `unix/tests.rs` check each):
//! - **A lone frame goes at once.** A frame is gathered only while a gathering is on, while
//!   another thread writes to the socket, or when the peer has not read all we wrote
//!   (`SIOCOUTQ`; asked only when we wrote within `RECENT_US`, so a frame after a pause, a
//!   round trip's for one, costs no extra system call).
//! - **A flush always comes.** The frame that starts a gathering schedules this link's `Flush`
//!   on a link worker (`dispatch.rs`), which writes what is gathered, again and again until it
//!   finds nothing, in batches of `FLUSH_BATCH` writes (between them the job waits its turn
//!   behind the other links' callbacks); the writer that fills the gathering to `GATHER_MAX`
//!   writes it itself.
//! - **Order holds.** Whoever writes to the socket holds the write lock and first writes what
//!   is gathered (a frame too large to gather, a part, a reference with its descriptor). Only
//!   the event loop's PINGs, PONGs and RELEASEs, which carry no order, may pass gathered frames.
//! - **Gathering never waits for a write.** It has its own lock, held only to append or to take
//!   the bytes, so a publisher goes on while a worker writes what it gathered before.
//!
//! The QUIC engine gathers small writes per stream for a like reason (`quic/engine/stage.rs`).

use std::io::{self, IoSlice};
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::Ordering;
use std::sync::Weak;
use std::time::Instant;

use nix::errno::Errno;
use nix::sys::socket::{sendmsg, MsgFlags};

use super::{write_all2, UnixLink, WriteState, Wrote};
use crate::link::dispatch::{self, Job};
use crate::link::LinkError;
use crate::wire::{encode_head, Frame};

/// Frames larger than this are written as they are: gathering would only copy them once more
/// (the QUIC stage's bound).
pub(super) const GATHER_FRAME: usize = 16 << 10;
/// A frame written within this many microseconds of our last write asks whether the peer is
/// behind: a flood writes every few microseconds, a round trip on one host takes 30 us and more.
const RECENT_US: u64 = 20;
/// How long the flush lets frames gather between two writes while the peer is still reading
/// the last (the kernel may add its timer slack, 50 us by default): the bound on how long a
/// gathered frame waits beyond the peer's own backlog.
const GATHER_PAUSE: std::time::Duration = std::time::Duration::from_micros(20);
/// Writes of one run of the flush before it goes to the back of the workers' queue (a job runs
/// a bounded batch, `dispatch.rs`): 16 writes of up to `GATHER_MAX` with their pauses, about
/// half a millisecond of a flood.
const FLUSH_BATCH: usize = 16;
/// A writer that gathers this much writes it itself instead of waiting for the flush: one
/// write the size of the reader's buffer (`READ_BUF`).
pub(super) const GATHER_MAX: usize = 64 << 10;

/// What a link has gathered (under its gathering lock).
#[derive(Default)]
pub(super) struct Gathered {
    /// Where a frame's head is encoded before it is known whether it is gathered.
    pub(super) head: Vec<u8>,
    bytes: Vec<u8>,
    /// A flush is scheduled and has not found the gathering empty yet. Never false while
    /// `bytes` holds something.
    owed: bool,
}

impl Gathered {
    /// Whether a gathering is on (a flush is owed): a small frame joins it.
    pub(super) fn is_on(&self) -> bool {
        self.owed
    }

    /// Append the frame whose head is in `head` and whose payload is `body`. True when this
    /// starts a gathering (the caller schedules the flush).
    pub(super) fn append(&mut self, body: &[u8]) -> bool {
        self.bytes.extend_from_slice(&self.head);
        self.bytes.extend_from_slice(body);
        !std::mem::replace(&mut self.owed, true)
    }

    /// Whether the gathering holds a write's worth (`GATHER_MAX`).
    pub(super) fn is_full(&self) -> bool {
        self.bytes.len() >= GATHER_MAX
    }

    /// Move what is gathered into `out` (empty, its capacity given back to the gathering, so
    /// that gathering allocates nothing once warm). False when nothing was gathered: then, if
    /// `settle`, the gathering is over (the flush that found it empty owes nothing more).
    pub(super) fn take(&mut self, out: &mut Vec<u8>, settle: bool) -> bool {
        if self.bytes.is_empty() {
            if settle {
                self.owed = false;
            }
            return false;
        }
        out.clear();
        std::mem::swap(out, &mut self.bytes);
        true
    }

    /// The link is closing: drop what is gathered, and end the gathering.
    pub(super) fn clear(&mut self) {
        self.bytes.clear();
        self.owed = false;
    }

    /// What is gathered (the last try of a closing link).
    pub(super) fn bytes(&self) -> &[u8] {
        &self.bytes
    }
}

/// The flush a link schedules on a worker (one per link, made with it, so that scheduling
/// allocates nothing).
pub(super) struct Flush(pub(super) Weak<UnixLink>);

impl Job for Flush {
    fn run(&self) -> bool {
        self.0.upgrade().is_some_and(|link| link.flush_gathered())
    }
}

/// The gathering side of the link's writer: a small frame gathered or written at once, the
/// flush, and the drain before a shutdown.
impl UnixLink {
    /// A frame that is neither in parts nor a reference: gathered while the peer is behind
    /// (the rules: `gather.rs`), else written at once, behind whatever is gathered.
    pub(super) fn send_frame(&self, frame: &Frame) -> Result<(), LinkError> {
        if self.is_closed() {
            return Err(LinkError::Closed(self.peer.name.clone()));
        }
        let mut g = self.gather.lock();
        let payload = encode_head(frame, self.peer_max, &mut g.head)?;
        let body: &[u8] = payload.map_or(&[], |p| p.as_ref());
        if g.head.len() + body.len() > GATHER_FRAME {
            drop(g);
            return self.locked_write(
                |ws| encode_head(frame, self.peer_max, &mut ws.head),
                |ws, p| write_all2(&self.stream, &ws.head, p.map_or(&[], |p| p.as_ref())),
            );
        }
        if g.is_on() {
            g.append(body);
            if !g.is_full() {
                return Ok(());
            }
            // A write's worth: written now by the writer, not left to grow.
            drop(g);
            let mut ws = self.write_lock.lock();
            let r = self.write_gathered(&mut ws);
            drop(ws);
            return self.after_write(r);
        }
        // Lock order is write lock, then gathering: so only a try here. Another thread is
        // writing, or the peer is behind: gather (this frame starts the gathering).
        let mut ws = match self.write_lock.try_lock() {
            Some(ws) if !self.peer_behind() => ws,
            _ => {
                if g.append(body) {
                    drop(g);
                    dispatch::schedule(self.flush.clone());
                }
                return Ok(());
            }
        };
        // Written at once (nothing is gathered: no gathering is on).
        std::mem::swap(&mut ws.head, &mut g.head);
        drop(g);
        let r = write_all2(&self.stream, &ws.head, body);
        if r.is_ok() {
            self.wrote(&mut ws, Wrote::Frame);
        }
        drop(ws);
        self.after_write(r)
    }

    /// Whether the peer has bytes of ours still to read. Asked only when we wrote within
    /// `RECENT_US`: a frame after a pause (a round trip's, say) goes at once without the extra
    /// system call.
    pub(super) fn peer_behind(&self) -> bool {
        let now = self.epoch.elapsed().as_micros() as u64;
        now.saturating_sub(self.last_tx_us.load(Ordering::Relaxed)) <= RECENT_US
            && tracer_shm::fdpass::unread_by_peer(self.stream.as_fd()).is_ok_and(|n| n > 0)
    }

    /// Under the write lock: write what is gathered now. A gathering that is on stays on (its
    /// flush is scheduled, and ends it).
    pub(super) fn write_gathered(&self, ws: &mut WriteState) -> io::Result<()> {
        if !self.gather.lock().take(&mut ws.out, false) {
            return Ok(());
        }
        let r = write_all2(&self.stream, &ws.out, &[]);
        if r.is_ok() {
            self.wrote(ws, Wrote::Frame);
        }
        r
    }

    /// The scheduled flush (`gather::Flush`, on a worker): write what is gathered until none
    /// is, which ends the gathering. Between two writes, while the peer still has bytes of ours
    /// to read, it lets frames gather for `GATHER_PAUSE` first (a sleep, not a poll): written
    /// as soon as they come, a flood's frames went two or three to a write.
    ///
    /// A bounded batch, as every job of the workers is (`dispatch.rs`): after `FLUSH_BATCH`
    /// writes it answers true with the gathering still on, and the job goes to the back of the
    /// queue, so that a flood's flush does not hold a worker from the other links' callbacks
    /// (their CREDIT, a service's request) for as long as the flood lasts.
    pub(super) fn flush_gathered(&self) -> bool {
        let mut ws = self.write_lock.lock();
        let mut first = true;
        for _ in 0..FLUSH_BATCH {
            if self.is_closed() {
                self.gather.lock().clear();
                return false;
            }
            if !first && self.gather.lock().is_on() && self.peer_behind() {
                drop(ws);
                std::thread::sleep(GATHER_PAUSE);
                ws = self.write_lock.lock();
            }
            first = false;
            if !self.gather.lock().take(&mut ws.out, true) {
                return false;
            }
            let r = write_all2(&self.stream, &ws.out, &[]);
            if r.is_err() {
                drop(ws);
                let _ = self.after_write(r);
                self.gather.lock().clear();
                return false;
            }
            self.wrote(&mut ws, Wrote::Frame);
        }
        // The gathering is still on (only the flush ends it): the rest in the next batch.
        true
    }

    /// Before an orderly close (the transport's shutdown): write what is gathered, waiting for
    /// room in the socket until `until` at most, so that a node that publishes and then shuts
    /// down has every frame in the socket as it would without the gathering, while a peer that
    /// reads nothing cannot hold the shutdown. Never blocks past `until`: the write lock is
    /// waited for until then (a flush may hold it in a write to a peer that reads nothing),
    /// and written with MSG_DONTWAIT, waiting in `poll` for room.
    pub(crate) fn drain_gathered(&self, until: Instant) {
        let Some(mut ws) = self.write_lock.try_lock_until(until) else {
            return;
        };
        let mut out = std::mem::take(&mut ws.out);
        while !self.is_closed() && self.gather.lock().take(&mut out, true) {
            if write_all_until(&self.stream, &out, until).is_err() {
                break;
            }
            self.wrote(&mut ws, Wrote::Frame);
        }
        ws.out = out;
    }
}

/// Write `bytes` completely without blocking past `until`: each write MSG_DONTWAIT, and `poll`
/// for room between them. `TimedOut` when the socket had no room by then.
pub(super) fn write_all_until(w: &UnixStream, mut bytes: &[u8], until: Instant) -> io::Result<()> {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    let flags = MsgFlags::MSG_NOSIGNAL | MsgFlags::MSG_DONTWAIT;
    while !bytes.is_empty() {
        match sendmsg::<()>(w.as_raw_fd(), &[IoSlice::new(bytes)], &[], flags, None) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => bytes = &bytes[n..],
            Err(Errno::EINTR) => {}
            Err(Errno::EAGAIN) => {
                let left = until.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Err(io::ErrorKind::TimedOut.into());
                }
                let ms = u16::try_from(left.as_millis().max(1)).unwrap_or(u16::MAX);
                let mut fds = [PollFd::new(w.as_fd(), PollFlags::POLLOUT)];
                match poll(&mut fds, PollTimeout::from(ms)) {
                    Ok(_) | Err(Errno::EINTR) => {}
                    Err(e) => return Err(e.into()),
                }
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_frame_starts_a_gathering_and_the_flush_that_finds_it_empty_ends_it() {
        let mut g = Gathered::default();
        assert!(!g.is_on());
        g.head = b"h".to_vec();
        assert!(g.append(b"1"));
        assert!(g.is_on());
        assert!(!g.append(b"2"));
        let mut out = Vec::new();
        assert!(g.take(&mut out, true));
        assert_eq!(out, b"h1h2");
        // Still on: something may have been gathered after the take, and the flush looks again.
        assert!(g.is_on());
        assert!(!g.take(&mut out, false));
        assert!(g.is_on());
        assert!(!g.take(&mut out, true));
        assert!(!g.is_on());
        assert!(g.append(b"3"));
    }

    #[test]
    fn a_gathering_is_full_at_one_read_buffer() {
        let mut g = Gathered::default();
        let frame = vec![7u8; 1000];
        let mut n = 0;
        while !g.is_full() {
            g.append(&frame);
            n += 1;
        }
        assert_eq!(n, GATHER_MAX.div_ceil(1000));
    }
}
