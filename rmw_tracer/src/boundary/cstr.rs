//! C strings in and out: the only place a `*const c_char` becomes a `&str`.

use std::ffi::{c_char, CStr, CString};

use super::error::{RmwError, RmwResult};

/// Borrow a required C string argument as UTF-8.
///
/// # Safety
/// `p` is null or points to a NUL-terminated string that stays valid and unchanged for `'a`.
pub unsafe fn arg<'a>(p: *const c_char, name: &'static str) -> RmwResult<&'a str> {
    if p.is_null() {
        return Err(RmwError::Null(name));
    }
    // SAFETY: non-null, and the caller guarantees NUL termination and lifetime.
    let c = unsafe { CStr::from_ptr(p) };
    c.to_str()
        .map_err(|_| RmwError::invalid(format!("`{name}` is not valid UTF-8")))
}

/// Borrow an optional C string (null -> `None`).
///
/// # Safety
/// As for [`arg`].
pub unsafe fn opt<'a>(p: *const c_char, name: &'static str) -> RmwResult<Option<&'a str>> {
    if p.is_null() {
        Ok(None)
    } else {
        // SAFETY: forwarded caller guarantee.
        unsafe { arg(p, name) }.map(Some)
    }
}

/// Borrow a C string that must be present but may be any bytes (an implementation identifier
/// of another rmw, for the error message).
///
/// # Safety
/// As for [`arg`].
pub unsafe fn lossy(p: *const c_char) -> String {
    if p.is_null() {
        return "(null)".to_owned();
    }
    // SAFETY: non-null, NUL-terminated by the caller's guarantee.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// An owned C string for a name we hand back to C (it must not contain NUL).
pub fn owned(s: &str, name: &'static str) -> RmwResult<CString> {
    CString::new(s).map_err(|_| RmwError::invalid(format!("`{name}` contains a NUL byte")))
}

/// Whether the C string `p` equals `expected` (strcmp semantics, as
/// `RMW_CHECK_TYPE_IDENTIFIERS_MATCH` compares implementation identifiers).
///
/// # Safety
/// `p` is null or a NUL-terminated string valid for the call.
pub unsafe fn equals(p: *const c_char, expected: &CStr) -> bool {
    if p.is_null() {
        return false;
    }
    if std::ptr::eq(p, expected.as_ptr()) {
        return true;
    }
    // SAFETY: non-null and NUL-terminated by the caller's guarantee.
    let found = unsafe { CStr::from_ptr(p) };
    found == expected
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn null_and_utf8() {
        // SAFETY: null and a static C string literal.
        unsafe {
            assert!(matches!(
                arg(std::ptr::null(), "x"),
                Err(RmwError::Null("x"))
            ));
            assert_eq!(arg(c"abc".as_ptr(), "x").unwrap(), "abc");
            assert_eq!(opt(std::ptr::null(), "x").unwrap(), None);
            let bad = [0xffu8 as c_char, 0];
            assert!(matches!(
                arg(bad.as_ptr(), "x"),
                Err(RmwError::InvalidArgument(_))
            ));
            assert!(equals(c"rmw_tracer".as_ptr(), c"rmw_tracer"));
            assert!(!equals(c"rmw_fastrtps_cpp".as_ptr(), c"rmw_tracer"));
            assert!(!equals(std::ptr::null(), c"rmw_tracer"));
        }
    }
}
