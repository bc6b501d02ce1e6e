//! Entry points: wait.

#![allow(unused_imports)]
use std::ffi::{c_char, c_void};

use ffi::rmw_ret_t;

use super::unsupported;
use crate::boundary::{ffi_bool, ffi_const_ptr, ffi_ptr, ffi_ret};

/// `rmw_create_wait_set`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_create_wait_set(
    _context: *mut ffi::rmw_context_t,
    _max_conditions: usize,
) -> *mut ffi::rmw_wait_set_t {
    ffi_ptr("rmw_create_wait_set", unsupported)
}

/// `rmw_destroy_wait_set`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_destroy_wait_set(_wait_set: *mut ffi::rmw_wait_set_t) -> rmw_ret_t {
    ffi_ret("rmw_destroy_wait_set", unsupported)
}

/// `rmw_wait`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_wait(
    _subscriptions: *mut ffi::rmw_subscriptions_t,
    _guard_conditions: *mut ffi::rmw_guard_conditions_t,
    _services: *mut ffi::rmw_services_t,
    _clients: *mut ffi::rmw_clients_t,
    _events: *mut ffi::rmw_events_t,
    _wait_set: *mut ffi::rmw_wait_set_t,
    _wait_timeout: *const ffi::rmw_time_t,
) -> rmw_ret_t {
    ffi_ret("rmw_wait", unsupported)
}
