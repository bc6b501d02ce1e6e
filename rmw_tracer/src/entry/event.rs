//! Entry points: QoS events (`crate::event`).

use std::ffi::c_void;
use std::sync::Arc;

use ffi::rmw_ret_t;

use crate::boundary::event_callback::EventCallback;
use crate::boundary::handle::{self, Handle};
use crate::boundary::{ffi_bool, ffi_ret, RmwError, RmwResult};
use crate::event::{classify, End, EventHandle, Events, Kind, Waitable};
use crate::publisher::Publisher;
use crate::subscription::Subscription;
use crate::IDENTIFIER;

/// The end and kind of `t` for an endpoint of `end`, or why not.
fn kind_for(t: ffi::rmw_event_type_t, end: End) -> RmwResult<Kind> {
    match classify(t) {
        (None, _) => Err(RmwError::invalid(format!("{t} is not an rmw event type"))),
        (Some(e), _) if e != end => Err(RmwError::invalid(format!(
            "event type {t} belongs to a {}, not a {}",
            name(e),
            name(end)
        ))),
        (_, None) => Err(RmwError::UnsupportedFeature(format!("event type {t}"))),
        (_, Some(k)) => Ok(k),
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

/// `rmw_publisher_event_init`: PUBLICATION_MATCHED and OFFERED_QOS_INCOMPATIBLE;
/// `RMW_RET_UNSUPPORTED` for the deadline, liveliness and incompatible-type events.
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

/// `rmw_subscription_event_init`: SUBSCRIPTION_MATCHED, MESSAGE_LOST and
/// REQUESTED_QOS_INCOMPATIBLE; `RMW_RET_UNSUPPORTED` for the deadline, liveliness and
/// incompatible-type events.
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
unsafe fn resolve<'a>(ev: *const ffi::rmw_event_t) -> RmwResult<(&'a Arc<Events>, Kind)> {
    // SAFETY: forwarded caller guarantee.
    let c = unsafe { handle::c_ref::<EventHandle>(ev, "event_handle") }?;
    let (end, kind) = classify(c.event_type);
    let (Some(end), Some(kind)) = (end, kind) else {
        return Err(RmwError::invalid(format!(
            "event of unsupported type {}",
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
    Ok((events, kind))
}

/// `rmw_take_event`: the status of a matched or lost-message event (`taken` false when
/// nothing changed since the last take); an incompatible-QoS event is never taken.
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
        let (events, kind) = unsafe { resolve(event_handle) }?;
        // SAFETY: as above.
        let taken = unsafe { handle::out(taken, "taken") }?;
        if event_info.is_null() {
            return Err(RmwError::Null("event_info"));
        }
        *taken = false;
        match kind {
            Kind::Matched => {
                // SAFETY: a matched event's info is an `rmw_matched_status_t` (rmw's contract).
                let out = unsafe {
                    handle::out(event_info.cast::<ffi::rmw_matched_status_t>(), "event_info")
                }?;
                if let Some(s) = events.take_matched() {
                    *out = ffi::rmw_matched_status_t {
                        total_count: s.total_count,
                        total_count_change: s.total_count_change,
                        current_count: s.current_count,
                        current_count_change: s.current_count_change,
                    };
                    *taken = true;
                }
            }
            Kind::MessageLost => {
                // SAFETY: a lost-message event's info is an `rmw_message_lost_status_t`.
                let out = unsafe {
                    handle::out(
                        event_info.cast::<ffi::rmw_message_lost_status_t>(),
                        "event_info",
                    )
                }?;
                if let Some(s) = events.take_lost() {
                    *out = ffi::rmw_message_lost_status_t {
                        total_count: s.total_count,
                        total_count_change: s.total_count_change,
                    };
                    *taken = true;
                }
            }
            Kind::QosIncompatible => {}
        }
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
        let (events, kind) = unsafe { resolve(event.cast_const()) }?;
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
    let (events, kind) = unsafe { resolve(p.cast::<ffi::rmw_event_t>()) }?;
    Ok(Some(Waitable { events, kind }))
}
