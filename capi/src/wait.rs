//! Waiting on a ring, as `rmw_wait` does (rmw_tracer/src/waitset.rs): spin briefly
//! (`RMW_TRACER_WAIT_SPIN_US`, default 20 us, never on one CPU), then sleep on a `Waiter`
//! attached to the ring's readiness. The spin saves the sleep and wake-up of a reply that comes
//! within microseconds (a round trip on this host).

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use libtracer_core::{Vertex, Waiter};

use crate::error::{CapiError, CapiResult};

const DEFAULT_SPIN_US: u64 = 20;

fn spin_budget() -> Duration {
    static BUDGET: OnceLock<Duration> = OnceLock::new();
    *BUDGET.get_or_init(|| {
        let single_cpu = std::thread::available_parallelism().map_or(true, |n| n.get() < 2);
        let us = std::env::var("RMW_TRACER_WAIT_SPIN_US")
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(DEFAULT_SPIN_US);
        if single_cpu {
            Duration::ZERO
        } else {
            Duration::from_micros(us)
        }
    })
}

/// Wait until `ring` holds a sample (`None`: forever); Err(Timeout) when none came. A waiter
/// per call (one per blocking thread, as the core wants it): several threads may wait.
pub fn until_ready(ring: &Vertex, timeout: Option<Duration>) -> CapiResult<()> {
    // The readiness level is one atomic load: the spin never takes the ring's lock, which the
    // delivering thread needs.
    let ready = ring.readiness();
    if ready.is_ready() {
        return Ok(());
    }
    let start = Instant::now();
    let spin = timeout.map_or(spin_budget(), |t| t.min(spin_budget()));
    while start.elapsed() < spin {
        if ready.is_ready() {
            return Ok(());
        }
        std::hint::spin_loop();
    }
    let left = timeout.map(|t| t.saturating_sub(start.elapsed()));
    let waiter = Waiter::new();
    waiter.attach(&ready);
    if waiter.wait(left) || ready.is_ready() {
        Ok(())
    } else {
        Err(CapiError::Timeout)
    }
}
