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

use std::sync::Weak;

use super::UnixLink;
use crate::link::dispatch::Job;

/// Frames larger than this are written as they are: gathering would only copy them once more
/// (the QUIC stage's bound).
pub(super) const GATHER_FRAME: usize = 16 << 10;
/// A frame written within this many microseconds of our last write asks whether the peer is
/// behind: a flood writes every few microseconds, a round trip on one host takes 30 us and more.
pub(super) const RECENT_US: u64 = 20;
/// How long the flush lets frames gather between two writes while the peer is still reading
/// the last (the kernel may add its timer slack, 50 us by default): the bound on how long a
/// gathered frame waits beyond the peer's own backlog.
pub(super) const GATHER_PAUSE: std::time::Duration = std::time::Duration::from_micros(20);
/// Writes of one run of the flush before it goes to the back of the workers' queue (a job runs
/// a bounded batch, `dispatch.rs`): 16 writes of up to `GATHER_MAX` with their pauses, about
/// half a millisecond of a flood.
pub(super) const FLUSH_BATCH: usize = 16;
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
