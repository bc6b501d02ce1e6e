//! The panic boundary: no Rust panic may unwind into C.
//!
//! Each `extern "C"` entry point is a single call to one of these functions; the fallback value is
//! chosen by the return type (an `rmw_ret_t`, a null pointer, or `false`). A caught panic sets the
//! rmw error string to `rmw_tracer: internal panic in <fn>` so that rcl reports where it happened.
//! The catching itself is `tracer_boundary::run`, shared with libtracer's C API (`capi/`); what
//! an outcome becomes (`rmw_ret_t`, the rcutils error string) is decided here and in [`error`].

use std::panic::Location;

use ffi::{rmw_ret_t, RMW_RET_ERROR, RMW_RET_OK};
use tracer_boundary::{run, run_or, Outcome};

use super::error::{self, RmwError, RmwResult};

/// The one place an entry point's outcome becomes its return value.
fn finish<T>(
    name: &'static str,
    (outcome, at): (Outcome<T, RmwError>, &'static Location<'static>),
    fallback: T,
) -> (T, Option<rmw_ret_t>) {
    match outcome {
        Outcome::Done(v) => (v, None),
        Outcome::Failed(e) => (fallback, Some(error::report(name, at, &e))),
        Outcome::Panicked => (panicked(name, at, fallback), Some(RMW_RET_ERROR)),
    }
}

/// For entry points returning `rmw_ret_t`: `Ok(())` is `RMW_RET_OK`, an error is mapped (and the
/// error string set) by [`error::report`], a panic is `RMW_RET_ERROR`.
#[track_caller]
pub fn ffi_ret(name: &'static str, f: impl FnOnce() -> RmwResult<()>) -> rmw_ret_t {
    finish(name, run(f), ()).1.unwrap_or(RMW_RET_OK)
}

/// For entry points returning a pointer to a new handle: null on error or panic.
#[track_caller]
pub fn ffi_ptr<T>(name: &'static str, f: impl FnOnce() -> RmwResult<*mut T>) -> *mut T {
    finish(name, run(f), std::ptr::null_mut()).0
}

/// For entry points returning a `const` pointer: null on error or panic.
#[track_caller]
pub fn ffi_const_ptr<T>(name: &'static str, f: impl FnOnce() -> RmwResult<*const T>) -> *const T {
    finish(name, run(f), std::ptr::null()).0
}

/// For entry points returning `bool` (they have no error channel): `false` on panic.
#[track_caller]
pub fn ffi_bool(name: &'static str, f: impl FnOnce() -> bool) -> bool {
    let (v, caught, at) = run_or(false, f);
    if caught {
        panicked(name, at, ());
    }
    v
}

fn panicked<T>(name: &'static str, at: &'static Location<'static>, fallback: T) -> T {
    error::set_error_string(&format!("rmw_tracer: internal panic in {name}"), at);
    fallback
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::boundary::RmwError;
    use ffi::RMW_RET_INVALID_ARGUMENT;

    #[test]
    fn ok_and_errors_map_to_codes() {
        assert_eq!(ffi_ret("rmw_test", || Ok(())), RMW_RET_OK);
        assert_eq!(
            ffi_ret("rmw_test", || Err(RmwError::Null("node"))),
            RMW_RET_INVALID_ARGUMENT
        );
    }

    #[test]
    fn panics_do_not_unwind_and_pick_the_fallback() {
        let r = ffi_ret("rmw_test", || panic!("boom"));
        assert_eq!(r, RMW_RET_ERROR);
        let p: *mut u8 = ffi_ptr("rmw_test", || panic!("boom"));
        assert!(p.is_null());
        let c: *const u8 = ffi_const_ptr("rmw_test", || panic!("boom"));
        assert!(c.is_null());
        assert!(!ffi_bool("rmw_test", || panic!("boom")));
    }
}
