//! Large samples go into this process's shared-memory pool (issue 8, R2; docs/rmw-mapping.md,
//! "Shared memory"): serialized straight into a pool slot, they travel to readers of this
//! host as references (docs/wire.md, SHM_DELIVERY) and to this process's own subscriptions as
//! the same bytes, with no copy.
//!
//! `RMW_TRACER_SHM_THRESHOLD`: the smallest serialized size that goes into the pool, in bytes
//! (default 65536; 0 or `off` turns the pool off). `RMW_TRACER_SHM_POOL_MB`: the pool's bound
//! (default 512 MiB of segments; when it is full, samples go through ordinary memory).
//! `TRACER_SHM=off` makes the process neither publish through a pool nor map peers' segments.
//!
//! The largest slot is a quarter of the pool's bound ([`max_slot`]): 128 MiB by default, so an
//! 8K image (100 MB) is written once into shared memory and mapped by the readers of this host
//! (measured: 96 MiB messages at 7.8x the rate they had in parts through the socket, 6.2x Fast
//! DDS's; docs/rmw-mapping.md, "Shared memory"). A larger message goes in parts.

use tracer_shm::{Pool, PoolConfig};

const DEFAULT_THRESHOLD: usize = 64 * 1024;
const DEFAULT_POOL_MB: usize = 512;

/// The context's pool and the size from which it is used.
pub struct ShmOut {
    pub pool: Pool,
    pub threshold: usize,
}

impl ShmOut {
    /// From the environment; None when turned off or when this process cannot map.
    pub fn from_env() -> Option<ShmOut> {
        let threshold = match std::env::var("RMW_TRACER_SHM_THRESHOLD").as_deref() {
            Err(_) | Ok("") => DEFAULT_THRESHOLD,
            Ok("off") => return None,
            Ok(v) => match v.parse::<usize>() {
                Ok(0) => return None,
                Ok(n) => n,
                Err(_) => {
                    crate::log::log!(
                        RMW_LOG_SEVERITY_WARN,
                        "RMW_TRACER_SHM_THRESHOLD={v} is not a byte count; using {DEFAULT_THRESHOLD}"
                    );
                    DEFAULT_THRESHOLD
                }
            },
        };
        let pool_mb = std::env::var("RMW_TRACER_SHM_POOL_MB")
            .ok()
            .and_then(|v| v.parse::<usize>().ok())
            .filter(|&n| n > 0)
            .unwrap_or(DEFAULT_POOL_MB);
        let defaults = PoolConfig::default();
        let max_bytes = pool_mb.saturating_mul(1024 * 1024);
        let cfg = PoolConfig {
            // A slot is at least the threshold rounded up, so small samples waste nothing.
            min_slot: threshold.next_power_of_two().max(4096),
            max_slot: max_slot(max_bytes, defaults.max_slot),
            max_bytes,
            segment_bytes: defaults.segment_bytes,
        };
        Pool::new(cfg).ok().map(|pool| ShmOut { pool, threshold })
    }
}

/// The largest slot of a pool of `max_bytes`: the largest power of two within a quarter of it,
/// and never below `floor` (the crate's 64 MiB). Segments are never retired (a reader keeps
/// every segment it was sent, docs/wire.md SEGMENT), so a slot, once made, keeps its memory for
/// the process's life: a quarter bounds what one large message can take of the pool for good
/// (its pages are only those its messages wrote: segments are sparse). Slots are powers of two,
/// so a message just above a power takes twice its size of the bound, not of memory. At most
/// [`MAX_SLOT`], whatever the pool.
fn max_slot(max_bytes: usize, floor: usize) -> usize {
    let quarter = max_bytes / 4;
    let pow = match quarter.checked_ilog2() {
        Some(b) => 1usize << b,
        None => 0,
    };
    pow.max(floor).min(MAX_SLOT)
}

/// No slot above 2 GiB: a reference's length is 32 bits on the wire (SHM_REF), and a message
/// above the largest slot goes in parts, which carry up to 4 GiB (and refuse more).
const MAX_SLOT: usize = 1 << 31;

#[cfg(test)]
mod tests {
    use super::max_slot;

    const MIB: usize = 1 << 20;

    #[test]
    fn the_largest_slot_is_a_quarter_of_the_pool_as_a_power_of_two_and_at_least_the_floor() {
        // The default pool: an 8K image (100 MB) fits a slot.
        assert_eq!(max_slot(512 * MIB, 64 * MIB), 128 * MIB);
        assert!(max_slot(512 * MIB, 64 * MIB) >= 100_000_000);
        assert_eq!(max_slot(2048 * MIB, 64 * MIB), 512 * MIB);
        // Not a power of two: the power below its quarter.
        assert_eq!(max_slot(1000 * MIB, 64 * MIB), 128 * MIB);
        // Small pools keep the floor (such a slot only fits an empty pool: then copies).
        assert_eq!(max_slot(64 * MIB, 64 * MIB), 64 * MIB);
        assert_eq!(max_slot(0, 64 * MIB), 64 * MIB);
        // However large the pool, a slot's length fits SHM_REF's 32 bits.
        assert_eq!(max_slot(usize::MAX, 64 * MIB), 2048 * MIB);
        assert_eq!(max_slot(64 << 30, 64 * MIB), 2048 * MIB);
    }
}
