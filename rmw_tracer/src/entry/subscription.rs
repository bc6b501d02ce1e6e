//! Entry points: subscriptions, subscription allocations, the on-new-message callback.

use std::ffi::{c_char, c_void};

use ffi::rmw_ret_t;

use super::allocation;

use crate::boundary::event_callback::EventCallback;
use crate::boundary::{cstr, ffi_ptr, ffi_ret, handle, message};
use crate::node::Node;
use crate::subscription::Subscription;
use crate::topic::TopicType;
use crate::IDENTIFIER;

/// `rmw_create_subscription`: a target ring sized by the QoS depth, an edge from the local
/// topic vertex, and edges from every peer that publishes the topic (wired by the registry).
///
/// # Safety
/// Pointers are null or valid: a live node, a type support of a loaded library, a C string, a
/// QoS profile and subscription options.
#[no_mangle]
pub unsafe extern "C" fn rmw_create_subscription(
    node: *const ffi::rmw_node_t,
    type_support: *const ffi::rosidl_message_type_support_t,
    topic_name: *const c_char,
    qos_policies: *const ffi::rmw_qos_profile_t,
    subscription_options: *const ffi::rmw_subscription_options_t,
) -> *mut ffi::rmw_subscription_t {
    ffi_ptr("rmw_create_subscription", || {
        // SAFETY: caller guarantee.
        let n = unsafe { handle::get::<Node>(node, "node") }?;
        // SAFETY: caller guarantee.
        let topic = unsafe { cstr::arg(topic_name, "topic_name") }?;
        // SAFETY: caller guarantee.
        let qos = unsafe { handle::input(qos_policies, "qos_policies") }?;
        // SAFETY: caller guarantee.
        let options = *unsafe { handle::input(subscription_options, "subscription_options") }?;
        // SAFETY: caller guarantee.
        let (ty, info) = unsafe { message::message_type(type_support) }?;
        let s = Subscription::new(
            n,
            TopicType::new(ty, info),
            topic,
            qos,
            options.ignore_local_publications,
        )?;
        // A filter given at creation is compiled now: a bad one fails the creation, as with
        // Fast DDS. A null pointer or an empty expression means no filter.
        // SAFETY: caller guarantee: null or valid content filter options.
        let filter = unsafe { handle::opt_input(options.content_filter_options) };
        let mut is_cft_enabled = false;
        if let Some(f) = filter.filter(|f| !f.filter_expression.is_null()) {
            // SAFETY: caller guarantee: valid options.
            let (expression, params) = unsafe { super::content_filter::read_options(f) }?;
            is_cft_enabled = s.set_content_filter(&expression, params)?;
        }
        Ok(handle::create(s, |s, data| ffi::rmw_subscription_t {
            implementation_identifier: IDENTIFIER.as_ptr(),
            data,
            topic_name: s.topic.as_ptr(),
            options,
            can_loan_messages: s.can_loan(),
            is_cft_enabled,
        }))
    })
}

/// `rmw_destroy_subscription`: its edges and its ring go with it.
///
/// # Safety
/// `node` is null or a live node; `subscription` null or one of its subscriptions, not used
/// afterwards.
#[no_mangle]
pub unsafe extern "C" fn rmw_destroy_subscription(
    node: *mut ffi::rmw_node_t,
    subscription: *mut ffi::rmw_subscription_t,
) -> rmw_ret_t {
    // SAFETY: caller guarantee.
    ffi_ret("rmw_destroy_subscription", || unsafe {
        super::destroy_of_node::<Subscription>(node, subscription, "subscription")
    })
}

/// `rmw_subscription_get_actual_qos`: the resolved profile.
///
/// # Safety
/// `subscription` is null or live; `qos` null or writable.
#[no_mangle]
pub unsafe extern "C" fn rmw_subscription_get_actual_qos(
    subscription: *const ffi::rmw_subscription_t,
    qos: *mut ffi::rmw_qos_profile_t,
) -> rmw_ret_t {
    ffi_ret("rmw_subscription_get_actual_qos", || {
        // SAFETY: caller guarantee.
        let s = unsafe { handle::get::<Subscription>(subscription, "subscription") }?;
        // SAFETY: caller guarantee.
        *unsafe { handle::out(qos, "qos") }? = s.qos.profile;
        Ok(())
    })
}

/// `rmw_subscription_count_matched_publishers`: local publishers of the topic and type, and
/// remote ones whose edge into this subscription is established.
///
/// # Safety
/// `subscription` is null or live; `publisher_count` null or writable.
#[no_mangle]
pub unsafe extern "C" fn rmw_subscription_count_matched_publishers(
    subscription: *const ffi::rmw_subscription_t,
    publisher_count: *mut usize,
) -> rmw_ret_t {
    ffi_ret("rmw_subscription_count_matched_publishers", || {
        // SAFETY: caller guarantee.
        let s = unsafe { handle::get::<Subscription>(subscription, "subscription") }?;
        // SAFETY: caller guarantee.
        *unsafe { handle::out(publisher_count, "publisher_count") }? = s.matched_publishers();
        Ok(())
    })
}

/// `rmw_init_subscription_allocation`: nothing to preallocate; marks the allocation ours.
///
/// # Safety
/// Pointers are null or valid.
#[no_mangle]
pub unsafe extern "C" fn rmw_init_subscription_allocation(
    type_support: *const ffi::rosidl_message_type_support_t,
    _message_bounds: *const ffi::rosidl_runtime_c__Sequence__bound,
    allocation: *mut ffi::rmw_subscription_allocation_t,
) -> rmw_ret_t {
    // SAFETY: caller guarantee.
    ffi_ret("rmw_init_subscription_allocation", || unsafe {
        allocation::init(type_support, allocation)
    })
}

/// `rmw_fini_subscription_allocation`.
///
/// # Safety
/// `allocation` is null or one initialized by `rmw_init_subscription_allocation`.
#[no_mangle]
pub unsafe extern "C" fn rmw_fini_subscription_allocation(
    allocation: *mut ffi::rmw_subscription_allocation_t,
) -> rmw_ret_t {
    // SAFETY: caller guarantee.
    ffi_ret("rmw_fini_subscription_allocation", || unsafe {
        allocation::fini(allocation)
    })
}

/// `rmw_subscription_set_on_new_message_callback`: called at once with the number of messages
/// already waiting, then for each new one; a null callback clears it.
///
/// # Safety
/// `subscription` is null or live; `callback`, if set, callable with `user_data` from any thread
/// until it is replaced or cleared.
#[no_mangle]
pub unsafe extern "C" fn rmw_subscription_set_on_new_message_callback(
    subscription: *mut ffi::rmw_subscription_t,
    callback: ffi::rmw_event_callback_t,
    user_data: *const c_void,
) -> rmw_ret_t {
    ffi_ret("rmw_subscription_set_on_new_message_callback", || {
        // SAFETY: caller guarantee.
        let s = unsafe { handle::get::<Subscription>(subscription, "subscription") }?;
        // SAFETY: caller guarantee on the callback.
        s.set_on_new_message(unsafe { EventCallback::new(callback, user_data) });
        Ok(())
    })
}
