//! Reliable streams across a link that went and came back (docs/network.md section 6): what a
//! reliable subscription has admitted from each writer, so that the publisher's history,
//! replayed when the edge is made again, adds only what the subscription had not got.
//!
//! The subscription's ring runs [`Resume::admit`] on every sample before it lands (the core's
//! stream filter); the registry asks [`Resume::rewire`] whether an edge it makes to a peer is a
//! first one (volatile as the QoS says) or a re-made one (replay the history, then go on).
//!
//! A writer's sequence numbers go up by one per publication, and a reliable edge delivers them
//! all in order, so a jump is samples that never came: a cut longer than the publisher's resend
//! window (its oldest samples were gone when the edge was made again), or a sender that had to
//! shed them. [`Resume::take_gaps`] counts them, and the subscription reports them as lost
//! messages with its ring's overflow (`RMW_EVENT_MESSAGE_LOST`).

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use libtracer_core::{Sample, WriterId};
use parking_lot::Mutex;

/// How many writers a subscription remembers; the oldest is forgotten past it. A forgotten
/// writer's next replay is judged by the time floor alone.
const MAX_WRITERS: usize = 4096;

/// One reliable subscription's memory of what it admitted.
#[derive(Default)]
pub struct Resume {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// The highest sequence admitted from each writer.
    last: HashMap<WriterId, u64>,
    /// `last`'s writers, oldest first, to bound it.
    order: VecDeque<WriterId>,
    /// Samples skipped by sequence jumps since the last [`Resume::take_gaps`].
    gaps: u64,
    /// Each peer this subscription has been wired to: when the first edge was made (ns since
    /// the Unix epoch), and whether an edge has been made again since.
    peers: HashMap<String, Peer>,
}

#[derive(Clone, Copy)]
struct Peer {
    first_wired_ns: i64,
    rewired: bool,
}

fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .as_nanos() as i64
}

impl Resume {
    /// An edge to `peer` is about to be made: true if one was made before (the new edge should
    /// replay the publisher's history, which [`Resume::admit`] then filters).
    pub fn rewire(&self, peer: &str) -> bool {
        let mut st = self.state.lock();
        match st.peers.get_mut(peer) {
            Some(p) => {
                p.rewired = true;
                true
            }
            None => {
                st.peers.insert(
                    peer.to_owned(),
                    Peer {
                        first_wired_ns: now_ns(),
                        rewired: false,
                    },
                );
                false
            }
        }
    }

    /// Whether `s` lands in the subscription's ring:
    /// - a sample with no sequence (not a ROS publisher's) always does;
    /// - from a writer admitted before, only a sequence above the last admitted one: the
    ///   replay repeats what arrived before the link went;
    /// - from a writer never admitted, over a peer whose edge was made again, only a sample
    ///   written after the first edge to that peer was made: older ones were written before
    ///   this volatile subscription matched (this compares the two hosts' clocks, as lifespan
    ///   does; docs/network.md says so).
    pub fn admit(&self, s: &Sample) -> bool {
        let seq = s.meta.sequence;
        if seq == 0 {
            return true;
        }
        let mut guard = self.state.lock();
        let st = &mut *guard;
        if let Some(last) = st.last.get_mut(&s.meta.writer) {
            if seq <= *last {
                return false;
            }
            let skipped = seq - *last - 1;
            *last = seq;
            st.gaps = st.gaps.saturating_add(skipped);
            return true;
        }
        if let Some(p) = s.origin.as_deref().and_then(|o| st.peers.get(o)) {
            if p.rewired && s.meta.source_timestamp_ns < p.first_wired_ns {
                return false;
            }
        }
        st.last.insert(s.meta.writer, seq);
        st.order.push_back(s.meta.writer);
        if st.order.len() > MAX_WRITERS {
            if let Some(old) = st.order.pop_front() {
                st.last.remove(&old);
            }
        }
        true
    }

    /// Samples that sequence jumps showed missing since the last call (never counted twice: a
    /// late sample at or below a writer's last admitted one is not admitted).
    pub fn take_gaps(&self) -> u64 {
        std::mem::take(&mut self.state.lock().gaps)
    }

    /// Whether `take_gaps` would count anything.
    pub fn has_gaps(&self) -> bool {
        self.state.lock().gaps > 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use libtracer_core::{Meta, Payload};

    fn sample(writer: u8, seq: u64, ts: i64, origin: Option<&str>) -> Sample {
        Sample {
            payload: Payload::from(vec![0u8; 4]),
            meta: Meta {
                source_timestamp_ns: ts,
                sequence: seq,
                writer: [writer; 16],
            },
            received_timestamp_ns: 0,
            suffix: None,
            origin: origin.map(Into::into),
            credit: Default::default(),
        }
    }

    #[test]
    fn a_replay_adds_only_what_was_not_admitted() {
        let r = Resume::default();
        assert!(!r.rewire("p"));
        for seq in 1..=5 {
            assert!(r.admit(&sample(1, seq, now_ns(), Some("p"))));
        }
        assert!(r.rewire("p"));
        let admitted: Vec<u64> = (1..=8)
            .filter(|&seq| r.admit(&sample(1, seq, now_ns(), Some("p"))))
            .collect();
        assert_eq!(admitted, vec![6, 7, 8]);
        // Unsequenced samples are never judged.
        assert!(r.admit(&sample(1, 0, 0, Some("p"))));
    }

    #[test]
    fn a_new_writer_replayed_after_a_rewire_keeps_only_what_followed_the_first_match() {
        let r = Resume::default();
        let before = now_ns() - 1_000_000_000;
        assert!(!r.rewire("p"));
        // First edge: a new writer's samples are live, whatever their stamps.
        assert!(r.admit(&sample(2, 1, before, Some("p"))));
        assert!(r.rewire("p"));
        assert!(!r.admit(&sample(3, 1, before, Some("p"))));
        assert!(r.admit(&sample(3, 2, now_ns(), Some("p"))));
        assert!(!r.admit(&sample(3, 2, now_ns(), Some("p"))));
        // Other peers and local samples are not touched by p's floor.
        assert!(r.admit(&sample(4, 1, before, Some("q"))));
        assert!(r.admit(&sample(5, 1, before, None)));
    }

    #[test]
    fn writers_are_bounded() {
        let r = Resume::default();
        for w in 0..(MAX_WRITERS + 10) {
            let mut s = sample(0, 1, 0, None);
            s.meta.writer[..8].copy_from_slice(&(w as u64).to_le_bytes());
            assert!(r.admit(&s));
        }
        assert_eq!(r.state.lock().last.len(), MAX_WRITERS);
    }

    #[test]
    fn sequence_jumps_are_counted_once_as_gaps() {
        let r = Resume::default();
        // A writer's first sample sets where it starts: what came before the match is no gap.
        assert!(r.admit(&sample(1, 40, now_ns(), Some("p"))));
        assert!(r.admit(&sample(1, 41, now_ns(), Some("p"))));
        assert_eq!(r.take_gaps(), 0);
        // A cut outlasted the window: 42..=49 never came.
        assert!(r.admit(&sample(1, 50, now_ns(), Some("p"))));
        // A late one below the last admitted is not admitted and changes nothing.
        assert!(!r.admit(&sample(1, 45, now_ns(), Some("p"))));
        // Writers are apart; unsequenced samples are never judged.
        assert!(r.admit(&sample(2, 7, now_ns(), None)));
        assert!(r.admit(&sample(2, 9, now_ns(), None)));
        assert!(r.admit(&sample(1, 0, 0, None)));
        assert_eq!(r.take_gaps(), 8 + 1);
        assert_eq!(r.take_gaps(), 0);
    }
}
