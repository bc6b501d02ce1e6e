//! The one pointer module: every raw pointer from C becomes a Rust reference here, and only here.
//!
//! [`Handle`] binds each rmw handle struct (`rmw_node_t`, `rmw_publisher_t`, ...) to the Rust
//! object its `data` (or `impl`) field points to, and says who owns the struct: rmw_tracer
//! ([`Ownership::Boxed`], made by `rmw_create_*` and freed by `rmw_destroy_*`) or the caller
//! ([`Ownership::CallerOwned`]: `rmw_context_t`, `rmw_event_t`, where we own only the object).
//! Null checks and the implementation-identifier check happen in [`c_ref`], so an entry point
//! never dereferences a pointer itself.

use std::ffi::{c_char, c_void};

use super::cstr;
use super::error::{RmwError, RmwResult};
use crate::IDENTIFIER;

/// Who allocates the C struct of a handle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ownership {
    /// rmw_tracer allocates the C struct with `Box` in `rmw_create_*` and frees it in
    /// `rmw_destroy_*`, together with the Rust object behind `data`.
    Boxed,
    /// The caller allocates the C struct (zero-initialized); rmw_tracer owns only the Rust
    /// object it installs behind `data`/`impl`.
    CallerOwned,
}

/// Binds an rmw handle struct to the Rust object behind it.
///
/// # Safety
/// `data`/`set_data` must read and write the struct's own object pointer field, and
/// `identifier` its `implementation_identifier` field; nothing else may write that field.
pub unsafe trait Handle: Sized + Send + Sync + 'static {
    /// The rmw C struct.
    type C;
    /// What the handle is called in error messages ("node", "publisher", ...).
    const WHAT: &'static str;
    const OWNERSHIP: Ownership;
    fn identifier(c: &Self::C) -> *const c_char;
    fn data(c: &Self::C) -> *mut c_void;
    fn set_data(c: &mut Self::C, data: *mut c_void);
}

/// Fail unless `id` is rmw_tracer's implementation identifier.
///
/// # Safety
/// `id` is null or a NUL-terminated string valid for the call.
pub unsafe fn check_identifier(id: *const c_char, what: &'static str) -> RmwResult<()> {
    // SAFETY: forwarded caller guarantee.
    if unsafe { cstr::equals(id, IDENTIFIER) } {
        Ok(())
    } else {
        Err(RmwError::WrongImplementation {
            what,
            // SAFETY: forwarded caller guarantee.
            found: unsafe { cstr::lossy(id) },
        })
    }
}

/// Borrow a handle's C struct after the null and implementation-identifier checks.
///
/// # Safety
/// `p` is null or points to a live, initialized `H::C` that is not mutated during `'a`.
pub unsafe fn c_ref<'a, H: Handle>(p: *const H::C, arg: &'static str) -> RmwResult<&'a H::C> {
    if p.is_null() {
        return Err(RmwError::Null(arg));
    }
    // SAFETY: non-null and, by the caller's guarantee, a live `H::C`.
    let c = unsafe { &*p };
    // A zero-initialized struct (never made, or already finalized) is a bad argument, not
    // another implementation's handle: rmw documents INVALID_ARGUMENT for a zero context.
    if H::identifier(c).is_null() && H::data(c).is_null() {
        return Err(RmwError::invalid(format!(
            "{} `{arg}` is zero-initialized",
            H::WHAT
        )));
    }
    // SAFETY: the identifier field of a live handle is null or a C string (set by its rmw).
    unsafe { check_identifier(H::identifier(c), H::WHAT) }?;
    Ok(c)
}

/// Borrow the Rust object behind a handle.
///
/// # Safety
/// As for [`c_ref`]; and an `H::C` that carries rmw_tracer's identifier was made by [`create`]
/// or [`install`] and not yet destroyed.
pub unsafe fn get<'a, H: Handle>(p: *const H::C, arg: &'static str) -> RmwResult<&'a H> {
    // SAFETY: forwarded caller guarantee.
    let c = unsafe { c_ref::<H>(p, arg) }?;
    let data = H::data(c);
    if data.is_null() {
        return Err(RmwError::invalid(format!(
            "{} `{arg}` is not initialized",
            H::WHAT
        )));
    }
    // SAFETY: `data` was produced by `Box::into_raw(Box<H>)` in create/install and stays valid
    // until destroy/uninstall, which the caller does not run concurrently.
    Ok(unsafe { &*(data as *const H) })
}

/// Borrow the Rust object from a bare `data` pointer, as rcl puts them into the `rmw_wait`
/// arrays (no handle struct, so no identifier to check).
///
/// # Safety
/// `data` is null or the `data` field of a live rmw_tracer handle of type `H`.
pub unsafe fn from_data<'a, H: Handle>(data: *const c_void, arg: &'static str) -> RmwResult<&'a H> {
    if data.is_null() {
        return Err(RmwError::Null(arg));
    }
    // SAFETY: the caller guarantees this is the object of a live `H` handle.
    Ok(unsafe { &*(data as *const H) })
}

/// As [`from_data`], with a null slot giving `None`.
///
/// # Safety
/// As for [`from_data`].
pub unsafe fn opt_from_data<'a, H: Handle>(data: *const c_void) -> Option<&'a H> {
    // SAFETY: the caller guarantees a null or live object pointer of `H`.
    unsafe { (data as *const H).as_ref() }
}

/// Make a rmw_tracer-owned handle: the object is boxed first so that `make` may point the C
/// struct's strings into it.
pub fn create<H: Handle>(obj: H, make: impl FnOnce(&H, *mut c_void) -> H::C) -> *mut H::C {
    debug_assert_eq!(H::OWNERSHIP, Ownership::Boxed);
    let obj = Box::into_raw(Box::new(obj));
    // SAFETY: `obj` came from Box::into_raw just above and is valid and unaliased.
    let c = make(unsafe { &*obj }, obj as *mut c_void);
    Box::into_raw(Box::new(c))
}

/// Destroy a rmw_tracer-owned handle: free the C struct and give the object back (dropping it
/// runs its teardown).
///
/// # Safety
/// `p` is null or a handle made by [`create`] for `H`, not used again after this call.
pub unsafe fn destroy<H: Handle>(p: *mut H::C, arg: &'static str) -> RmwResult<H> {
    debug_assert_eq!(H::OWNERSHIP, Ownership::Boxed);
    // SAFETY: forwarded caller guarantee; the checks run before ownership is taken.
    unsafe { get::<H>(p, arg) }?;
    // SAFETY: `p` came from Box::into_raw in `create` (it carries our identifier and a data
    // pointer) and the caller gives up every other use of it.
    let c = unsafe { Box::from_raw(p) };
    // SAFETY: `data` came from Box::into_raw(Box<H>) in `create`.
    let obj = unsafe { Box::from_raw(H::data(&c) as *mut H) };
    Ok(*obj)
}

/// Put `obj` behind the `data`/`impl` field of a caller-owned struct.
///
/// # Safety
/// `c` points to a live `H::C` whose object field is null (or owned by nobody).
pub unsafe fn install<H: Handle>(c: &mut H::C, obj: H) {
    debug_assert_eq!(H::OWNERSHIP, Ownership::CallerOwned);
    H::set_data(c, Box::into_raw(Box::new(obj)) as *mut c_void);
}

/// Take the object back out of a caller-owned struct (its object field becomes null).
///
/// # Safety
/// The object field of `c` is null or was set by [`install`] for `H`, and no reference from
/// [`get`] is alive.
pub unsafe fn uninstall<H: Handle>(c: &mut H::C) -> Option<H> {
    let data = H::data(c);
    if data.is_null() {
        return None;
    }
    H::set_data(c, std::ptr::null_mut());
    // SAFETY: `data` came from Box::into_raw(Box<H>) in `install`.
    Some(*unsafe { Box::from_raw(data as *mut H) })
}

/// A required input pointer (no identifier: plain rmw structs such as QoS profiles).
///
/// # Safety
/// `p` is null or points to a live `T` not mutated during `'a`.
pub unsafe fn input<'a, T>(p: *const T, arg: &'static str) -> RmwResult<&'a T> {
    // SAFETY: forwarded caller guarantee.
    unsafe { p.as_ref() }.ok_or(RmwError::Null(arg))
}

/// A required output (or in-out) pointer.
///
/// # Safety
/// `p` is null or points to a live `T` that nothing else accesses during `'a`.
pub unsafe fn out<'a, T>(p: *mut T, arg: &'static str) -> RmwResult<&'a mut T> {
    // SAFETY: forwarded caller guarantee.
    unsafe { p.as_mut() }.ok_or(RmwError::Null(arg))
}

/// An array of `len` elements from C; a null pointer is allowed only when `len` is 0.
///
/// # Safety
/// `p` is null or points to `len` live, initialized elements not mutated during `'a`.
pub unsafe fn slice<'a, T>(p: *const T, len: usize, arg: &'static str) -> RmwResult<&'a [T]> {
    if len == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(RmwError::Null(arg));
    }
    // SAFETY: non-null, `len` initialized elements by the caller's guarantee.
    Ok(unsafe { std::slice::from_raw_parts(p, len) })
}

/// A mutable array of `len` elements from C (see [`slice`]).
///
/// # Safety
/// `p` is null or points to `len` live, initialized elements nothing else accesses during `'a`.
pub unsafe fn slice_mut<'a, T>(p: *mut T, len: usize, arg: &'static str) -> RmwResult<&'a mut [T]> {
    if len == 0 {
        return Ok(&mut []);
    }
    if p.is_null() {
        return Err(RmwError::Null(arg));
    }
    // SAFETY: non-null, `len` initialized elements, exclusive by the caller's guarantee.
    Ok(unsafe { std::slice::from_raw_parts_mut(p, len) })
}

/// Bind an rmw handle struct to its Rust type: `bind!(RustType => CType, "what", Ownership, data_field)`.
macro_rules! bind {
    ($rust:ty => $c:ty, $what:literal, $own:ident, $data:ident) => {
        // SAFETY: `$data` is the object pointer field of `$c` and `implementation_identifier`
        // its identifier; only this module writes `$data`.
        unsafe impl $crate::boundary::handle::Handle for $rust {
            type C = $c;
            const WHAT: &'static str = $what;
            const OWNERSHIP: $crate::boundary::handle::Ownership =
                $crate::boundary::handle::Ownership::$own;
            fn identifier(c: &$c) -> *const ::std::ffi::c_char {
                c.implementation_identifier
            }
            fn data(c: &$c) -> *mut ::std::ffi::c_void {
                c.$data as *mut ::std::ffi::c_void
            }
            fn set_data(c: &mut $c, data: *mut ::std::ffi::c_void) {
                c.$data = data as _;
            }
        }
    };
}

// Every rmw handle type and the Rust object behind it. Client, service and event handles get
// their line when their objects land (docs/entry-points.md).
bind!(crate::context::Context => ffi::rmw_context_t, "context", CallerOwned, impl_);
bind!(crate::guard::GuardCondition => ffi::rmw_guard_condition_t, "guard condition", Boxed, data);
bind!(crate::node::Node => ffi::rmw_node_t, "node", Boxed, data);
bind!(crate::publisher::Publisher => ffi::rmw_publisher_t, "publisher", Boxed, data);
bind!(crate::subscription::Subscription => ffi::rmw_subscription_t, "subscription", Boxed, data);
bind!(crate::waitset::WaitSet => ffi::rmw_wait_set_t, "wait set", Boxed, data);
bind!(crate::service::server::Server => ffi::rmw_service_t, "service", Boxed, data);
bind!(crate::service::client::Client => ffi::rmw_client_t, "client", Boxed, data);
bind!(crate::event::EventHandle => ffi::rmw_event_t, "event", CallerOwned, data);

/// A rmw_tracer-owned handle kept by another object (a node's graph guard condition): destroyed
/// when this is dropped.
pub struct Owned<H: Handle>(std::ptr::NonNull<H::C>);

// SAFETY: the C struct is never mutated after `create` and the object behind it is
// `Send + Sync` (the `Handle` bound); the identifier and context pointers it holds are static
// or outlive it.
unsafe impl<H: Handle> Send for Owned<H> {}
// SAFETY: as above.
unsafe impl<H: Handle> Sync for Owned<H> {}

impl<H: Handle> Owned<H> {
    pub fn new(obj: H, make: impl FnOnce(&H, *mut c_void) -> H::C) -> Owned<H> {
        let p = create(obj, make);
        // SAFETY: `create` returns the pointer of a fresh Box, never null.
        Owned(unsafe { std::ptr::NonNull::new_unchecked(p) })
    }

    pub fn as_ptr(&self) -> *const H::C {
        self.0.as_ptr()
    }

    pub fn get(&self) -> &H {
        // SAFETY: made by `create` and destroyed only in Drop, so the data pointer is live.
        unsafe { &*(H::data(self.0.as_ref()) as *const H) }
    }
}

impl<H: Handle> Drop for Owned<H> {
    fn drop(&mut self) {
        // SAFETY: made by `create`, destroyed exactly once here.
        let _ = unsafe { destroy::<H>(self.0.as_ptr(), "owned handle") };
    }
}

/// The `void *` slots of one of `rmw_wait`'s arrays (`rmw_subscriptions_t`, ...): each slot is
/// the `data` pointer of a handle, and `rmw_wait` nulls the ones that are not ready.
pub trait WaitArray {
    fn slots(&mut self) -> (*mut *mut c_void, usize);
}

macro_rules! wait_array {
    ($t:ty, $ptr:ident, $count:ident) => {
        impl WaitArray for $t {
            fn slots(&mut self) -> (*mut *mut c_void, usize) {
                (self.$ptr, self.$count)
            }
        }
    };
}
wait_array!(ffi::rmw_subscriptions_t, subscribers, subscriber_count);
wait_array!(
    ffi::rmw_guard_conditions_t,
    guard_conditions,
    guard_condition_count
);
wait_array!(ffi::rmw_services_t, services, service_count);
wait_array!(ffi::rmw_clients_t, clients, client_count);
wait_array!(ffi::rmw_events_t, events, event_count);

/// The slots of a wait array; a null array pointer is an empty array (rmw allows it).
///
/// # Safety
/// `a` is null or points to a live array struct whose pointer holds `count` slots, accessed by
/// nothing else during `'a`.
pub unsafe fn wait_slots<'a, A: WaitArray>(
    a: *mut A,
    arg: &'static str,
) -> RmwResult<&'a mut [*mut c_void]> {
    // SAFETY: forwarded caller guarantee.
    let Some(a) = (unsafe { a.as_mut() }) else {
        return Ok(&mut []);
    };
    let (p, n) = a.slots();
    // SAFETY: forwarded caller guarantee on the slots.
    unsafe { slice_mut(p, n, arg) }
}

/// An optional input pointer (null -> `None`).
///
/// # Safety
/// `p` is null or points to a live `T` not mutated during `'a`.
pub unsafe fn opt_input<'a, T>(p: *const T) -> Option<&'a T> {
    // SAFETY: forwarded caller guarantee.
    unsafe { p.as_ref() }
}
