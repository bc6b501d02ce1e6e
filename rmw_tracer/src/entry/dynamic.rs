//! Entry points: dynamic.

#![allow(unused_imports)]
use std::ffi::{c_char, c_void};

use ffi::rmw_ret_t;

use super::unsupported;
use crate::boundary::{ffi_bool, ffi_const_ptr, ffi_ptr, ffi_ret};

/// `rmw_serialization_support_init`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_serialization_support_init(
    _serialization_lib_name: *const c_char,
    _allocator: *mut ffi::rcutils_allocator_t,
    _serialization_support: *mut ffi::rosidl_dynamic_typesupport_serialization_support_t,
) -> rmw_ret_t {
    ffi_ret("rmw_serialization_support_init", unsupported)
}

/// `rmw_take_dynamic_message`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_take_dynamic_message(
    _subscription: *const ffi::rmw_subscription_t,
    _dynamic_message: *mut ffi::rosidl_dynamic_typesupport_dynamic_data_t,
    _taken: *mut bool,
    _allocation: *mut ffi::rmw_subscription_allocation_t,
) -> rmw_ret_t {
    ffi_ret("rmw_take_dynamic_message", unsupported)
}

/// `rmw_take_dynamic_message_with_info`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_take_dynamic_message_with_info(
    _subscription: *const ffi::rmw_subscription_t,
    _dynamic_message: *mut ffi::rosidl_dynamic_typesupport_dynamic_data_t,
    _taken: *mut bool,
    _message_info: *mut ffi::rmw_message_info_t,
    _allocation: *mut ffi::rmw_subscription_allocation_t,
) -> rmw_ret_t {
    ffi_ret("rmw_take_dynamic_message_with_info", unsupported)
}
