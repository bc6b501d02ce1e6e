//! Entry points: publishers, gids, publisher allocations.

use std::ffi::{c_char, c_void};

use ffi::rmw_ret_t;

use super::allocation;

use crate::boundary::message::{self, MessageRef};
use crate::boundary::{clib, cstr, ffi_ptr, ffi_ret, handle};
use crate::node::Node;
use crate::publisher::Publisher;
use crate::topic::TopicType;
use crate::IDENTIFIER;

/// `rmw_create_publisher`: the topic vertex (a stream), its `:schema`, the registry record.
///
/// # Safety
/// Pointers are null or valid: a live node, a type support of a loaded library, a C string, a
/// QoS profile and publisher options.
#[no_mangle]
pub unsafe extern "C" fn rmw_create_publisher(
    node: *const ffi::rmw_node_t,
    type_support: *const ffi::rosidl_message_type_support_t,
    topic_name: *const c_char,
    qos_profile: *const ffi::rmw_qos_profile_t,
    publisher_options: *const ffi::rmw_publisher_options_t,
) -> *mut ffi::rmw_publisher_t {
    ffi_ptr("rmw_create_publisher", || {
        // SAFETY: caller guarantee.
        let n = unsafe { handle::get::<Node>(node, "node") }?;
        // SAFETY: caller guarantee.
        let topic = unsafe { cstr::arg(topic_name, "topic_name") }?;
        // SAFETY: caller guarantee.
        let qos = unsafe { handle::input(qos_profile, "qos_profile") }?;
        // SAFETY: caller guarantee.
        let options = *unsafe { handle::input(publisher_options, "publisher_options") }?;
        // SAFETY: caller guarantee.
        let (ty, info) = unsafe { message::message_type(type_support) }?;
        let p = Publisher::new(n, TopicType::new(ty, info), topic, qos)?;
        Ok(handle::create(p, |p, data| ffi::rmw_publisher_t {
            implementation_identifier: IDENTIFIER.as_ptr(),
            data,
            topic_name: p.topic.as_ptr(),
            options,
            can_loan_messages: p.can_loan(),
        }))
    })
}

/// `rmw_destroy_publisher`: retracts the registry record; the topic vertex stays (remote
/// subscriptions keep their edges on it until they go).
///
/// # Safety
/// `node` is null or a live node; `publisher` null or one of its publishers, not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn rmw_destroy_publisher(
    node: *mut ffi::rmw_node_t,
    publisher: *mut ffi::rmw_publisher_t,
) -> rmw_ret_t {
    // SAFETY: caller guarantee.
    ffi_ret("rmw_destroy_publisher", || unsafe {
        super::destroy_of_node::<Publisher>(node, publisher, "publisher")
    })
}

/// `rmw_publish`: CDR of the message, written to the topic vertex.
///
/// # Safety
/// `publisher` is null or live; `ros_message` null or a message of its type.
#[no_mangle]
pub unsafe extern "C" fn rmw_publish(
    publisher: *const ffi::rmw_publisher_t,
    ros_message: *const c_void,
    _allocation: *mut ffi::rmw_publisher_allocation_t,
) -> rmw_ret_t {
    ffi_ret("rmw_publish", || {
        // SAFETY: caller guarantee.
        let p = unsafe { handle::get::<Publisher>(publisher, "publisher") }?;
        // SAFETY: caller guarantee: a message of the publisher's type.
        let msg = unsafe { MessageRef::new(ros_message, "ros_message") }?;
        p.publish(&msg)
    })
}

/// `rmw_publish_serialized_message`: the bytes are written as they are (they must be CDR).
///
/// # Safety
/// `publisher` is null or live; `serialized_message` null or an initialized uint8 array.
#[no_mangle]
pub unsafe extern "C" fn rmw_publish_serialized_message(
    publisher: *const ffi::rmw_publisher_t,
    serialized_message: *const ffi::rmw_serialized_message_t,
    _allocation: *mut ffi::rmw_publisher_allocation_t,
) -> rmw_ret_t {
    ffi_ret("rmw_publish_serialized_message", || {
        // SAFETY: caller guarantee.
        let p = unsafe { handle::get::<Publisher>(publisher, "publisher") }?;
        // SAFETY: caller guarantee.
        let m = unsafe { handle::input(serialized_message, "serialized_message") }?;
        // SAFETY: an initialized uint8 array (caller guarantee).
        let bytes = unsafe { clib::uint8_array_bytes(m) }?;
        p.publish_cdr(bytes)
    })
}

/// `rmw_publisher_get_actual_qos`: the resolved profile (no system defaults left).
///
/// # Safety
/// `publisher` is null or live; `qos` null or writable.
#[no_mangle]
pub unsafe extern "C" fn rmw_publisher_get_actual_qos(
    publisher: *const ffi::rmw_publisher_t,
    qos: *mut ffi::rmw_qos_profile_t,
) -> rmw_ret_t {
    ffi_ret("rmw_publisher_get_actual_qos", || {
        // SAFETY: caller guarantee.
        let p = unsafe { handle::get::<Publisher>(publisher, "publisher") }?;
        // SAFETY: caller guarantee.
        *unsafe { handle::out(qos, "qos") }? = p.qos.profile;
        Ok(())
    })
}

/// `rmw_publisher_count_matched_subscriptions`: the edges on the topic vertex.
///
/// # Safety
/// `publisher` is null or live; `subscription_count` null or writable.
#[no_mangle]
pub unsafe extern "C" fn rmw_publisher_count_matched_subscriptions(
    publisher: *const ffi::rmw_publisher_t,
    subscription_count: *mut usize,
) -> rmw_ret_t {
    ffi_ret("rmw_publisher_count_matched_subscriptions", || {
        // SAFETY: caller guarantee.
        let p = unsafe { handle::get::<Publisher>(publisher, "publisher") }?;
        // SAFETY: caller guarantee.
        *unsafe { handle::out(subscription_count, "subscription_count") }? =
            p.matched_subscriptions();
        Ok(())
    })
}

/// `rmw_get_gid_for_publisher`.
///
/// # Safety
/// `publisher` is null or live; `gid` null or writable.
#[no_mangle]
pub unsafe extern "C" fn rmw_get_gid_for_publisher(
    publisher: *const ffi::rmw_publisher_t,
    gid: *mut ffi::rmw_gid_t,
) -> rmw_ret_t {
    ffi_ret("rmw_get_gid_for_publisher", || {
        // SAFETY: caller guarantee.
        let p = unsafe { handle::get::<Publisher>(publisher, "publisher") }?;
        // SAFETY: caller guarantee.
        *unsafe { handle::out(gid, "gid") }? = crate::gid::to_rmw(p.gid);
        Ok(())
    })
}

/// `rmw_compare_gids_equal`: both gids must be rmw_tracer's.
///
/// # Safety
/// Pointers are null or valid.
#[no_mangle]
pub unsafe extern "C" fn rmw_compare_gids_equal(
    gid1: *const ffi::rmw_gid_t,
    gid2: *const ffi::rmw_gid_t,
    result: *mut bool,
) -> rmw_ret_t {
    ffi_ret("rmw_compare_gids_equal", || {
        // SAFETY: caller guarantee.
        let a = unsafe { handle::input(gid1, "gid1") }?;
        // SAFETY: caller guarantee.
        let b = unsafe { handle::input(gid2, "gid2") }?;
        // SAFETY: the identifier of a gid is null or a C string.
        unsafe { handle::check_identifier(a.implementation_identifier, "gid1") }?;
        // SAFETY: as above.
        unsafe { handle::check_identifier(b.implementation_identifier, "gid2") }?;
        // SAFETY: caller guarantee.
        *unsafe { handle::out(result, "result") }? = a.data == b.data;
        Ok(())
    })
}

/// `rmw_init_publisher_allocation`: rmw_tracer preallocates nothing, so this only marks the
/// allocation as rmw_tracer's.
///
/// # Safety
/// Pointers are null or valid.
#[no_mangle]
pub unsafe extern "C" fn rmw_init_publisher_allocation(
    type_support: *const ffi::rosidl_message_type_support_t,
    _message_bounds: *const ffi::rosidl_runtime_c__Sequence__bound,
    allocation: *mut ffi::rmw_publisher_allocation_t,
) -> rmw_ret_t {
    // SAFETY: caller guarantee.
    ffi_ret("rmw_init_publisher_allocation", || unsafe {
        allocation::init(type_support, allocation)
    })
}

/// `rmw_fini_publisher_allocation`.
///
/// # Safety
/// `allocation` is null or one initialized by `rmw_init_publisher_allocation`.
#[no_mangle]
pub unsafe extern "C" fn rmw_fini_publisher_allocation(
    allocation: *mut ffi::rmw_publisher_allocation_t,
) -> rmw_ret_t {
    // SAFETY: caller guarantee.
    ffi_ret("rmw_fini_publisher_allocation", || unsafe {
        allocation::fini(allocation)
    })
}
