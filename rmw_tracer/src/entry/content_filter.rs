//! Entry points: content_filter.

#![allow(unused_imports)]
use std::ffi::{c_char, c_void};

use ffi::rmw_ret_t;

use super::unsupported;
use crate::boundary::{ffi_bool, ffi_const_ptr, ffi_ptr, ffi_ret};

/// `rmw_subscription_set_content_filter`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_subscription_set_content_filter(
    _subscription: *mut ffi::rmw_subscription_t,
    _options: *const ffi::rmw_subscription_content_filter_options_t,
) -> rmw_ret_t {
    ffi_ret("rmw_subscription_set_content_filter", unsupported)
}

/// `rmw_subscription_get_content_filter`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_subscription_get_content_filter(
    _subscription: *const ffi::rmw_subscription_t,
    _allocator: *mut ffi::rcutils_allocator_t,
    _options: *mut ffi::rmw_subscription_content_filter_options_t,
) -> rmw_ret_t {
    ffi_ret("rmw_subscription_get_content_filter", unsupported)
}
