//! Entry points: service.

#![allow(unused_imports)]
use std::ffi::{c_char, c_void};

use ffi::rmw_ret_t;

use super::unsupported;
use crate::boundary::{ffi_bool, ffi_const_ptr, ffi_ptr, ffi_ret};

/// `rmw_create_service`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_create_service(
    _node: *const ffi::rmw_node_t,
    _type_support: *const ffi::rosidl_service_type_support_t,
    _service_name: *const c_char,
    _qos_profile: *const ffi::rmw_qos_profile_t,
) -> *mut ffi::rmw_service_t {
    ffi_ptr("rmw_create_service", unsupported)
}

/// `rmw_destroy_service`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_destroy_service(
    _node: *mut ffi::rmw_node_t,
    _service: *mut ffi::rmw_service_t,
) -> rmw_ret_t {
    ffi_ret("rmw_destroy_service", unsupported)
}

/// `rmw_take_request`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_take_request(
    _service: *const ffi::rmw_service_t,
    _request_header: *mut ffi::rmw_service_info_t,
    _ros_request: *mut c_void,
    _taken: *mut bool,
) -> rmw_ret_t {
    ffi_ret("rmw_take_request", unsupported)
}

/// `rmw_send_response`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_send_response(
    _service: *const ffi::rmw_service_t,
    _request_header: *mut ffi::rmw_request_id_t,
    _ros_response: *mut c_void,
) -> rmw_ret_t {
    ffi_ret("rmw_send_response", unsupported)
}

/// `rmw_service_request_subscription_get_actual_qos`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_service_request_subscription_get_actual_qos(
    _service: *const ffi::rmw_service_t,
    _qos: *mut ffi::rmw_qos_profile_t,
) -> rmw_ret_t {
    ffi_ret(
        "rmw_service_request_subscription_get_actual_qos",
        unsupported,
    )
}

/// `rmw_service_response_publisher_get_actual_qos`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_service_response_publisher_get_actual_qos(
    _service: *const ffi::rmw_service_t,
    _qos: *mut ffi::rmw_qos_profile_t,
) -> rmw_ret_t {
    ffi_ret("rmw_service_response_publisher_get_actual_qos", unsupported)
}

/// `rmw_service_set_on_new_request_callback`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_service_set_on_new_request_callback(
    _service: *mut ffi::rmw_service_t,
    _callback: ffi::rmw_event_callback_t,
    _user_data: *const c_void,
) -> rmw_ret_t {
    ffi_ret("rmw_service_set_on_new_request_callback", unsupported)
}
