//! Entry points: init.

#![allow(unused_imports)]
use std::ffi::{c_char, c_void};

use ffi::rmw_ret_t;

use super::unsupported;
use crate::boundary::{ffi_bool, ffi_const_ptr, ffi_ptr, ffi_ret};

/// `rmw_init_options_init`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_init_options_init(
    _init_options: *mut ffi::rmw_init_options_t,
    _allocator: ffi::rcutils_allocator_t,
) -> rmw_ret_t {
    ffi_ret("rmw_init_options_init", unsupported)
}

/// `rmw_init_options_copy`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_init_options_copy(
    _src: *const ffi::rmw_init_options_t,
    _dst: *mut ffi::rmw_init_options_t,
) -> rmw_ret_t {
    ffi_ret("rmw_init_options_copy", unsupported)
}

/// `rmw_init_options_fini`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_init_options_fini(
    _init_options: *mut ffi::rmw_init_options_t,
) -> rmw_ret_t {
    ffi_ret("rmw_init_options_fini", unsupported)
}

/// `rmw_init`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_init(
    _options: *const ffi::rmw_init_options_t,
    _context: *mut ffi::rmw_context_t,
) -> rmw_ret_t {
    ffi_ret("rmw_init", unsupported)
}

/// `rmw_shutdown`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_shutdown(_context: *mut ffi::rmw_context_t) -> rmw_ret_t {
    ffi_ret("rmw_shutdown", unsupported)
}

/// `rmw_context_fini`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_context_fini(_context: *mut ffi::rmw_context_t) -> rmw_ret_t {
    ffi_ret("rmw_context_fini", unsupported)
}
