//! Every QUIC timer of the process behind one `timerfd` in the loop (docs/network.md section
//! 4a, "Timers"): each connection's next deadline is recorded here after every operation on
//! it, and the `timerfd` is armed at the earliest. A publisher whose write armed an earlier
//! deadline re-arms it from its own thread (one system call), instead of waking the loop to
//! recompute its sleep: the loop wakes only when a deadline is due.

use std::collections::{BTreeSet, HashMap};
use std::io;
use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::time::{Duration, Instant};

use nix::sys::time::TimeSpec;
use nix::sys::timerfd::{ClockId, Expiration, TimerFd, TimerFlags, TimerSetTimeFlags};
use parking_lot::Mutex;

pub(super) struct Clock {
    fd: TimerFd,
    deadlines: Mutex<Deadlines>,
}

#[derive(Default)]
struct Deadlines {
    by_time: BTreeSet<(Instant, u64)>,
    by_id: HashMap<u64, Instant>,
    /// When the `timerfd` fires; `None`: disarmed.
    armed: Option<Instant>,
}

impl Clock {
    pub(super) fn new() -> io::Result<Clock> {
        // Instant is CLOCK_MONOTONIC on Linux, so a deadline converts to a relative expiry.
        let fd = TimerFd::new(
            ClockId::CLOCK_MONOTONIC,
            TimerFlags::TFD_NONBLOCK | TimerFlags::TFD_CLOEXEC,
        )
        .map_err(io::Error::from)?;
        Ok(Clock {
            fd,
            deadlines: Mutex::default(),
        })
    }

    pub(super) fn raw_fd(&self) -> RawFd {
        self.fd.as_fd().as_raw_fd()
    }

    /// Timer `id`'s next deadline is `at` (`None`: it has none). The `timerfd` is re-armed only
    /// when `at` comes before what it is armed at; a later one is left for the loop, which
    /// finds it when the earlier expiry wakes it (at most one early wake-up).
    pub(super) fn set(&self, id: u64, at: Option<Instant>) {
        let mut d = self.deadlines.lock();
        if let Some(old) = d.by_id.remove(&id) {
            d.by_time.remove(&(old, id));
        }
        let Some(at) = at else { return };
        d.by_id.insert(id, at);
        d.by_time.insert((at, id));
        if d.armed.is_none_or(|armed| at < armed) {
            self.arm(&mut d, Some(at));
        }
    }

    /// Tests: timer `id`'s recorded deadline.
    #[cfg(test)]
    pub(super) fn deadline(&self, id: u64) -> Option<Instant> {
        self.deadlines.lock().by_id.get(&id).copied()
    }

    /// For the loop, when the `timerfd` is readable: the timers due by `now` (taken out; the
    /// caller runs them, which records their next deadlines), and the `timerfd` re-armed at
    /// the earliest deadline left.
    pub(super) fn due(&self, now: Instant, out: &mut Vec<u64>) {
        // Clears its readiness; nothing to read (a spurious or early wake-up) is fine.
        let _ = nix::unistd::read(self.raw_fd(), &mut [0u8; 8]);
        let mut d = self.deadlines.lock();
        while let Some(&(at, id)) = d.by_time.first() {
            if at > now {
                break;
            }
            d.by_time.pop_first();
            d.by_id.remove(&id);
            out.push(id);
        }
        let next = d.by_time.first().map(|&(at, _)| at);
        self.arm(&mut d, next);
    }

    fn arm(&self, d: &mut Deadlines, at: Option<Instant>) {
        d.armed = at;
        let r = match at {
            // A zero expiry would disarm it: at least a nanosecond.
            Some(at) => {
                let left = at
                    .saturating_duration_since(Instant::now())
                    .max(Duration::from_nanos(1));
                self.fd.set(
                    Expiration::OneShot(TimeSpec::from_duration(left)),
                    TimerSetTimeFlags::empty(),
                )
            }
            None => self.fd.unset(),
        };
        // timerfd_settime fails only for invalid arguments; were it to fail, the timers would
        // run at the loop's next turn instead of on time.
        debug_assert!(r.is_ok(), "timerfd_settime: {r:?}");
    }
}
