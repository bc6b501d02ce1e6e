//! Entry points: `rmw_serialize`, `rmw_deserialize`, `rmw_get_serialized_message_size`, on the
//! introspection-driven CDR of `crate::cdr` (byte-compatible with Fast DDS).

use std::cell::RefCell;
use std::ffi::{c_void, CStr};

use ffi::rmw_ret_t;

use crate::boundary::handle;
use crate::boundary::{ffi_ret, RmwError, RmwResult};
use crate::cdr::MessageType;

/// The type support identifiers these entry points take: the `rosidl_typesupport_c` / `_cpp`
/// dispatchers (what `ROSIDL_GET_MSG_TYPE_SUPPORT` and rclpy hand over) and the introspection
/// type supports they dispatch to (what the CDR walks).
const ACCEPTED: [&CStr; 4] = [
    c"rosidl_typesupport_c",
    c"rosidl_typesupport_cpp",
    c"rosidl_typesupport_introspection_c",
    c"rosidl_typesupport_introspection_cpp",
];

/// Refuses a type support whose identifier is none of [`ACCEPTED`], with `RMW_RET_ERROR` (rmw.h
/// documents OK, BAD_ALLOC and ERROR for these; Fast DDS answers ERROR, "type support not from
/// this implementation"). Checked on every call, before the type cache: that cache is keyed by
/// the handle's address, and test_rmw_implementation's `serialize_with_bad_arguments` rewrites
/// the identifier of a handle it has already serialized with.
///
/// # Safety
/// `ts` is a valid (non-null) `rosidl_message_type_support_t`.
unsafe fn check_identifier(ts: *const ffi::rosidl_message_type_support_t) -> RmwResult<()> {
    // SAFETY: caller guarantee.
    let id = unsafe { (*ts).typesupport_identifier };
    if id.is_null() {
        return Err(RmwError::failed("type support without an identifier"));
    }
    // SAFETY: a type support's identifier is a NUL-terminated string.
    let id = unsafe { CStr::from_ptr(id) };
    if ACCEPTED.contains(&id) {
        return Ok(());
    }
    Err(RmwError::failed(format!(
        "type support {:?} is not one rmw_tracer can use (it takes rosidl_typesupport_c / _cpp \
         and their introspection type supports)",
        id.to_string_lossy()
    )))
}

thread_local! {
    /// Serialization scratch buffer, reused so that a steady stream of messages allocates nothing.
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// `rmw_serialize`: CDR of `ros_message` into `serialized_message`, grown with its own allocator
/// (`rmw_serialized_message_resize`) when it is too small.
///
/// # Safety
/// Pointers are null or valid: an initialized message of the type `type_support` describes, and
/// an initialized `rmw_serialized_message_t`.
#[no_mangle]
pub unsafe extern "C" fn rmw_serialize(
    ros_message: *const c_void,
    type_support: *const ffi::rosidl_message_type_support_t,
    serialized_message: *mut ffi::rmw_serialized_message_t,
) -> rmw_ret_t {
    // SAFETY: forwarded caller guarantee.
    ffi_ret("rmw_serialize", || unsafe {
        serialize(ros_message, type_support, serialized_message)
    })
}

unsafe fn serialize(
    ros_message: *const c_void,
    type_support: *const ffi::rosidl_message_type_support_t,
    serialized_message: *mut ffi::rmw_serialized_message_t,
) -> RmwResult<()> {
    if ros_message.is_null() {
        return Err(RmwError::Null("ros_message"));
    }
    if type_support.is_null() {
        return Err(RmwError::Null("type_support"));
    }
    // SAFETY: caller guarantee: null or an initialized serialized message.
    let out = unsafe { handle::out(serialized_message, "serialized_message") }?;
    // SAFETY: non-null, valid per the caller.
    unsafe { check_identifier(type_support) }?;
    // SAFETY: caller guarantee on the type support.
    let mt = unsafe { MessageType::cached(type_support) }?;
    SCRATCH.with(|scratch| {
        let mut buf = scratch.borrow_mut();
        // SAFETY: caller guarantee: `ros_message` is an initialized message of this type.
        unsafe { mt.serialize(ros_message, &mut buf) }?;
        if out.buffer_capacity < buf.len() || out.buffer.is_null() {
            // SAFETY: `out` is an initialized rcutils_uint8_array_t (its allocator is valid).
            let rc = unsafe { ffi::rcutils_uint8_array_resize(out, buf.len()) };
            if rc != ffi::RCUTILS_RET_OK {
                return Err(match rc {
                    ffi::RCUTILS_RET_BAD_ALLOC => {
                        RmwError::BadAlloc("growing the serialized message")
                    }
                    _ => {
                        RmwError::invalid("serialized_message cannot be resized (not initialized?)")
                    }
                });
            }
        }
        // SAFETY: `buffer` holds at least `buffer_capacity >= buf.len()` bytes, and does not
        // overlap our own scratch vector.
        unsafe { std::ptr::copy_nonoverlapping(buf.as_ptr(), out.buffer, buf.len()) };
        out.buffer_length = buf.len();
        // A large message's buffer is not kept alive per thread.
        if buf.capacity() > 1 << 20 {
            *buf = Vec::new();
        }
        Ok(())
    })
}

/// `rmw_deserialize`: the CDR in `serialized_message` into the initialized `ros_message`, whose
/// strings and sequences are reallocated through the type support's functions.
///
/// # Safety
/// Pointers are null or valid: an initialized serialized message (its `buffer_length` bytes
/// readable) and an initialized message of the type `type_support` describes.
#[no_mangle]
pub unsafe extern "C" fn rmw_deserialize(
    serialized_message: *const ffi::rmw_serialized_message_t,
    type_support: *const ffi::rosidl_message_type_support_t,
    ros_message: *mut c_void,
) -> rmw_ret_t {
    // SAFETY: forwarded caller guarantee.
    ffi_ret("rmw_deserialize", || unsafe {
        deserialize(serialized_message, type_support, ros_message)
    })
}

unsafe fn deserialize(
    serialized_message: *const ffi::rmw_serialized_message_t,
    type_support: *const ffi::rosidl_message_type_support_t,
    ros_message: *mut c_void,
) -> RmwResult<()> {
    // SAFETY: caller guarantee.
    let input = unsafe { handle::input(serialized_message, "serialized_message") }?;
    if type_support.is_null() {
        return Err(RmwError::Null("type_support"));
    }
    if ros_message.is_null() {
        return Err(RmwError::Null("ros_message"));
    }
    // SAFETY: `buffer` holds `buffer_length` readable bytes per the caller.
    let bytes = unsafe {
        handle::slice(
            input.buffer,
            input.buffer_length,
            "serialized_message.buffer",
        )
    }?;
    // SAFETY: non-null, valid per the caller.
    unsafe { check_identifier(type_support) }?;
    // SAFETY: caller guarantee on the type support.
    let mt = unsafe { MessageType::cached(type_support) }?;
    // SAFETY: caller guarantee: an initialized message of this type.
    unsafe { mt.deserialize(bytes, ros_message) }.map_err(RmwError::from)
}

/// `rmw_get_serialized_message_size`: the largest CDR size of a message of the type. Fast DDS
/// answers `RMW_RET_UNSUPPORTED` for every type; rmw_tracer gives the exact maximum when every
/// string and sequence of the type is bounded, and `RMW_RET_UNSUPPORTED` (with the reason)
/// otherwise, since then the size depends on the message. `message_bounds` carries no usable
/// bounds in Jazzy and is not read.
///
/// # Safety
/// `type_support` is null or valid; `size` is null or writable.
#[no_mangle]
pub unsafe extern "C" fn rmw_get_serialized_message_size(
    type_support: *const ffi::rosidl_message_type_support_t,
    _message_bounds: *const ffi::rosidl_runtime_c__Sequence__bound,
    size: *mut usize,
) -> rmw_ret_t {
    // SAFETY: forwarded caller guarantee.
    ffi_ret("rmw_get_serialized_message_size", || unsafe {
        max_size(type_support, size)
    })
}

unsafe fn max_size(
    type_support: *const ffi::rosidl_message_type_support_t,
    size: *mut usize,
) -> RmwResult<()> {
    if type_support.is_null() {
        return Err(RmwError::Null("type_support"));
    }
    // SAFETY: caller guarantee.
    let out = unsafe { handle::out(size, "size") }?;
    // SAFETY: non-null, valid per the caller.
    unsafe { check_identifier(type_support) }?;
    // SAFETY: caller guarantee on the type support.
    let mt = unsafe { MessageType::cached(type_support) }?;
    match mt.max_serialized_size() {
        Some(n) => {
            *out = n;
            Ok(())
        }
        None => Err(RmwError::UnsupportedFeature(format!(
            "a size bound for {} (it has unbounded strings or sequences, so its serialized size \
             depends on the message)",
            mt.name()
        ))),
    }
}
