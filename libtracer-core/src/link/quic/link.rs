//! What every QUIC link keeps beside its streams (`elink.rs`): its timing constants, the log
//! of reliable deliveries its queues dropped, the counts of what it shed, and the HELLO it
//! sends.

use std::time::{Duration, Instant};

use bytes::Bytes;

use crate::wire::{Frame, MAX_FRAME, PROTOCOL_VERSION};

/// Largest chunk the reader takes from a stream at once.
pub(super) const READ_CHUNK: usize = 256 * 1024;
/// How long a closing link waits for the peer to acknowledge what was written (an ERROR that
/// explains the close) before it drops the connection.
pub(super) const LINGER: Duration = Duration::from_millis(500);
/// At most one line per link this often about reliable deliveries its queues dropped.
const DROPS_SAID_EVERY: Duration = Duration::from_secs(10);

/// What a link has said so far about the reliable deliveries its queues dropped (`EngineLink`'s
/// sends).
#[derive(Default)]
pub(crate) struct DropReport {
    /// Dropped since the last line.
    unsaid: u64,
    /// When the last line was logged; `None` before the first.
    said_at: Option<Instant>,
}

impl DropReport {
    /// `dropped` more: the line to log now, if one is due (the first drops of a link at once,
    /// then at most a line every `DROPS_SAID_EVERY`, with the count since the last line), so
    /// that whoever runs the publisher sees why its peer misses samples.
    pub(crate) fn note(&mut self, dropped: u64, peer: &str, queue_bytes: usize) -> Option<String> {
        self.unsaid += dropped;
        let now = Instant::now();
        if self
            .said_at
            .is_some_and(|at| now.duration_since(at) < DROPS_SAID_EVERY)
        {
            return None;
        }
        let first = self.said_at.replace(now).is_none();
        let count = std::mem::take(&mut self.unsaid);
        let since = if first {
            ""
        } else {
            " since the last line about them"
        };
        Some(format!(
            "link to {peer}: {count} reliable deliveries dropped{since}, oldest first: the path \
             or the peer takes them slower than they are published, and at most {} MiB waits \
             per stream (the subscriber counts them as lost messages)",
            queue_bytes >> 20
        ))
    }
}

/// What a link's sending side did with samples it could not send at once (`QuicLinkHandle::shed`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ShedCounts {
    /// Reliable deliveries dropped, oldest first, from a stream queue that was full
    /// (docs/network.md section 7, "Reliable overflow").
    pub dropped: u64,
    /// The most bytes one reliable stream's queue of the link held (bounded by
    /// `QuicConfig::queue_bytes`, plus one delivery when nothing else could be dropped).
    pub queued_peak: u64,
    /// Sent as one datagram each.
    pub datagrams: u64,
    /// Replaced by a newer sample of their class before they were written (too large for a
    /// datagram, waiting for the class's stream).
    pub replaced: u64,
    /// Half written when a newer one came: their stream was reset.
    pub abandoned: u64,
    /// Received: best-effort samples from the peer dropped on arrival, as older than one of
    /// their writer already handed up (each goes on a stream of its own).
    pub stale: u64,
}

/// Our HELLO: with our permissions document when SROS2 is on, and our host directory's port.
pub(crate) fn hello(local: &str, permissions: Option<Bytes>, directory: u16) -> Frame {
    Frame::Hello {
        version: PROTOCOL_VERSION,
        node: local.to_owned(),
        max_frame: MAX_FRAME,
        // Shared memory never crosses a host.
        shm: false,
        permissions,
        directory: Some(directory),
    }
}
