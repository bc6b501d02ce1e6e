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
//! The largest slot is a quarter of the pool's bound (`tracer_shm::largest_slot`): 128 MiB by
//! default, so an 8K image (100 MB) is written once into shared memory and mapped by the readers
//! of this host (measured: 96 MiB messages at 7.8x the rate they had in parts through the
//! socket, 6.2x Fast DDS's; docs/rmw-mapping.md, "Shared memory"). A larger message gets a
//! segment of its own, retired once its readers let it go, its memory kept for the next (300
//! MiB: 7.6x the rate in parts, 6.5x Fast DDS's).

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
        let cfg = PoolConfig {
            // A slot is at least the threshold rounded up, so small samples waste nothing.
            min_slot: threshold.next_power_of_two().max(4096),
            // The largest slot scales with the pool (`tracer_shm::largest_slot`).
            ..PoolConfig::bounded(pool_mb.saturating_mul(1024 * 1024))
        };
        Pool::new(cfg).ok().map(|pool| ShmOut { pool, threshold })
    }
}
