//! When to connect again to a peer whose connection could not be made (its listener's queue
//! full, a handshake that timed out or was dropped while hundreds of graphs start at once) or
//! was lost while the peer may live on (closed by the liveness check, or by the peer's): the
//! peers due, each with its backoff. The transport's one redial thread (made when something is
//! due, gone when nothing is) takes them in order (docs/wire.md, "Redial").

use std::collections::HashMap;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

/// The first retry's delay; each failed attempt doubles it, up to `MAX_DELAY`.
const FIRST_DELAY: Duration = Duration::from_millis(100);
const MAX_DELAY: Duration = Duration::from_secs(5);

#[derive(Default)]
struct State {
    /// Peer -> (when, attempts failed so far).
    due: HashMap<String, (Instant, u32)>,
    /// A thread is taking them.
    running: bool,
    stopped: bool,
}

#[derive(Default)]
pub(crate) struct Redial {
    state: Mutex<State>,
    cv: Condvar,
}

/// The delay before attempt `failed + 1`.
pub(crate) fn backoff(failed: u32) -> Duration {
    FIRST_DELAY
        .saturating_mul(1u32 << failed.min(16))
        .min(MAX_DELAY)
}

impl Redial {
    /// Try `peer` again after the backoff for `failed` attempts (an earlier due time is kept).
    /// True when the caller must start the thread (none is running).
    pub(crate) fn schedule(&self, peer: &str, failed: u32) -> bool {
        let mut st = self.state.lock();
        if st.stopped {
            return false;
        }
        let at = Instant::now() + backoff(failed);
        let e = st.due.entry(peer.to_owned()).or_insert((at, failed));
        if at < e.0 {
            *e = (at, failed);
        }
        self.cv.notify_one();
        !std::mem::replace(&mut st.running, true)
    }

    /// The thread's next peer, once due, with its failed attempts so far; None when there is
    /// nothing left (or the transport stopped), and the thread must end: it is marked gone.
    pub(crate) fn next(&self) -> Option<(String, u32)> {
        let mut st = self.state.lock();
        loop {
            if st.stopped || st.due.is_empty() {
                st.running = false;
                return None;
            }
            let (peer, &(at, failed)) = st
                .due
                .iter()
                .min_by_key(|(_, (at, _))| *at)
                .expect("not empty");
            let now = Instant::now();
            if at <= now {
                let peer = peer.clone();
                st.due.remove(&peer);
                return Some((peer, failed));
            }
            self.cv.wait_for(&mut st, at - now);
        }
    }

    /// A thread could not be made: the next `schedule` tries again.
    pub(crate) fn thread_failed(&self) {
        self.state.lock().running = false;
    }

    pub(crate) fn stop(&self) {
        let mut st = self.state.lock();
        st.stopped = true;
        st.due.clear();
        self.cv.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_its_bound() {
        assert_eq!(backoff(0), FIRST_DELAY);
        assert_eq!(backoff(1), FIRST_DELAY * 2);
        assert_eq!(backoff(3), FIRST_DELAY * 8);
        assert_eq!(backoff(40), MAX_DELAY);
    }

    #[test]
    fn peers_come_due_in_order_and_the_thread_ends_when_none_is_left() {
        let r = Redial::default();
        assert!(r.schedule("b", 1), "the first schedule starts the thread");
        assert!(!r.schedule("a", 0), "one thread at a time");
        assert_eq!(r.next(), Some(("a".to_owned(), 0)));
        assert_eq!(r.next(), Some(("b".to_owned(), 1)));
        assert_eq!(r.next(), None);
        assert!(
            r.schedule("c", 0),
            "the thread ended: the next schedule starts one"
        );
        r.stop();
        assert_eq!(r.next(), None);
        assert!(!r.schedule("d", 0), "nothing after stop");
    }
}
