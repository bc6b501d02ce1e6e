//! The receiving end of a service (its requests) or of a client (its responses): a sink vertex
//! whose function queues each sample, bounded like a subscription ring, raises a readiness for
//! `rmw_wait` and calls the on-new-request / on-new-response callback.
//!
//! A sink rather than a stream vertex because rmw wants a callback per arrival and the core
//! has no hook on a ring; writes at a sink are still delivered to its edges, so a recorder can
//! subscribe to a service's requests as to any vertex.

use std::sync::Arc;

use libtracer_core::{Readiness, Ring, Sample, Signal, SinkFn, StreamOptions};
use parking_lot::Mutex;

use crate::boundary::event_callback::EventCallback;

/// A bounded queue of samples with a readiness and a new-data callback. Cheap `Clone`.
#[derive(Clone)]
pub struct Inbox(Arc<Shared>);

struct Shared {
    state: Mutex<State>,
    /// Raised while the queue is non-empty.
    ready: Signal,
}

struct State {
    /// The core's ring: the same bounds and overflow as a subscription's.
    queue: Ring,
    /// Arrivals not yet reported to a callback (reported at once when one is set).
    unreported: usize,
    callback: Option<EventCallback>,
}

impl Inbox {
    /// A queue with `bounds` (0 = unbounded for that bound; the oldest sample goes first).
    pub fn new(bounds: StreamOptions) -> Inbox {
        Inbox(Arc::new(Shared {
            state: Mutex::new(State {
                queue: Ring::new(bounds.depth, bounds.byte_budget),
                unreported: 0,
                callback: None,
            }),
            ready: Signal::new(),
        }))
    }

    /// The function of the sink vertex that feeds this queue.
    pub fn sink(&self) -> SinkFn {
        let me = self.clone();
        Arc::new(move |s: &Sample| me.push(s.clone()))
    }

    /// Queue `s` (called on the delivering thread: never blocks beyond the queue lock).
    pub fn push(&self, s: Sample) {
        let callback = {
            let mut st = self.0.state.lock();
            st.queue.push(s);
            self.0.ready.raise();
            match st.callback {
                Some(cb) => Some(cb),
                None => {
                    st.unreported += 1;
                    None
                }
            }
        };
        // Outside the lock: the callback may come straight back to take.
        if let Some(cb) = callback {
            cb.call(1);
        }
    }

    /// The oldest queued sample.
    pub fn pop(&self) -> Option<Sample> {
        let mut st = self.0.state.lock();
        let s = st.queue.pop();
        if st.queue.is_empty() {
            self.0.ready.clear();
        }
        s
    }

    pub fn len(&self) -> usize {
        self.0.state.lock().queue.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Ready while the queue holds a sample.
    pub fn readiness(&self) -> Readiness {
        self.0.ready.readiness()
    }

    /// Install (or, with `None`, clear) the new-data callback. Arrivals that no callback has
    /// heard of yet are reported to a new one at once, as rmw documents.
    pub fn set_callback(&self, cb: Option<EventCallback>) {
        let backlog = {
            let mut st = self.0.state.lock();
            st.callback = cb;
            match cb {
                Some(_) => std::mem::take(&mut st.unreported),
                None => 0,
            }
        };
        if let (Some(cb), n) = (cb, backlog) {
            if n > 0 {
                cb.call(n);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use libtracer_core::{Meta, Payload, Waiter};
    use std::ffi::c_void;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    fn sample(seq: u64) -> Sample {
        Sample {
            payload: Payload::from(vec![0u8; 4]),
            meta: Meta {
                sequence: seq,
                ..Meta::default()
            },
            received_timestamp_ns: 0,
            suffix: None,
            origin: None,
        }
    }

    #[test]
    fn keeps_the_newest_depth_samples() {
        let inbox = Inbox::new(StreamOptions::keep_last(2));
        for i in 1..=5 {
            inbox.push(sample(i));
        }
        assert_eq!(inbox.len(), 2);
        assert_eq!(inbox.pop().map(|s| s.meta.sequence), Some(4));
        assert_eq!(inbox.pop().map(|s| s.meta.sequence), Some(5));
        assert!(inbox.pop().is_none());
    }

    /// The inbox is bounded like a subscription ring (libtracer-core's `Ring`): the byte bound
    /// keeps the newest sample even when it alone is over budget, and 0 means unbounded.
    #[test]
    fn byte_bound_keeps_the_newest_and_zero_is_unbounded() {
        let inbox = Inbox::new(StreamOptions {
            depth: 0,
            byte_budget: 6,
        });
        for i in 1..=3 {
            inbox.push(sample(i));
        }
        assert_eq!(inbox.len(), 1);
        assert_eq!(inbox.pop().map(|s| s.meta.sequence), Some(3));
        let unbounded = Inbox::new(StreamOptions::default());
        for i in 1..=2000 {
            unbounded.push(sample(i));
        }
        assert_eq!(unbounded.len(), 2000);
    }

    #[test]
    fn readiness_follows_the_queue() {
        let inbox = Inbox::new(StreamOptions::default());
        let w = Waiter::new();
        w.attach(&inbox.readiness());
        assert!(!w.wait(Some(Duration::ZERO)));
        inbox.push(sample(1));
        assert!(w.wait(Some(Duration::ZERO)));
        inbox.pop();
        assert!(!w.wait(Some(Duration::ZERO)));
    }

    static CALLS: AtomicUsize = AtomicUsize::new(0);
    static EVENTS: AtomicUsize = AtomicUsize::new(0);

    #[allow(unsafe_code)]
    unsafe extern "C" fn count(_user: *const c_void, n: usize) {
        CALLS.fetch_add(1, Ordering::SeqCst);
        EVENTS.fetch_add(n, Ordering::SeqCst);
    }

    #[test]
    #[allow(unsafe_code)]
    fn callback_hears_the_backlog_then_each_arrival() {
        let inbox = Inbox::new(StreamOptions::default());
        inbox.push(sample(1));
        inbox.push(sample(2));
        // SAFETY: `count` is a plain function that ignores its user data.
        let cb = unsafe { EventCallback::new(Some(count), std::ptr::null()) };
        inbox.set_callback(cb);
        assert_eq!(CALLS.load(Ordering::SeqCst), 1);
        assert_eq!(EVENTS.load(Ordering::SeqCst), 2);
        inbox.push(sample(3));
        assert_eq!(CALLS.load(Ordering::SeqCst), 2);
        assert_eq!(EVENTS.load(Ordering::SeqCst), 3);
        inbox.set_callback(None);
        inbox.push(sample(4));
        assert_eq!(CALLS.load(Ordering::SeqCst), 2);
        assert_eq!(inbox.len(), 4);
    }
}
