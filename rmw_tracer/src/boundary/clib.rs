//! Safe wrappers around the librmw and rcutils functions rmw_tracer calls: name validation,
//! init-option copies, caller-allocator buffers, the rcutils error state.

use std::ffi::{c_int, CStr};

use super::cstr;
use super::error::{RmwError, RmwResult};

type Validator =
    unsafe extern "C" fn(*const std::ffi::c_char, *mut c_int, *mut usize) -> ffi::rmw_ret_t;
type Reason = unsafe extern "C" fn(c_int) -> *const std::ffi::c_char;

fn validate(
    what: &str,
    name: &str,
    check: Validator,
    reason: Reason,
    valid: c_int,
) -> RmwResult<()> {
    let c = cstr::owned(name, "name")?;
    let mut result: c_int = valid;
    let mut index: usize = 0;
    // SAFETY: `c` is a valid C string and both out-pointers point to live locals.
    let ret = unsafe { check(c.as_ptr(), &mut result, &mut index) };
    if ret != ffi::RMW_RET_OK {
        reset_error();
        return Err(RmwError::failed(format!(
            "could not validate {what} `{name}`"
        )));
    }
    if result == valid {
        return Ok(());
    }
    // SAFETY: the reason functions return a static string (or null) for any result code.
    let why = unsafe { cstr::lossy(reason(result)) };
    Err(RmwError::invalid(format!(
        "{what} `{name}` is invalid: {why} (at index {index})"
    )))
}

/// `rmw_validate_node_name`.
pub fn validate_node_name(name: &str) -> RmwResult<()> {
    validate(
        "node name",
        name,
        ffi::rmw_validate_node_name,
        ffi::rmw_node_name_validation_result_string,
        ffi::RMW_NODE_NAME_VALID,
    )
}

/// `rmw_validate_namespace`.
pub fn validate_namespace(namespace: &str) -> RmwResult<()> {
    validate(
        "namespace",
        namespace,
        ffi::rmw_validate_namespace,
        ffi::rmw_namespace_validation_result_string,
        ffi::RMW_NAMESPACE_VALID,
    )
}

/// `rmw_validate_full_topic_name`.
pub fn validate_full_topic_name(topic: &str) -> RmwResult<()> {
    validate(
        "topic name",
        topic,
        ffi::rmw_validate_full_topic_name,
        ffi::rmw_full_topic_name_validation_result_string,
        ffi::RMW_TOPIC_VALID,
    )
}

/// Clear the rcutils error state (after a failed lookup we recover from, so that a stale
/// message does not leak into the next error).
pub fn reset_error() {
    // SAFETY: no arguments; touches only thread-local state.
    unsafe { ffi::rcutils_reset_error() };
}

/// The current rcutils error string, or an empty string.
pub fn error_string() -> String {
    // SAFETY: no arguments; returns the thread-local message by value.
    let s = unsafe { ffi::rcutils_get_error_string() };
    // SAFETY: `str` is a NUL-terminated buffer inside `s` (rcutils always terminates it).
    unsafe { CStr::from_ptr(s.str_.as_ptr()) }
        .to_string_lossy()
        .into_owned()
}

/// Whether an rcutils allocator has all its functions.
pub fn allocator_is_valid(a: &ffi::rcutils_allocator_t) -> bool {
    // SAFETY: `a` is a live allocator struct; the function only reads it.
    unsafe { ffi::rcutils_allocator_is_valid(a) }
}

/// `rmw_get_zero_initialized_init_options()`.
pub fn zero_init_options() -> ffi::rmw_init_options_t {
    // SAFETY: returns a struct by value.
    unsafe { ffi::rmw_get_zero_initialized_init_options() }
}

/// `rmw_get_zero_initialized_context()`.
pub fn zero_context() -> ffi::rmw_context_t {
    // SAFETY: returns a struct by value.
    unsafe { ffi::rmw_get_zero_initialized_context() }
}

/// Fill zero-initialized init options with rmw_tracer's defaults. Jazzy's `localhost_only`
/// (a field Kilted removed) keeps its zero-initialized `RMW_LOCALHOST_ONLY_DEFAULT`: nothing
/// here reads it, so one source serves both (docs/architecture.md, "ROS 2 distributions").
pub fn init_options_defaults(
    o: &mut ffi::rmw_init_options_t,
    allocator: ffi::rcutils_allocator_t,
    identifier: &'static CStr,
) {
    o.instance_id = 0;
    o.implementation_identifier = identifier.as_ptr();
    o.allocator = allocator;
    o.domain_id = ffi::RMW_DEFAULT_DOMAIN_ID;
    // SAFETY: both return structs by value.
    o.security_options = unsafe { ffi::rmw_get_default_security_options() };
    // SAFETY: returns a struct by value.
    o.discovery_options = unsafe { ffi::rmw_get_zero_initialized_discovery_options() };
    o.enclave = std::ptr::null_mut();
    o.impl_ = std::ptr::null_mut();
}

/// Deep-copy init options (enclave, security root, static peers) with `src`'s allocator into
/// zero-initialized `dst`; on failure `dst` is left zero-initialized.
///
/// # Safety
/// `src` is initialized init options: its enclave, security and discovery pointers are null or
/// valid, and its allocator is valid.
pub unsafe fn init_options_copy(
    src: &ffi::rmw_init_options_t,
    dst: &mut ffi::rmw_init_options_t,
) -> RmwResult<()> {
    let mut tmp = *src;
    let mut allocator = src.allocator;
    tmp.enclave = std::ptr::null_mut();
    tmp.security_options = unsafe_default_security();
    // SAFETY: returns a struct by value.
    tmp.discovery_options = unsafe { ffi::rmw_get_zero_initialized_discovery_options() };
    if !src.enclave.is_null() {
        // SAFETY: `src.enclave` is a C string owned by `src` (init options invariant) and the
        // allocator is valid (checked by the caller).
        tmp.enclave = unsafe { ffi::rcutils_strdup(src.enclave, allocator) };
        if tmp.enclave.is_null() {
            return Err(RmwError::BadAlloc("copying the enclave"));
        }
    }
    // SAFETY: `src.security_options` is initialized (init options invariant); the copy goes
    // into a default-initialized struct with a valid allocator.
    let r = unsafe {
        ffi::rmw_security_options_copy(&src.security_options, &allocator, &mut tmp.security_options)
    };
    if r != ffi::RMW_RET_OK {
        reset_error();
        // SAFETY: the enclave was strdup'ed with this allocator just above (or is null).
        unsafe { free_with(&allocator, tmp.enclave.cast()) };
        return Err(RmwError::BadAlloc("copying the security options"));
    }
    // SAFETY: as above for the discovery options; `dst` part is zero-initialized.
    let r = unsafe {
        ffi::rmw_discovery_options_copy(
            &src.discovery_options,
            &mut allocator,
            &mut tmp.discovery_options,
        )
    };
    if r != ffi::RMW_RET_OK {
        reset_error();
        // SAFETY: the enclave was strdup'ed with this allocator just above (or is null).
        unsafe { free_with(&allocator, tmp.enclave.cast()) };
        // SAFETY: the security options were copied just above with this allocator.
        unsafe { ffi::rmw_security_options_fini(&mut tmp.security_options, &allocator) };
        return Err(RmwError::BadAlloc("copying the discovery options"));
    }
    *dst = tmp;
    Ok(())
}

fn unsafe_default_security() -> ffi::rmw_security_options_t {
    // SAFETY: returns a struct by value.
    unsafe { ffi::rmw_get_zero_initialized_security_options() }
}

/// Free what [`init_options_copy`] / the caller allocated in init options and zero them.
///
/// # Safety
/// `o` is initialized init options whose enclave and option buffers came from `o.allocator`.
pub unsafe fn init_options_fini(o: &mut ffi::rmw_init_options_t) -> RmwResult<()> {
    let allocator = o.allocator;
    if !allocator_is_valid(&allocator) {
        return Err(RmwError::invalid("init options have an invalid allocator"));
    }
    // SAFETY: the enclave was allocated with the options' allocator (caller guarantee).
    unsafe { free_with(&allocator, o.enclave.cast()) };
    o.enclave = std::ptr::null_mut();
    // SAFETY: the security options were initialized by init/copy with this allocator.
    let r = unsafe { ffi::rmw_security_options_fini(&mut o.security_options, &allocator) };
    if r != ffi::RMW_RET_OK {
        reset_error();
        return Err(RmwError::failed("could not finalize the security options"));
    }
    // SAFETY: the discovery options were initialized by init/copy (zero or with an allocator).
    let r = unsafe { ffi::rmw_discovery_options_fini(&mut o.discovery_options) };
    if r != ffi::RMW_RET_OK {
        reset_error();
        return Err(RmwError::failed("could not finalize the discovery options"));
    }
    *o = zero_init_options();
    Ok(())
}

/// Free memory that `allocator` gave out (null is fine).
///
/// # Safety
/// `p` is null or was allocated by `allocator` and is not used afterwards.
pub unsafe fn free_with(allocator: &ffi::rcutils_allocator_t, p: *mut std::ffi::c_void) {
    if p.is_null() {
        return;
    }
    if let Some(dealloc) = allocator.deallocate {
        // SAFETY: `p` was allocated by this allocator (our invariant at every call site).
        unsafe { dealloc(p, allocator.state) };
    }
}

/// Make `arr` hold exactly `bytes`, growing it with its own allocator when needed
/// (`rcutils_uint8_array_resize`).
///
/// # Safety
/// `arr` is an initialized `rcutils_uint8_array_t` (buffer/capacity/allocator consistent).
pub unsafe fn fill_uint8_array(
    arr: &mut ffi::rcutils_uint8_array_t,
    bytes: &[u8],
) -> RmwResult<()> {
    if arr.buffer_capacity < bytes.len() || arr.buffer.is_null() {
        // SAFETY: `arr` is an initialized uint8 array (serialized message invariant); resize
        // reallocates with its own allocator.
        let r = unsafe { ffi::rcutils_uint8_array_resize(arr, bytes.len().max(1)) };
        if r != ffi::RCUTILS_RET_OK {
            reset_error();
            return Err(RmwError::BadAlloc("growing the serialized message buffer"));
        }
    }
    // SAFETY: `buffer` has at least `bytes.len()` bytes of capacity (checked or grown above) and
    // cannot overlap our payload.
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), arr.buffer, bytes.len()) };
    arr.buffer_length = bytes.len();
    Ok(())
}

/// The bytes of a serialized message.
///
/// # Safety
/// `arr` is an initialized `rcutils_uint8_array_t` whose buffer holds `buffer_length` bytes.
pub unsafe fn uint8_array_bytes(arr: &ffi::rcutils_uint8_array_t) -> RmwResult<&[u8]> {
    if arr.buffer_length == 0 {
        return Ok(&[]);
    }
    if arr.buffer.is_null() || arr.buffer_length > arr.buffer_capacity {
        return Err(RmwError::invalid(
            "serialized message has no buffer or a length past its capacity",
        ));
    }
    // SAFETY: `buffer` holds `buffer_length` initialized bytes (uint8 array invariant) and lives
    // as long as `arr`.
    Ok(unsafe { std::slice::from_raw_parts(arr.buffer, arr.buffer_length) })
}
