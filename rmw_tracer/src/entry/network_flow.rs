//! Entry points: network_flow.

#![allow(unused_imports)]
use std::ffi::{c_char, c_void};

use ffi::rmw_ret_t;

use super::unsupported;
use crate::boundary::{ffi_bool, ffi_const_ptr, ffi_ptr, ffi_ret};

/// `rmw_publisher_get_network_flow_endpoints`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_publisher_get_network_flow_endpoints(
    _publisher: *const ffi::rmw_publisher_t,
    _allocator: *mut ffi::rcutils_allocator_t,
    _network_flow_endpoint_array: *mut ffi::rmw_network_flow_endpoint_array_t,
) -> rmw_ret_t {
    ffi_ret("rmw_publisher_get_network_flow_endpoints", unsupported)
}

/// `rmw_subscription_get_network_flow_endpoints`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_subscription_get_network_flow_endpoints(
    _subscription: *const ffi::rmw_subscription_t,
    _allocator: *mut ffi::rcutils_allocator_t,
    _network_flow_endpoint_array: *mut ffi::rmw_network_flow_endpoint_array_t,
) -> rmw_ret_t {
    ffi_ret("rmw_subscription_get_network_flow_endpoints", unsupported)
}
