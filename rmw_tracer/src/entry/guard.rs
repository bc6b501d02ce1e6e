//! Entry points: guard conditions.

use ffi::rmw_ret_t;

use crate::boundary::{ffi_ptr, ffi_ret, handle};
use crate::context::Context;
use crate::guard::GuardCondition;
use crate::IDENTIFIER;

/// `rmw_create_guard_condition`.
///
/// # Safety
/// `context` is null or a live context.
#[no_mangle]
pub unsafe extern "C" fn rmw_create_guard_condition(
    context: *mut ffi::rmw_context_t,
) -> *mut ffi::rmw_guard_condition_t {
    ffi_ptr("rmw_create_guard_condition", || {
        // After rmw_shutdown too, as with Fast DDS.
        // SAFETY: caller guarantee.
        unsafe { handle::get::<Context>(context, "context") }?;
        Ok(handle::create(GuardCondition::new(), |_, data| {
            ffi::rmw_guard_condition_t {
                implementation_identifier: IDENTIFIER.as_ptr(),
                data,
                context,
            }
        }))
    })
}

/// `rmw_destroy_guard_condition`.
///
/// # Safety
/// `guard_condition` is null or one made by `rmw_create_guard_condition`, not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn rmw_destroy_guard_condition(
    guard_condition: *mut ffi::rmw_guard_condition_t,
) -> rmw_ret_t {
    ffi_ret("rmw_destroy_guard_condition", || {
        // SAFETY: caller guarantee.
        let gc = unsafe { handle::destroy::<GuardCondition>(guard_condition, "guard_condition") }
            .map_err(crate::boundary::RmwError::foreign_as_error)?;
        // A trigger from another thread may still be running on it: rclpy's signal thread
        // triggers the guard conditions of a list it walks without a lock while the main
        // thread, already out of spin, destroys its executor's (guard.rs). Free it only once
        // that call has returned.
        gc.settle();
        drop(gc);
        Ok(())
    })
}

/// `rmw_trigger_guard_condition`: wakes every wait set waiting on it.
///
/// # Safety
/// `guard_condition` is null or a live guard condition.
#[no_mangle]
pub unsafe extern "C" fn rmw_trigger_guard_condition(
    guard_condition: *const ffi::rmw_guard_condition_t,
) -> rmw_ret_t {
    ffi_ret("rmw_trigger_guard_condition", || {
        // Not documented by rmw.h: another implementation's guard condition is an ERROR, as
        // with Fast DDS.
        // SAFETY: caller guarantee.
        unsafe { handle::get::<GuardCondition>(guard_condition, "guard_condition") }
            .map_err(crate::boundary::RmwError::foreign_as_error)?
            .trigger();
        Ok(())
    })
}
