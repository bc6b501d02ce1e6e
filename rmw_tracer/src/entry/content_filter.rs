//! Entry points: content filters (`crate::content_filter`; docs/content-filter.md).

use ffi::rmw_ret_t;

use crate::boundary::{clib, cstr, ffi_ret, handle, RmwError, RmwResult};
use crate::subscription::Subscription;

/// The expression and parameters of C content filter options, copied.
///
/// # Safety
/// `o` holds a C string or null, and a string array whose `data` is null or holds `size`
/// C strings or nulls.
pub(super) unsafe fn read_options(
    o: &ffi::rmw_subscription_content_filter_options_t,
) -> RmwResult<(String, Vec<String>)> {
    // SAFETY: caller guarantee.
    let expression = unsafe { cstr::arg(o.filter_expression, "options->filter_expression") }?;
    let arr = &o.expression_parameters;
    // SAFETY: caller guarantee: `data` holds `size` pointers (or is null with size 0).
    let ptrs = unsafe { handle::slice(arr.data, arr.size, "options->expression_parameters.data") }?;
    let mut params = Vec::with_capacity(ptrs.len());
    for p in ptrs {
        // SAFETY: caller guarantee: each is a C string or null.
        let p = unsafe { cstr::arg(*p, "options->expression_parameters.data[i]") }?;
        params.push(p.to_owned());
    }
    Ok((expression.to_owned(), params))
}

/// `rmw_subscription_set_content_filter`: compiles the expression with its parameters and
/// puts it in force for the next take; an empty expression removes the filter. A bad
/// expression or parameter is `RMW_RET_INVALID_ARGUMENT` naming the column or parameter,
/// and leaves the filter that was in force.
///
/// # Safety
/// `subscription` is null or live; `options` null or valid content filter options.
#[no_mangle]
pub unsafe extern "C" fn rmw_subscription_set_content_filter(
    subscription: *mut ffi::rmw_subscription_t,
    options: *const ffi::rmw_subscription_content_filter_options_t,
) -> rmw_ret_t {
    ffi_ret("rmw_subscription_set_content_filter", || {
        // SAFETY: caller guarantee.
        let s = unsafe { handle::get::<Subscription>(subscription, "subscription") }?;
        // SAFETY: caller guarantee.
        let o = unsafe { handle::input(options, "options") }?;
        // SAFETY: caller guarantee: valid options.
        let (expression, params) = unsafe { read_options(o) }?;
        let enabled = s.set_content_filter(&expression, params)?;
        // SAFETY: `get` checked `subscription` is a live handle of ours; the caller owns it
        // mutably for this call (rmw: not thread-safe).
        unsafe { (*subscription).is_cft_enabled = enabled };
        Ok(())
    })
}

/// `rmw_subscription_get_content_filter`: the expression and parameters exactly as set,
/// copied into `options` with `allocator` (the caller finalizes them with
/// `rmw_subscription_content_filter_options_fini`). `RMW_RET_ERROR` when no filter is set, as
/// Fast DDS answers.
///
/// # Safety
/// `subscription` is null or live; `allocator` null or an allocator; `options` null or
/// zero-initialized content filter options.
#[no_mangle]
pub unsafe extern "C" fn rmw_subscription_get_content_filter(
    subscription: *const ffi::rmw_subscription_t,
    allocator: *mut ffi::rcutils_allocator_t,
    options: *mut ffi::rmw_subscription_content_filter_options_t,
) -> rmw_ret_t {
    ffi_ret("rmw_subscription_get_content_filter", || {
        // SAFETY: caller guarantee.
        let s = unsafe { handle::get::<Subscription>(subscription, "subscription") }?;
        // SAFETY: caller guarantee.
        let allocator = unsafe { handle::out(allocator, "allocator") }?;
        // SAFETY: caller guarantee.
        let out = unsafe { handle::out(options, "options") }?;
        if !clib::allocator_is_valid(allocator) {
            return Err(RmwError::invalid("allocator is invalid"));
        }
        let Some(f) = s.filter().get() else {
            return Err(RmwError::failed("this subscription has no content filter"));
        };
        let expression = cstr::owned(&f.expression, "filter_expression")?;
        let params = f
            .parameters
            .iter()
            .map(|p| cstr::owned(p, "expression_parameters"))
            .collect::<RmwResult<Vec<_>>>()?;
        let mut argv: Vec<*const std::ffi::c_char> = params.iter().map(|p| p.as_ptr()).collect();
        // SAFETY: valid C strings that outlive the call, a valid allocator, writable options;
        // rmw copies everything with the allocator.
        let ret = unsafe {
            ffi::rmw_subscription_content_filter_options_init(
                expression.as_ptr(),
                argv.len(),
                argv.as_mut_ptr(),
                allocator,
                out,
            )
        };
        match ret {
            ffi::RMW_RET_OK => Ok(()),
            code => {
                // rmw set the error string; carry it in ours rather than overwrite it.
                let why = clib::error_string();
                clib::reset_error();
                Err(match code {
                    ffi::RMW_RET_BAD_ALLOC => RmwError::BadAlloc("copying the content filter"),
                    ffi::RMW_RET_INVALID_ARGUMENT => RmwError::invalid(why),
                    _ => RmwError::failed(why),
                })
            }
        }
    })
}
