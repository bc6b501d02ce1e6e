//! Entry points: event.

#![allow(unused_imports)]
use std::ffi::{c_char, c_void};

use ffi::rmw_ret_t;

use super::unsupported;
use crate::boundary::{ffi_bool, ffi_const_ptr, ffi_ptr, ffi_ret};

/// `rmw_publisher_event_init`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_publisher_event_init(
    _rmw_event: *mut ffi::rmw_event_t,
    _publisher: *const ffi::rmw_publisher_t,
    _event_type: ffi::rmw_event_type_t,
) -> rmw_ret_t {
    ffi_ret("rmw_publisher_event_init", unsupported)
}

/// `rmw_subscription_event_init`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_subscription_event_init(
    _rmw_event: *mut ffi::rmw_event_t,
    _subscription: *const ffi::rmw_subscription_t,
    _event_type: ffi::rmw_event_type_t,
) -> rmw_ret_t {
    ffi_ret("rmw_subscription_event_init", unsupported)
}

/// `rmw_take_event`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_take_event(
    _event_handle: *const ffi::rmw_event_t,
    _event_info: *mut c_void,
    _taken: *mut bool,
) -> rmw_ret_t {
    ffi_ret("rmw_take_event", unsupported)
}

/// `rmw_event_set_callback`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_event_set_callback(
    _event: *mut ffi::rmw_event_t,
    _callback: ffi::rmw_event_callback_t,
    _user_data: *const c_void,
) -> rmw_ret_t {
    ffi_ret("rmw_event_set_callback", unsupported)
}

/// `rmw_event_type_is_supported`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_event_type_is_supported(
    _rmw_event_type: ffi::rmw_event_type_t,
) -> bool {
    ffi_bool("rmw_event_type_is_supported", || false)
}
