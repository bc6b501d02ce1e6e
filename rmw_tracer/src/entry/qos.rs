//! Entry points: qos.

#![allow(unused_imports)]
use std::ffi::{c_char, c_void};

use ffi::rmw_ret_t;

use super::unsupported;
use crate::boundary::{ffi_bool, ffi_const_ptr, ffi_ptr, ffi_ret};

/// `rmw_qos_profile_check_compatible`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_qos_profile_check_compatible(
    _publisher_profile: ffi::rmw_qos_profile_t,
    _subscription_profile: ffi::rmw_qos_profile_t,
    _compatibility: *mut ffi::rmw_qos_compatibility_type_t,
    _reason: *mut c_char,
    _reason_size: usize,
) -> rmw_ret_t {
    ffi_ret("rmw_qos_profile_check_compatible", unsupported)
}

/// `rmw_publisher_assert_liveliness`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_publisher_assert_liveliness(
    _publisher: *const ffi::rmw_publisher_t,
) -> rmw_ret_t {
    ffi_ret("rmw_publisher_assert_liveliness", unsupported)
}

/// `rmw_publisher_wait_for_all_acked`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_publisher_wait_for_all_acked(
    _publisher: *const ffi::rmw_publisher_t,
    _wait_timeout: ffi::rmw_time_t,
) -> rmw_ret_t {
    ffi_ret("rmw_publisher_wait_for_all_acked", unsupported)
}
