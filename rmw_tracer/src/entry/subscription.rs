//! Entry points: subscription.

#![allow(unused_imports)]
use std::ffi::{c_char, c_void};

use ffi::rmw_ret_t;

use super::unsupported;
use crate::boundary::{ffi_bool, ffi_const_ptr, ffi_ptr, ffi_ret};

/// `rmw_create_subscription`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_create_subscription(
    _node: *const ffi::rmw_node_t,
    _type_support: *const ffi::rosidl_message_type_support_t,
    _topic_name: *const c_char,
    _qos_policies: *const ffi::rmw_qos_profile_t,
    _subscription_options: *const ffi::rmw_subscription_options_t,
) -> *mut ffi::rmw_subscription_t {
    ffi_ptr("rmw_create_subscription", unsupported)
}

/// `rmw_destroy_subscription`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_destroy_subscription(
    _node: *mut ffi::rmw_node_t,
    _subscription: *mut ffi::rmw_subscription_t,
) -> rmw_ret_t {
    ffi_ret("rmw_destroy_subscription", unsupported)
}

/// `rmw_subscription_get_actual_qos`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_subscription_get_actual_qos(
    _subscription: *const ffi::rmw_subscription_t,
    _qos: *mut ffi::rmw_qos_profile_t,
) -> rmw_ret_t {
    ffi_ret("rmw_subscription_get_actual_qos", unsupported)
}

/// `rmw_subscription_count_matched_publishers`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_subscription_count_matched_publishers(
    _subscription: *const ffi::rmw_subscription_t,
    _publisher_count: *mut usize,
) -> rmw_ret_t {
    ffi_ret("rmw_subscription_count_matched_publishers", unsupported)
}

/// `rmw_init_subscription_allocation`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_init_subscription_allocation(
    _type_support: *const ffi::rosidl_message_type_support_t,
    _message_bounds: *const ffi::rosidl_runtime_c__Sequence__bound,
    _allocation: *mut ffi::rmw_subscription_allocation_t,
) -> rmw_ret_t {
    ffi_ret("rmw_init_subscription_allocation", unsupported)
}

/// `rmw_fini_subscription_allocation`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_fini_subscription_allocation(
    _allocation: *mut ffi::rmw_subscription_allocation_t,
) -> rmw_ret_t {
    ffi_ret("rmw_fini_subscription_allocation", unsupported)
}

/// `rmw_subscription_set_on_new_message_callback`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_subscription_set_on_new_message_callback(
    _subscription: *mut ffi::rmw_subscription_t,
    _callback: ffi::rmw_event_callback_t,
    _user_data: *const c_void,
) -> rmw_ret_t {
    ffi_ret("rmw_subscription_set_on_new_message_callback", unsupported)
}
