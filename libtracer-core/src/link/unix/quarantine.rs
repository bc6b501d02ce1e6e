//! References into our shared memory that a closed link left out (docs/wire.md, RELEASE).
//!
//! A link that goes down took its reader's RELEASEs with it, but the reader may live on: a
//! reader we took for hung (stopped, swapping, in a debugger) resumes with samples in its rings
//! that are views of our slots, and a reader that took us for hung closed the link from its
//! side with the same samples held. Were their slots reused, such a sample would be read as
//! whatever was written there next, another topic's message perhaps. So the references a link
//! had out stay held here until the reader's process is gone (`kill(pid, 0)` says ESRCH; the
//! kernel attested the pid, SO_PEERCRED), then the slots go back to the pool and a segment
//! made for one message is retired. A peer in this very process, or one whose pid we cannot
//! see (0), keeps them for the life of the process. What is held is bounded by the pool: at
//! most the references a link had out (256) per link lost, and when the pool is all held,
//! samples go as copies, never a failure.
//!
//! The event loop's tick sweeps while anything is held (every 100 ms), so a dead reader's
//! slots come back within a tick; and a publisher whose pool is full sweeps before it settles
//! for ordinary memory ([`alloc_shared`]), so one that publishes right after a reader died
//! (and was reaped: a zombie is not gone) does not wait for the tick.

use std::sync::atomic::{AtomicBool, Ordering};

use nix::errno::Errno;
use nix::sys::signal::kill;
use nix::unistd::Pid;
use parking_lot::Mutex;

use tracer_shm::{Pool, SlotMut};

use crate::link::unix_loop;
use crate::payload::Payload;

/// What closed links left out, by the reader's pid.
static HELD: Mutex<Vec<(u32, Vec<Payload>)>> = parking_lot::const_mutex(Vec::new());
/// `HELD` is not empty: the sweep has something to look at.
static ANY: AtomicBool = AtomicBool::new(false);
/// Held by a sweep until what it freed is dropped, so that a sweep that waits for it finds the
/// slots back in their pools, not in the hands of another sweep.
static SWEEPING: Mutex<()> = parking_lot::const_mutex(());

/// A link to the process `pid` closed with `out` references held: free them now if that
/// process is gone, else keep them until it is.
pub(crate) fn hold(pid: u32, out: Vec<Payload>) {
    if out.is_empty() {
        return;
    }
    if gone(pid) {
        drop(out);
        return;
    }
    HELD.lock().push((pid, out));
    ANY.store(true, Ordering::SeqCst);
    // The loop's tick sweeps only while it watches something.
    unix_loop::watch();
}

/// The loop's tick: free what is held for processes that are gone, unless another sweep is at
/// it (the loop never waits: it looks again at its next tick). True while something is still
/// held (the tick goes on).
pub(crate) fn sweep() -> bool {
    match SWEEPING.try_lock() {
        Some(_one) => sweep_now(),
        None => true,
    }
}

/// `sweep`, after any sweep at it has dropped what it freed.
fn sweep_waiting() -> bool {
    let _one = SWEEPING.lock();
    sweep_now()
}

fn sweep_now() -> bool {
    if !ANY.load(Ordering::SeqCst) {
        return false;
    }
    let mut freed = Vec::new();
    let left = {
        let mut held = HELD.lock();
        let mut k = 0;
        while k < held.len() {
            if gone(held[k].0) {
                freed.push(held.swap_remove(k));
            } else {
                k += 1;
            }
        }
        ANY.store(!held.is_empty(), Ordering::SeqCst);
        !held.is_empty()
    };
    // Outside the lock: slots go back to their pools, segments are retired.
    drop(freed);
    left
}

/// A slot of `pool` for `len` bytes ([`Pool::alloc`]); when the pool is full, what readers that
/// are gone left held is freed first and the pool asked again. What every publisher into
/// shared memory allocates with (rmw_tracer's messages and loans, the C API's loans).
pub fn alloc_shared(pool: &Pool, len: usize) -> Option<SlotMut> {
    pool.alloc(len).or_else(|| {
        sweep_waiting();
        pool.alloc(len)
    })
}

/// Whether the process `pid` is gone. Never for 0 (a pid we cannot see): `kill(0, ..)` would
/// name our own process group.
fn gone(pid: u32) -> bool {
    match i32::try_from(pid) {
        Ok(p) if p > 0 => kill(Pid::from_raw(p), None) == Err(Errno::ESRCH),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracer_shm::{Pool, PoolConfig};

    fn pool() -> Pool {
        Pool::new(PoolConfig {
            min_slot: 4096,
            max_slot: 1 << 20,
            max_bytes: 4 << 20,
            segment_bytes: 1 << 20,
        })
        .expect("this machine maps memfd segments")
    }

    /// A reader process that lives until the test kills it.
    fn reader() -> std::process::Child {
        std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("a child process")
    }

    fn slots(p: &Pool, n: usize) -> Vec<Payload> {
        (0..n)
            .map(|_| Payload::from_slot(p.alloc(5000).unwrap().freeze()))
            .collect()
    }

    #[test]
    fn references_are_held_while_the_readers_process_lives_and_freed_when_it_is_gone() {
        let p = pool();
        // A reader that lives, then goes.
        let mut reader = reader();
        hold(reader.id(), slots(&p, 3));
        assert!(sweep_waiting(), "held while it lives");
        assert_eq!(p.stats().slots_in_use, 3);
        reader.kill().unwrap();
        reader.wait().unwrap();
        sweep_waiting();
        assert_eq!(p.stats().slots_in_use, 0, "freed once it is gone");
        // One already gone is not held at all.
        let mut done = std::process::Command::new("true").spawn().unwrap();
        let pid = done.id();
        done.wait().unwrap();
        hold(pid, slots(&p, 2));
        assert_eq!(p.stats().slots_in_use, 0);
        // This process, and a pid we cannot see, keep them.
        hold(std::process::id(), slots(&p, 1));
        hold(0, slots(&p, 1));
        sweep_waiting();
        assert_eq!(p.stats().slots_in_use, 2);
    }

    #[test]
    fn a_full_pool_takes_back_what_gone_readers_held_before_it_fails() {
        // 4 MiB of 1 MiB slots: all held by a reader that then goes.
        let p = pool();
        let mut reader = reader();
        let held: Vec<Payload> = (0..4)
            .map(|_| Payload::from_slot(p.alloc(1 << 20).unwrap().freeze()))
            .collect();
        hold(reader.id(), held);
        assert!(alloc_shared(&p, 1 << 20).is_none(), "its reader lives");
        reader.kill().unwrap();
        reader.wait().unwrap();
        // No tick needed: the allocation itself finds them free.
        assert!(alloc_shared(&p, 1 << 20).is_some());
    }
}
