//! rmw_tracer: the ROS 2 middleware interface (rmw) over a libtracer graph.
//!
//! `crate::entry` holds the `extern "C"` rmw entry points, `crate::boundary` the only unsafe
//! code (panic boundary, pointer module, C strings, error mapping). See `docs/rmw-mapping.md`.

use std::ffi::CStr;

pub mod boundary;
pub mod cdr;
mod entry;
mod features;
mod log;

/// The implementation identifier every rmw_tracer handle carries.
pub const IDENTIFIER: &CStr = c"rmw_tracer";

/// The serialization format of every message rmw_tracer moves: CDR as Fast DDS writes it.
pub const SERIALIZATION_FORMAT: &CStr = c"cdr";
