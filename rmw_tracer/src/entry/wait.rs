//! Entry points: wait sets and `rmw_wait`.

use ffi::rmw_ret_t;

use crate::boundary::{ffi_ptr, ffi_ret, handle, RmwError};
use crate::context::Context;
use crate::guard::GuardCondition;
use crate::service::client::Client;
use crate::service::server::Server;
use crate::subscription::Subscription;
use crate::waitset::{timeout_of, Entry, WaitSet};
use crate::IDENTIFIER;

/// `rmw_create_wait_set`: `max_conditions` is a hint (0 = unbounded); rmw_tracer's wait sets
/// have no fixed capacity.
///
/// # Safety
/// `context` is null or a live context.
#[no_mangle]
pub unsafe extern "C" fn rmw_create_wait_set(
    context: *mut ffi::rmw_context_t,
    _max_conditions: usize,
) -> *mut ffi::rmw_wait_set_t {
    ffi_ptr("rmw_create_wait_set", || {
        // After rmw_shutdown too: rclpy's executor makes wait sets until it sees rcl's context
        // invalid, which rcl marks only after rmw_shutdown returns (Fast DDS allows it too).
        // SAFETY: caller guarantee.
        unsafe { handle::get::<Context>(context, "context") }?;
        Ok(handle::create(WaitSet::new(), |_, data| {
            ffi::rmw_wait_set_t {
                implementation_identifier: IDENTIFIER.as_ptr(),
                guard_conditions: std::ptr::null_mut(),
                data,
            }
        }))
    })
}

/// `rmw_destroy_wait_set`. A null `wait_set` is `RMW_RET_ERROR`: rmw.h says
/// INVALID_ARGUMENT, but Jazzy's test_rmw_implementation (test_wait_set.cpp) expects ERROR and
/// Fast DDS answers it (docs/entry-points.md).
///
/// # Safety
/// `wait_set` is null or one made by `rmw_create_wait_set`, not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn rmw_destroy_wait_set(wait_set: *mut ffi::rmw_wait_set_t) -> rmw_ret_t {
    ffi_ret("rmw_destroy_wait_set", || {
        // SAFETY: caller guarantee.
        let ws = unsafe { handle::destroy::<WaitSet>(wait_set, "wait_set") }
            .map_err(RmwError::null_as_error)?;
        drop(ws);
        Ok(())
    })
}

/// `rmw_wait`: null timeout blocks, zero polls; slots that are not ready are set to null;
/// `RMW_RET_TIMEOUT` when nothing was ready.
///
/// # Safety
/// Each array is null or holds `count` slots that are null or `data` pointers of live
/// rmw_tracer handles of the array's kind (as rcl fills them); `wait_set` is null or a live
/// wait set; `wait_timeout` is null or a live `rmw_time_t`.
#[no_mangle]
pub unsafe extern "C" fn rmw_wait(
    subscriptions: *mut ffi::rmw_subscriptions_t,
    guard_conditions: *mut ffi::rmw_guard_conditions_t,
    services: *mut ffi::rmw_services_t,
    clients: *mut ffi::rmw_clients_t,
    events: *mut ffi::rmw_events_t,
    wait_set: *mut ffi::rmw_wait_set_t,
    wait_timeout: *const ffi::rmw_time_t,
) -> rmw_ret_t {
    ffi_ret("rmw_wait", || {
        // SAFETY: caller guarantee.
        let ws = unsafe { handle::get::<WaitSet>(wait_set, "wait_set") }?;
        // SAFETY: caller guarantee.
        let timeout = timeout_of(unsafe { handle::opt_input(wait_timeout) });
        // SAFETY: caller guarantee on each array.
        let subs = unsafe { handle::wait_slots(subscriptions, "subscriptions") }?;
        // SAFETY: as above.
        let gcs = unsafe { handle::wait_slots(guard_conditions, "guard_conditions") }?;
        // SAFETY: as above.
        let srvs = unsafe { handle::wait_slots(services, "services") }?;
        // SAFETY: as above.
        let clis = unsafe { handle::wait_slots(clients, "clients") }?;
        // SAFETY: as above.
        let evs = unsafe { handle::wait_slots(events, "events") }?;
        // Up to SMALL entries (the usual executor's few) live on the stack: no allocation.
        const SMALL: usize = 16;
        let total = subs.len() + gcs.len() + srvs.len() + clis.len() + evs.len();
        let mut small: [Option<Entry<'_>>; SMALL] = [const { None }; SMALL];
        let mut large: Vec<Option<Entry<'_>>> = Vec::new();
        let mut n = 0;
        let mut push = |e| {
            if total <= SMALL {
                small[n] = e;
                n += 1;
            } else {
                large.push(e);
            }
        };
        for &p in subs.iter() {
            // SAFETY: a non-null slot is a live subscription's data pointer.
            let s = unsafe { handle::opt_from_data::<Subscription>(p) };
            push(s.map(Entry::Subscription));
        }
        for &p in gcs.iter() {
            // SAFETY: a non-null slot is a live guard condition's data pointer.
            let g = unsafe { handle::opt_from_data::<GuardCondition>(p) };
            push(g.map(Entry::GuardCondition));
        }
        for &p in srvs.iter() {
            // SAFETY: a non-null slot is a live service's data pointer.
            let s = unsafe { handle::opt_from_data::<Server>(p) };
            push(s.map(Entry::Service));
        }
        for &p in clis.iter() {
            // SAFETY: a non-null slot is a live client's data pointer.
            let c = unsafe { handle::opt_from_data::<Client>(p) };
            push(c.map(Entry::Client));
        }
        for &p in evs.iter() {
            // SAFETY: a non-null slot is a live event handle (rcl puts the rmw_event_t there).
            push(unsafe { super::event::waitable(p) }?.map(Entry::Event));
        }
        let entries: &[Option<Entry<'_>>] = if total <= SMALL { &small[..n] } else { &large };
        let any = ws.wait(entries, timeout, |ready| {
            let mut ready = ready.iter();
            let mut any = false;
            for s in subs
                .iter_mut()
                .chain(gcs.iter_mut())
                .chain(srvs.iter_mut())
                .chain(clis.iter_mut())
                .chain(evs.iter_mut())
            {
                if ready.next().copied().unwrap_or(false) {
                    any = true;
                } else {
                    *s = std::ptr::null_mut();
                }
            }
            any
        })?;
        if any {
            Ok(())
        } else {
            Err(RmwError::Timeout)
        }
    })
}
