//! The `extern "C"` functions. Each is one call through [`crate::call::call`] into safe Rust;
//! C strings and handles become Rust values only through the helpers here and
//! [`crate::handle`].

pub mod context;
pub mod graph;
pub mod loan;
pub mod publisher;
pub mod service;
pub mod subscription;
pub mod wait;

use std::ffi::{c_char, CStr};
use std::time::Duration;

use crate::error::{CapiError, CapiResult};

/// A borrowed C string argument as `&str` (NULL and non-UTF-8 refused).
///
/// # Safety
/// `p` is NULL or points at a NUL-terminated string that stays valid and unchanged while the
/// returned reference is used (for the call: the C API documents every `const char *`
/// argument so).
pub unsafe fn arg_str<'a>(p: *const c_char, what: &'static str) -> CapiResult<&'a str> {
    if p.is_null() {
        return Err(CapiError::Null(what));
    }
    // SAFETY: not null; NUL-terminated and valid for the call (the caller's contract).
    let c = unsafe { CStr::from_ptr(p) };
    c.to_str()
        .map_err(|_| CapiError::invalid(format!("`{what}` is not UTF-8")))
}

/// A timeout in nanoseconds: negative waits forever.
pub fn timeout(ns: i64) -> Option<Duration> {
    u64::try_from(ns).ok().map(Duration::from_nanos)
}

/// A borrowed C array argument of `n` items as a slice: empty when `n` is 0 (`p` may then be
/// NULL), NULL with items refused.
///
/// # Safety
/// `p` is NULL or points at `n` readable items that stay valid and unchanged while the returned
/// slice is used (for the call).
pub unsafe fn arg_slice<'a, T>(p: *const T, n: usize, what: &'static str) -> CapiResult<&'a [T]> {
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(CapiError::Null(what));
    }
    // SAFETY: not null, `n` readable items valid for the call (the caller's contract).
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}
