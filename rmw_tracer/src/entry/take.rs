//! Entry points: take.

#![allow(unused_imports)]
use std::ffi::{c_char, c_void};

use ffi::rmw_ret_t;

use super::unsupported;
use crate::boundary::{ffi_bool, ffi_const_ptr, ffi_ptr, ffi_ret};

/// `rmw_take`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_take(
    _subscription: *const ffi::rmw_subscription_t,
    _ros_message: *mut c_void,
    _taken: *mut bool,
    _allocation: *mut ffi::rmw_subscription_allocation_t,
) -> rmw_ret_t {
    ffi_ret("rmw_take", unsupported)
}

/// `rmw_take_with_info`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_take_with_info(
    _subscription: *const ffi::rmw_subscription_t,
    _ros_message: *mut c_void,
    _taken: *mut bool,
    _message_info: *mut ffi::rmw_message_info_t,
    _allocation: *mut ffi::rmw_subscription_allocation_t,
) -> rmw_ret_t {
    ffi_ret("rmw_take_with_info", unsupported)
}

/// `rmw_take_sequence`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_take_sequence(
    _subscription: *const ffi::rmw_subscription_t,
    _count: usize,
    _message_sequence: *mut ffi::rmw_message_sequence_t,
    _message_info_sequence: *mut ffi::rmw_message_info_sequence_t,
    _taken: *mut usize,
    _allocation: *mut ffi::rmw_subscription_allocation_t,
) -> rmw_ret_t {
    ffi_ret("rmw_take_sequence", unsupported)
}

/// `rmw_take_serialized_message`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_take_serialized_message(
    _subscription: *const ffi::rmw_subscription_t,
    _serialized_message: *mut ffi::rmw_serialized_message_t,
    _taken: *mut bool,
    _allocation: *mut ffi::rmw_subscription_allocation_t,
) -> rmw_ret_t {
    ffi_ret("rmw_take_serialized_message", unsupported)
}

/// `rmw_take_serialized_message_with_info`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_take_serialized_message_with_info(
    _subscription: *const ffi::rmw_subscription_t,
    _serialized_message: *mut ffi::rmw_serialized_message_t,
    _taken: *mut bool,
    _message_info: *mut ffi::rmw_message_info_t,
    _allocation: *mut ffi::rmw_subscription_allocation_t,
) -> rmw_ret_t {
    ffi_ret("rmw_take_serialized_message_with_info", unsupported)
}
