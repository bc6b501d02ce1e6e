//! A waiting thread leads the links' loop (docs/network.md section 4a, "The waiting thread
//! reads"). A thread that blocks for readiness (rmw_wait, through `Waiter::wait_leading`) may,
//! instead of sleeping on its futex until the loop thread hands it a sample, wait in the loop's
//! epoll instance and take the loop's turns itself: a sample for it is then read, decoded and
//! landed by the thread that takes it, with no wake-up in between (the hand-off costs a 64 B
//! round trip more than the rest of the path, section 4a).
//!
//! Two epoll instances. The **links' instance** holds every source of the loop (Unix sockets,
//! the QUIC engine's sockets and timerfd) and the leader's poke. The loop thread waits on an
//! **instance of its own**, which holds its waker and the links' instance (an epoll descriptor
//! is pollable: it is readable while it has events). A leader waits on the links' instance
//! directly and, while it leads, the links' instance is switched off in the loop thread's
//! (`EPOLL_CTL_MOD` with no events), so the leader alone is woken by the links, and switched on
//! again when it gives the lead back: what came meanwhile then wakes the loop thread at once.
//! Every turn runs under the loop state's lock (`unix_loop::LoopState`), whichever thread takes
//! it, so no source is serviced by two threads at once; the waker, the commands it announces and
//! the liveness tick stay with the loop thread. (One instance for both, relying on the kernel
//! waking the waiter that began last, was tried first: a poke taken by the loop thread had to be
//! passed on, and with both threads on one CPU the two passed it back and forth for a whole
//! scheduler slice, 3 ms at the p99 of a round trip.)
//!
//! One thread leads at a time; another waiting thread sleeps on its futex as before. A leader
//! wakes for what the links do not bring (a guard condition, an intra-process sample) by its
//! poke: its `Waiter`'s notify writes an eventfd in the links' instance, where only the leader
//! waits.

use std::cell::Cell;
use std::io;
use std::os::fd::{AsFd, AsRawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use mio::unix::SourceFd;
use mio::{Interest, Registry, Token};
use nix::poll::PollTimeout;
use nix::sys::epoll::{Epoll, EpollCreateFlags, EpollEvent, EpollFlags};
use nix::sys::eventfd::{EfdFlags, EventFd};

use crate::ready::Waiter;

/// Events one leader's `epoll_wait` takes at most.
const EVENTS: usize = 64;

thread_local! {
    /// The calling thread leads the loop now.
    static LEADING: Cell<bool> = const { Cell::new(false) };
}

/// The two instances and the lead.
pub(super) struct Shared {
    /// A second descriptor of the links' instance (mio's, whose registry adds the sources).
    links: Epoll,
    /// The loop thread's own instance: the waker and the links' instance.
    own: Epoll,
    /// The loop thread's waker (in `own`).
    waker: EventFd,
    /// The leader's poke (in `links`).
    poke: EventFd,
    /// A thread leads.
    taken: AtomicBool,
    /// The leader is in `epoll_wait` or about to be (it has yet to look at its readiness
    /// once more): a poke must reach it.
    waiting: AtomicBool,
}

/// The keys of the loop thread's own instance: its waker, and the links' instance.
const WAKER: u64 = 0;
const LINKS: u64 = 1;

impl Shared {
    /// `registry`: the links' instance; `poke`: the token the loop's turn knows the poke by.
    pub(super) fn new(registry: &Registry, poke: Token) -> io::Result<Shared> {
        let links = Epoll(registry.as_fd().try_clone_to_owned()?);
        let own = Epoll::new(EpollCreateFlags::EPOLL_CLOEXEC)?;
        let fd = || EventFd::from_flags(EfdFlags::EFD_NONBLOCK | EfdFlags::EFD_CLOEXEC);
        let (waker_fd, poke_fd) = (fd()?, fd()?);
        let edge = EpollFlags::EPOLLIN | EpollFlags::EPOLLET;
        own.add(&waker_fd, EpollEvent::new(edge, WAKER))?;
        // Level-triggered: readable while the links have events for the loop thread.
        own.add(&links.0, EpollEvent::new(EpollFlags::EPOLLIN, LINKS))?;
        registry.register(
            &mut SourceFd(&poke_fd.as_fd().as_raw_fd()),
            poke,
            Interest::READABLE,
        )?;
        Ok(Shared {
            links,
            own,
            waker: waker_fd,
            poke: poke_fd,
            taken: AtomicBool::new(false),
            waiting: AtomicBool::new(false),
        })
    }

    /// Wake the loop thread.
    pub(super) fn wake(&self) {
        let _ = self.waker.write(1);
    }

    /// The loop thread: wait up to `timeout` on its own instance; then, if the links' instance
    /// was ready there, `poll` (the links' instance, through mio) takes the links' events
    /// without waiting. Woken by its waker or its timeout alone, the loop thread leaves the
    /// links' events alone: while a thread leads they are the leader's (a turn of the loop
    /// thread that took them would do the leader's work and could take its poke).
    pub(super) fn loop_wait(
        &self,
        poll: &mut mio::Poll,
        events: &mut mio::Events,
        timeout: Option<Duration>,
    ) -> io::Result<()> {
        let mut ready = [EpollEvent::empty(); 2];
        let n = self.own.wait(&mut ready, ms(timeout))?;
        if ready[..n].iter().any(|e| e.data() == WAKER) {
            // The waker's count, so that it never fills.
            let _ = self.waker.read();
        }
        if ready[..n].iter().any(|e| e.data() == LINKS) {
            poll.poll(events, Some(Duration::ZERO))
        } else {
            events.clear();
            Ok(())
        }
    }

    /// A turn met the poke. The leader's own turn clears its count, so that it never fills. A
    /// turn of the loop thread can meet it too: one woken by the links just before a thread
    /// took the lead takes the links' events after it did. A leader that waits would then
    /// sleep through its wake-up (until its deadline, or for ever without one), so the poke
    /// is written again for it.
    pub(super) fn poked(&self) {
        let _ = self.poke.read();
        if !LEADING.with(Cell::get) && self.waiting.load(Ordering::SeqCst) {
            let _ = self.poke.write(1);
        }
    }

    /// Wake the leader (from `Waiter`'s notify, when its waiter leads).
    pub(super) fn poke(&self) {
        if self.waiting.load(Ordering::SeqCst) {
            let _ = self.poke.write(1);
        }
    }

    /// Take the lead, if no thread has it: the links' instance goes off in the loop thread's.
    pub(super) fn try_take(&self) -> bool {
        if LEADING.with(Cell::get) {
            // A wait within a turn's callback: it must not lead (nor block).
            return false;
        }
        if self
            .taken
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed)
            .is_err()
        {
            return false;
        }
        let mut off = EpollEvent::new(EpollFlags::empty(), LINKS);
        if self.own.modify(&self.links.0, &mut off).is_err() {
            self.taken.store(false, Ordering::Release);
            return false;
        }
        LEADING.with(|l| l.set(true));
        true
    }

    /// Give the lead back: the links' instance goes on again in the loop thread's (which it
    /// wakes if the links have events).
    pub(super) fn give_back(&self) {
        self.waiting.store(false, Ordering::SeqCst);
        LEADING.with(|l| l.set(false));
        let mut on = EpollEvent::new(EpollFlags::EPOLLIN, LINKS);
        // It fails only for a bad descriptor, which these are not; were it to, the loop thread
        // would still turn at its waker and its tick.
        let _ = self.own.modify(&self.links.0, &mut on);
        self.taken.store(false, Ordering::Release);
    }

    /// Wait in the links' instance up to `timeout` (`None`: until an event), unless `ready`
    /// says there is no need once the leader is committed to waiting; the events taken go to
    /// `take` as (token, readable, writable). False when `epoll_wait` failed (other than for a
    /// signal): the caller then waits without the lead.
    pub(super) fn wait(
        &self,
        timeout: Option<Duration>,
        ready: &dyn Fn() -> bool,
        take: impl FnOnce(&mut dyn Iterator<Item = (Token, bool, bool)>),
    ) -> bool {
        // Committed first, then the last look: a readiness set after the look finds `waiting`
        // and pokes (both SeqCst), so no wake-up is lost between the look and the wait.
        self.waiting.store(true, Ordering::SeqCst);
        if ready() {
            self.waiting.store(false, Ordering::SeqCst);
            return true;
        }
        let mut events = [EpollEvent::empty(); EVENTS];
        let r = self.links.wait(&mut events, ms(timeout));
        self.waiting.store(false, Ordering::SeqCst);
        let n = match r {
            Ok(n) => n,
            Err(nix::Error::EINTR) => 0,
            Err(_) => return false,
        };
        let mut it = events[..n].iter().map(|e| {
            let f = e.events();
            (
                Token(e.data() as usize),
                f.intersects(EpollFlags::EPOLLIN | EpollFlags::EPOLLPRI),
                f.contains(EpollFlags::EPOLLOUT),
            )
        });
        take(&mut it);
        true
    }
}

/// `t` in whole milliseconds, rounded up: epoll's resolution is a millisecond, and a wait
/// rounded down would wake before its deadline into a turn that finds nothing due and sleeps
/// 0 ms again (a spin).
pub(crate) fn ceil_ms(t: Duration) -> u64 {
    t.as_micros().div_ceil(1000).try_into().unwrap_or(u64::MAX)
}

/// epoll's timeout for `timeout` (`ceil_ms`).
fn ms(timeout: Option<Duration>) -> PollTimeout {
    match timeout {
        None => PollTimeout::NONE,
        Some(t) => i32::try_from(ceil_ms(t))
            .ok()
            .and_then(|ms| PollTimeout::try_from(ms).ok())
            .unwrap_or(PollTimeout::MAX),
    }
}

impl Waiter {
    /// [`Waiter::wait_leading`] when `leads` (`RMW_TRACER_WAIT_LEADS`, read by
    /// `wait_tuning`), else [`Waiter::wait`]: the one choice both APIs' waits make.
    pub fn wait_maybe_leading(&self, leads: bool, timeout: Option<Duration>) -> bool {
        if leads {
            self.wait_leading(timeout)
        } else {
            self.wait(timeout)
        }
    }

    /// As [`Waiter::wait`], but while no other thread does, the waiting thread leads the
    /// links' event loop meanwhile (docs/network.md section 4a, "The waiting thread reads"): it
    /// waits in the loop's epoll and reads, decodes and lands what comes itself, so a sample for
    /// it needs no wake-up by the loop thread. For a thread that does nothing else while it waits
    /// (rmw_wait); callbacks the loop runs inline run on it meanwhile.
    pub fn wait_leading(&self, timeout: Option<Duration>) -> bool {
        let Some(lead) = super::unix_loop::try_lead() else {
            return self.wait(timeout);
        };
        let deadline = timeout.map(|t| Instant::now() + t);
        loop {
            if self.any_ready() {
                return true;
            }
            let left = match deadline {
                None => None,
                Some(d) => {
                    let left = d.saturating_duration_since(Instant::now());
                    // epoll counts whole milliseconds: the rest of a timed wait (an rcl timer's
                    // deadline) is waited on the futex, to the microsecond as before, and
                    // without the lead, which the loop thread has back meanwhile.
                    if left < Duration::from_millis(1) {
                        drop(lead);
                        return self.wait(Some(left));
                    }
                    Some(Duration::from_millis(left.as_millis() as u64))
                }
            };
            self.set_leading(true);
            let led = lead.wait(left, &|| self.any_ready());
            self.set_leading(false);
            if !led {
                // Not expected (the instance is ours): wait as without the lead.
                drop(lead);
                return self.wait(deadline.map(|d| d.saturating_duration_since(Instant::now())));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    const POKE: Token = Token(1);
    const SOURCE: Token = Token(2);

    /// A loop's instance (mio's), the two instances of the lead over it, and a readable source
    /// in the links' instance.
    fn lead() -> (mio::Poll, Arc<Shared>, EventFd) {
        let poll = mio::Poll::new().unwrap();
        let shared = Arc::new(Shared::new(poll.registry(), POKE).unwrap());
        let source = EventFd::from_flags(EfdFlags::EFD_NONBLOCK).unwrap();
        poll.registry()
            .register(
                &mut SourceFd(&source.as_fd().as_raw_fd()),
                SOURCE,
                Interest::READABLE,
            )
            .unwrap();
        (poll, shared, source)
    }

    fn tokens(events: &mio::Events) -> Vec<Token> {
        events.iter().map(|e| e.token()).collect()
    }

    #[test]
    fn while_a_thread_leads_the_loop_thread_leaves_the_links_events_to_it() {
        let (mut poll, shared, source) = lead();
        let mut events = mio::Events::with_capacity(8);
        source.write(1).unwrap();
        let (took, give) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicBool::new(false)),
        );
        let leader = {
            let (shared, took, give) = (shared.clone(), took.clone(), give.clone());
            std::thread::spawn(move || {
                assert!(shared.try_take());
                took.store(true, Ordering::SeqCst);
                while !give.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(1));
                }
                shared.give_back();
            })
        };
        while !took.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(1));
        }
        // Woken by its waker while the source is readable: no event of the links is taken.
        shared.wake();
        shared
            .loop_wait(&mut poll, &mut events, Some(Duration::from_millis(50)))
            .unwrap();
        assert!(tokens(&events).is_empty());
        // The lead given back, the links' events are the loop thread's again.
        give.store(true, Ordering::SeqCst);
        leader.join().unwrap();
        shared
            .loop_wait(&mut poll, &mut events, Some(Duration::from_secs(5)))
            .unwrap();
        assert_eq!(tokens(&events), [SOURCE]);
    }

    #[test]
    fn a_poke_the_loop_thread_meets_is_passed_on_to_a_waiting_leader() {
        let (_poll, shared, _source) = lead();
        let ready = Arc::new(AtomicBool::new(false));
        let leader = {
            let (shared, ready) = (shared.clone(), ready.clone());
            std::thread::spawn(move || {
                assert!(shared.try_take());
                let start = Instant::now();
                let mut met_poke = false;
                while !ready.load(Ordering::SeqCst) && start.elapsed() < Duration::from_secs(10) {
                    shared.wait(
                        Some(Duration::from_secs(10)),
                        &|| ready.load(Ordering::SeqCst),
                        |events| {
                            for (t, _, _) in events {
                                if t == POKE {
                                    met_poke = true;
                                    shared.poked();
                                }
                            }
                        },
                    );
                }
                shared.give_back();
                (met_poke, start.elapsed())
            })
        };
        while !shared.waiting.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(1));
        }
        // The leader's readiness is set and its poke written; a turn of the loop thread (this
        // thread: it does not lead) took the poke from the links' instance before the leader.
        ready.store(true, Ordering::SeqCst);
        shared.poked();
        let (met_poke, took) = leader.join().unwrap();
        assert!(met_poke, "the leader was woken by its poke");
        assert!(
            took < Duration::from_secs(5),
            "the leader slept through its poke: {took:?}"
        );
    }
}
