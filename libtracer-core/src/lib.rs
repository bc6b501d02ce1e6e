#![forbid(unsafe_code)]
//! libtracer-core: the substrate. See docs/libtracer.md (model) and docs/wire.md (wire protocol).

pub mod payload;
pub mod wire;

pub use payload::{Meta, Payload, WriterId};
