//! Sources of other modules on the links' event loop (`unix_loop.rs`): the QUIC engine's UDP
//! sockets and its `timerfd` (`quic/engine/driver.rs`) wait in the same `epoll` as the Unix
//! sockets, so a process has one loop thread for every link (docs/network.md section 4a).
//!
//! The seam is a descriptor, an interest and an object the loop calls when the descriptor is
//! ready. What the object does with it (read a socket, fire timers) stays in its own module;
//! the loop only knows that the call must not block and may leave work for another turn.

use std::collections::HashMap;
use std::io;
use std::os::fd::RawFd;
use std::sync::{Arc, Weak};

use mio::unix::SourceFd;
use mio::{Interest, Registry, Token};
use parking_lot::Mutex;

/// What the loop calls when a foreign source's descriptor is ready. It runs on the loop thread,
/// which serves every link of the process: it must never block (a lock held for a moment is
/// the most it may wait for), and it takes a bounded share of the turn.
pub(crate) trait ForeignSource: Send + Sync {
    /// The descriptor is readable and/or writable (edge-triggered: the source reads until it
    /// would block or its share is used). True when it stopped with more to read: the loop
    /// calls it again, as readable, after the other sources had their turn, without sleeping.
    fn ready(self: Arc<Self>, readable: bool, writable: bool) -> bool;
}

/// The foreign sources of the loop by token. Registered from any thread (an engine binds on
/// its caller's), called on the loop's.
pub(super) struct Foreign {
    registry: Registry,
    /// Weak: the loop does not keep a source alive; its owner removes it before it goes.
    table: Mutex<HashMap<Token, Weak<dyn ForeignSource>>>,
}

impl Foreign {
    pub(super) fn new(registry: Registry) -> Foreign {
        Foreign {
            registry,
            table: Mutex::default(),
        }
    }

    /// Wait on `fd` for `interest` (edge-triggered, as every source of the loop) under `t`.
    pub(super) fn add(
        &self,
        t: Token,
        fd: RawFd,
        interest: Interest,
        source: Weak<dyn ForeignSource>,
    ) -> io::Result<()> {
        // In the table first: its first readiness may come before `register` returns.
        self.table.lock().insert(t, source);
        let r = self.registry.register(&mut SourceFd(&fd), t, interest);
        if r.is_err() {
            self.table.lock().remove(&t);
        }
        r
    }

    /// Wait on `fd` for `interest` instead of what it was added with.
    pub(super) fn modify(&self, t: Token, fd: RawFd, interest: Interest) -> io::Result<()> {
        self.registry.reregister(&mut SourceFd(&fd), t, interest)
    }

    /// Stop waiting on `fd` (before it closes, so a descriptor number used again is not
    /// mistaken for it).
    pub(super) fn remove(&self, t: Token, fd: RawFd) {
        let _ = self.registry.deregister(&mut SourceFd(&fd));
        self.table.lock().remove(&t);
    }

    /// The loop: `t` is ready. None when `t` is no foreign source (any more); else whether it
    /// has more to read.
    pub(super) fn run(&self, t: Token, readable: bool, writable: bool) -> Option<bool> {
        // Let go of the table before the call: a source may add or remove sources.
        let source = self.table.lock().get(&t).and_then(Weak::upgrade)?;
        Some(source.ready(readable, writable))
    }
}
