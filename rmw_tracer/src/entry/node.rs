//! Entry points: nodes.

use ffi::rmw_ret_t;

use super::unsupported;
use crate::boundary::{cstr, ffi_const_ptr, ffi_ptr, ffi_ret, handle};
use crate::context::Context;
use crate::node::Node;
use crate::IDENTIFIER;

/// `rmw_create_node`: validates the name and namespace (`RMW_RET_INVALID_ARGUMENT`-style
/// failure: null with the reason in the error string) and announces the node.
///
/// # Safety
/// `context` is null or a live context; `name` and `namespace_` are null or C strings.
#[no_mangle]
pub unsafe extern "C" fn rmw_create_node(
    context: *mut ffi::rmw_context_t,
    name: *const std::ffi::c_char,
    namespace_: *const std::ffi::c_char,
) -> *mut ffi::rmw_node_t {
    ffi_ptr("rmw_create_node", || {
        // SAFETY: caller guarantee.
        let ctx = unsafe { handle::get::<Context>(context, "context") }?;
        // SAFETY: caller guarantee.
        let name = unsafe { cstr::arg(name, "name") }?;
        // SAFETY: caller guarantee.
        let namespace = unsafe { cstr::arg(namespace_, "namespace") }?;
        let node = Node::new(ctx.shared.clone(), context, name, namespace)?;
        Ok(handle::create(node, |n, data| ffi::rmw_node_t {
            implementation_identifier: IDENTIFIER.as_ptr(),
            data,
            name: n.name.as_ptr(),
            namespace_: n.namespace.as_ptr(),
            context,
        }))
    })
}

/// `rmw_destroy_node`.
///
/// # Safety
/// `node` is null or a node made by `rmw_create_node`, not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn rmw_destroy_node(node: *mut ffi::rmw_node_t) -> rmw_ret_t {
    ffi_ret("rmw_destroy_node", || {
        // SAFETY: caller guarantee.
        drop(unsafe { handle::destroy::<Node>(node, "node") }?);
        Ok(())
    })
}

/// `rmw_node_get_graph_guard_condition`: raised whenever an entity appears or goes, in this
/// process or on a peer.
///
/// # Safety
/// `node` is null or a live node.
#[no_mangle]
pub unsafe extern "C" fn rmw_node_get_graph_guard_condition(
    node: *const ffi::rmw_node_t,
) -> *const ffi::rmw_guard_condition_t {
    ffi_const_ptr("rmw_node_get_graph_guard_condition", || {
        // SAFETY: caller guarantee.
        let n = unsafe { handle::get::<Node>(node, "node") }?;
        Ok(n.graph_guard_condition())
    })
}

/// `rmw_node_assert_liveliness`: deprecated in rmw (its implementation was removed; use
/// MANUAL_BY_TOPIC publishers); returns `RMW_RET_UNSUPPORTED`.
///
/// # Safety
/// Callable with any argument: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_node_assert_liveliness(_node: *const ffi::rmw_node_t) -> rmw_ret_t {
    ffi_ret("rmw_node_assert_liveliness", unsupported)
}
