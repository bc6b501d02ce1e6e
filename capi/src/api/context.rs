//! Contexts, and the error conventions (`tracer_result_str`, `tracer_last_error`).

use std::ffi::c_char;
use std::sync::Arc;

use crate::call::call;
use crate::context::Context;
use crate::error::{self, tracer_result_t};
use crate::handle::{out, Table};

use super::arg_str;

/// A context: one libtracer graph on a ROS domain, joined as one ROS node. Opaque.
#[allow(non_camel_case_types)]
pub struct tracer_context_t {
    _private: [u8; 0],
}

pub static CONTEXTS: Table<Context> = Table::new("context", 1);

/// The static text of a result code (never NULL, never to be freed).
///
/// Thread-safe.
#[no_mangle]
pub extern "C" fn tracer_result_str(result: tracer_result_t) -> *const c_char {
    error::result_str(result).as_ptr()
}

/// The calling thread's last error string: which call failed, why, and where (never NULL; empty
/// when no call failed on this thread). Valid until the next failing call on the same thread;
/// owned by the library.
///
/// Thread-safe (each thread has its own).
#[no_mangle]
pub extern "C" fn tracer_last_error() -> *const c_char {
    error::last()
}

/// Create a context on `domain_id` (negative: `ROS_DOMAIN_ID`, else 0) and join it as the ROS
/// node `node_namespace`/`node_name` (shown by `ros2 node list`). Discovery follows the
/// environment as rmw_tracer does: `ROS_AUTOMATIC_DISCOVERY_RANGE` (OFF: this process only;
/// SUBNET: other hosts of the network too), `ROS_STATIC_PEERS` (other hosts, `;`-separated),
/// `RMW_TRACER_RENDEZVOUS_DIR`, `RMW_TRACER_PORT_BASE`, `RMW_TRACER_BIND`.
/// SROS2 as rcl reads it: `ROS_SECURITY_ENABLE=true`, `ROS_SECURITY_STRATEGY`,
/// `ROS_SECURITY_KEYSTORE`, the enclave `ROS_SECURITY_ENCLAVE_OVERRIDE` (else `/`); an enclave
/// that cannot be loaded under Enforce is `TRACER_ERR_INVALID_ARGUMENT` naming the file, and
/// every entity made later checks its permissions (`TRACER_ERR_PERMISSION_DENIED`). On success
/// `*out` is a new handle the caller owns (`tracer_context_destroy`).
///
/// Thread-safe.
///
/// # Safety
/// `node_name` and `node_namespace` are NUL-terminated strings or NULL; `out` is NULL or
/// points at writable storage for one pointer.
#[no_mangle]
pub unsafe extern "C" fn tracer_context_create(
    node_name: *const c_char,
    node_namespace: *const c_char,
    domain_id: i32,
    out_context: *mut *mut tracer_context_t,
) -> tracer_result_t {
    call("tracer_context_create", || {
        let o = out(out_context, "out_context")?;
        // SAFETY: C strings valid for the call (this function's contract).
        let name = unsafe { arg_str(node_name, "node_name") }?;
        // SAFETY: as above.
        let ns = unsafe { arg_str(node_namespace, "node_namespace") }?;
        let ctx = Context::new(name, ns, domain_id)?;
        o.set(CONTEXTS.insert(Arc::new(ctx)));
        Ok(())
    })
}

/// Destroy a context: it leaves the graph once the last publisher, subscription and snapshot
/// made in it is destroyed too (they keep it alive). The handle is dead after the call,
/// whatever its result.
///
/// Thread-safe; a call on this handle racing with its destruction either finishes with the
/// object alive or fails with `TRACER_ERR_INVALID_HANDLE`. `context` may be any value: NULL
/// and dead handles are refused, never dereferenced.
#[no_mangle]
pub extern "C" fn tracer_context_destroy(context: *mut tracer_context_t) -> tracer_result_t {
    call("tracer_context_destroy", || {
        CONTEXTS.remove(context).map(drop)
    })
}
