//! Entry points: service servers (`crate::service::server`).

use std::ffi::{c_char, c_void};

use ffi::rmw_ret_t;

use crate::boundary::event_callback::EventCallback;
use crate::boundary::handle;
use crate::boundary::message::{MessageMut, MessageRef};
use crate::boundary::{cstr, ffi_ptr, ffi_ret, service_types, RmwError, RmwResult};
use crate::gid::Gid;
use crate::node::Node;
use crate::service::server::Server;
use crate::IDENTIFIER;

/// A non-empty service name (rmw documents an empty one as an invalid argument).
///
/// # Safety
/// `p` is null or a NUL-terminated string valid for `'a`.
pub(super) unsafe fn service_name<'a>(p: *const c_char) -> RmwResult<&'a str> {
    // SAFETY: forwarded caller guarantee.
    let name = unsafe { cstr::arg(p, "service_name") }?;
    if name.is_empty() {
        return Err(RmwError::invalid("service_name is empty"));
    }
    Ok(name)
}

/// `rmw_create_service`: a server whose request inbox is
/// `/.ros/services<name>/_request/<gid>`, announced in the registry.
///
/// # Safety
/// Pointers are null or valid for the call, as rmw documents; the type support's library stays
/// loaded while the service exists.
#[no_mangle]
pub unsafe extern "C" fn rmw_create_service(
    node: *const ffi::rmw_node_t,
    type_support: *const ffi::rosidl_service_type_support_t,
    service_name: *const c_char,
    qos_profile: *const ffi::rmw_qos_profile_t,
) -> *mut ffi::rmw_service_t {
    ffi_ptr("rmw_create_service", || {
        // SAFETY: rmw's contract on every argument.
        let node = unsafe { handle::get::<Node>(node, "node") }?;
        // SAFETY: as above.
        let ty = unsafe { service_types::resolve(type_support) }?;
        // SAFETY: as above.
        let name = unsafe { self::service_name(service_name) }?;
        // SAFETY: as above.
        let qos = unsafe { handle::input(qos_profile, "qos_profile") }?;
        let server = Server::new(node, ty, name, qos)?;
        Ok(handle::create(server, |s, data| ffi::rmw_service_t {
            implementation_identifier: IDENTIFIER.as_ptr(),
            data,
            service_name: s.service_name.as_ptr(),
        }))
    })
}

/// `rmw_destroy_service`.
///
/// # Safety
/// `node` and `service` are null or live handles; `service` is not used after a success.
#[no_mangle]
pub unsafe extern "C" fn rmw_destroy_service(
    node: *mut ffi::rmw_node_t,
    service: *mut ffi::rmw_service_t,
) -> rmw_ret_t {
    // SAFETY: rmw's contract; the caller gives up the handle.
    ffi_ret("rmw_destroy_service", || unsafe {
        super::destroy_of_node::<Server>(node, service, "service")
    })
}

/// `rmw_take_request`: the oldest request, with the client's gid and the request's sequence
/// number in the header.
///
/// # Safety
/// Pointers are null or valid; `ros_request` is an initialized request message of the
/// service's type.
#[no_mangle]
pub unsafe extern "C" fn rmw_take_request(
    service: *const ffi::rmw_service_t,
    request_header: *mut ffi::rmw_service_info_t,
    ros_request: *mut c_void,
    taken: *mut bool,
) -> rmw_ret_t {
    ffi_ret("rmw_take_request", || {
        // SAFETY: rmw's contract on every argument.
        let server = unsafe { handle::get::<Server>(service, "service") }?;
        // SAFETY: as above.
        let header = unsafe { handle::out(request_header, "request_header") }?;
        // SAFETY: as above.
        let mut msg = unsafe { MessageMut::new(ros_request, "ros_request") }?;
        // SAFETY: as above.
        let taken = unsafe { handle::out(taken, "taken") }?;
        *taken = false;
        if let Some(h) = server.take_request(&mut msg)? {
            header.request_id.writer_guid = h.client.0;
            header.request_id.sequence_number = h.sequence;
            header.source_timestamp = h.source_timestamp_ns;
            header.received_timestamp = h.received_timestamp_ns;
            *taken = true;
        }
        Ok(())
    })
}

/// `rmw_send_response`: answer the client named in `request_header`. A client that has gone
/// gets nothing (`RMW_RET_OK`, as Fast DDS); one never known here is `RMW_RET_TIMEOUT`.
///
/// # Safety
/// Pointers are null or valid; `ros_response` is an initialized response message.
#[no_mangle]
pub unsafe extern "C" fn rmw_send_response(
    service: *const ffi::rmw_service_t,
    request_header: *mut ffi::rmw_request_id_t,
    ros_response: *mut c_void,
) -> rmw_ret_t {
    ffi_ret("rmw_send_response", || {
        // SAFETY: rmw's contract on every argument.
        let server = unsafe { handle::get::<Server>(service, "service") }?;
        // SAFETY: as above.
        let id = unsafe { handle::input(request_header.cast_const(), "request_header") }?;
        // SAFETY: as above.
        let msg = unsafe { MessageRef::new(ros_response.cast_const(), "ros_response") }?;
        server.send_response(Gid(id.writer_guid), id.sequence_number, &msg)
    })
}

/// `rmw_service_request_subscription_get_actual_qos`.
///
/// # Safety
/// Pointers are null or valid.
#[no_mangle]
pub unsafe extern "C" fn rmw_service_request_subscription_get_actual_qos(
    service: *const ffi::rmw_service_t,
    qos: *mut ffi::rmw_qos_profile_t,
) -> rmw_ret_t {
    ffi_ret("rmw_service_request_subscription_get_actual_qos", || {
        // SAFETY: rmw's contract.
        let server = unsafe { handle::get::<Server>(service, "service") }?;
        // SAFETY: as above.
        *unsafe { handle::out(qos, "qos") }? = server.qos.profile;
        Ok(())
    })
}

/// `rmw_service_response_publisher_get_actual_qos`: the responses go out with the service's
/// own profile.
///
/// # Safety
/// Pointers are null or valid.
#[no_mangle]
pub unsafe extern "C" fn rmw_service_response_publisher_get_actual_qos(
    service: *const ffi::rmw_service_t,
    qos: *mut ffi::rmw_qos_profile_t,
) -> rmw_ret_t {
    ffi_ret("rmw_service_response_publisher_get_actual_qos", || {
        // SAFETY: rmw's contract.
        let server = unsafe { handle::get::<Server>(service, "service") }?;
        // SAFETY: as above.
        *unsafe { handle::out(qos, "qos") }? = server.qos.profile;
        Ok(())
    })
}

/// `rmw_service_set_on_new_request_callback`: called with the requests already waiting, then
/// with 1 for each that arrives, on the delivering thread.
///
/// # Safety
/// `service` is null or live; `callback` (if set) is callable with `user_data` from any thread
/// until replaced or cleared.
#[no_mangle]
pub unsafe extern "C" fn rmw_service_set_on_new_request_callback(
    service: *mut ffi::rmw_service_t,
    callback: ffi::rmw_event_callback_t,
    user_data: *const c_void,
) -> rmw_ret_t {
    ffi_ret("rmw_service_set_on_new_request_callback", || {
        // SAFETY: rmw's contract.
        let server = unsafe { handle::get::<Server>(service.cast_const(), "service") }?;
        // SAFETY: as above.
        server.set_callback(unsafe { EventCallback::new(callback, user_data) });
        Ok(())
    })
}
