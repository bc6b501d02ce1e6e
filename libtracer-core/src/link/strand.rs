//! A link's strand: the queue between the event loop, which reads the link's socket, and the
//! workers (`dispatch.rs`), which run its handler callbacks. One worker at a time drains a strand,
//! in order, so the link's callbacks run one at a time and each completely before the next
//! (docs/wire.md section 5).
//!
//! Back-pressure: a strand holds at most `QUEUE_EVENTS` events or `QUEUE_BYTES` of payload.
//! When it is full the loop stops reading that link, so the kernel's socket buffer fills and the
//! peer's writes wait, as they did when a reader thread was inside a long callback; the worker
//! that drains it to `RESUME_EVENTS` and `RESUME_BYTES` asks the loop to read again.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use tracer_shm::Release;

use super::dispatch::{self, Job};
use super::unix::UnixLink;
use super::{close_handler_failed, close_malformed, run_callback, Link, LinkHandler};
use crate::wire::Frame;

/// What a strand needs of its link beyond the `Link` seam: the Unix links have one, and the
/// QUIC links on the runtime-free engine will (docs/network.md section 4a, stage 2).
pub(crate) trait StrandLink: Link + 'static {
    /// Release a reference to the peer's memory at once (`Event::Release`).
    fn release_now(&self, token: u64);
    /// The strand has drained: its reader may read the link `token` again.
    fn resume(&self, token: usize);
    /// Whether the caller is the thread that reads the link: it may land a delivery itself.
    fn on_reader(&self) -> bool;
}

impl StrandLink for UnixLink {
    fn release_now(&self, token: u64) {
        Release::release(self, token);
    }
    fn resume(&self, token: usize) {
        super::unix_loop::resume(token);
    }
    fn on_reader(&self) -> bool {
        super::unix_loop::on_loop()
    }
}

/// A strand is full (the loop stops reading its link) at this many events ...
const QUEUE_EVENTS: usize = 64;
/// ... or this many payload bytes queued.
const QUEUE_BYTES: usize = 8 << 20;
/// Reading resumes once the worker has drained the strand to this many events and bytes.
const RESUME_EVENTS: usize = 16;
const RESUME_BYTES: usize = 2 << 20;
/// Events a worker handles for one link before it lets other links have the worker.
const EVENTS_PER_RUN: usize = 32;

/// What a link's strand carries to its worker.
pub(crate) enum Event {
    Up,
    Frame(Frame),
    /// Release a reference at once (its segment could not be mapped).
    Release(u64),
    /// The peer broke the protocol: tell it, then close.
    Malformed(String),
    Down,
}

impl Event {
    fn bytes(&self) -> usize {
        match self {
            Event::Frame(Frame::Delivery { payload, .. } | Frame::Write { payload, .. }) => {
                payload.len()
            }
            Event::Frame(Frame::ReadReply {
                value: Some((_, payload)),
                ..
            }) => payload.len(),
            _ => 0,
        }
    }
}

#[derive(Default)]
struct Queue {
    events: VecDeque<Event>,
    bytes: usize,
    /// Queued for a worker, or running on one.
    scheduled: bool,
    /// Full when last pushed to: the loop waits for a resume.
    paused: bool,
}

/// What runs before `on_down` (the transport drops the link from its table there).
pub(crate) type OnExit<L> = Box<dyn FnOnce(&Arc<L>) + Send>;

/// What the transport runs around a link's callbacks.
pub(crate) struct Hooks<L = UnixLink> {
    /// Runs once `on_up` returned (whatever it answered).
    pub after_up: Option<Box<dyn FnOnce() + Send>>,
    /// Runs before `on_down` (the transport drops the link from its table there).
    pub on_exit: Option<OnExit<L>>,
    /// Runs after `on_down` returned.
    pub on_done: Option<Box<dyn FnOnce() + Send>>,
}

/// One link's events, handled in order by one worker at a time.
pub(crate) struct Strand<L: StrandLink = UnixLink> {
    link: Arc<L>,
    dyn_link: Arc<dyn Link>,
    handler: Arc<dyn LinkHandler>,
    /// The link's token in the loop.
    token: usize,
    q: Mutex<Queue>,
    /// A callback panicked: no more callbacks but `on_down`.
    failed: AtomicBool,
    hooks: Mutex<Hooks<L>>,
}

impl<L: StrandLink> Strand<L> {
    pub(crate) fn new(
        link: Arc<L>,
        handler: Arc<dyn LinkHandler>,
        token: usize,
        hooks: Hooks<L>,
    ) -> Arc<Strand<L>> {
        let dyn_link: Arc<dyn Link> = link.clone();
        Arc::new(Strand {
            link,
            dyn_link,
            handler,
            token,
            q: Mutex::new(Queue::default()),
            failed: AtomicBool::new(false),
            hooks: Mutex::new(hooks),
        })
    }

    /// Queue `ev`; false when the strand is now full (the loop should stop reading).
    ///
    /// A DELIVERY to an idle strand (nothing queued, no worker on it) given by the loop thread
    /// is handled right here instead: it only lands a sample in its target (a ring push and a
    /// wake-up, or a sink, which must not block), and the strand is marked busy meanwhile, so
    /// order and one-at-a-time hold as if a worker ran it. Views evicted by the landing release
    /// without blocking (`unix_rx::Releaser`).
    pub(crate) fn push(self: &Arc<Self>, ev: Event) -> bool {
        let mut q = self.q.lock();
        if !q.scheduled
            && q.events.is_empty()
            && matches!(ev, Event::Frame(Frame::Delivery { .. }))
            && self.link.on_reader()
        {
            q.scheduled = true;
            drop(q);
            self.handle(ev);
            let mut q = self.q.lock();
            if q.events.is_empty() {
                q.scheduled = false;
            } else {
                // Queued by another thread meanwhile (only the loop queues frames): a worker
                // takes them, after what ran here.
                drop(q);
                let job: Arc<dyn Job> = self.clone();
                dispatch::schedule(job);
            }
            return true;
        }
        q.bytes += ev.bytes();
        q.events.push_back(ev);
        let full = q.events.len() >= QUEUE_EVENTS || q.bytes >= QUEUE_BYTES;
        if full {
            q.paused = true;
        }
        if !q.scheduled {
            q.scheduled = true;
            drop(q);
            let job: Arc<dyn Job> = self.clone();
            dispatch::schedule(job);
        }
        !full
    }

    fn handle(&self, ev: Event) {
        let link = &self.link;
        match ev {
            Event::Up => {
                let ok = run_callback(|| self.handler.on_up(self.dyn_link.clone()));
                if let Some(f) = self.hooks.lock().after_up.take() {
                    f();
                }
                if !ok {
                    self.failed.store(true, Ordering::Release);
                    close_handler_failed(&**link);
                }
            }
            Event::Frame(frame) => {
                if self.failed.load(Ordering::Acquire) {
                    return;
                }
                if !run_callback(|| self.handler.on_frame(&self.dyn_link, frame)) {
                    self.failed.store(true, Ordering::Release);
                    close_handler_failed(&**link);
                }
            }
            Event::Release(token) => link.release_now(token),
            Event::Malformed(why) => close_malformed(&**link, &why),
            Event::Down => {
                link.close();
                let (on_exit, on_done) = {
                    let mut h = self.hooks.lock();
                    (h.on_exit.take(), h.on_done.take())
                };
                if let Some(f) = on_exit {
                    f(link);
                }
                let _ = run_callback(|| self.handler.on_down(&self.dyn_link));
                if let Some(f) = on_done {
                    f();
                }
            }
        }
    }
}

impl<L: StrandLink> Job for Strand<L> {
    fn run(&self) -> bool {
        for _ in 0..EVENTS_PER_RUN {
            let (ev, resume) = {
                let mut q = self.q.lock();
                let Some(ev) = q.events.pop_front() else {
                    q.scheduled = false;
                    return false;
                };
                q.bytes -= ev.bytes();
                let resume = q.paused && q.events.len() <= RESUME_EVENTS && q.bytes <= RESUME_BYTES;
                if resume {
                    q.paused = false;
                }
                (ev, resume)
            };
            if resume {
                self.link.resume(self.token);
            }
            self.handle(ev);
        }
        true
    }
}
