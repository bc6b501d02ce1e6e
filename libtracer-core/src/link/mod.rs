//! Links: frame-carrying connections between graphs, and the transports that form them.
//!
//! # The seam with the graph
//!
//! ```text
//! trait Link: Send + Sync {
//!     fn send(&self, frame: &Frame) -> Result<(), LinkError>;   // from any thread
//!     fn send_owed(&self, frame: &Frame) -> ...;                 // a replay: never dropped
//!     fn peer(&self) -> &PeerIdentity;                           // kernel-attested for Unix
//!     fn close(&self);                                           // idempotent
//! }
//! trait LinkHandler: Send + Sync {
//!     fn on_up(&self, link: Arc<dyn Link>);
//!     fn on_frame(&self, link: &Arc<dyn Link>, frame: Frame);
//!     fn on_down(&self, link: &Arc<dyn Link>);
//! }
//! HostTransport::start(dir, local_name, handler) -> Result<HostTransport, LinkError>
//! MemoryFabric::new().join(local_name, handler) -> MemoryNode       // in-process, for tests
//! ```
//!
//! Guarantees a handler can build on (the conformance suite, tests/link_conformance.rs, checks
//! each against every implementation):
//! - For one link, `on_up`, then every `on_frame` in the order the peer sent them, then exactly
//!   one `on_down`, one at a time, each completely before the next (on the Unix transport on one
//!   of the process's few link workers, on QUIC on one of its two dispatchers, in memory on the
//!   link's reader thread). The `Arc<dyn Link>` passed is the same object each time (compare
//!   with `Arc::ptr_eq`). Different links run concurrently.
//! - `on_up` may run before `HostTransport::start` / `join` has returned.
//! - At most one link per pair of node names at any time.
//! - `send` writes on the caller's thread (no hop), holding only that link's write lock; it is
//!   safe to call from inside a callback. After `close` or `on_down`, `send` fails with
//!   [`LinkError::Closed`]. A frame over the peer's announced bound fails with
//!   [`LinkError::Encode`] and the link stays up.
//! - HELLO, PING and PONG are the link's own business and never reach the handler.
//! - A malformed frame from the peer: the link answers ERROR{malformed} and closes; other links
//!   are unaffected.
//! - A callback that panics loses its link, not the thread's duty: the link answers
//!   ERROR{internal} and closes, and `on_down` still runs.
//! - A callback should not block for long: it holds up that link's later frames (and a thread
//!   other links may need: on the Unix transport one of four workers).

use std::sync::Arc;

use crate::wire::{EncodeError, Frame};

pub mod abstract_names;
mod dispatch;
mod foreign;
pub(crate) mod lead;
pub mod memory;
#[cfg(feature = "quic")]
pub mod quic;
mod redial;
pub mod rendezvous;
mod strand;
pub mod transport;
pub mod unix;
mod unix_loop;
mod unix_rx;

pub use abstract_names::HostScope;
pub use memory::{MemoryFabric, MemoryNode};
#[cfg(feature = "quic")]
pub use quic::{
    subject_of, GrantTurn, PermissionsExchange, QuicConfig, QuicLinkHandle, QuicSecurity,
    QuicTransport,
};
pub use rendezvous::{default_rendezvous_dir, rendezvous_dir_in};
pub use transport::{HostTransport, HostUsers, TransportConfig};
pub use unix::quarantine::alloc_shared;
pub use unix::UnixLink;

/// Who is at the other end of a link. On a Unix-socket link `uid`, `gid` and `pid` come from
/// the kernel (SO_PEERCRED), so they are authenticated; `name` is what the peer announced in
/// HELLO (and, for the Unix transport, the name of the socket it bound). On a link to another
/// host (QUIC) `remote` is what the TLS handshake proved: the subject of the peer's
/// certificate when it chained to the trusted CA, else `Anonymous`; `uid`/`gid` are then this
/// process's own and mean nothing to the ACL.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PeerIdentity {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
    pub pid: u32,
    pub remote: Option<crate::acl::Subject>,
}

impl PeerIdentity {
    /// The principal the ACL checks this peer's requests as: the kernel's uid and gid on this
    /// host, what the link authenticated across hosts.
    pub fn credentials(&self) -> crate::acl::Credentials {
        match &self.remote {
            Some(s) => crate::acl::Credentials::Remote(s.clone()),
            None => crate::acl::Credentials::local(self.uid, self.gid),
        }
    }
}

/// A connection to one peer graph: the one seam between the graph and every transport (Unix
/// sockets, QUIC, in-process; `Graph::attach_link` takes one too).
pub trait Link: Send + Sync {
    /// Encode and write `frame` from the caller's thread.
    fn send(&self, frame: &Frame) -> Result<(), LinkError>;
    /// `send` a DELIVERY that is owed in full: one of a transient-local replay, bounded by the
    /// source's history. A transport that drops reliable deliveries when its queue is full
    /// (QUIC, docs/network.md section 7) neither drops it nor makes room for it; one that never
    /// drops (a Unix socket blocks the writer) just sends it.
    fn send_owed(&self, frame: &Frame) -> Result<(), LinkError> {
        self.send(frame)
    }
    fn peer(&self) -> &PeerIdentity;
    /// Close the link; `on_down` follows on the reader thread. Idempotent.
    fn close(&self);
}

/// What a transport tells the graph.
pub trait LinkHandler: Send + Sync {
    fn on_up(&self, link: Arc<dyn Link>);
    fn on_frame(&self, link: &Arc<dyn Link>, frame: Frame);
    fn on_down(&self, link: &Arc<dyn Link>);
    /// Whether `on_frame` for a DELIVERY always returns without blocking (it lands a sample: a
    /// ring push and a wake-up). Then the QUIC transport runs it on the links' loop thread, one
    /// thread hand-off less per delivery, instead of on a worker that may block (docs/network.md
    /// section 4a). The Unix event loop relies on it for every handler.
    fn deliveries_never_block(&self) -> bool {
        false
    }
}

#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    #[error("link to {0} is closed")]
    Closed(String),
    #[error("frame cannot be sent: {0}")]
    Encode(#[from] EncodeError),
    #[error("link I/O error: {0}")]
    Io(#[from] std::io::Error),
    #[error("rendezvous directory {path}: {reason}")]
    InsecureDir {
        path: std::path::PathBuf,
        reason: String,
    },
    #[error("node name {0:?} is already bound by a live graph in the rendezvous directory")]
    NameTaken(String),
    #[error("invalid node name {0:?}: want 1..=255 of [A-Za-z0-9_.~-], not . or ..")]
    InvalidName(String),
    #[error("handshake with {peer}: {reason}")]
    Handshake { peer: String, reason: String },
}

/// A node name is one path segment: it names the mount `/net/<name>` and the socket
/// `<name>.sock`, so it must be safe as both.
pub fn valid_node_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= crate::wire::MAX_NODE
        && name != "."
        && name != ".."
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.~-".contains(&b))
}

/// Run one handler callback of a link. A panic in it (a bug above the link) is caught, so that
/// the link can still be closed and `on_down` still run: otherwise the thread would die with the
/// link still registered, never telling the handler, and with a peer kept alive by our
/// keepalive while nobody reads. False when the callback panicked.
pub(crate) fn run_callback(f: impl FnOnce()) -> bool {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).is_ok()
}

/// Close a link because its own handler failed, telling the peer why first.
pub(crate) fn close_handler_failed(link: &dyn Link) {
    let _ = link.send(&Frame::Error {
        req: 0,
        code: crate::wire::ErrorCode::Internal,
        message: "the receiving handler failed; link closed".into(),
    });
    link.close();
}

/// The connection-level ERROR frame (request 0) that tells a peer why it is refused or closed:
/// at most 200 characters of the reason, so a long one never makes a large frame.
pub(crate) fn refusal(code: crate::wire::ErrorCode, why: &str) -> Frame {
    Frame::Error {
        req: 0,
        code,
        message: why.chars().take(200).collect(),
    }
}

/// Close a link whose peer broke the protocol, telling the peer why first.
pub(crate) fn close_malformed(link: &dyn Link, why: &str) {
    let _ = link.send(&refusal(crate::wire::ErrorCode::Malformed, why));
    link.close();
}

/// This process's own identity, for in-process links.
pub(crate) fn own_identity(name: &str) -> PeerIdentity {
    PeerIdentity {
        name: name.to_owned(),
        uid: nix::unistd::getuid().as_raw(),
        gid: nix::unistd::getgid().as_raw(),
        pid: std::process::id(),
        remote: None,
    }
}
