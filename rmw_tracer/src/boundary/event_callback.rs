//! The `rmw_event_callback_t` that rcl installs with `rmw_*_set_on_new_*_callback` and
//! `rmw_event_set_callback`: a C function pointer plus the caller's user data, called from
//! whatever thread delivers the sample.

use std::ffi::c_void;

/// A callback and its user data. rmw documents that the callback may be called from any
/// thread; the user data is the caller's and only handed back to it.
#[derive(Clone, Copy)]
pub struct EventCallback {
    f: unsafe extern "C" fn(*const c_void, usize),
    user_data: *const c_void,
}

// SAFETY: rmw's contract for these callbacks: they are thread-safe and `user_data` is only passed
// back to the callback, never dereferenced by us.
unsafe impl Send for EventCallback {}
// SAFETY: as above; the struct is immutable.
unsafe impl Sync for EventCallback {}

impl EventCallback {
    /// `None` when `callback` is null (rcl clears a callback that way).
    ///
    /// # Safety
    /// `callback`, if set, must stay callable with `user_data` until it is replaced or cleared,
    /// from any thread (the rmw contract of the set-callback functions).
    pub unsafe fn new(
        callback: ffi::rmw_event_callback_t,
        user_data: *const c_void,
    ) -> Option<EventCallback> {
        callback.map(|f| EventCallback { f, user_data })
    }

    /// Tell the callback that `n` new events arrived.
    pub fn call(&self, n: usize) {
        // SAFETY: `new`'s contract: the function is callable with its user data from any thread.
        unsafe { (self.f)(self.user_data, n) }
    }
}

impl std::fmt::Debug for EventCallback {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "EventCallback({:p})", self.f as *const c_void)
    }
}
