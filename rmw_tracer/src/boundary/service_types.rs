//! A service type support (`rosidl_service_type_support_t`, as rcl passes it to
//! `rmw_create_service` / `rmw_create_client`) resolved to the two message types the CDR
//! module (de)serializes: the request and the response.

use std::ffi::CStr;

use ffi::{rosidl_message_type_support_t, rosidl_service_type_support_t};

use super::clib;
use super::error::{RmwError, RmwResult};
use crate::cdr::type_info::{format_hash, service_definition};
use crate::cdr::MessageType;

const INTROSPECTION_C: &CStr = c"rosidl_typesupport_introspection_c";
const INTROSPECTION_CPP: &CStr = c"rosidl_typesupport_introspection_cpp";
/// The dispatchers rcl passes (their request/response handles are dispatchers too).
const DISPATCH_C: &CStr = c"rosidl_typesupport_c";
const DISPATCH_CPP: &CStr = c"rosidl_typesupport_cpp";

/// The request and response types of a service type, and its name and hash.
#[derive(Clone, Debug)]
pub struct ServiceType {
    /// `pkg/srv/Type`.
    pub name: String,
    /// `RIHS01_<hex>` of the service type, empty when the type support carries none.
    pub type_hash: String,
    /// The `ros2srv` definition (the `.srv` text and its dependencies), empty when the type
    /// support carries no sources.
    pub definition: String,
    pub request: MessageType,
    pub response: MessageType,
}

/// Resolve `ts` (a `rosidl_typesupport_c` / `_cpp` dispatcher or an introspection handle).
///
/// # Safety
/// `ts` is null or a valid service type support handle whose library stays loaded for the life
/// of the process (rcl and rclpy never unload type supports).
pub unsafe fn resolve(ts: *const rosidl_service_type_support_t) -> RmwResult<ServiceType> {
    if ts.is_null() {
        return Err(RmwError::Null("type_support"));
    }
    let mut handles = Vec::with_capacity(3);
    for id in [INTROSPECTION_C, INTROSPECTION_CPP] {
        // SAFETY: `ts` is a valid handle; the dispatcher returns null (and sets the rcutils error
        // string) when it has no type support of that identifier.
        let h = unsafe { ffi::get_service_typesupport_handle(ts, id.as_ptr()) };
        if h.is_null() {
            clib::reset_error();
        } else {
            handles.push(h);
        }
    }
    // The caller's own handle last: a dispatcher's request/response handles are dispatchers
    // too, which the CDR module resolves itself. Only a handle of a type support we know: one
    // with a bogus identifier is refused even if its request/response handles would resolve.
    // SAFETY: `ts` is a valid handle; its identifier is null or a static C string.
    let id = unsafe { (*ts).typesupport_identifier };
    // SAFETY: as above.
    let known = !id.is_null()
        && [INTROSPECTION_C, INTROSPECTION_CPP, DISPATCH_C, DISPATCH_CPP]
            .contains(&unsafe { CStr::from_ptr(id) });
    if known {
        handles.push(ts);
    }
    for h in handles {
        // SAFETY: `h` is a valid service handle (the caller's or one the dispatcher returned).
        let (req, res) = unsafe { ((*h).request_typesupport, (*h).response_typesupport) };
        // SAFETY: as above for the message handles it points to.
        let (Some(req), Some(res)) = (unsafe { usable(req) }, unsafe { usable(res) }) else {
            continue;
        };
        // SAFETY: valid message handles of a loaded library.
        let request = unsafe { MessageType::from_type_support(req) }?;
        // SAFETY: as above.
        let response = unsafe { MessageType::from_type_support(res) }?;
        let name = request
            .name()
            .strip_suffix("_Request")
            .ok_or_else(|| {
                RmwError::invalid(format!(
                    "service request type `{}` does not end in `_Request`",
                    request.name()
                ))
            })?
            .to_owned();
        // SAFETY: the caller's handle is valid.
        let type_hash = unsafe { hash_of(ts) }.unwrap_or_default();
        // The caller's handle when we know its kind (a dispatcher answers for every type support
        // of the type), else this one.
        let candidates: &[_] = if known { &[ts, h] } else { &[h] };
        let definition = candidates
            .iter()
            // SAFETY: `ts` (when known) and `h` are valid service handles of a loaded library.
            .find_map(|&t| unsafe { service_definition(t, &name) })
            .unwrap_or_default();
        return Ok(ServiceType {
            name,
            type_hash,
            definition,
            request,
            response,
        });
    }
    Err(RmwError::invalid(if known {
        "service type support offers no introspection type support for its request and response"
            .to_owned()
    } else {
        format!(
            "unknown service type support identifier `{}`",
            // SAFETY: `id` is null or a static C string of the handle.
            unsafe { super::cstr::lossy(id) }
        )
    }))
}

/// A message handle we may pass on: non-null with an identifier (an introspection handle's
/// identifier is set when its library's getter first runs, so an unset one is unusable).
unsafe fn usable(
    m: *const rosidl_message_type_support_t,
) -> Option<*const rosidl_message_type_support_t> {
    if m.is_null() {
        return None;
    }
    // SAFETY: non-null handle from a valid service handle.
    if unsafe { (*m).typesupport_identifier }.is_null() {
        return None;
    }
    Some(m)
}

unsafe fn hash_of(ts: *const rosidl_service_type_support_t) -> Option<String> {
    // SAFETY: valid handle per the caller.
    let f = unsafe { (*ts).get_type_hash_func }?;
    // SAFETY: the generated function returns a pointer to a static hash (or null).
    let h = unsafe { f(ts) };
    if h.is_null() {
        return None;
    }
    // SAFETY: non-null pointer to a rosidl_type_hash_t.
    let h = unsafe { &*h };
    (h.version != 0).then(|| format_hash(h.version, &h.value))
}
