//! Global ids of entities (rmw's `rmw_gid_t`, the C API's publisher gids): 16 meaningful bytes.
//!
//! Layout: bytes 0..8 name the context that made the entity (the process id and a per-process
//! context counter mixed with the start time, so two processes or two contexts never share
//! them), bytes 8..16 count the entities of that context. The context half lets a subscription
//! tell its own context's publishers apart (`ignore_local_publications`). Moved here from
//! rmw_tracer (`src/gid.rs`, which keeps `to_rmw`) so that libtracer's C API hands out gids
//! the same way (issue 30).

use std::sync::atomic::{AtomicU64, Ordering};

use crate::endpoint::Gid;

/// Hands out the gids of one context.
#[derive(Debug)]
pub struct GidSource {
    prefix: [u8; 8],
    next: AtomicU64,
}

impl GidSource {
    pub fn new() -> GidSource {
        static CONTEXTS: AtomicU64 = AtomicU64::new(0);
        let n = CONTEXTS.fetch_add(1, Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        let mut prefix = [0u8; 8];
        prefix[..4].copy_from_slice(&std::process::id().to_le_bytes());
        // The low half of the start time keeps a recycled pid from repeating an old prefix.
        let mix = (nanos as u32) ^ (n as u32).wrapping_mul(0x9e37_79b9);
        prefix[4..].copy_from_slice(&mix.to_le_bytes());
        GidSource {
            prefix,
            next: AtomicU64::new(1),
        }
    }

    pub fn prefix(&self) -> [u8; 8] {
        self.prefix
    }

    /// A new gid; the first one (counter 0) is the context's own.
    pub fn context_gid(&self) -> Gid {
        let mut g = [0u8; 16];
        g[..8].copy_from_slice(&self.prefix);
        Gid(g)
    }

    pub fn next(&self) -> Gid {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let mut g = [0u8; 16];
        g[..8].copy_from_slice(&self.prefix);
        g[8..].copy_from_slice(&n.to_be_bytes());
        Gid(g)
    }
}

impl Default for GidSource {
    fn default() -> Self {
        GidSource::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trip_and_uniqueness() {
        let a = GidSource::new();
        let b = GidSource::new();
        assert_ne!(a.prefix(), b.prefix());
        let g1 = a.next();
        let g2 = a.next();
        assert_ne!(g1, g2);
        assert_eq!(g1.context_prefix(), a.prefix());
        assert_eq!(Gid::from_hex(&g1.hex()), Some(g1));
        assert_eq!(g1.hex().len(), 32);
        assert_eq!(Gid::from_hex("zz"), None);
        assert_eq!(Gid::from_hex(&"g".repeat(32)), None);
    }
}
