#![forbid(unsafe_code)]
//! libtracer-core: the substrate. See docs/libtracer.md (model) and docs/wire.md (wire protocol).
//!
//! Layers, each importing only those below it (no module imports one above; check with an
//! import graph of `src/`):
//!
//! ```text
//! graph       the public entry point: Graph, Vertex handles, the constructor that starts
//!             discovery
//! net         the graph on its links: mount a link, answer a peer's frames, drop a link
//! state       the graph's shared state (GraphInner): ACL checks, tree changes, edge attachment
//! peers       the table of links and the requests made over them (forwarded writes, remote
//!             reads and subscribes, the sync barrier)
//! tree        the index of vertices by path
//! vertex      a vertex, its store and its out-edges (vertex::edge)
//! ring, structure, sample, ready, acl, path
//! link        transports (Unix, shared memory, QUIC, in-process) behind one `Link` trait
//! wire, payload (with its buffer pool), error
//! ```

pub mod acl;
pub mod error;
pub mod graph;
pub mod link;
pub mod net;
pub mod path;
pub mod payload;
// The buffer pool is one way a payload holds its bytes: it lives in `payload`, reached from
// the crate root as `buffer`.
pub use payload::buffer;
mod peers;
pub mod ready;
mod ring;
pub mod sample;
mod state;
pub mod structure;
mod tree;
pub mod vertex;
// An edge is part of its source vertex (its `:subscribers[]`): the module lives in `vertex`,
// reached from the crate root as `edge`.
pub use vertex::edge;
pub mod wait_tuning;
pub mod wire;

pub use acl::{Ace, AceKind, Acl, Credentials, Principal, Rights, Subject, SubjectCheck};
pub use edge::{DeliveryPolicy, Edge, EdgeState, SubscriberInfo, Window};
pub use error::Error;
pub use graph::Vertex;
pub use graph::{Discovery, Graph, GraphConfig, Schema};
pub use link::{Link, LinkError, PeerIdentity};
pub use path::Path;
pub use payload::{Meta, Payload, WriterId};
pub use peers::LinkId;
pub use ready::{Readiness, Signal, Waiter};
pub use ring::Ring;
pub use sample::Sample;
pub use vertex::pacing::DEFAULT_MAX_BLOCKING;
pub use vertex::{AdmitFn, EdgeFilterFn, LandFn, Landed, SinkFn, StreamOptions};
pub use wait_tuning::WaitTuning;
pub use wire::frame::{EdgeId, Role, SchemaInfo, StructEvent};
