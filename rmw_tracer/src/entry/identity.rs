//! Entry points R0: identity, features and log severity.

use std::ffi::c_char;

use ffi::rmw_ret_t;

use crate::boundary::{ffi_bool, ffi_const_ptr, ffi_ret};
use crate::{features, log, IDENTIFIER, SERIALIZATION_FORMAT};

/// `rmw_get_implementation_identifier`: `"rmw_tracer"`, the string every rmw_tracer handle carries.
///
/// # Safety
/// Always safe to call; the result is a static string.
#[no_mangle]
pub unsafe extern "C" fn rmw_get_implementation_identifier() -> *const c_char {
    ffi_const_ptr("rmw_get_implementation_identifier", || {
        Ok(IDENTIFIER.as_ptr())
    })
}

/// `rmw_get_serialization_format`: `"cdr"`.
///
/// # Safety
/// Always safe to call; the result is a static string.
#[no_mangle]
pub unsafe extern "C" fn rmw_get_serialization_format() -> *const c_char {
    ffi_const_ptr("rmw_get_serialization_format", || {
        Ok(SERIALIZATION_FORMAT.as_ptr())
    })
}

/// `rmw_feature_supported`: which optional rmw features rmw_tracer offers.
///
/// # Safety
/// Always safe to call.
#[no_mangle]
pub unsafe extern "C" fn rmw_feature_supported(feature: ffi::rmw_feature_t) -> bool {
    ffi_bool("rmw_feature_supported", || features::supported(feature))
}

/// `rmw_set_log_severity`: the threshold of rmw_tracer's own diagnostics.
///
/// # Safety
/// Always safe to call.
#[no_mangle]
pub unsafe extern "C" fn rmw_set_log_severity(severity: ffi::rmw_log_severity_t) -> rmw_ret_t {
    ffi_ret("rmw_set_log_severity", || log::set_severity(severity))
}
