//! The producer's end of a paced edge (docs/wire.md section 2, "Flow control"): the credit
//! its consumer granted, taken by each live sample handed to the edge and given back as the
//! consumer lets samples go; a writer that finds no room waits for it, up to its deadline.
//!
//! Credit is counted signed: a transient-local replay and writers racing past the same check
//! may take a little more than the window, which only delays the next write. Given-back credit
//! never lifts the count above the window.

use std::time::Instant;

use parking_lot::{Condvar, Mutex};

use crate::error::Error;
use crate::sample::CreditSink;
use crate::wire::policy::Window;

/// How long a write waits for room on a paced edge unless its caller says otherwise: Fast
/// DDS's default `max_blocking_time` for a reliable writer.
pub const DEFAULT_MAX_BLOCKING: std::time::Duration = std::time::Duration::from_millis(100);

pub(crate) struct Pacing {
    window: Window,
    state: Mutex<Room>,
    room: Condvar,
}

struct Room {
    messages: i64,
    bytes: i64,
    /// The edge went: nobody waits for it any more.
    closed: bool,
}

impl Pacing {
    pub(crate) fn new(window: Window) -> Pacing {
        Pacing {
            window,
            state: Mutex::new(Room {
                messages: i64::from(window.messages),
                bytes: signed(window.bytes),
                closed: false,
            }),
            room: Condvar::new(),
        }
    }

    fn fits(&self, r: &Room, len: u64) -> bool {
        let full_window = r.bytes >= signed(self.window.bytes);
        // A sample larger than the whole byte window goes when nothing is in flight.
        r.closed || (r.messages >= 1 && (r.bytes >= signed(len) || full_window))
    }

    /// Wait until a sample of `len` bytes fits, the edge goes, or `deadline` passes
    /// (`Err(Timeout)`). Takes nothing: `take` does, when the sample is handed over.
    pub(crate) fn wait_room(&self, len: u64, deadline: Instant) -> Result<(), Error> {
        let mut r = self.state.lock();
        while !self.fits(&r, len) {
            if self.room.wait_until(&mut r, deadline).timed_out() && !self.fits(&r, len) {
                return Err(Error::Timeout);
            }
        }
        Ok(())
    }

    /// A live sample of `len` bytes was handed to the edge.
    pub(crate) fn take(&self, len: u64) {
        let mut r = self.state.lock();
        r.messages -= 1;
        r.bytes -= signed(len);
    }

    /// Credit came back (CREDIT from the consumer, or an in-process sample let go).
    pub(crate) fn give(&self, back: Window) {
        let mut r = self.state.lock();
        r.messages = (r.messages + i64::from(back.messages)).min(i64::from(self.window.messages));
        let cap = signed(self.window.bytes);
        r.bytes = r.bytes.saturating_add(signed(back.bytes)).min(cap);
        drop(r);
        self.room.notify_all();
    }

    /// The edge went: release every writer waiting for it.
    pub(crate) fn close(&self) {
        self.state.lock().closed = true;
        self.room.notify_all();
    }
}

/// A byte count as the signed credit counts it (no window or sample comes near the clamp).
fn signed(n: u64) -> i64 {
    n.min(i64::MAX as u64) as i64
}

impl CreditSink for Pacing {
    fn give_back(&self, messages: u32, bytes: u64) {
        self.give(Window { messages, bytes });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    fn w(messages: u32, bytes: u64) -> Window {
        Window { messages, bytes }
    }

    #[test]
    fn a_writer_waits_for_credit_and_times_out_without_it() {
        let p = Pacing::new(w(2, 100));
        let soon = || Instant::now() + Duration::from_millis(20);
        p.wait_room(40, soon()).unwrap();
        p.take(40);
        p.wait_room(40, soon()).unwrap();
        p.take(40);
        assert!(matches!(p.wait_room(1, soon()), Err(Error::Timeout)));
        p.give(w(1, 40));
        p.wait_room(40, soon()).unwrap();
    }

    #[test]
    fn credit_never_exceeds_the_window_and_a_big_sample_goes_alone() {
        let p = Pacing::new(w(4, 100));
        p.give(w(10, 1000));
        let soon = || Instant::now() + Duration::from_millis(20);
        // 500 bytes > the whole window: it goes when nothing is in flight...
        p.wait_room(500, soon()).unwrap();
        p.take(500);
        // ...and then nothing more until it is given back.
        assert!(matches!(p.wait_room(1, soon()), Err(Error::Timeout)));
        p.give(w(1, 500));
        p.wait_room(100, soon()).unwrap();
    }

    #[test]
    fn closing_releases_a_waiting_writer() {
        let p = Arc::new(Pacing::new(w(1, 10)));
        p.take(10);
        let q = p.clone();
        let t =
            std::thread::spawn(move || q.wait_room(1, Instant::now() + Duration::from_secs(10)));
        std::thread::sleep(Duration::from_millis(20));
        p.close();
        assert!(t.join().unwrap().is_ok());
    }
}
