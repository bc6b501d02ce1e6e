//! tracer-shm: shared-memory sample pools for libtracer (see README.md and docs/wire.md).
//!
//! The safe API over the unsafe parts: memfd segments mapped read-write by the one process
//! that owns them ([`Pool`], [`Slot`]), mapped read-only by the processes that receive them
//! ([`Mapping`], [`View`]), and descriptor passing over a Unix socket ([`fdpass`]).

pub mod fdpass;
mod mapping;
mod pool;
mod segment;

use std::sync::OnceLock;

pub use mapping::{MapError, Mapping, Release, View};
pub use pool::{largest_slot, Pool, PoolConfig, PoolStats, Slot, SlotMut};
pub use segment::{Retire, SegmentId};

/// Whether this process can create, seal and map shared-memory segments. Probed once (a one-page
/// segment is made, sealed and mapped read-only) and cached. `TRACER_SHM=off` (or `0`) makes it
/// false: the process then neither publishes through a pool nor accepts references, as a process
/// without memfd would.
pub fn can_map() -> bool {
    static PROBE: OnceLock<bool> = OnceLock::new();
    *PROBE.get_or_init(|| {
        if disabled_by_env() {
            return false;
        }
        let Ok(seg) = segment::Segment::create(SegmentId(0), 4096) else {
            return false;
        };
        let Ok(fd) = seg.share_fd() else {
            return false;
        };
        Mapping::map(fd, 4096).is_ok()
    })
}

fn disabled_by_env() -> bool {
    matches!(
        std::env::var("TRACER_SHM").as_deref(),
        Ok("off") | Ok("0") | Ok("false") | Ok("no")
    )
}
