//! Entry points: guard.

#![allow(unused_imports)]
use std::ffi::{c_char, c_void};

use ffi::rmw_ret_t;

use super::unsupported;
use crate::boundary::{ffi_bool, ffi_const_ptr, ffi_ptr, ffi_ret};

/// `rmw_create_guard_condition`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_create_guard_condition(
    _context: *mut ffi::rmw_context_t,
) -> *mut ffi::rmw_guard_condition_t {
    ffi_ptr("rmw_create_guard_condition", unsupported)
}

/// `rmw_destroy_guard_condition`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_destroy_guard_condition(
    _guard_condition: *mut ffi::rmw_guard_condition_t,
) -> rmw_ret_t {
    ffi_ret("rmw_destroy_guard_condition", unsupported)
}

/// `rmw_trigger_guard_condition`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_trigger_guard_condition(
    _guard_condition: *const ffi::rmw_guard_condition_t,
) -> rmw_ret_t {
    ffi_ret("rmw_trigger_guard_condition", unsupported)
}
