//! Entry points: serialize.

#![allow(unused_imports)]
use std::ffi::{c_char, c_void};

use ffi::rmw_ret_t;

use super::unsupported;
use crate::boundary::{ffi_bool, ffi_const_ptr, ffi_ptr, ffi_ret};

/// `rmw_serialize`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_serialize(
    _ros_message: *const c_void,
    _type_support: *const ffi::rosidl_message_type_support_t,
    _serialized_message: *mut ffi::rmw_serialized_message_t,
) -> rmw_ret_t {
    ffi_ret("rmw_serialize", unsupported)
}

/// `rmw_deserialize`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_deserialize(
    _serialized_message: *const ffi::rmw_serialized_message_t,
    _type_support: *const ffi::rosidl_message_type_support_t,
    _ros_message: *mut c_void,
) -> rmw_ret_t {
    ffi_ret("rmw_deserialize", unsupported)
}

/// `rmw_get_serialized_message_size`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_get_serialized_message_size(
    _type_support: *const ffi::rosidl_message_type_support_t,
    _message_bounds: *const ffi::rosidl_runtime_c__Sequence__bound,
    _size: *mut usize,
) -> rmw_ret_t {
    ffi_ret("rmw_get_serialized_message_size", unsupported)
}
