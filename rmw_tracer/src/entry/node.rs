//! Entry points: node.

#![allow(unused_imports)]
use std::ffi::{c_char, c_void};

use ffi::rmw_ret_t;

use super::unsupported;
use crate::boundary::{ffi_bool, ffi_const_ptr, ffi_ptr, ffi_ret};

/// `rmw_create_node`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_create_node(
    _context: *mut ffi::rmw_context_t,
    _name: *const c_char,
    _namespace_: *const c_char,
) -> *mut ffi::rmw_node_t {
    ffi_ptr("rmw_create_node", unsupported)
}

/// `rmw_destroy_node`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_destroy_node(_node: *mut ffi::rmw_node_t) -> rmw_ret_t {
    ffi_ret("rmw_destroy_node", unsupported)
}

/// `rmw_node_get_graph_guard_condition`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_node_get_graph_guard_condition(
    _node: *const ffi::rmw_node_t,
) -> *const ffi::rmw_guard_condition_t {
    ffi_const_ptr("rmw_node_get_graph_guard_condition", unsupported)
}

/// `rmw_node_assert_liveliness`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_node_assert_liveliness(_node: *const ffi::rmw_node_t) -> rmw_ret_t {
    ffi_ret("rmw_node_assert_liveliness", unsupported)
}
