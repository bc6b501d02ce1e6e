//! Entry points: loan.

#![allow(unused_imports)]
use std::ffi::{c_char, c_void};

use ffi::rmw_ret_t;

use super::unsupported;
use crate::boundary::{ffi_bool, ffi_const_ptr, ffi_ptr, ffi_ret};

/// `rmw_borrow_loaned_message`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_borrow_loaned_message(
    _publisher: *const ffi::rmw_publisher_t,
    _type_support: *const ffi::rosidl_message_type_support_t,
    _ros_message: *mut *mut c_void,
) -> rmw_ret_t {
    ffi_ret("rmw_borrow_loaned_message", unsupported)
}

/// `rmw_publish_loaned_message`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_publish_loaned_message(
    _publisher: *const ffi::rmw_publisher_t,
    _ros_message: *mut c_void,
    _allocation: *mut ffi::rmw_publisher_allocation_t,
) -> rmw_ret_t {
    ffi_ret("rmw_publish_loaned_message", unsupported)
}

/// `rmw_return_loaned_message_from_publisher`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_return_loaned_message_from_publisher(
    _publisher: *const ffi::rmw_publisher_t,
    _loaned_message: *mut c_void,
) -> rmw_ret_t {
    ffi_ret("rmw_return_loaned_message_from_publisher", unsupported)
}

/// `rmw_take_loaned_message`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_take_loaned_message(
    _subscription: *const ffi::rmw_subscription_t,
    _loaned_message: *mut *mut c_void,
    _taken: *mut bool,
    _allocation: *mut ffi::rmw_subscription_allocation_t,
) -> rmw_ret_t {
    ffi_ret("rmw_take_loaned_message", unsupported)
}

/// `rmw_take_loaned_message_with_info`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_take_loaned_message_with_info(
    _subscription: *const ffi::rmw_subscription_t,
    _loaned_message: *mut *mut c_void,
    _taken: *mut bool,
    _message_info: *mut ffi::rmw_message_info_t,
    _allocation: *mut ffi::rmw_subscription_allocation_t,
) -> rmw_ret_t {
    ffi_ret("rmw_take_loaned_message_with_info", unsupported)
}

/// `rmw_return_loaned_message_from_subscription`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_return_loaned_message_from_subscription(
    _subscription: *const ffi::rmw_subscription_t,
    _loaned_message: *mut c_void,
) -> rmw_ret_t {
    ffi_ret("rmw_return_loaned_message_from_subscription", unsupported)
}
