//! Entry points: service clients (`crate::service::client`).

use std::ffi::{c_char, c_void};

use ffi::rmw_ret_t;

use super::service::service_name;
use crate::boundary::event_callback::EventCallback;
use crate::boundary::handle;
use crate::boundary::message::{MessageMut, MessageRef};
use crate::boundary::{ffi_ptr, ffi_ret, service_types, RmwError};
use crate::node::Node;
use crate::service::client::Client;
use crate::IDENTIFIER;

/// `rmw_create_client`: a client whose responses land in `/.ros/clients/<gid>/_response`,
/// announced in the registry.
///
/// # Safety
/// Pointers are null or valid for the call, as rmw documents; the type support's library stays
/// loaded while the client exists.
#[no_mangle]
pub unsafe extern "C" fn rmw_create_client(
    node: *const ffi::rmw_node_t,
    type_support: *const ffi::rosidl_service_type_support_t,
    service_name: *const c_char,
    qos_policies: *const ffi::rmw_qos_profile_t,
) -> *mut ffi::rmw_client_t {
    ffi_ptr("rmw_create_client", || {
        // SAFETY: rmw's contract on every argument.
        let node = unsafe { handle::get::<Node>(node, "node") }?;
        // SAFETY: as above.
        let ty = unsafe { service_types::resolve(type_support) }?;
        // SAFETY: as above.
        let name = unsafe { self::service_name(service_name) }?;
        // SAFETY: as above.
        let qos = unsafe { handle::input(qos_policies, "qos_policies") }?;
        let client = Client::new(node, ty, name, qos)?;
        Ok(handle::create(client, |c, data| ffi::rmw_client_t {
            implementation_identifier: IDENTIFIER.as_ptr(),
            data,
            service_name: c.service_name.as_ptr(),
        }))
    })
}

/// `rmw_destroy_client`.
///
/// # Safety
/// `node` and `client` are null or live handles; `client` is not used after a success.
#[no_mangle]
pub unsafe extern "C" fn rmw_destroy_client(
    node: *mut ffi::rmw_node_t,
    client: *mut ffi::rmw_client_t,
) -> rmw_ret_t {
    // SAFETY: rmw's contract; the caller gives up the handle.
    ffi_ret("rmw_destroy_client", || unsafe {
        super::destroy_of_node::<Client>(node, client, "client")
    })
}

/// `rmw_send_request`: write the request to every server of the service; `sequence_id` gets
/// its sequence number (1, 2, ... per client).
///
/// # Safety
/// Pointers are null or valid; `ros_request` is an initialized request message.
#[no_mangle]
pub unsafe extern "C" fn rmw_send_request(
    client: *const ffi::rmw_client_t,
    ros_request: *const c_void,
    sequence_id: *mut i64,
) -> rmw_ret_t {
    ffi_ret("rmw_send_request", || {
        // SAFETY: rmw's contract on every argument.
        let client = unsafe { handle::get::<Client>(client, "client") }?;
        // SAFETY: as above.
        let msg = unsafe { MessageRef::new(ros_request, "ros_request") }?;
        // SAFETY: as above.
        let out = unsafe { handle::out(sequence_id, "sequence_id") }?;
        *out = client.send_request(&msg)?;
        Ok(())
    })
}

/// `rmw_take_response`: the oldest response; the header names this client and the sequence
/// number of the request answered.
///
/// # Safety
/// Pointers are null or valid; `ros_response` is an initialized response message.
#[no_mangle]
pub unsafe extern "C" fn rmw_take_response(
    client: *const ffi::rmw_client_t,
    request_header: *mut ffi::rmw_service_info_t,
    ros_response: *mut c_void,
    taken: *mut bool,
) -> rmw_ret_t {
    ffi_ret("rmw_take_response", || {
        // SAFETY: rmw's contract on every argument.
        let client = unsafe { handle::get::<Client>(client, "client") }?;
        // SAFETY: as above.
        let header = unsafe { handle::out(request_header, "request_header") }?;
        // SAFETY: as above.
        let mut msg = unsafe { MessageMut::new(ros_response, "ros_response") }?;
        // SAFETY: as above.
        let taken = unsafe { handle::out(taken, "taken") }?;
        *taken = false;
        if let Some(h) = client.take_response(&mut msg)? {
            header.request_id.writer_guid = client.gid.0;
            header.request_id.sequence_number = h.sequence;
            header.source_timestamp = h.source_timestamp_ns;
            header.received_timestamp = h.received_timestamp_ns;
            *taken = true;
        }
        Ok(())
    })
}

/// `rmw_client_request_publisher_get_actual_qos`.
///
/// # Safety
/// Pointers are null or valid.
#[no_mangle]
pub unsafe extern "C" fn rmw_client_request_publisher_get_actual_qos(
    client: *const ffi::rmw_client_t,
    qos: *mut ffi::rmw_qos_profile_t,
) -> rmw_ret_t {
    ffi_ret("rmw_client_request_publisher_get_actual_qos", || {
        // SAFETY: rmw's contract.
        let client = unsafe { handle::get::<Client>(client, "client") }?;
        // SAFETY: as above.
        *unsafe { handle::out(qos, "qos") }? = client.qos.profile;
        Ok(())
    })
}

/// `rmw_client_response_subscription_get_actual_qos`: the response inbox keeps the client's
/// own profile.
///
/// # Safety
/// Pointers are null or valid.
#[no_mangle]
pub unsafe extern "C" fn rmw_client_response_subscription_get_actual_qos(
    client: *const ffi::rmw_client_t,
    qos: *mut ffi::rmw_qos_profile_t,
) -> rmw_ret_t {
    ffi_ret("rmw_client_response_subscription_get_actual_qos", || {
        // SAFETY: rmw's contract.
        let client = unsafe { handle::get::<Client>(client, "client") }?;
        // SAFETY: as above.
        *unsafe { handle::out(qos, "qos") }? = client.qos.profile;
        Ok(())
    })
}

/// `rmw_client_set_on_new_response_callback`.
///
/// # Safety
/// `client` is null or live; `callback` (if set) is callable with `user_data` from any thread
/// until replaced or cleared.
#[no_mangle]
pub unsafe extern "C" fn rmw_client_set_on_new_response_callback(
    client: *mut ffi::rmw_client_t,
    callback: ffi::rmw_event_callback_t,
    user_data: *const c_void,
) -> rmw_ret_t {
    ffi_ret("rmw_client_set_on_new_response_callback", || {
        // SAFETY: rmw's contract.
        let client = unsafe { handle::get::<Client>(client.cast_const(), "client") }?;
        // SAFETY: as above.
        client.set_callback(unsafe { EventCallback::new(callback, user_data) });
        Ok(())
    })
}

/// `rmw_get_gid_for_client`.
///
/// # Safety
/// Pointers are null or valid.
#[no_mangle]
pub unsafe extern "C" fn rmw_get_gid_for_client(
    client: *const ffi::rmw_client_t,
    gid: *mut ffi::rmw_gid_t,
) -> rmw_ret_t {
    ffi_ret("rmw_get_gid_for_client", || {
        // SAFETY: rmw's contract.
        let client = unsafe { handle::get::<Client>(client, "client") }?;
        // SAFETY: as above.
        *unsafe { handle::out(gid, "gid") }? = crate::gid::to_rmw(client.gid);
        Ok(())
    })
}

/// `rmw_service_server_is_available`: whether the registry knows a server of the client's
/// service with its type, in this process or on a peer. A null argument is `RMW_RET_ERROR`:
/// rmw.h says INVALID_ARGUMENT, but Jazzy's test_rmw_implementation (test_client.cpp) expects
/// ERROR for each of the three and Fast DDS answers it (docs/entry-points.md).
///
/// # Safety
/// Pointers are null or valid.
#[no_mangle]
pub unsafe extern "C" fn rmw_service_server_is_available(
    node: *const ffi::rmw_node_t,
    client: *const ffi::rmw_client_t,
    is_available: *mut bool,
) -> rmw_ret_t {
    ffi_ret("rmw_service_server_is_available", || {
        // SAFETY: rmw's contract on every argument.
        let node = unsafe { handle::get::<Node>(node, "node") }.map_err(RmwError::null_as_error)?;
        // SAFETY: as above.
        let client =
            unsafe { handle::get::<Client>(client, "client") }.map_err(RmwError::null_as_error)?;
        // SAFETY: as above.
        let out = unsafe { handle::out(is_available, "is_available") }
            .map_err(RmwError::null_as_error)?;
        if !std::sync::Arc::ptr_eq(&node.ctx, &client.ctx) {
            return Err(RmwError::invalid(
                "client does not belong to the node's context",
            ));
        }
        *out = client.server_is_available()?;
        Ok(())
    })
}
