//! A stream's bounded history ring: a message-count bound (`set_history_depth`) and a byte bound
//! (`set_ring_source`), both declared by the ring's owner. Overflow drops the oldest entries and
//! counts them. Push and pop are O(1) (amortised: a `VecDeque` grows, never shifts).
//!
//! The ring is not thread-safe by itself: each vertex keeps its ring behind its own lock, so
//! writers and readers of different rings never share a lock. It is public so that a queue
//! outside the core with the same bounds (rmw_tracer's service inbox) uses it rather than a
//! second copy.

use std::collections::VecDeque;

use crate::sample::Sample;

/// A bounded FIFO of samples: at most `depth` entries and `byte_budget` payload bytes (0 =
/// unbounded for that bound). Overflow drops the oldest entries and counts them
/// ([`Ring::take_dropped`]); the byte bound keeps the newest entry even when it alone is over
/// budget.
///
/// Not thread-safe by itself (it takes `&mut self`): its owner keeps it behind a lock.
#[derive(Debug, Default)]
pub struct Ring {
    q: VecDeque<Sample>,
    /// 0 = unbounded.
    depth: usize,
    /// 0 = unbounded.
    byte_budget: usize,
    bytes: usize,
    dropped: u64,
}

impl Ring {
    /// An empty ring; 0 = unbounded for that bound.
    pub fn new(depth: usize, byte_budget: usize) -> Ring {
        Ring {
            q: VecDeque::with_capacity(depth.clamp(1, 1024)),
            depth,
            byte_budget,
            ..Ring::default()
        }
    }

    /// Append `s`; returns how many of the oldest entries went to make room for it.
    pub fn push(&mut self, s: Sample) -> usize {
        self.bytes += s.payload.len();
        self.q.push_back(s);
        self.trim()
    }

    pub fn pop(&mut self) -> Option<Sample> {
        let s = self.q.pop_front()?;
        self.bytes -= s.payload.len();
        Some(s)
    }

    /// The byte bound never evicts the newest entry: one sample larger than the whole budget is
    /// kept (alone) rather than vanishing before any reader saw it.
    fn trim(&mut self) -> usize {
        let mut evicted = 0;
        while (self.depth > 0 && self.q.len() > self.depth)
            || (self.byte_budget > 0 && self.bytes > self.byte_budget && self.q.len() > 1)
        {
            if let Some(old) = self.q.pop_front() {
                self.bytes -= old.payload.len();
                self.dropped += 1;
                evicted += 1;
            }
        }
        evicted
    }

    /// Keep only the entries `keep` accepts, in order; returns how many went. They are not
    /// counted as dropped: the owner takes them back as if they had never come.
    pub fn retain(&mut self, mut keep: impl FnMut(&Sample) -> bool) -> usize {
        let before = self.q.len();
        let mut bytes = self.bytes;
        self.q.retain(|s| {
            let k = keep(s);
            if !k {
                bytes -= s.payload.len();
            }
            k
        });
        self.bytes = bytes;
        before - self.q.len()
    }

    pub fn set_depth(&mut self, depth: usize) {
        self.depth = depth;
        self.trim();
    }

    pub fn set_byte_budget(&mut self, budget: usize) {
        self.byte_budget = budget;
        self.trim();
    }

    pub fn len(&self) -> usize {
        self.q.len()
    }

    pub fn is_empty(&self) -> bool {
        self.q.is_empty()
    }

    /// The payload bytes held.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    pub(crate) fn newest(&self) -> Option<&Sample> {
        self.q.back()
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &Sample> {
        self.q.iter()
    }

    /// Entries dropped by overflow since the last call.
    pub fn take_dropped(&mut self) -> u64 {
        std::mem::take(&mut self.dropped)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::payload::{Meta, Payload};

    fn s(n: usize, seq: u64) -> Sample {
        Sample {
            payload: Payload::from(vec![0u8; n]),
            meta: Meta {
                sequence: seq,
                ..Meta::default()
            },
            received_timestamp_ns: 0,
            suffix: None,
            origin: None,
            credit: Default::default(),
        }
    }

    #[test]
    fn retain_keeps_order_and_bytes_and_counts_no_drop() {
        let mut r = Ring::new(0, 0);
        for i in 0..6u64 {
            r.push(s(i as usize + 1, i));
        }
        assert_eq!(r.retain(|x| x.meta.sequence % 2 == 0), 3);
        assert_eq!(r.len(), 3);
        assert_eq!(r.bytes(), 1 + 3 + 5);
        assert_eq!(r.take_dropped(), 0);
        let seqs: Vec<u64> = r.iter().map(|x| x.meta.sequence).collect();
        assert_eq!(seqs, vec![0, 2, 4]);
    }

    #[test]
    fn depth_drops_oldest_and_counts() {
        let mut r = Ring::new(2, 0);
        for i in 0..5 {
            r.push(s(1, i));
        }
        assert_eq!(r.len(), 2);
        assert_eq!(r.take_dropped(), 3);
        assert_eq!(r.take_dropped(), 0);
        assert_eq!(r.pop().unwrap().meta.sequence, 3);
        assert_eq!(r.pop().unwrap().meta.sequence, 4);
        assert!(r.pop().is_none());
    }

    #[test]
    fn byte_budget_keeps_the_newest_even_if_oversized() {
        let mut r = Ring::new(0, 10);
        r.push(s(4, 0));
        r.push(s(4, 1));
        assert_eq!(r.len(), 2);
        r.push(s(4, 2));
        assert_eq!(r.len(), 2);
        assert_eq!(r.bytes(), 8);
        r.push(s(100, 3));
        assert_eq!(r.len(), 1);
        assert_eq!(r.take_dropped(), 3);
        r.set_byte_budget(0);
        r.set_depth(0);
        for i in 0..1000 {
            r.push(s(1, i));
        }
        assert_eq!(r.len(), 1001);
    }
}
