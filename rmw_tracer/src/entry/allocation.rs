//! What `rmw_init_publisher_allocation` / `rmw_init_subscription_allocation` and their `fini`
//! share: rmw_tracer preallocates nothing, so an allocation is only marked as rmw_tracer's (and
//! checked at fini).

use std::ffi::{c_char, c_void};

use crate::boundary::{handle, RmwResult};
use crate::IDENTIFIER;

/// An rmw allocation struct: an implementation identifier and a data pointer.
pub(super) trait Allocation {
    fn fields(&mut self) -> (&mut *const c_char, &mut *mut c_void);
}

impl Allocation for ffi::rmw_publisher_allocation_t {
    fn fields(&mut self) -> (&mut *const c_char, &mut *mut c_void) {
        (&mut self.implementation_identifier, &mut self.data)
    }
}

impl Allocation for ffi::rmw_subscription_allocation_t {
    fn fields(&mut self) -> (&mut *const c_char, &mut *mut c_void) {
        (&mut self.implementation_identifier, &mut self.data)
    }
}

/// Mark `allocation` as rmw_tracer's, with nothing behind it.
///
/// # Safety
/// Pointers are null or valid.
pub(super) unsafe fn init<A: Allocation>(
    type_support: *const ffi::rosidl_message_type_support_t,
    allocation: *mut A,
) -> RmwResult<()> {
    // SAFETY: forwarded caller guarantee.
    unsafe { handle::input(type_support, "type_support") }?;
    // SAFETY: forwarded caller guarantee.
    let (id, data) = unsafe { handle::out(allocation, "allocation") }?.fields();
    *id = IDENTIFIER.as_ptr();
    *data = std::ptr::null_mut();
    Ok(())
}

/// Check that `allocation` is rmw_tracer's and clear it.
///
/// # Safety
/// `allocation` is null or one initialized by [`init`].
pub(super) unsafe fn fini<A: Allocation>(allocation: *mut A) -> RmwResult<()> {
    // SAFETY: forwarded caller guarantee.
    let (id, data) = unsafe { handle::out(allocation, "allocation") }?.fields();
    // SAFETY: an initialized allocation's identifier is null or a C string.
    unsafe { handle::check_identifier(*id, "allocation") }?;
    *id = std::ptr::null();
    *data = std::ptr::null_mut();
    Ok(())
}
