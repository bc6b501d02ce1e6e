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

/// Where an endpoint keeps its callback: set, cleared and called from any thread.
///
/// A call holds the slot's lock, so once [`set`](Self::set) returns, the callback it replaced is
/// not running and never runs again (rcl frees its user data after clearing it; Fast DDS holds
/// its listener's mutex across the call the same way). The lock is re-entrant: a callback may
/// take, or set or clear callbacks, from inside the call on its own thread.
#[derive(Default)]
pub struct CallbackSlot {
    cb: parking_lot::ReentrantMutex<std::cell::Cell<Option<EventCallback>>>,
    /// Whether a callback is set: read without the lock on every arrival, so an endpoint with
    /// no callback pays one atomic load. Written under the lock.
    set: std::sync::atomic::AtomicBool,
}

impl CallbackSlot {
    /// Replace the callback (`None` clears it); returns the one it replaced.
    pub fn set(&self, cb: Option<EventCallback>) -> Option<EventCallback> {
        let g = self.cb.lock();
        self.set
            .store(cb.is_some(), std::sync::atomic::Ordering::Release);
        g.replace(cb)
    }

    pub fn is_set(&self) -> bool {
        self.set.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Tell the callback, if one is set, that `n` events arrived (nothing when `n` is 0).
    /// Returns whether a callback was told. An arrival that finds none set while one is being
    /// set is not lost: the setter counts what is waiting after it took the lock
    /// (`set_and_tell`), and the arrival was waiting before it looked here.
    pub fn call(&self, n: usize) -> bool {
        if !self.is_set() {
            return false;
        }
        let g = self.cb.lock();
        match (n, g.get()) {
            (1.., Some(cb)) => {
                cb.call(n);
                true
            }
            _ => false,
        }
    }

    /// `set`, then tell the new callback of the `waiting` events that came before it (rmw:
    /// a callback set while events wait is called at once with their number), in one hold of
    /// the lock. An arrival racing with the set is never missed: it is in `waiting`, or its
    /// own call comes after; rarely both (a take that then finds nothing, as rclcpp expects of
    /// an event that a wait set already took).
    pub fn set_and_tell(&self, cb: Option<EventCallback>, waiting: impl FnOnce() -> usize) {
        let g = self.cb.lock();
        g.set(cb);
        self.set
            .store(cb.is_some(), std::sync::atomic::Ordering::Release);
        if cb.is_some() {
            let n = waiting();
            if n > 0 {
                if let Some(cb) = g.get() {
                    cb.call(n);
                }
            }
        }
    }
}
