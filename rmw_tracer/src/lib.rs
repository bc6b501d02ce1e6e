//! rmw_tracer: the ROS 2 middleware interface (rmw) over a libtracer graph.
//!
//! `crate::entry` holds the `extern "C"` rmw entry points, `crate::boundary` the only unsafe
//! code (panic boundary, pointer module, C strings, error mapping). See `docs/rmw-mapping.md`.

#![deny(unsafe_code)]

use std::ffi::CStr;

mod admission;
#[allow(unsafe_code)]
pub mod boundary;
#[allow(unsafe_code)]
pub mod cdr;
mod content_filter;
mod context;
#[allow(unsafe_code)]
mod entry;
mod event;
mod features;
mod gid;
mod graph_query;
mod guard;
mod loan;
mod log;
mod names;
mod node;
mod priority;
mod publisher;
mod qos;
mod qos_compat;
mod record;
mod registry;
mod security;
mod serial_link;
mod service;
mod shm;
mod subscription;
mod teardown;
mod topic;
mod waitset;

/// The implementation identifier every rmw_tracer handle carries.
pub const IDENTIFIER: &CStr = c"rmw_tracer";

/// The serialization format of every message rmw_tracer moves: CDR as Fast DDS writes it.
pub const SERIALIZATION_FORMAT: &CStr = c"cdr";
