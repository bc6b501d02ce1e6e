//! Entry points: qos.

#![allow(unused_imports)]
use std::ffi::{c_char, c_void};

use ffi::rmw_ret_t;

use crate::boundary::{ffi_bool, ffi_const_ptr, ffi_ptr, ffi_ret};

/// `rmw_qos_profile_check_compatible`: OK, WARNING or ERROR as rmw documents, with the reasons
/// (`crate::qos_compat::check`; the same verdicts as the DDS implementations).
///
/// # Safety
/// `compatibility` is null or live; `reason` is null or `reason_size` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn rmw_qos_profile_check_compatible(
    publisher_profile: ffi::rmw_qos_profile_t,
    subscription_profile: ffi::rmw_qos_profile_t,
    compatibility: *mut ffi::rmw_qos_compatibility_type_t,
    reason: *mut c_char,
    reason_size: usize,
) -> rmw_ret_t {
    ffi_ret("rmw_qos_profile_check_compatible", || {
        // SAFETY: rmw's contract.
        let out = unsafe { crate::boundary::handle::out(compatibility, "compatibility") }?;
        if reason.is_null() && reason_size != 0 {
            return Err(crate::boundary::RmwError::invalid(
                "reason is null but reason_size is not zero",
            ));
        }
        // SAFETY: `reason` holds `reason_size` writable bytes (rmw's contract; null only with 0).
        let buf = unsafe {
            crate::boundary::handle::slice_mut(reason.cast::<u8>(), reason_size, "reason")
        }?;
        let (verdict, why) = crate::qos_compat::check(&publisher_profile, &subscription_profile);
        *out = verdict;
        crate::qos_compat::write_reason(buf, &why);
        Ok(())
    })
}

/// `rmw_publisher_assert_liveliness`: asserts a MANUAL_BY_TOPIC publisher's liveliness, as a
/// publication does (`crate::event`); a no-op for an AUTOMATIC one.
///
/// # Safety
/// `publisher` is null or a live publisher.
#[no_mangle]
pub unsafe extern "C" fn rmw_publisher_assert_liveliness(
    publisher: *const ffi::rmw_publisher_t,
) -> rmw_ret_t {
    ffi_ret("rmw_publisher_assert_liveliness", || {
        // SAFETY: rmw's contract.
        let p = unsafe {
            crate::boundary::handle::get::<crate::publisher::Publisher>(publisher, "publisher")
        }?;
        p.assert_liveliness()
    })
}

/// `rmw_publisher_wait_for_all_acked`: `RMW_RET_OK` once every matched reliable subscription
/// has every sample this publisher wrote before the call, `RMW_RET_TIMEOUT` (no error string,
/// as for `rmw_wait`) when `wait_timeout` passes first (`Publisher::wait_for_all_acked`).
/// `RMW_DURATION_INFINITE` (and any time too large for a deadline) waits without limit; zero
/// checks once.
///
/// # Safety
/// `publisher` is null or a live publisher.
#[no_mangle]
pub unsafe extern "C" fn rmw_publisher_wait_for_all_acked(
    publisher: *const ffi::rmw_publisher_t,
    wait_timeout: ffi::rmw_time_t,
) -> rmw_ret_t {
    ffi_ret("rmw_publisher_wait_for_all_acked", || {
        // SAFETY: rmw's contract.
        let p = unsafe {
            crate::boundary::handle::get::<crate::publisher::Publisher>(publisher, "publisher")
        }?;
        let timeout = crate::waitset::timeout_of(Some(&wait_timeout));
        if p.wait_for_all_acked(timeout)? {
            Ok(())
        } else {
            Err(crate::boundary::RmwError::Timeout)
        }
    })
}
