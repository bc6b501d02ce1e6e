//! Entry points: graph.

#![allow(unused_imports)]
use std::ffi::{c_char, c_void};

use ffi::rmw_ret_t;

use super::unsupported;
use crate::boundary::{ffi_bool, ffi_const_ptr, ffi_ptr, ffi_ret};

/// `rmw_get_node_names`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_get_node_names(
    _node: *const ffi::rmw_node_t,
    _node_names: *mut ffi::rcutils_string_array_t,
    _node_namespaces: *mut ffi::rcutils_string_array_t,
) -> rmw_ret_t {
    ffi_ret("rmw_get_node_names", unsupported)
}

/// `rmw_get_node_names_with_enclaves`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_get_node_names_with_enclaves(
    _node: *const ffi::rmw_node_t,
    _node_names: *mut ffi::rcutils_string_array_t,
    _node_namespaces: *mut ffi::rcutils_string_array_t,
    _enclaves: *mut ffi::rcutils_string_array_t,
) -> rmw_ret_t {
    ffi_ret("rmw_get_node_names_with_enclaves", unsupported)
}

/// `rmw_get_topic_names_and_types`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_get_topic_names_and_types(
    _node: *const ffi::rmw_node_t,
    _allocator: *mut ffi::rcutils_allocator_t,
    _no_demangle: bool,
    _topic_names_and_types: *mut ffi::rmw_names_and_types_t,
) -> rmw_ret_t {
    ffi_ret("rmw_get_topic_names_and_types", unsupported)
}

/// `rmw_get_service_names_and_types`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_get_service_names_and_types(
    _node: *const ffi::rmw_node_t,
    _allocator: *mut ffi::rcutils_allocator_t,
    _service_names_and_types: *mut ffi::rmw_names_and_types_t,
) -> rmw_ret_t {
    ffi_ret("rmw_get_service_names_and_types", unsupported)
}

/// `rmw_get_publisher_names_and_types_by_node`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_get_publisher_names_and_types_by_node(
    _node: *const ffi::rmw_node_t,
    _allocator: *mut ffi::rcutils_allocator_t,
    _node_name: *const c_char,
    _node_namespace: *const c_char,
    _no_demangle: bool,
    _topic_names_and_types: *mut ffi::rmw_names_and_types_t,
) -> rmw_ret_t {
    ffi_ret("rmw_get_publisher_names_and_types_by_node", unsupported)
}

/// `rmw_get_subscriber_names_and_types_by_node`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_get_subscriber_names_and_types_by_node(
    _node: *const ffi::rmw_node_t,
    _allocator: *mut ffi::rcutils_allocator_t,
    _node_name: *const c_char,
    _node_namespace: *const c_char,
    _no_demangle: bool,
    _topic_names_and_types: *mut ffi::rmw_names_and_types_t,
) -> rmw_ret_t {
    ffi_ret("rmw_get_subscriber_names_and_types_by_node", unsupported)
}

/// `rmw_get_service_names_and_types_by_node`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_get_service_names_and_types_by_node(
    _node: *const ffi::rmw_node_t,
    _allocator: *mut ffi::rcutils_allocator_t,
    _node_name: *const c_char,
    _node_namespace: *const c_char,
    _service_names_and_types: *mut ffi::rmw_names_and_types_t,
) -> rmw_ret_t {
    ffi_ret("rmw_get_service_names_and_types_by_node", unsupported)
}

/// `rmw_get_client_names_and_types_by_node`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_get_client_names_and_types_by_node(
    _node: *const ffi::rmw_node_t,
    _allocator: *mut ffi::rcutils_allocator_t,
    _node_name: *const c_char,
    _node_namespace: *const c_char,
    _service_names_and_types: *mut ffi::rmw_names_and_types_t,
) -> rmw_ret_t {
    ffi_ret("rmw_get_client_names_and_types_by_node", unsupported)
}

/// `rmw_count_publishers`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_count_publishers(
    _node: *const ffi::rmw_node_t,
    _topic_name: *const c_char,
    _count: *mut usize,
) -> rmw_ret_t {
    ffi_ret("rmw_count_publishers", unsupported)
}

/// `rmw_count_subscribers`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_count_subscribers(
    _node: *const ffi::rmw_node_t,
    _topic_name: *const c_char,
    _count: *mut usize,
) -> rmw_ret_t {
    ffi_ret("rmw_count_subscribers", unsupported)
}

/// `rmw_count_clients`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_count_clients(
    _node: *const ffi::rmw_node_t,
    _service_name: *const c_char,
    _count: *mut usize,
) -> rmw_ret_t {
    ffi_ret("rmw_count_clients", unsupported)
}

/// `rmw_count_services`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_count_services(
    _node: *const ffi::rmw_node_t,
    _service_name: *const c_char,
    _count: *mut usize,
) -> rmw_ret_t {
    ffi_ret("rmw_count_services", unsupported)
}

/// `rmw_get_publishers_info_by_topic`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_get_publishers_info_by_topic(
    _node: *const ffi::rmw_node_t,
    _allocator: *mut ffi::rcutils_allocator_t,
    _topic_name: *const c_char,
    _no_mangle: bool,
    _publishers_info: *mut ffi::rmw_topic_endpoint_info_array_t,
) -> rmw_ret_t {
    ffi_ret("rmw_get_publishers_info_by_topic", unsupported)
}

/// `rmw_get_subscriptions_info_by_topic`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_get_subscriptions_info_by_topic(
    _node: *const ffi::rmw_node_t,
    _allocator: *mut ffi::rcutils_allocator_t,
    _topic_name: *const c_char,
    _no_mangle: bool,
    _subscriptions_info: *mut ffi::rmw_topic_endpoint_info_array_t,
) -> rmw_ret_t {
    ffi_ret("rmw_get_subscriptions_info_by_topic", unsupported)
}
