//! Finding the introspection type support behind a message or service type support handle, C
//! first, then C++.

use std::ffi::c_void;

use ffi::introspection_cpp::rosidl_typesupport_introspection_cpp_ServiceMembers;
use ffi::{
    rosidl_message_type_support_t, rosidl_service_type_support_t,
    rosidl_typesupport_introspection_c__ServiceMembers,
};

use super::{cstr_lossy, Flavor, ID_C, ID_CPP};
use crate::cdr::CdrError;

/// Finds the introspection type support behind any handle (an introspection handle itself, or a
/// typesupport_c / typesupport_cpp dispatcher), C first, then C++.
///
/// # Safety
/// `ts` must be null or point to a valid `rosidl_message_type_support_t`.
pub unsafe fn introspection_handle(
    ts: *const rosidl_message_type_support_t,
) -> Result<(Flavor, *const rosidl_message_type_support_t), CdrError> {
    if ts.is_null() {
        return Err(CdrError::NullTypeSupport);
    }
    // SAFETY: `ts` is valid per the contract; its identifier is a C string of the type support.
    let id = unsafe { cstr_lossy((*ts).typesupport_identifier) };
    for (flavor, wanted) in [(Flavor::C, ID_C), (Flavor::Cpp, ID_CPP)] {
        // SAFETY: valid handle and NUL-terminated identifier; the dispatcher returns null (and
        // sets the rcutils error string) when it has no such type support.
        let h = unsafe { ffi::get_message_typesupport_handle(ts, wanted.as_ptr()) };
        if !h.is_null() {
            return Ok((flavor, h));
        }
        // A failed look-up leaves an error string behind; it is not an error of ours yet.
        // SAFETY: plain call, thread-local state of rcutils.
        unsafe { ffi::rcutils_reset_error() };
    }
    Err(CdrError::NoIntrospection(id))
}

/// The request and response members of a service's introspection type support, C first, then
/// C++ (the service analogue of [`introspection_handle`]).
///
/// # Safety
/// `ts` must be null or point to a valid `rosidl_service_type_support_t`.
pub unsafe fn service_members(
    ts: *const rosidl_service_type_support_t,
) -> Result<(Flavor, *const c_void, *const c_void), CdrError> {
    if ts.is_null() {
        return Err(CdrError::NullTypeSupport);
    }
    // SAFETY: `ts` is valid per the contract.
    let id = unsafe { cstr_lossy((*ts).typesupport_identifier) };
    for (flavor, wanted) in [(Flavor::C, ID_C), (Flavor::Cpp, ID_CPP)] {
        // SAFETY: valid handle and NUL-terminated identifier; null when not offered.
        let h = unsafe { ffi::get_service_typesupport_handle(ts, wanted.as_ptr()) };
        if h.is_null() {
            // SAFETY: plain call, thread-local state of rcutils.
            unsafe { ffi::rcutils_reset_error() };
            continue;
        }
        // SAFETY: `h` is a valid introspection service handle of `flavor`.
        let data = unsafe { (*h).data };
        if data.is_null() {
            return Err(CdrError::BadTypeSupport(
                "service handle without members".into(),
            ));
        }
        let (req, resp) = match flavor {
            Flavor::C => {
                // SAFETY: `data` of a C introspection service handle is its ServiceMembers.
                let m = unsafe {
                    &*(data as *const rosidl_typesupport_introspection_c__ServiceMembers)
                };
                (
                    m.request_members_ as *const c_void,
                    m.response_members_ as *const c_void,
                )
            }
            Flavor::Cpp => {
                // SAFETY: `data` of a C++ introspection service handle is its ServiceMembers.
                let m = unsafe {
                    &*(data as *const rosidl_typesupport_introspection_cpp_ServiceMembers)
                };
                (
                    m.request_members_ as *const c_void,
                    m.response_members_ as *const c_void,
                )
            }
        };
        return Ok((flavor, req, resp));
    }
    Err(CdrError::NoIntrospection(id))
}
