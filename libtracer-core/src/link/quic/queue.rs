//! The queue in front of one ordered QUIC stream (the control stream or a reliable edge stream)
//! and its bound (docs/network.md section 7, "Reliable overflow").
//!
//! Senders push frames; the stream takes them in order at each flush of the connection
//! (`send/`, told when to look: [`Queue::try_next`]). The queue holds at most
//! `QUEUE_BYTES` of frames the stream has not taken yet (the frame being written counts until
//! the stream has taken its bytes). A delivery that does not fit makes room by dropping the
//! oldest queued delivery of its own edge, else the oldest of any edge, never one whose writing
//! started: so a publisher never waits for the network. Every other frame (a WRITE, an answer,
//! a barrier marker, anything on the control stream) is [`Kind::Kept`]: it drops deliveries to
//! make room too, but is itself never dropped, and waits for room when only kept frames or the
//! frame in progress are left, as long as the stream takes bytes. A transient-local replay's
//! deliveries are [`Kind::Owed`]: never dropped, they drop nothing and never wait, and their
//! bytes are counted apart from the bound (what a replay holds is the source's history, which
//! its publisher holds anyway, and is owed in full: docs/network.md section 7).

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use super::streams::SendFail;
use crate::wire::{EdgeId, EncodedFrame};

/// Bytes a stream's queue holds before a new frame drops the oldest deliveries (or waits).
// 64 MiB, not 16: with 16 a reliable KEEP_ALL burst of 40 x 1 MiB to a live subscriber over a
// veth (tools/bench/net) lost 10-12 messages per round, since the publisher outruns the wire
// for a while; 64 MiB holds such a burst (docs/network.md section 7).
pub(crate) const QUEUE_BYTES: usize = 64 << 20;
/// Dropped slots are left in place and swept once there are this many and more than live ones.
const SWEEP_AT: usize = 64;

/// What [`Queue::try_next`] found.
pub(crate) enum Next {
    Frame(EncodedFrame),
    /// Nothing queued now.
    Empty,
    /// Closed, and nothing left.
    Closed,
}

/// What a frame is to the queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A DELIVERY of a reliable edge: dropped, oldest first, when the queue is full.
    Delivery(EdgeId),
    /// Never dropped; waits for room.
    Kept,
    /// A delivery of a transient-local replay: never dropped, never waits, takes no room.
    Owed,
}

struct Entry {
    /// Position in push order (entries stay sorted by it).
    seq: u64,
    /// The edge, for a delivery that may be dropped.
    edge: Option<EdgeId>,
    /// `None` once dropped.
    enc: Option<EncodedFrame>,
    /// A [`Kind::Owed`] frame, counted in `owed` until the writer takes it.
    owed: bool,
}

#[derive(Default)]
struct State {
    entries: VecDeque<Entry>,
    next_seq: u64,
    /// Each edge's queued deliveries (their `seq`), oldest first.
    by_edge: HashMap<EdgeId, VecDeque<u64>>,
    /// Dropped entries still in `entries`.
    holes: usize,
    /// Bytes queued, with what the stream has not yet taken of the frame being written.
    queued: usize,
    /// Of `queued`, the bytes of owed frames not taken by the writer yet: outside the bound.
    owed: usize,
    /// The most `queued` ever was.
    peak: usize,
    closed: bool,
}

/// One stream's queue, shared by its senders and the connection's flush.
pub(crate) struct Queue {
    state: Mutex<State>,
    /// Bytes were taken or deliveries dropped (a waiting sender looks again).
    freed: Condvar,
    /// Bytes the stream has taken so far (a waiting sender's sign of progress).
    taken: AtomicU64,
    bound: usize,
}

impl Queue {
    pub(crate) fn new(bound: usize) -> Queue {
        Queue {
            state: Mutex::new(State::default()),
            freed: Condvar::new(),
            taken: AtomicU64::new(0),
            bound,
        }
    }

    /// Queue `enc`. A delivery never waits; a kept frame waits for room (once the queue holds
    /// no delivery to drop) as long as the stream takes bytes: `wait` bounds the time without
    /// any byte taken, and zero means "do not wait". Returns how many deliveries were dropped.
    pub(crate) fn push(
        &self,
        enc: EncodedFrame,
        kind: Kind,
        wait: Duration,
    ) -> Result<u64, SendFail> {
        let n = enc.len();
        let mut dropped = 0;
        let mut deadline = Instant::now() + wait;
        let mut taken = self.taken.load(Ordering::Relaxed);
        let mut st = self.state.lock();
        loop {
            if st.closed {
                return Err(SendFail::Closed);
            }
            let held = st.queued - st.owed;
            if kind == Kind::Owed || held == 0 || held + n <= self.bound {
                break;
            }
            let own = match kind {
                Kind::Delivery(edge) => Some(edge),
                Kind::Kept | Kind::Owed => None,
            };
            if st.drop_oldest(own) {
                dropped += 1;
                continue;
            }
            // Nothing left to drop: a delivery goes in anyway (never waits), a kept frame waits.
            if matches!(kind, Kind::Delivery(_)) {
                break;
            }
            if wait.is_zero() {
                return Err(SendFail::Blocked);
            }
            let timed_out = self.freed.wait_until(&mut st, deadline).timed_out();
            let now_taken = self.taken.load(Ordering::Relaxed);
            if now_taken != taken {
                taken = now_taken;
                deadline = Instant::now() + wait;
            } else if timed_out {
                return Err(SendFail::Blocked);
            }
        }
        let seq = st.next_seq;
        st.next_seq += 1;
        let edge = match kind {
            Kind::Delivery(edge) => {
                st.by_edge.entry(edge).or_default().push_back(seq);
                Some(edge)
            }
            Kind::Kept | Kind::Owed => None,
        };
        let owed = kind == Kind::Owed;
        st.entries.push_back(Entry {
            seq,
            edge,
            enc: Some(enc),
            owed,
        });
        st.queued += n;
        if owed {
            st.owed += n;
        }
        st.peak = st.peak.max(st.queued);
        drop(st);
        Ok(dropped)
    }

    /// The next frame to write, oldest first, without waiting (the connection's flush is told
    /// when to look, docs/network.md section 4a); `Closed` once the queue is closed and empty.
    /// The frame's bytes stay counted until [`Queue::release`] hands them back.
    pub(crate) fn try_next(&self) -> Next {
        let mut st = self.state.lock();
        while let Some(e) = st.entries.pop_front() {
            let Some(enc) = e.enc else {
                st.holes -= 1;
                continue;
            };
            if let Some(edge) = e.edge {
                st.forget(edge, e.seq);
            }
            if e.owed {
                // Being written, it counts as the frame in progress does.
                st.owed -= enc.len();
            }
            return Next::Frame(enc);
        }
        if st.closed {
            Next::Closed
        } else {
            Next::Empty
        }
    }

    /// Whether nothing is queued (a writer need not open its stream yet).
    pub(crate) fn try_peek_empty(&self) -> bool {
        self.state.lock().entries.iter().all(|e| e.enc.is_none())
    }

    /// The stream took `n` bytes of the frame being written (or the writer gave up on them).
    pub(crate) fn release(&self, n: usize) {
        let mut st = self.state.lock();
        st.queued = st.queued.saturating_sub(n);
        self.taken.fetch_add(n as u64, Ordering::Relaxed);
        drop(st);
        self.freed.notify_all();
    }

    /// Take no more frames; the writer drains what is queued. A waiting sender fails at once.
    pub(crate) fn close(&self) {
        self.state.lock().closed = true;
        self.freed.notify_all();
    }

    /// The most bytes this queue ever held.
    pub(crate) fn peak(&self) -> usize {
        self.state.lock().peak
    }
}

impl State {
    /// Drop the oldest queued delivery of `edge`, or of any edge if `edge` has none (or is
    /// `None`). False when no delivery is queued.
    fn drop_oldest(&mut self, edge: Option<EdgeId>) -> bool {
        let own = edge.and_then(|e| self.by_edge.get(&e).and_then(|q| q.front().copied()));
        let seq = match own {
            Some(seq) => seq,
            None => match self
                .by_edge
                .values()
                .filter_map(|q| q.front().copied())
                .min()
            {
                Some(seq) => seq,
                None => return false,
            },
        };
        let Ok(i) = self.entries.binary_search_by_key(&seq, |e| e.seq) else {
            return false;
        };
        let e = &mut self.entries[i];
        let (Some(enc), Some(edge)) = (e.enc.take(), e.edge) else {
            return false;
        };
        self.queued = self.queued.saturating_sub(enc.len());
        self.forget(edge, seq);
        self.holes += 1;
        if self.holes >= SWEEP_AT && self.holes * 2 > self.entries.len() {
            self.entries.retain(|e| e.enc.is_some());
            self.holes = 0;
        }
        true
    }

    /// `seq` of `edge` left the queue (written or dropped); it is the edge's oldest.
    fn forget(&mut self, edge: EdgeId, seq: u64) {
        if let Some(q) = self.by_edge.get_mut(&edge) {
            if q.front() == Some(&seq) {
                q.pop_front();
            }
            if q.is_empty() {
                self.by_edge.remove(&edge);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(len: usize, tag: u8) -> EncodedFrame {
        EncodedFrame {
            head: vec![tag; len],
            payload: None,
        }
    }

    fn drain(q: &Queue) -> Vec<u8> {
        q.close();
        let mut out = Vec::new();
        while let Next::Frame(enc) = q.try_next() {
            q.release(enc.len());
            out.push(enc.head[0]);
        }
        out
    }

    #[test]
    fn a_writer_told_when_to_look_takes_the_frames_in_order_without_waiting() {
        let q = Queue::new(1 << 20);
        assert!(matches!(q.try_next(), Next::Empty));
        q.push(frame(10, 1), Kind::Kept, Duration::ZERO)
            .ok()
            .unwrap();
        q.push(frame(10, 2), Kind::Delivery(5), Duration::ZERO)
            .ok()
            .unwrap();
        for tag in [1, 2] {
            match q.try_next() {
                Next::Frame(enc) => assert_eq!(enc.head[0], tag),
                _ => panic!("frame {tag} missing"),
            }
        }
        assert!(matches!(q.try_next(), Next::Empty));
        q.close();
        assert!(matches!(q.try_next(), Next::Closed));
    }

    #[test]
    fn owed_frames_are_never_dropped_and_leave_the_bound_to_the_others() {
        let q = Queue::new(100);
        let push = |len, tag, kind| q.push(frame(len, tag), kind, Duration::ZERO);
        // A replay of 200 bytes into a bound of 100: all in, nothing dropped, nothing waits.
        for tag in 0..5 {
            assert_eq!(push(40, tag, Kind::Owed).ok(), Some(0));
        }
        // Live deliveries behind it still have the whole bound: two of 40 fit, the third
        // drops the oldest live one, never an owed one.
        assert_eq!(push(40, 10, Kind::Delivery(1)).ok(), Some(0));
        assert_eq!(push(40, 11, Kind::Delivery(1)).ok(), Some(0));
        assert_eq!(push(40, 12, Kind::Delivery(1)).ok(), Some(1));
        // A kept frame makes room among the live ones alone, and does not wait.
        assert_eq!(push(40, 50, Kind::Kept).ok(), Some(1));
        assert_eq!(drain(&q), vec![0, 1, 2, 3, 4, 12, 50]);
        assert_eq!(q.state.lock().owed, 0);
    }

    #[test]
    fn a_full_queue_drops_the_oldest_delivery_of_the_edge_first() {
        let q = Queue::new(100);
        // Edge 1: 10, 11; edge 2: 20; each 30 bytes: 90 queued.
        assert_eq!(
            q.push(frame(30, 10), Kind::Delivery(1), Duration::ZERO)
                .ok(),
            Some(0)
        );
        assert_eq!(
            q.push(frame(30, 20), Kind::Delivery(2), Duration::ZERO)
                .ok(),
            Some(0)
        );
        assert_eq!(
            q.push(frame(30, 11), Kind::Delivery(1), Duration::ZERO)
                .ok(),
            Some(0)
        );
        // Edge 1's oldest (10) goes, not edge 2's older one.
        assert_eq!(
            q.push(frame(30, 12), Kind::Delivery(1), Duration::ZERO)
                .ok(),
            Some(1)
        );
        // Edge 3 has none queued: the oldest of any edge (20) goes.
        assert_eq!(
            q.push(frame(30, 30), Kind::Delivery(3), Duration::ZERO)
                .ok(),
            Some(1)
        );
        assert!(q.peak() <= 100);
        assert_eq!(drain(&q), vec![11, 12, 30]);
    }

    #[test]
    fn kept_frames_are_never_dropped_and_wait_only_behind_kept_ones() {
        let q = Queue::new(100);
        q.push(frame(40, 1), Kind::Kept, Duration::ZERO)
            .ok()
            .unwrap();
        q.push(frame(40, 10), Kind::Delivery(1), Duration::ZERO)
            .ok()
            .unwrap();
        // A kept frame makes room by dropping the delivery.
        assert_eq!(
            q.push(frame(40, 2), Kind::Kept, Duration::ZERO).ok(),
            Some(1)
        );
        // Now only kept frames: another kept one cannot wait (zero) and is refused ...
        assert!(matches!(
            q.push(frame(40, 3), Kind::Kept, Duration::ZERO),
            Err(SendFail::Blocked)
        ));
        // ... and a delivery is queued anyway, over the bound (nothing left to drop).
        assert_eq!(
            q.push(frame(40, 11), Kind::Delivery(1), Duration::ZERO)
                .ok(),
            Some(0)
        );
        assert_eq!(q.peak(), 120);
        // The next delivery drops that one, so the excess is one delivery at most.
        assert_eq!(
            q.push(frame(40, 12), Kind::Delivery(1), Duration::ZERO)
                .ok(),
            Some(1)
        );
        assert_eq!(drain(&q), vec![1, 2, 12]);
    }

    #[test]
    fn dropped_slots_are_swept_so_a_stalled_queue_stays_bounded() {
        let q = Queue::new(10 * 64);
        // A kept frame at the front that is never written, then deliveries for ever.
        q.push(frame(64, 0), Kind::Kept, Duration::ZERO)
            .ok()
            .unwrap();
        let mut dropped = 0;
        for i in 0..10_000u32 {
            dropped += q
                .push(
                    frame(64, (i % 200) as u8 + 1),
                    Kind::Delivery(1),
                    Duration::ZERO,
                )
                .ok()
                .unwrap();
        }
        assert_eq!(dropped, 10_000 - 9);
        let st = q.state.lock();
        assert!(
            st.entries.len() <= 10 + 2 * SWEEP_AT,
            "{}",
            st.entries.len()
        );
        assert_eq!(st.queued, 10 * 64);
        drop(st);
        assert_eq!(drain(&q).len(), 10);
    }

    #[test]
    fn a_waiting_kept_frame_fails_when_the_queue_closes() {
        let q = std::sync::Arc::new(Queue::new(10));
        q.push(frame(10, 1), Kind::Kept, Duration::ZERO)
            .ok()
            .unwrap();
        let q2 = q.clone();
        let t =
            std::thread::spawn(move || q2.push(frame(10, 2), Kind::Kept, Duration::from_secs(60)));
        // Closing tells the sender at once, whether it is waiting for room already or not yet.
        q.close();
        assert!(matches!(t.join().unwrap(), Err(SendFail::Closed)));
    }
}
