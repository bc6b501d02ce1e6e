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
//! slots come back within a tick.

use std::sync::atomic::{AtomicBool, Ordering};

use nix::errno::Errno;
use nix::sys::signal::kill;
use nix::unistd::Pid;
use parking_lot::Mutex;

use crate::link::unix_loop;
use crate::payload::Payload;

/// What closed links left out, by the reader's pid.
static HELD: Mutex<Vec<(u32, Vec<Payload>)>> = parking_lot::const_mutex(Vec::new());
/// `HELD` is not empty: the sweep has something to look at.
static ANY: AtomicBool = AtomicBool::new(false);

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

/// Free what is held for processes that are gone. True while something is still held (the
/// loop's tick goes on).
pub(crate) fn sweep() -> bool {
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

    fn slots(p: &Pool, n: usize) -> Vec<Payload> {
        (0..n)
            .map(|_| Payload::from_slot(p.alloc(5000).unwrap().freeze()))
            .collect()
    }

    #[test]
    fn references_are_held_while_the_readers_process_lives_and_freed_when_it_is_gone() {
        let p = pool();
        // A reader that lives, then goes.
        let mut reader = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("a child process");
        hold(reader.id(), slots(&p, 3));
        assert!(sweep(), "held while it lives");
        assert_eq!(p.stats().slots_in_use, 3);
        reader.kill().unwrap();
        reader.wait().unwrap();
        sweep();
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
        sweep();
        assert_eq!(p.stats().slots_in_use, 2);
    }
}
