//! Entry points: publisher.

#![allow(unused_imports)]
use std::ffi::{c_char, c_void};

use ffi::rmw_ret_t;

use super::unsupported;
use crate::boundary::{ffi_bool, ffi_const_ptr, ffi_ptr, ffi_ret};

/// `rmw_create_publisher`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_create_publisher(
    _node: *const ffi::rmw_node_t,
    _type_support: *const ffi::rosidl_message_type_support_t,
    _topic_name: *const c_char,
    _qos_profile: *const ffi::rmw_qos_profile_t,
    _publisher_options: *const ffi::rmw_publisher_options_t,
) -> *mut ffi::rmw_publisher_t {
    ffi_ptr("rmw_create_publisher", unsupported)
}

/// `rmw_destroy_publisher`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_destroy_publisher(
    _node: *mut ffi::rmw_node_t,
    _publisher: *mut ffi::rmw_publisher_t,
) -> rmw_ret_t {
    ffi_ret("rmw_destroy_publisher", unsupported)
}

/// `rmw_publish`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_publish(
    _publisher: *const ffi::rmw_publisher_t,
    _ros_message: *const c_void,
    _allocation: *mut ffi::rmw_publisher_allocation_t,
) -> rmw_ret_t {
    ffi_ret("rmw_publish", unsupported)
}

/// `rmw_publish_serialized_message`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_publish_serialized_message(
    _publisher: *const ffi::rmw_publisher_t,
    _serialized_message: *const ffi::rmw_serialized_message_t,
    _allocation: *mut ffi::rmw_publisher_allocation_t,
) -> rmw_ret_t {
    ffi_ret("rmw_publish_serialized_message", unsupported)
}

/// `rmw_publisher_get_actual_qos`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_publisher_get_actual_qos(
    _publisher: *const ffi::rmw_publisher_t,
    _qos: *mut ffi::rmw_qos_profile_t,
) -> rmw_ret_t {
    ffi_ret("rmw_publisher_get_actual_qos", unsupported)
}

/// `rmw_publisher_count_matched_subscriptions`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_publisher_count_matched_subscriptions(
    _publisher: *const ffi::rmw_publisher_t,
    _subscription_count: *mut usize,
) -> rmw_ret_t {
    ffi_ret("rmw_publisher_count_matched_subscriptions", unsupported)
}

/// `rmw_get_gid_for_publisher`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_get_gid_for_publisher(
    _publisher: *const ffi::rmw_publisher_t,
    _gid: *mut ffi::rmw_gid_t,
) -> rmw_ret_t {
    ffi_ret("rmw_get_gid_for_publisher", unsupported)
}

/// `rmw_compare_gids_equal`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_compare_gids_equal(
    _gid1: *const ffi::rmw_gid_t,
    _gid2: *const ffi::rmw_gid_t,
    _result: *mut bool,
) -> rmw_ret_t {
    ffi_ret("rmw_compare_gids_equal", unsupported)
}

/// `rmw_init_publisher_allocation`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_init_publisher_allocation(
    _type_support: *const ffi::rosidl_message_type_support_t,
    _message_bounds: *const ffi::rosidl_runtime_c__Sequence__bound,
    _allocation: *mut ffi::rmw_publisher_allocation_t,
) -> rmw_ret_t {
    ffi_ret("rmw_init_publisher_allocation", unsupported)
}

/// `rmw_fini_publisher_allocation`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_fini_publisher_allocation(
    _allocation: *mut ffi::rmw_publisher_allocation_t,
) -> rmw_ret_t {
    ffi_ret("rmw_fini_publisher_allocation", unsupported)
}
