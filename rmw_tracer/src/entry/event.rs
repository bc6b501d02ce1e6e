//! Entry points: QoS events (`crate::event`).

use std::ffi::c_void;
use std::sync::Arc;

use ffi::rmw_ret_t;

use crate::boundary::event_callback::EventCallback;
use crate::boundary::handle::{self, Handle};
use crate::boundary::{ffi_bool, ffi_ret, RmwError, RmwResult};
use crate::event::{classify, CountStatus, End, EventHandle, Events, Kind, Waitable};
use crate::publisher::Publisher;
use crate::subscription::Subscription;
use crate::IDENTIFIER;

/// The kind of `t` for an endpoint of `end`, or why not.
/// event.h: "`RMW_RET_UNSUPPORTED` if event_type is not supported": neither a value that is
/// no event type (`RMW_EVENT_INVALID`, as Fast DDS answers) nor the other end's type (which
/// Fast DDS accepts: rmw-mapping.md, Events) is supported by this endpoint.
fn kind_for(t: ffi::rmw_event_type_t, end: End) -> RmwResult<Kind> {
    match classify(t) {
        None => Err(RmwError::UnsupportedFeature(format!(
            "event type {t} (no rmw event type)"
        ))),
        Some((e, _)) if e != end => Err(RmwError::UnsupportedFeature(format!(
            "event type {t} on a {} (it belongs to a {})",
            name(end),
            name(e)
        ))),
        Some((_, k)) => Ok(k),
    }
}

fn name(e: End) -> &'static str {
    match e {
        End::Publisher => "publisher",
        End::Subscription => "subscription",
    }
}

/// Fill a caller's `rmw_event_t`: its `data` is the endpoint's own object (an event owns
/// nothing, since librmw's `rmw_event_fini` only clears the struct).
fn fill(ev: &mut ffi::rmw_event_t, data: *mut c_void, t: ffi::rmw_event_type_t) {
    ev.implementation_identifier = IDENTIFIER.as_ptr();
    ev.data = data;
    ev.event_type = t;
}

/// `rmw_publisher_event_init`: any publisher event type (`crate::event`).
///
/// # Safety
/// `rmw_event` is null or a live, zero-initialized event; `publisher` null or live.
#[no_mangle]
pub unsafe extern "C" fn rmw_publisher_event_init(
    rmw_event: *mut ffi::rmw_event_t,
    publisher: *const ffi::rmw_publisher_t,
    event_type: ffi::rmw_event_type_t,
) -> rmw_ret_t {
    ffi_ret("rmw_publisher_event_init", || {
        // SAFETY: rmw's contract on every argument.
        let ev = unsafe { handle::out(rmw_event, "rmw_event") }?;
        // SAFETY: as above.
        let c = unsafe { handle::c_ref::<Publisher>(publisher, "publisher") }?;
        // SAFETY: as above.
        let p = unsafe { handle::get::<Publisher>(publisher, "publisher") }?;
        let kind = kind_for(event_type, End::Publisher)?;
        p.events.init(kind);
        fill(ev, Publisher::data(c), event_type);
        Ok(())
    })
}

/// `rmw_subscription_event_init`: any subscription event type (`crate::event`).
///
/// # Safety
/// `rmw_event` is null or a live, zero-initialized event; `subscription` null or live.
#[no_mangle]
pub unsafe extern "C" fn rmw_subscription_event_init(
    rmw_event: *mut ffi::rmw_event_t,
    subscription: *const ffi::rmw_subscription_t,
    event_type: ffi::rmw_event_type_t,
) -> rmw_ret_t {
    ffi_ret("rmw_subscription_event_init", || {
        // SAFETY: rmw's contract on every argument.
        let ev = unsafe { handle::out(rmw_event, "rmw_event") }?;
        // SAFETY: as above.
        let c = unsafe { handle::c_ref::<Subscription>(subscription, "subscription") }?;
        // SAFETY: as above.
        let s = unsafe { handle::get::<Subscription>(subscription, "subscription") }?;
        let kind = kind_for(event_type, End::Subscription)?;
        s.events.init(kind);
        fill(ev, Subscription::data(c), event_type);
        Ok(())
    })
}

/// The event state and kind behind an initialized `rmw_event_t`.
///
/// # Safety
/// `ev` is null or an event initialized by `rmw_*_event_init` whose endpoint is alive.
unsafe fn resolve<'a>(ev: *const ffi::rmw_event_t) -> RmwResult<(&'a Arc<Events>, Kind, End)> {
    // SAFETY: forwarded caller guarantee.
    let c = unsafe { handle::c_ref::<EventHandle>(ev, "event_handle") }?;
    let Some((end, kind)) = classify(c.event_type) else {
        return Err(RmwError::invalid(format!(
            "event of unknown type {}",
            c.event_type
        )));
    };
    let events = match end {
        End::Publisher => {
            // SAFETY: an initialized publisher event's data is its live publisher's object.
            let p = unsafe { handle::from_data::<Publisher>(c.data, "event data") }?;
            &p.events
        }
        End::Subscription => {
            // SAFETY: an initialized subscription event's data is its live subscription's object.
            let s = unsafe { handle::from_data::<Subscription>(c.data, "event data") }?;
            &s.events
        }
    };
    Ok((events, kind, end))
}

/// The caller's `event_info`: where `rmw_take_event` writes the status of the event's type.
struct StatusOut(*mut c_void);

impl StatusOut {
    /// # Safety
    /// `info` is null or points to a writable status struct of the event's type (rmw's
    /// contract), and [`StatusOut::put`] is only called with that type.
    unsafe fn new(info: *mut c_void) -> StatusOut {
        StatusOut(info)
    }

    fn put<T>(&self, value: T) -> RmwResult<()> {
        // SAFETY: `new`'s contract: the pointer is null (refused) or a writable `T`.
        let out = unsafe { handle::out(self.0.cast::<T>(), "event_info") }?;
        *out = value;
        Ok(())
    }
}

fn count(c: CountStatus) -> (i32, i32) {
    (c.total_count, c.total_count_change)
}

/// `rmw_take_event`: the status of the event's type, always taken: the totals, and the changes
/// since the last take (zero when nothing happened), as Fast DDS answers and Jazzy's
/// test_rmw_implementation (test_event.cpp) and rclpy's test_qos_event.py expect.
///
/// # Safety
/// `event_handle` is null or initialized; `event_info` is null or points to the status
/// struct of the event's type; `taken` null or live.
#[no_mangle]
pub unsafe extern "C" fn rmw_take_event(
    event_handle: *const ffi::rmw_event_t,
    event_info: *mut c_void,
    taken: *mut bool,
) -> rmw_ret_t {
    ffi_ret("rmw_take_event", || {
        // SAFETY: rmw's contract on every argument.
        let (events, kind, end) =
            unsafe { resolve(event_handle) }.map_err(RmwError::foreign_as_error)?;
        // SAFETY: as above.
        let taken = unsafe { handle::out(taken, "taken") }?;
        if event_info.is_null() {
            return Err(RmwError::Null("event_info"));
        }
        *taken = false;
        // SAFETY: rmw's contract: `event_info` is the status struct of the event's type, and
        // each arm below writes the struct of its own type.
        let out = unsafe { StatusOut::new(event_info) };
        // The counted statuses (`Tally`) always answer; `None` cannot happen for them.
        let counted = |s: Option<CountStatus>| count(s.unwrap_or_default());
        match (kind, end) {
            (Kind::Matched, _) => {
                let s = events.take_matched();
                out.put(ffi::rmw_matched_status_t {
                    total_count: s.total_count,
                    total_count_change: s.total_count_change,
                    current_count: s.current_count,
                    current_count_change: s.current_count_change,
                })
            }
            (Kind::MessageLost, _) => {
                let s = events.take_lost();
                out.put(ffi::rmw_message_lost_status_t {
                    total_count: s.total_count,
                    total_count_change: s.total_count_change,
                })
            }
            (Kind::QosIncompatible, _) => {
                let s = events.take_qos_incompatible().unwrap_or_default();
                let (total_count, total_count_change) = count(s.count);
                out.put(ffi::rmw_qos_incompatible_event_status_t {
                    total_count,
                    total_count_change,
                    last_policy_kind: s.policy(),
                })
            }
            (Kind::TypeIncompatible, _) => {
                let (total_count, total_count_change) = counted(events.take_type_incompatible());
                out.put(ffi::rmw_incompatible_type_status_t {
                    total_count,
                    total_count_change,
                })
            }
            (Kind::DeadlineMissed, End::Publisher) => {
                let (total_count, total_count_change) = counted(events.take_deadline_missed());
                out.put(ffi::rmw_offered_deadline_missed_status_t {
                    total_count,
                    total_count_change,
                })
            }
            (Kind::DeadlineMissed, End::Subscription) => {
                let (total_count, total_count_change) = counted(events.take_deadline_missed());
                out.put(ffi::rmw_requested_deadline_missed_status_t {
                    total_count,
                    total_count_change,
                })
            }
            (Kind::Liveliness, End::Publisher) => {
                let (total_count, total_count_change) = counted(events.take_liveliness_lost());
                out.put(ffi::rmw_liveliness_lost_status_t {
                    total_count,
                    total_count_change,
                })
            }
            (Kind::Liveliness, End::Subscription) => {
                let s = events.take_liveliness_changed().unwrap_or_default();
                out.put(ffi::rmw_liveliness_changed_status_t {
                    alive_count: s.alive_count,
                    not_alive_count: s.not_alive_count,
                    alive_count_change: s.alive_count_change,
                    not_alive_count_change: s.not_alive_count_change,
                })
            }
        }?;
        *taken = true;
        Ok(())
    })
}

/// `rmw_event_set_callback`.
///
/// # Safety
/// `event` is null or initialized; `callback` (if set) is callable with `user_data` from any
/// thread until replaced or cleared.
#[no_mangle]
pub unsafe extern "C" fn rmw_event_set_callback(
    event: *mut ffi::rmw_event_t,
    callback: ffi::rmw_event_callback_t,
    user_data: *const c_void,
) -> rmw_ret_t {
    ffi_ret("rmw_event_set_callback", || {
        // SAFETY: rmw's contract.
        let (events, kind, _) = unsafe { resolve(event.cast_const()) }?;
        // SAFETY: as above.
        let cb = unsafe { EventCallback::new(callback, user_data) };
        events.set_callback(kind, cb)
    })
}

/// `rmw_event_type_is_supported`.
///
/// # Safety
/// Callable with any argument.
#[no_mangle]
pub unsafe extern "C" fn rmw_event_type_is_supported(
    rmw_event_type: ffi::rmw_event_type_t,
) -> bool {
    ffi_bool("rmw_event_type_is_supported", || {
        crate::event::is_supported(rmw_event_type)
    })
}

/// An `rmw_wait` event slot: the `rmw_event_t` itself (rcl puts event handles there, not their
/// data).
///
/// # Safety
/// `p` is null or an initialized rmw_tracer event whose endpoint is alive.
pub(super) unsafe fn waitable<'a>(p: *mut c_void) -> RmwResult<Option<Waitable<'a>>> {
    if p.is_null() {
        return Ok(None);
    }
    // SAFETY: forwarded caller guarantee.
    let (events, kind, _) = unsafe { resolve(p.cast::<ffi::rmw_event_t>()) }?;
    Ok(Some(Waitable { events, kind }))
}
