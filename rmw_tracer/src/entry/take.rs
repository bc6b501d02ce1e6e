//! Entry points: take (with and without info, in sequences, serialized).

use std::ffi::c_void;

use ffi::rmw_ret_t;

use crate::boundary::message::MessageMut;
use crate::boundary::{clib, ffi_ret, handle, RmwError};
use crate::subscription::{fill_message_info, Subscription};

/// `rmw_take`: the oldest message of the subscription's ring, deserialized into `ros_message`.
///
/// # Safety
/// `subscription` is null or live; `ros_message` null or an initialized message of its type;
/// `taken` null or writable.
#[no_mangle]
pub unsafe extern "C" fn rmw_take(
    subscription: *const ffi::rmw_subscription_t,
    ros_message: *mut c_void,
    taken: *mut bool,
    _allocation: *mut ffi::rmw_subscription_allocation_t,
) -> rmw_ret_t {
    ffi_ret("rmw_take", || {
        // SAFETY: caller guarantee.
        let s = unsafe { handle::get::<Subscription>(subscription, "subscription") }?;
        // SAFETY: caller guarantee.
        let taken = unsafe { handle::out(taken, "taken") }?;
        *taken = false;
        // SAFETY: caller guarantee: a message of the subscription's type.
        let mut msg = unsafe { MessageMut::new(ros_message, "ros_message") }?;
        *taken = s.take(&mut msg)?.is_some();
        Ok(())
    })
}

/// `rmw_take_with_info`: also the source and received timestamps, the publication sequence
/// number, the publisher's gid and whether it came from this process.
///
/// # Safety
/// As [`rmw_take`], and `message_info` null or writable.
#[no_mangle]
pub unsafe extern "C" fn rmw_take_with_info(
    subscription: *const ffi::rmw_subscription_t,
    ros_message: *mut c_void,
    taken: *mut bool,
    message_info: *mut ffi::rmw_message_info_t,
    _allocation: *mut ffi::rmw_subscription_allocation_t,
) -> rmw_ret_t {
    ffi_ret("rmw_take_with_info", || {
        // SAFETY: caller guarantee.
        let s = unsafe { handle::get::<Subscription>(subscription, "subscription") }?;
        // SAFETY: caller guarantee.
        let taken = unsafe { handle::out(taken, "taken") }?;
        *taken = false;
        // SAFETY: caller guarantee.
        let info = unsafe { handle::out(message_info, "message_info") }?;
        // SAFETY: caller guarantee: a message of the subscription's type.
        let mut msg = unsafe { MessageMut::new(ros_message, "ros_message") }?;
        if let Some(i) = s.take(&mut msg)? {
            fill_message_info(info, &i);
            *taken = true;
        }
        Ok(())
    })
}

/// `rmw_take_sequence`: up to `count` messages (at most the capacity of both sequences).
///
/// # Safety
/// `subscription` is null or live; the sequences are null or initialized with `capacity`
/// initialized messages / infos; `taken` null or writable.
#[no_mangle]
pub unsafe extern "C" fn rmw_take_sequence(
    subscription: *const ffi::rmw_subscription_t,
    count: usize,
    message_sequence: *mut ffi::rmw_message_sequence_t,
    message_info_sequence: *mut ffi::rmw_message_info_sequence_t,
    taken: *mut usize,
    _allocation: *mut ffi::rmw_subscription_allocation_t,
) -> rmw_ret_t {
    ffi_ret("rmw_take_sequence", || {
        // SAFETY: caller guarantee.
        let s = unsafe { handle::get::<Subscription>(subscription, "subscription") }?;
        // SAFETY: caller guarantee.
        let msgs = unsafe { handle::out(message_sequence, "message_sequence") }?;
        // SAFETY: caller guarantee.
        let infos = unsafe { handle::out(message_info_sequence, "message_info_sequence") }?;
        // SAFETY: caller guarantee.
        let taken = unsafe { handle::out(taken, "taken") }?;
        *taken = 0;
        if count == 0 {
            return Err(RmwError::invalid("count must be greater than 0"));
        }
        if count > msgs.capacity {
            return Err(RmwError::invalid(
                "count exceeds the message sequence's capacity",
            ));
        }
        if count > infos.capacity {
            return Err(RmwError::invalid(
                "count exceeds the message info sequence's capacity",
            ));
        }
        // SAFETY: an initialized sequence holds `capacity` message pointers.
        let slots = unsafe { handle::slice_mut(msgs.data, count, "message_sequence->data") }?;
        // SAFETY: an initialized info sequence holds `capacity` infos.
        let info_slots =
            unsafe { handle::slice_mut(infos.data, count, "message_info_sequence->data") }?;
        let mut n = 0;
        for (slot, info) in slots.iter().zip(info_slots.iter_mut()) {
            // SAFETY: each slot is an initialized message of the subscription's type.
            let mut msg = unsafe { MessageMut::new(*slot, "message_sequence->data[i]") }?;
            let Some(i) = s.take(&mut msg)? else {
                break;
            };
            fill_message_info(info, &i);
            n += 1;
        }
        msgs.size = n;
        infos.size = n;
        *taken = n;
        Ok(())
    })
}

/// `rmw_take_serialized_message`: the CDR bytes as they arrived, into a buffer grown with its
/// own allocator when too small.
///
/// # Safety
/// `subscription` is null or live; `serialized_message` null or an initialized uint8 array;
/// `taken` null or writable.
#[no_mangle]
pub unsafe extern "C" fn rmw_take_serialized_message(
    subscription: *const ffi::rmw_subscription_t,
    serialized_message: *mut ffi::rmw_serialized_message_t,
    taken: *mut bool,
    _allocation: *mut ffi::rmw_subscription_allocation_t,
) -> rmw_ret_t {
    ffi_ret("rmw_take_serialized_message", || {
        // SAFETY: caller guarantee.
        let s = unsafe { handle::get::<Subscription>(subscription, "subscription") }?;
        // SAFETY: caller guarantee.
        let out = unsafe { handle::out(serialized_message, "serialized_message") }?;
        // SAFETY: caller guarantee.
        let taken = unsafe { handle::out(taken, "taken") }?;
        *taken = false;
        if let Some((sample, _)) = s.take_cdr() {
            // SAFETY: an initialized uint8 array (caller guarantee).
            unsafe { clib::fill_uint8_array(out, sample.payload.as_ref()) }?;
            *taken = true;
        }
        Ok(())
    })
}

/// `rmw_take_serialized_message_with_info`.
///
/// # Safety
/// As [`rmw_take_serialized_message`], and `message_info` null or writable.
#[no_mangle]
pub unsafe extern "C" fn rmw_take_serialized_message_with_info(
    subscription: *const ffi::rmw_subscription_t,
    serialized_message: *mut ffi::rmw_serialized_message_t,
    taken: *mut bool,
    message_info: *mut ffi::rmw_message_info_t,
    _allocation: *mut ffi::rmw_subscription_allocation_t,
) -> rmw_ret_t {
    ffi_ret("rmw_take_serialized_message_with_info", || {
        // SAFETY: caller guarantee.
        let s = unsafe { handle::get::<Subscription>(subscription, "subscription") }?;
        // SAFETY: caller guarantee.
        let out = unsafe { handle::out(serialized_message, "serialized_message") }?;
        // SAFETY: caller guarantee.
        let taken = unsafe { handle::out(taken, "taken") }?;
        *taken = false;
        // SAFETY: caller guarantee.
        let info = unsafe { handle::out(message_info, "message_info") }?;
        if let Some((sample, i)) = s.take_cdr() {
            // SAFETY: an initialized uint8 array (caller guarantee).
            unsafe { clib::fill_uint8_array(out, sample.payload.as_ref()) }?;
            fill_message_info(info, &i);
            *taken = true;
        }
        Ok(())
    })
}
