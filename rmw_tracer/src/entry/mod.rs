//! The rmw entry points: every function of the Jazzy rmw API that an implementation exports
//! (`docs/entry-points.md` lists each one and its state), grouped by area.
//!
//! Each is `#[no_mangle] pub unsafe extern "C" fn rmw_x(..)` whose body is one call through the
//! panic boundary (`crate::boundary::panic`) into safe Rust; pointers are turned into references
//! only by `crate::boundary::handle` and `crate::boundary::cstr`.

use crate::boundary::handle::{self, Handle};
use crate::boundary::{RmwError, RmwResult};
use crate::node::Node;

mod allocation;
mod client;
mod content_filter;
mod dynamic;
mod event;
mod graph;
mod guard;
mod identity;
mod init;
mod loan;
mod network_flow;
mod node;
mod publisher;
mod qos;
mod serialize;
mod service;
mod subscription;
mod take;
mod wait;

/// The body of every entry point that is not built yet: `RMW_RET_UNSUPPORTED`, and the error
/// string `rmw_tracer: <fn> is not supported yet`.
pub(crate) fn unsupported<T>() -> RmwResult<T> {
    Err(RmwError::Unsupported)
}

/// The body of `rmw_destroy_{publisher,subscription,service,client}`: check the node, then free
/// the handle and drop its object (which runs its teardown).
///
/// # Safety
/// `node` is null or a live node; `entity` null or a live handle of `H`, not used afterwards.
unsafe fn destroy_of_node<H: Handle>(
    node: *const ffi::rmw_node_t,
    entity: *mut H::C,
    arg: &'static str,
) -> RmwResult<()> {
    // SAFETY: forwarded caller guarantee.
    unsafe { handle::get::<Node>(node, "node") }?;
    // SAFETY: forwarded caller guarantee; the caller gives up the handle.
    drop(unsafe { handle::destroy::<H>(entity, arg) }?);
    Ok(())
}
