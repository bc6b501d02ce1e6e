//! Publishers: raw CDR onto a ROS topic.

use std::ffi::c_char;
use std::sync::Arc;
use std::time::Instant;

use crate::call::call;
use crate::error::{tracer_result_t, CapiError};
use crate::handle::{out, Table};
use crate::publisher::Publisher;
use crate::qos::{tracer_qos_t, Qos};

use super::context::{tracer_context_t, CONTEXTS};
use super::{arg_str, timeout};

/// A publisher of one ROS topic. Opaque.
#[allow(non_camel_case_types)]
pub struct tracer_publisher_t {
    _private: [u8; 0],
}

pub static PUBLISHERS: Table<Publisher> = Table::new("publisher", 2);

/// The QoS a caller passed (NULL: the default profile).
///
/// # Safety
/// `qos` is NULL or points at a readable `tracer_qos_t`.
pub unsafe fn arg_qos(qos: *const tracer_qos_t) -> crate::error::CapiResult<Qos> {
    if qos.is_null() {
        return Qos::resolve(&tracer_qos_t::default());
    }
    // SAFETY: not null; readable for the call (the caller's contract). Every bit pattern is
    // a valid `tracer_qos_t` (integers only).
    Qos::resolve(unsafe { &*qos })
}

/// Create a publisher of `topic` (a fully qualified ROS name, e.g. `/chatter`) carrying
/// `type_name` (`std_msgs/msg/String`) whose RIHS01 hash is `type_hash` (`RIHS01_` and 64 hex
/// digits, or "" when unknown), with `qos` (NULL: reliable, volatile, keep last 10). The
/// publisher shows in `ros2 topic info -v` as an endpoint of the context's node with that type
/// and QoS. On success `*out_publisher` is a new handle the caller owns
/// (`tracer_publisher_destroy`).
///
/// Thread-safe.
///
/// # Safety
/// The strings are NUL-terminated or NULL; `qos` is NULL or readable; `out_publisher` is NULL
/// or writable.
#[no_mangle]
pub unsafe extern "C" fn tracer_publisher_create(
    context: *mut tracer_context_t,
    topic: *const c_char,
    type_name: *const c_char,
    type_hash: *const c_char,
    qos: *const tracer_qos_t,
    out_publisher: *mut *mut tracer_publisher_t,
) -> tracer_result_t {
    call("tracer_publisher_create", || {
        let o = out(out_publisher, "out_publisher")?;
        let ctx = CONTEXTS.get(context)?;
        // SAFETY: C strings valid for the call (this function's contract).
        let topic = unsafe { arg_str(topic, "topic") }?;
        // SAFETY: as above.
        let type_name = unsafe { arg_str(type_name, "type_name") }?;
        // SAFETY: as above.
        let type_hash = unsafe { arg_str(type_hash, "type_hash") }?;
        // SAFETY: NULL or readable (this function's contract).
        let qos = unsafe { arg_qos(qos) }?;
        let p = Publisher::new(ctx, topic, type_name, type_hash, qos)?;
        o.set(PUBLISHERS.insert(Arc::new(p)));
        Ok(())
    })
}

/// Give the topic's type its `ros2msg` definition (the `.msg` text, with the definitions of
/// the types it uses after it, as `ros2 bag` stores them). It goes into the topic's `:schema`:
/// recorders (`RMW_TRACER_RECORD`, `tracer record`) and tools (`tracer echo`) decode the
/// messages with it. Call it before the first publish for this process's own recording to have
/// it. Optional: without it the messages are carried and recorded as bytes.
///
/// Thread-safe.
///
/// # Safety
/// `definition` is NUL-terminated or NULL.
#[no_mangle]
pub unsafe extern "C" fn tracer_publisher_set_definition(
    publisher: *const tracer_publisher_t,
    definition: *const c_char,
) -> tracer_result_t {
    call("tracer_publisher_set_definition", || {
        // SAFETY: a C string valid for the call (this function's contract).
        let definition = unsafe { arg_str(definition, "definition") }?;
        PUBLISHERS.get(publisher)?.set_definition(definition)
    })
}

/// Destroy a publisher: its record is retracted (ROS tools no longer show it) once the loans
/// still out of it are published or returned (a loan keeps its publisher alive). The handle is
/// dead after the call, whatever its result.
///
/// Thread-safe. `publisher` may be any value: NULL and dead handles are refused.
#[no_mangle]
pub extern "C" fn tracer_publisher_destroy(publisher: *mut tracer_publisher_t) -> tracer_result_t {
    call("tracer_publisher_destroy", || {
        PUBLISHERS.remove(publisher).map(drop)
    })
}

/// Publish one serialized message: `len` bytes of CDR at `cdr`, starting with the 4-byte
/// encapsulation header (`00 01 00 00`). The bytes are copied once, into the library's buffer
/// pool (a loan, `tracer_loan_borrow`, avoids even that).
///
/// Thread-safe (concurrent publishes on one publisher are written in sequence order).
///
/// # Safety
/// `cdr` is NULL or points at `len` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn tracer_publish(
    publisher: *mut tracer_publisher_t,
    cdr: *const u8,
    len: usize,
) -> tracer_result_t {
    call("tracer_publish", || {
        let p = PUBLISHERS.get(publisher)?;
        if cdr.is_null() {
            return Err(CapiError::Null("cdr"));
        }
        // SAFETY: not null; `len` readable bytes for the call (this function's contract).
        let bytes = unsafe { std::slice::from_raw_parts(cdr, len) };
        p.publish(bytes)
    })
}

/// `*out_count`: the subscriptions (edges) taking from this publisher's topic vertex now.
///
/// Thread-safe.
///
/// # Safety
/// `out_count` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tracer_publisher_subscription_count(
    publisher: *const tracer_publisher_t,
    out_count: *mut usize,
) -> tracer_result_t {
    call("tracer_publisher_subscription_count", || {
        let o = out(out_count, "out_count")?;
        o.set(PUBLISHERS.get(publisher)?.subscription_count());
        Ok(())
    })
}

/// Wait until at least `count` subscriptions take from this publisher's topic, at most
/// `timeout_ns` (negative: forever): `TRACER_ERR_TIMEOUT` when they did not come.
///
/// Thread-safe.
#[no_mangle]
pub extern "C" fn tracer_publisher_wait_for_subscriptions(
    publisher: *const tracer_publisher_t,
    count: usize,
    timeout_ns: i64,
) -> tracer_result_t {
    call("tracer_publisher_wait_for_subscriptions", || {
        let p = PUBLISHERS.get(publisher)?;
        let deadline = timeout(timeout_ns).map(|t| Instant::now() + t);
        p.wait_for_subscriptions(count, deadline)
    })
}
