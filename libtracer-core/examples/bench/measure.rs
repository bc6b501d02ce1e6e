//! Measuring: latency statistics, and one run of round trips as the link and graph drivers
//! record it.

use std::time::Instant;

use libtracer_core::Payload;
use parking_lot::{Condvar, MutexGuard};

#[derive(Clone, Debug)]
pub struct Stats {
    pub n: usize,
    pub mean_ns: f64,
    pub p50_ns: f64,
    pub p99_ns: f64,
}

pub fn stats(mut v: Vec<u64>) -> Stats {
    v.sort_unstable();
    let n = v.len();
    let pct = |p: f64| v[((n as f64 - 1.0) * p).round() as usize] as f64;
    Stats {
        n,
        mean_ns: v.iter().sum::<u64>() as f64 / n as f64,
        p50_ns: pct(0.5),
        p99_ns: pct(0.99),
    }
}

/// One run of round trips, shared between the thread that starts it and the thread that sees
/// each reply and sends the next message.
#[derive(Default)]
pub struct Run {
    pub payload: Payload,
    left: usize,
    pub t0: Option<Instant>,
    samples: Vec<u64>,
    pub done: bool,
}

impl Run {
    /// A run of `n` round trips of `size` bytes, reusing this run's payload when it has that size.
    pub fn next(&self, size: usize, n: usize) -> Run {
        let payload = if self.payload.len() == size {
            self.payload.clone()
        } else {
            Payload::from(vec![0x5au8; size])
        };
        Run {
            payload,
            left: n,
            samples: Vec::with_capacity(n),
            ..Run::default()
        }
    }

    /// A reply of `len` bytes arrived at `now`: record the round trip. True when the run wants
    /// the next message; false when it is done.
    pub fn arrived(&mut self, len: usize, now: Instant) -> bool {
        assert_eq!(len, self.payload.len(), "echo carried the payload");
        let dt = now.duration_since(self.t0.expect("sent")).as_nanos() as u64;
        self.samples.push(dt);
        self.left -= 1;
        if self.left == 0 {
            self.done = true;
        }
        !self.done
    }

    /// Wait (releasing `run`'s lock) until the run is done, then move its samples to `samples`.
    pub fn finish(run: &mut MutexGuard<'_, Run>, cv: &Condvar, samples: &mut Vec<u64>) {
        while !run.done {
            cv.wait(run);
        }
        assert_eq!(run.left, 0, "link went down during the run");
        samples.append(&mut run.samples);
    }
}
