//! Entry points: loaned messages (docs/loans.md). Loans exist for plain types only; for the
//! others every entry point is `RMW_RET_UNSUPPORTED` and `can_loan_messages` is false, so rcl
//! falls back to an ordinary publish / take.

use std::ffi::c_void;

use ffi::rmw_ret_t;

use crate::boundary::{ffi_ret, handle, RmwError};
use crate::cdr::MessageType;
use crate::publisher::Publisher;
use crate::subscription::{fill_message_info, Subscription};

/// `rmw_borrow_loaned_message`: memory for one message in the context's shared-memory pool
/// (ordinary memory when there is none or it is full), uninitialized, as Fast DDS lends it.
///
/// # Safety
/// `publisher` is null or live; `type_support` null or a valid type support handle;
/// `ros_message` null or writable.
#[no_mangle]
pub unsafe extern "C" fn rmw_borrow_loaned_message(
    publisher: *const ffi::rmw_publisher_t,
    type_support: *const ffi::rosidl_message_type_support_t,
    ros_message: *mut *mut c_void,
) -> rmw_ret_t {
    ffi_ret("rmw_borrow_loaned_message", || {
        // SAFETY: caller guarantee.
        let p = unsafe { handle::get::<Publisher>(publisher, "publisher") }?;
        if type_support.is_null() {
            return Err(RmwError::Null("type_support"));
        }
        // SAFETY: caller guarantee.
        let out = unsafe { handle::out(ros_message, "ros_message") }?;
        if !out.is_null() {
            return Err(RmwError::invalid(
                "*ros_message must be NULL (it would leak what it points to)",
            ));
        }
        // SAFETY: caller guarantee: a valid type support of a loaded library.
        let ty = unsafe { MessageType::cached(type_support) }?;
        if ty.introspection_handle() != p.message_type().introspection_handle() {
            return Err(RmwError::invalid(format!(
                "type_support is {}, the publisher's type is {}",
                ty.name(),
                p.message_type().name()
            )));
        }
        *out = p.borrow_loaned()?;
        Ok(())
    })
}

/// `rmw_publish_loaned_message`: the loan's bytes, published as they are (no serialization, no
/// copy); the loan is the middleware's again.
///
/// # Safety
/// `publisher` is null or live; `ros_message` null or any address (only loans of this
/// publisher are accepted).
#[no_mangle]
pub unsafe extern "C" fn rmw_publish_loaned_message(
    publisher: *const ffi::rmw_publisher_t,
    ros_message: *mut c_void,
    _allocation: *mut ffi::rmw_publisher_allocation_t,
) -> rmw_ret_t {
    ffi_ret("rmw_publish_loaned_message", || {
        // SAFETY: caller guarantee.
        let p = unsafe { handle::get::<Publisher>(publisher, "publisher") }?;
        if ros_message.is_null() {
            return Err(RmwError::Null("ros_message"));
        }
        p.publish_loaned(ros_message)
    })
}

/// `rmw_return_loaned_message_from_publisher`: an unpublished loan goes back to the pool.
///
/// # Safety
/// As [`rmw_publish_loaned_message`].
#[no_mangle]
pub unsafe extern "C" fn rmw_return_loaned_message_from_publisher(
    publisher: *const ffi::rmw_publisher_t,
    loaned_message: *mut c_void,
) -> rmw_ret_t {
    ffi_ret("rmw_return_loaned_message_from_publisher", || {
        // SAFETY: caller guarantee.
        let p = unsafe { handle::get::<Publisher>(publisher, "publisher") }?;
        if loaned_message.is_null() {
            return Err(RmwError::Null("loaned_message"));
        }
        p.return_loaned(loaned_message)
    })
}

/// The shared body of both loaned takes: the argument checks, then the take.
///
/// # Safety
/// `subscription` null or live; `loaned_message` and `taken` null or writable.
unsafe fn take_loaned(
    subscription: *const ffi::rmw_subscription_t,
    loaned_message: *mut *mut c_void,
    taken: *mut bool,
) -> Result<Option<crate::subscription::TakenInfo>, RmwError> {
    // SAFETY: caller guarantee.
    let s = unsafe { handle::get::<Subscription>(subscription, "subscription") }?;
    // SAFETY: caller guarantee.
    let out = unsafe { handle::out(loaned_message, "loaned_message") }?;
    if !out.is_null() {
        return Err(RmwError::invalid(
            "*loaned_message must be NULL (it would leak what it points to)",
        ));
    }
    // SAFETY: caller guarantee.
    let taken = unsafe { handle::out(taken, "taken") }?;
    *taken = false;
    let Some((p, info)) = s.take_loaned()? else {
        return Ok(None);
    };
    *out = p;
    *taken = true;
    Ok(Some(info))
}

/// `rmw_take_loaned_message`: the next message, lent read-only until it is returned.
///
/// # Safety
/// `subscription` null or live; `loaned_message` and `taken` null or writable.
#[no_mangle]
pub unsafe extern "C" fn rmw_take_loaned_message(
    subscription: *const ffi::rmw_subscription_t,
    loaned_message: *mut *mut c_void,
    taken: *mut bool,
    _allocation: *mut ffi::rmw_subscription_allocation_t,
) -> rmw_ret_t {
    ffi_ret("rmw_take_loaned_message", || {
        // SAFETY: caller guarantee.
        unsafe { take_loaned(subscription, loaned_message, taken) }.map(drop)
    })
}

/// `rmw_take_loaned_message_with_info`: also the message info, as `rmw_take_with_info`.
///
/// # Safety
/// As [`rmw_take_loaned_message`], and `message_info` null or writable.
#[no_mangle]
pub unsafe extern "C" fn rmw_take_loaned_message_with_info(
    subscription: *const ffi::rmw_subscription_t,
    loaned_message: *mut *mut c_void,
    taken: *mut bool,
    message_info: *mut ffi::rmw_message_info_t,
    _allocation: *mut ffi::rmw_subscription_allocation_t,
) -> rmw_ret_t {
    ffi_ret("rmw_take_loaned_message_with_info", || {
        // Checked before anything is taken, so a null info loses no message.
        // SAFETY: caller guarantee.
        let info = unsafe { handle::out(message_info, "message_info") }?;
        // SAFETY: caller guarantee.
        if let Some(i) = unsafe { take_loaned(subscription, loaned_message, taken) }? {
            fill_message_info(info, &i);
        }
        Ok(())
    })
}

/// `rmw_return_loaned_message_from_subscription`: the view (or copy) is released.
///
/// # Safety
/// `subscription` is null or live; `loaned_message` null or any address (only loans of this
/// subscription are accepted).
#[no_mangle]
pub unsafe extern "C" fn rmw_return_loaned_message_from_subscription(
    subscription: *const ffi::rmw_subscription_t,
    loaned_message: *mut c_void,
) -> rmw_ret_t {
    ffi_ret("rmw_return_loaned_message_from_subscription", || {
        // SAFETY: caller guarantee.
        let s = unsafe { handle::get::<Subscription>(subscription, "subscription") }?;
        if loaned_message.is_null() {
            return Err(RmwError::Null("loaned_message"));
        }
        s.return_loaned(loaned_message)
    })
}
