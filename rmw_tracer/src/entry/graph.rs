//! Entry points: graph queries (`crate::graph_query`), answered from the endpoint registry.

use std::ffi::c_char;

use ffi::rmw_ret_t;

use crate::boundary::graph_out::{self, check_zero_string_array, fill_string_array};
use crate::boundary::{cstr, ffi_ret, handle, RmwError, RmwResult};
use crate::graph_query::{self as q, Snapshot};
use crate::node::Node;
use crate::registry::{EntityKind, Record};

fn snapshot(node: &Node) -> Vec<(Option<String>, Record)> {
    node.ctx.registry.snapshot()
}

/// A valid caller allocator.
///
/// # Safety
/// `p` is null or a live allocator.
unsafe fn allocator<'a>(
    p: *mut ffi::rcutils_allocator_t,
) -> RmwResult<&'a mut ffi::rcutils_allocator_t> {
    // SAFETY: forwarded caller guarantee.
    let a = unsafe { handle::out(p, "allocator") }?;
    if !crate::boundary::clib::allocator_is_valid(a) {
        return Err(RmwError::invalid("allocator is invalid"));
    }
    Ok(a)
}

/// # Safety
/// `node`, `names`, `namespaces` and `enclaves` are null or live.
unsafe fn node_names(
    node: *const ffi::rmw_node_t,
    names: *mut ffi::rcutils_string_array_t,
    namespaces: *mut ffi::rcutils_string_array_t,
    enclaves: Option<*mut ffi::rcutils_string_array_t>,
) -> RmwResult<()> {
    // SAFETY: forwarded caller guarantee on every pointer.
    let node = unsafe { handle::get::<Node>(node, "node") }?;
    // SAFETY: as above.
    let names = unsafe { handle::out(names, "node_names") }?;
    // SAFETY: as above.
    let namespaces = unsafe { handle::out(namespaces, "node_namespaces") }?;
    check_zero_string_array(names, "node_names")?;
    check_zero_string_array(namespaces, "node_namespaces")?;
    let enclaves = match enclaves {
        None => None,
        Some(p) => {
            // SAFETY: as above.
            let e = unsafe { handle::out(p, "enclaves") }?;
            check_zero_string_array(e, "enclaves")?;
            Some(e)
        }
    };
    let list = q::node_names(&snapshot(node));
    let alloc = graph_out::default_allocator();
    let n: Vec<String> = list.iter().map(|n| n.name.clone()).collect();
    let ns: Vec<String> = list.iter().map(|n| n.namespace.clone()).collect();
    fill_string_array(names, &n, &alloc)?;
    if let Err(e) = fill_string_array(namespaces, &ns, &alloc) {
        // SAFETY: `names` was filled just above with the default allocator.
        unsafe { ffi::rcutils_string_array_fini(names) };
        return Err(e);
    }
    if let Some(enclaves) = enclaves {
        let en: Vec<String> = list.iter().map(|n| n.enclave.clone()).collect();
        if let Err(e) = fill_string_array(enclaves, &en, &alloc) {
            // SAFETY: both were filled just above with the default allocator.
            unsafe {
                ffi::rcutils_string_array_fini(names);
                ffi::rcutils_string_array_fini(namespaces);
            }
            return Err(e);
        }
    }
    Ok(())
}

/// `rmw_get_node_names`: every node of this context and of every peer.
///
/// # Safety
/// Pointers are null or live; the arrays are zero-initialized.
#[no_mangle]
pub unsafe extern "C" fn rmw_get_node_names(
    node: *const ffi::rmw_node_t,
    node_names: *mut ffi::rcutils_string_array_t,
    node_namespaces: *mut ffi::rcutils_string_array_t,
) -> rmw_ret_t {
    // SAFETY: rmw's contract.
    ffi_ret("rmw_get_node_names", || unsafe {
        self::node_names(node, node_names, node_namespaces, None)
    })
}

/// `rmw_get_node_names_with_enclaves`.
///
/// # Safety
/// Pointers are null or live; the arrays are zero-initialized.
#[no_mangle]
pub unsafe extern "C" fn rmw_get_node_names_with_enclaves(
    node: *const ffi::rmw_node_t,
    node_names: *mut ffi::rcutils_string_array_t,
    node_namespaces: *mut ffi::rcutils_string_array_t,
    enclaves: *mut ffi::rcutils_string_array_t,
) -> rmw_ret_t {
    ffi_ret("rmw_get_node_names_with_enclaves", || {
        // SAFETY: rmw's contract.
        unsafe { self::node_names(node, node_names, node_namespaces, Some(enclaves)) }
    })
}

/// Shared body of the names-and-types queries: check the arguments, run `query`, fill `out`.
///
/// # Safety
/// Pointers are null or live.
unsafe fn names_and_types(
    node: *const ffi::rmw_node_t,
    alloc: *mut ffi::rcutils_allocator_t,
    out: *mut ffi::rmw_names_and_types_t,
    query: impl FnOnce(&Snapshot) -> RmwResult<Vec<(String, Vec<String>)>>,
) -> RmwResult<()> {
    // SAFETY: forwarded caller guarantee on every pointer.
    let node = unsafe { handle::get::<Node>(node, "node") }?;
    // SAFETY: as above.
    let alloc = unsafe { allocator(alloc) }?;
    // SAFETY: as above.
    let out = unsafe { handle::out(out, "names_and_types") }?;
    // Checked before the query so that a bad output is reported as such, not as a missing node.
    // SAFETY: `out` is live; the check only reads it.
    if unsafe { ffi::rmw_names_and_types_check_zero(out) } != ffi::RMW_RET_OK {
        crate::boundary::clib::reset_error();
        return Err(RmwError::invalid("names_and_types is not zero-initialized"));
    }
    let entries = query(&snapshot(node))?;
    graph_out::fill_names_and_types(out, &entries, alloc)
}

/// `rmw_get_topic_names_and_types`: every topic with a publisher or subscription, here or on a
/// peer; `no_demangle` lists the vertex paths instead of ROS names.
///
/// # Safety
/// Pointers are null or live; the output is zero-initialized.
#[no_mangle]
pub unsafe extern "C" fn rmw_get_topic_names_and_types(
    node: *const ffi::rmw_node_t,
    allocator: *mut ffi::rcutils_allocator_t,
    no_demangle: bool,
    topic_names_and_types: *mut ffi::rmw_names_and_types_t,
) -> rmw_ret_t {
    ffi_ret("rmw_get_topic_names_and_types", || {
        // SAFETY: rmw's contract.
        unsafe {
            names_and_types(node, allocator, topic_names_and_types, |s| {
                Ok(q::topic_names_and_types(s, no_demangle))
            })
        }
    })
}

/// `rmw_get_service_names_and_types`.
///
/// # Safety
/// Pointers are null or live; the output is zero-initialized.
#[no_mangle]
pub unsafe extern "C" fn rmw_get_service_names_and_types(
    node: *const ffi::rmw_node_t,
    allocator: *mut ffi::rcutils_allocator_t,
    service_names_and_types: *mut ffi::rmw_names_and_types_t,
) -> rmw_ret_t {
    ffi_ret("rmw_get_service_names_and_types", || {
        // SAFETY: rmw's contract.
        unsafe {
            names_and_types(node, allocator, service_names_and_types, |s| {
                Ok(q::service_names_and_types(s))
            })
        }
    })
}

/// # Safety
/// Pointers are null or live.
#[allow(clippy::too_many_arguments)]
unsafe fn by_node(
    node: *const ffi::rmw_node_t,
    alloc: *mut ffi::rcutils_allocator_t,
    node_name: *const c_char,
    node_namespace: *const c_char,
    kind: EntityKind,
    no_demangle: bool,
    out: *mut ffi::rmw_names_and_types_t,
) -> RmwResult<()> {
    // SAFETY: forwarded caller guarantee.
    let name = unsafe { cstr::arg(node_name, "node_name") }?;
    // SAFETY: as above.
    let namespace = unsafe { cstr::arg(node_namespace, "node_namespace") }?;
    // SAFETY: as above.
    unsafe {
        names_and_types(node, alloc, out, |s| {
            q::names_and_types_by_node(s, kind, name, namespace, no_demangle)
        })
    }
}

/// `rmw_get_publisher_names_and_types_by_node`.
///
/// # Safety
/// Pointers are null or live; the output is zero-initialized.
#[no_mangle]
pub unsafe extern "C" fn rmw_get_publisher_names_and_types_by_node(
    node: *const ffi::rmw_node_t,
    allocator: *mut ffi::rcutils_allocator_t,
    node_name: *const c_char,
    node_namespace: *const c_char,
    no_demangle: bool,
    topic_names_and_types: *mut ffi::rmw_names_and_types_t,
) -> rmw_ret_t {
    ffi_ret("rmw_get_publisher_names_and_types_by_node", || {
        // SAFETY: rmw's contract.
        unsafe {
            by_node(
                node,
                allocator,
                node_name,
                node_namespace,
                EntityKind::Publisher,
                no_demangle,
                topic_names_and_types,
            )
        }
    })
}

/// `rmw_get_subscriber_names_and_types_by_node`.
///
/// # Safety
/// Pointers are null or live; the output is zero-initialized.
#[no_mangle]
pub unsafe extern "C" fn rmw_get_subscriber_names_and_types_by_node(
    node: *const ffi::rmw_node_t,
    allocator: *mut ffi::rcutils_allocator_t,
    node_name: *const c_char,
    node_namespace: *const c_char,
    no_demangle: bool,
    topic_names_and_types: *mut ffi::rmw_names_and_types_t,
) -> rmw_ret_t {
    ffi_ret("rmw_get_subscriber_names_and_types_by_node", || {
        // SAFETY: rmw's contract.
        unsafe {
            by_node(
                node,
                allocator,
                node_name,
                node_namespace,
                EntityKind::Subscription,
                no_demangle,
                topic_names_and_types,
            )
        }
    })
}

/// `rmw_get_service_names_and_types_by_node`: the node's servers.
///
/// # Safety
/// Pointers are null or live; the output is zero-initialized.
#[no_mangle]
pub unsafe extern "C" fn rmw_get_service_names_and_types_by_node(
    node: *const ffi::rmw_node_t,
    allocator: *mut ffi::rcutils_allocator_t,
    node_name: *const c_char,
    node_namespace: *const c_char,
    service_names_and_types: *mut ffi::rmw_names_and_types_t,
) -> rmw_ret_t {
    ffi_ret("rmw_get_service_names_and_types_by_node", || {
        // SAFETY: rmw's contract.
        unsafe {
            by_node(
                node,
                allocator,
                node_name,
                node_namespace,
                EntityKind::Service,
                false,
                service_names_and_types,
            )
        }
    })
}

/// `rmw_get_client_names_and_types_by_node`: the node's clients.
///
/// # Safety
/// Pointers are null or live; the output is zero-initialized.
#[no_mangle]
pub unsafe extern "C" fn rmw_get_client_names_and_types_by_node(
    node: *const ffi::rmw_node_t,
    allocator: *mut ffi::rcutils_allocator_t,
    node_name: *const c_char,
    node_namespace: *const c_char,
    service_names_and_types: *mut ffi::rmw_names_and_types_t,
) -> rmw_ret_t {
    ffi_ret("rmw_get_client_names_and_types_by_node", || {
        // SAFETY: rmw's contract.
        unsafe {
            by_node(
                node,
                allocator,
                node_name,
                node_namespace,
                EntityKind::Client,
                false,
                service_names_and_types,
            )
        }
    })
}

/// Shared body of the count queries; the name must be a valid full topic (or service) name.
///
/// # Safety
/// Pointers are null or live.
unsafe fn count(
    node: *const ffi::rmw_node_t,
    name: *const c_char,
    arg: &'static str,
    kind: EntityKind,
    out: *mut usize,
) -> RmwResult<()> {
    // SAFETY: forwarded caller guarantee on every pointer.
    let node = unsafe { handle::get::<Node>(node, "node") }?;
    // SAFETY: as above.
    let name = unsafe { cstr::arg(name, arg) }?;
    // SAFETY: as above.
    let out = unsafe { handle::out(out, "count") }?;
    crate::boundary::clib::validate_full_topic_name(name)?;
    *out = q::count(&snapshot(node), kind, name);
    Ok(())
}

/// `rmw_count_publishers`.
///
/// # Safety
/// Pointers are null or live.
#[no_mangle]
pub unsafe extern "C" fn rmw_count_publishers(
    node: *const ffi::rmw_node_t,
    topic_name: *const c_char,
    count: *mut usize,
) -> rmw_ret_t {
    // SAFETY: rmw's contract.
    ffi_ret("rmw_count_publishers", || unsafe {
        self::count(node, topic_name, "topic_name", EntityKind::Publisher, count)
    })
}

/// `rmw_count_subscribers`.
///
/// # Safety
/// Pointers are null or live.
#[no_mangle]
pub unsafe extern "C" fn rmw_count_subscribers(
    node: *const ffi::rmw_node_t,
    topic_name: *const c_char,
    count: *mut usize,
) -> rmw_ret_t {
    // SAFETY: rmw's contract.
    ffi_ret("rmw_count_subscribers", || unsafe {
        self::count(
            node,
            topic_name,
            "topic_name",
            EntityKind::Subscription,
            count,
        )
    })
}

/// `rmw_count_clients`.
///
/// # Safety
/// Pointers are null or live.
#[no_mangle]
pub unsafe extern "C" fn rmw_count_clients(
    node: *const ffi::rmw_node_t,
    service_name: *const c_char,
    count: *mut usize,
) -> rmw_ret_t {
    // SAFETY: rmw's contract.
    ffi_ret("rmw_count_clients", || unsafe {
        self::count(
            node,
            service_name,
            "service_name",
            EntityKind::Client,
            count,
        )
    })
}

/// `rmw_count_services`.
///
/// # Safety
/// Pointers are null or live.
#[no_mangle]
pub unsafe extern "C" fn rmw_count_services(
    node: *const ffi::rmw_node_t,
    service_name: *const c_char,
    count: *mut usize,
) -> rmw_ret_t {
    // SAFETY: rmw's contract.
    ffi_ret("rmw_count_services", || unsafe {
        self::count(
            node,
            service_name,
            "service_name",
            EntityKind::Service,
            count,
        )
    })
}

/// Shared body of the endpoint-info queries.
///
/// # Safety
/// Pointers are null or live.
unsafe fn infos(
    node: *const ffi::rmw_node_t,
    alloc: *mut ffi::rcutils_allocator_t,
    topic: *const c_char,
    no_mangle: bool,
    kind: EntityKind,
    out: *mut ffi::rmw_topic_endpoint_info_array_t,
) -> RmwResult<()> {
    // SAFETY: forwarded caller guarantee on every pointer.
    let node = unsafe { handle::get::<Node>(node, "node") }?;
    // SAFETY: as above.
    let alloc = unsafe { allocator(alloc) }?;
    // SAFETY: as above.
    let topic = unsafe { cstr::arg(topic, "topic_name") }?;
    // SAFETY: as above.
    let out = unsafe { handle::out(out, "endpoint info array") }?;
    if !no_mangle {
        crate::boundary::clib::validate_full_topic_name(topic)?;
    }
    let list = q::endpoint_infos(&snapshot(node), kind, topic, no_mangle);
    graph_out::fill_endpoint_infos(out, &list, alloc)
}

/// `rmw_get_publishers_info_by_topic`: node, type, type hash, gid and QoS of each publisher.
///
/// # Safety
/// Pointers are null or live; the output is zero-initialized.
#[no_mangle]
pub unsafe extern "C" fn rmw_get_publishers_info_by_topic(
    node: *const ffi::rmw_node_t,
    allocator: *mut ffi::rcutils_allocator_t,
    topic_name: *const c_char,
    no_mangle: bool,
    publishers_info: *mut ffi::rmw_topic_endpoint_info_array_t,
) -> rmw_ret_t {
    // SAFETY: rmw's contract.
    ffi_ret("rmw_get_publishers_info_by_topic", || unsafe {
        infos(
            node,
            allocator,
            topic_name,
            no_mangle,
            EntityKind::Publisher,
            publishers_info,
        )
    })
}

/// `rmw_get_subscriptions_info_by_topic`.
///
/// # Safety
/// Pointers are null or live; the output is zero-initialized.
#[no_mangle]
pub unsafe extern "C" fn rmw_get_subscriptions_info_by_topic(
    node: *const ffi::rmw_node_t,
    allocator: *mut ffi::rcutils_allocator_t,
    topic_name: *const c_char,
    no_mangle: bool,
    subscriptions_info: *mut ffi::rmw_topic_endpoint_info_array_t,
) -> rmw_ret_t {
    // SAFETY: rmw's contract.
    ffi_ret("rmw_get_subscriptions_info_by_topic", || unsafe {
        infos(
            node,
            allocator,
            topic_name,
            no_mangle,
            EntityKind::Subscription,
            subscriptions_info,
        )
    })
}
