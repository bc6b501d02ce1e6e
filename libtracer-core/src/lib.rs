#![forbid(unsafe_code)]
//! libtracer-core: the substrate. See docs/libtracer.md (model) and docs/wire.md (wire protocol).
//!
//! The graph side, one module per concept: `path` (validated paths), `vertex` + `tree` (the
//! vertices and their index), `ring` (history rings), `edge` (SUBSCRIBER edges and the packed
//! delivery policy), `acl`, `ready` (waiters and readiness), `structure` (the `:children[]` feed),
//! `graph` (the entry point), `net` (links and mounts), `error`.

pub mod acl;
pub mod buffer;
pub mod edge;
pub mod error;
pub mod graph;
pub mod link;
pub mod net;
pub mod path;
pub mod payload;
pub mod ready;
mod ring;
pub mod structure;
mod tree;
pub mod vertex;
pub mod wire;

pub use acl::{Ace, AceKind, Acl, Credentials, Principal, Rights, Subject, SubjectCheck};
pub use edge::{DeliveryPolicy, Edge, EdgeState, SubscriberInfo};
pub use error::Error;
pub use graph::{Discovery, Graph, GraphConfig, Schema};
pub use link::{Link, LinkError, PeerIdentity};
pub use net::LinkId;
pub use path::Path;
pub use payload::{Meta, Payload, WriterId};
pub use ready::{Readiness, Signal, Waiter};
pub use ring::Ring;
pub use vertex::{AdmitFn, EdgeFilterFn, LandFn, Landed, Sample, SinkFn, StreamOptions, Vertex};
pub use wire::frame::{EdgeId, Role, SchemaInfo, StructEvent};
