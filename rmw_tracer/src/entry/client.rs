//! Entry points: client.

#![allow(unused_imports)]
use std::ffi::{c_char, c_void};

use ffi::rmw_ret_t;

use super::unsupported;
use crate::boundary::{ffi_bool, ffi_const_ptr, ffi_ptr, ffi_ret};

/// `rmw_create_client`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_create_client(
    _node: *const ffi::rmw_node_t,
    _type_support: *const ffi::rosidl_service_type_support_t,
    _service_name: *const c_char,
    _qos_policies: *const ffi::rmw_qos_profile_t,
) -> *mut ffi::rmw_client_t {
    ffi_ptr("rmw_create_client", unsupported)
}

/// `rmw_destroy_client`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_destroy_client(
    _node: *mut ffi::rmw_node_t,
    _client: *mut ffi::rmw_client_t,
) -> rmw_ret_t {
    ffi_ret("rmw_destroy_client", unsupported)
}

/// `rmw_send_request`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_send_request(
    _client: *const ffi::rmw_client_t,
    _ros_request: *const c_void,
    _sequence_id: *mut i64,
) -> rmw_ret_t {
    ffi_ret("rmw_send_request", unsupported)
}

/// `rmw_take_response`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_take_response(
    _client: *const ffi::rmw_client_t,
    _request_header: *mut ffi::rmw_service_info_t,
    _ros_response: *mut c_void,
    _taken: *mut bool,
) -> rmw_ret_t {
    ffi_ret("rmw_take_response", unsupported)
}

/// `rmw_client_request_publisher_get_actual_qos`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_client_request_publisher_get_actual_qos(
    _client: *const ffi::rmw_client_t,
    _qos: *mut ffi::rmw_qos_profile_t,
) -> rmw_ret_t {
    ffi_ret("rmw_client_request_publisher_get_actual_qos", unsupported)
}

/// `rmw_client_response_subscription_get_actual_qos`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_client_response_subscription_get_actual_qos(
    _client: *const ffi::rmw_client_t,
    _qos: *mut ffi::rmw_qos_profile_t,
) -> rmw_ret_t {
    ffi_ret(
        "rmw_client_response_subscription_get_actual_qos",
        unsupported,
    )
}

/// `rmw_client_set_on_new_response_callback`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_client_set_on_new_response_callback(
    _client: *mut ffi::rmw_client_t,
    _callback: ffi::rmw_event_callback_t,
    _user_data: *const c_void,
) -> rmw_ret_t {
    ffi_ret("rmw_client_set_on_new_response_callback", unsupported)
}

/// `rmw_get_gid_for_client`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_get_gid_for_client(
    _client: *const ffi::rmw_client_t,
    _gid: *mut ffi::rmw_gid_t,
) -> rmw_ret_t {
    ffi_ret("rmw_get_gid_for_client", unsupported)
}

/// `rmw_service_server_is_available`: not built yet; returns `RMW_RET_UNSUPPORTED` and sets the error string.
///
/// # Safety
/// Callable with any arguments: none is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn rmw_service_server_is_available(
    _node: *const ffi::rmw_node_t,
    _client: *const ffi::rmw_client_t,
    _is_available: *mut bool,
) -> rmw_ret_t {
    ffi_ret("rmw_service_server_is_available", unsupported)
}
