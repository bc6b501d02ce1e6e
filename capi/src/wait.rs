//! Waiting on a ring, as `rmw_wait` does (rmw_tracer/src/waitset.rs): spin briefly
//! (`RMW_TRACER_WAIT_SPIN_US`, default 20 us, never on one CPU), then sleep on a `Waiter`
//! attached to the ring's readiness, leading the links' loop meanwhile unless
//! `RMW_TRACER_WAIT_LEADS=0`. The spin saves the sleep and wake-up of a reply that comes
//! within microseconds (a round trip on this host); and, as rmw_tracer's wait sets, a ring
//! spins only while spinning pays: after a spin that found nothing it sleeps at once and tries a
//! spin again every [`PROBE_EVERY`] waits. Measured (docs/capi.md): a spin on every wait made
//! the 64 B round trip 70 us instead of 40 on two busy cores, the spinners keeping the writers
//! they wait for off the processors.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::{Duration, Instant};

use libtracer_core::{Readiness, Vertex, WaitTuning, Waiter};

use crate::error::{CapiError, CapiResult};

/// After a spin that found nothing, every this many waits spins once more to see if it pays.
const PROBE_EVERY: u32 = 16;

/// Whether spinning pays for one ring (one per subscription or inbox).
#[derive(Debug)]
pub struct Spin {
    paid: AtomicBool,
    since: AtomicU32,
}

impl Default for Spin {
    fn default() -> Self {
        Spin {
            paid: AtomicBool::new(true),
            since: AtomicU32::new(0),
        }
    }
}

/// The waits' settings, as `rmw_wait`'s (`RMW_TRACER_WAIT_SPIN_US`, `RMW_TRACER_WAIT_LEADS`:
/// libtracer_core's `wait_tuning`), a value not understood said once on stderr.
fn tuning() -> WaitTuning {
    WaitTuning::get(|m| eprintln!("[libtracer] {m}"))
}

thread_local! {
    /// The waiter a thread sleeps on: one per blocking thread, as the core wants it (several
    /// threads may wait on one ring), made once and reused, as a wait set reuses its own, so
    /// a wait that sleeps allocates nothing. Attached for the sleep and cleared after.
    static WAITER: Waiter = Waiter::new();
}

/// Sleep on the calling thread's waiter, attached to `sources`, until one is ready or
/// `timeout` passes; the waiter is cleared after. As `rmw_wait`, the sleeping thread leads the
/// links' loop (reads what arrives itself, docs/network.md 4a) unless `RMW_TRACER_WAIT_LEADS=0`.
fn sleep_on(sources: &[Readiness], timeout: Option<Duration>) {
    WAITER.with(|waiter| {
        for r in sources {
            waiter.attach(r);
        }
        waiter.wait_maybe_leading(tuning().leads, timeout);
        waiter.clear();
    })
}

/// Wait until `ring` holds a sample (`None`: forever); Err(Timeout) when none came. Several
/// threads may wait on one ring.
pub fn until_ready(ring: &Vertex, spin_state: &Spin, timeout: Option<Duration>) -> CapiResult<()> {
    // The readiness level is one atomic load: the spin never takes the ring's lock, which the
    // delivering thread needs.
    let ready = ring.readiness();
    if ready.is_ready() {
        return Ok(());
    }
    let start = Instant::now();
    let budget = tuning().spin;
    let probe = spin_state.since.fetch_add(1, Ordering::Relaxed) + 1 >= PROBE_EVERY;
    if !budget.is_zero() && (spin_state.paid.load(Ordering::Relaxed) || probe) {
        spin_state.since.store(0, Ordering::Relaxed);
        let spin = timeout.map_or(budget, |t| t.min(budget));
        let mut found = false;
        while start.elapsed() < spin {
            if ready.is_ready() {
                found = true;
                break;
            }
            std::hint::spin_loop();
        }
        spin_state.paid.store(found, Ordering::Relaxed);
        if found {
            return Ok(());
        }
    }
    let left = timeout.map(|t| t.saturating_sub(start.elapsed()));
    sleep_on(std::slice::from_ref(&ready), left);
    if ready.is_ready() {
        Ok(())
    } else {
        Err(CapiError::Timeout)
    }
}

/// Wait until one of several rings holds a sample (`None`: forever), as `rmw_wait` does for a
/// wait set: which are ready, or Err(Timeout). `pending[i]`: ring `i` already has something the
/// caller holds for it (a sample kept back for a larger buffer), so it counts as ready. The
/// thread's waiter is attached to every ring's readiness for the sleep, and detached after; no spin (a
/// program waiting on many entities is rarely waiting for a reply within microseconds).
pub fn any_ready(
    rings: &[&Vertex],
    pending: &[bool],
    timeout: Option<Duration>,
) -> CapiResult<Vec<bool>> {
    let readiness: Vec<_> = rings.iter().map(|r| r.readiness()).collect();
    let look = || -> Vec<bool> {
        readiness
            .iter()
            .zip(pending)
            .map(|(r, held)| *held || r.is_ready())
            .collect()
    };
    let ready = look();
    if ready.iter().any(|r| *r) {
        return Ok(ready);
    }
    sleep_on(&readiness, timeout);
    let ready = look();
    if ready.iter().any(|r| *r) {
        Ok(ready)
    } else {
        Err(CapiError::Timeout)
    }
}
