//! Services on raw CDR: a server answering rclpy clients, a client calling rclpy servers.

use std::ffi::c_char;
use std::sync::Arc;

use libtracer_core::Sample;
use parking_lot::Mutex;
use tracer_recording::Gid;

use crate::call::call;
use crate::error::{tracer_result_t, CapiError, CapiResult};
use crate::handle::{out, Table};
use crate::qos::tracer_qos_t;
use crate::service::{Client, Server, ServiceSpec};

use super::context::{tracer_context_t, CONTEXTS};
use super::publisher::arg_qos;
use super::{arg_str, timeout};

/// A service server. Opaque.
#[allow(non_camel_case_types)]
pub struct tracer_server_t {
    _private: [u8; 0],
}

/// A service client. Opaque.
#[allow(non_camel_case_types)]
pub struct tracer_client_t {
    _private: [u8; 0],
}

/// Which request a response answers: the client's gid and its sequence number of the request.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Clone, Copy)]
pub struct tracer_request_id_t {
    pub client_gid: [u8; 16],
    pub sequence: u64,
}

/// An endpoint and the sample a too-small buffer left for the next take.
pub struct Held<T> {
    pub inner: T,
    held: Mutex<Option<Sample>>,
}

impl<T> Held<T> {
    fn new(inner: T) -> Arc<Held<T>> {
        Arc::new(Held {
            inner,
            held: Mutex::new(None),
        })
    }

    /// A request or response kept back for a larger buffer is waiting (it is taken first).
    pub fn has_held(&self) -> bool {
        self.held.lock().is_some()
    }
}

pub static SERVERS: Table<Held<Server>> = Table::new("server", 7);
pub static CLIENTS: Table<Held<Client>> = Table::new("client", 8);

/// Take into the caller's buffer; a too-small buffer keeps the sample in `held`.
///
/// # Safety
/// `buffer` is not null and has `capacity` writable bytes.
unsafe fn take_into(
    held: &Mutex<Option<Sample>>,
    next: impl FnOnce() -> Option<Sample>,
    buffer: *mut u8,
    capacity: usize,
    len: crate::handle::OutPtr<usize>,
) -> CapiResult<Sample> {
    let s = match held.lock().take() {
        Some(s) => s,
        None => next().ok_or(CapiError::Empty)?,
    };
    let bytes: &[u8] = s.payload.as_ref();
    let n = bytes.len();
    len.set(n);
    if n > capacity {
        *held.lock() = Some(s);
        return Err(CapiError::BufferTooSmall {
            cap: capacity,
            len: n,
        });
    }
    // SAFETY: `buffer` has `capacity` >= n writable bytes (this function's contract); the
    // sample's bytes never overlap the caller's buffer.
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), buffer, n) };
    Ok(s)
}

/// The arguments a server and a client are made from.
///
/// # Safety
/// Strings NUL-terminated or NULL and valid for `'a`; `qos` NULL or readable.
unsafe fn spec_args<'a>(
    service: *const c_char,
    type_name: *const c_char,
    type_hash: *const c_char,
    qos: *const tracer_qos_t,
) -> CapiResult<ServiceSpec<'a>> {
    // SAFETY: the caller's contract.
    unsafe {
        Ok(ServiceSpec {
            name: arg_str(service, "service")?,
            type_name: arg_str(type_name, "type_name")?,
            type_hash: arg_str(type_hash, "type_hash")?,
            qos: arg_qos(qos)?,
        })
    }
}

/// Create a server of `service` (`/add_two_ints`) of `type_name` (`pkg/srv/Type`) with RIHS01
/// `type_hash` (or ""), `qos` NULL for the default: every client of the name and type, rclpy's
/// included, sends it its requests. The caller owns the new handle.
///
/// Thread-safe.
///
/// # Safety
/// Strings NUL-terminated or NULL; `qos` NULL or readable; `out_server` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tracer_server_create(
    context: *mut tracer_context_t,
    service: *const c_char,
    type_name: *const c_char,
    type_hash: *const c_char,
    qos: *const tracer_qos_t,
    out_server: *mut *mut tracer_server_t,
) -> tracer_result_t {
    call("tracer_server_create", || {
        let o = out(out_server, "out_server")?;
        let ctx = CONTEXTS.get(context)?;
        // SAFETY: as this function's contract.
        let spec = unsafe { spec_args(service, type_name, type_hash, qos) }?;
        o.set(SERVERS.insert(Held::new(Server::new(ctx, spec)?)));
        Ok(())
    })
}

/// Destroy a server. The handle is dead after the call, whatever its result.
///
/// Thread-safe. `server` may be any value: NULL and dead handles are refused.
#[no_mangle]
pub extern "C" fn tracer_server_destroy(server: *mut tracer_server_t) -> tracer_result_t {
    call("tracer_server_destroy", || SERVERS.remove(server).map(drop))
}

/// Wait until a request is there, at most `timeout_ns` (negative: forever).
///
/// Thread-safe.
#[no_mangle]
pub extern "C" fn tracer_server_wait(
    server: *const tracer_server_t,
    timeout_ns: i64,
) -> tracer_result_t {
    call("tracer_server_wait", || {
        let s = SERVERS.get(server)?;
        if s.held.lock().is_some() {
            return Ok(());
        }
        s.inner.wait(timeout(timeout_ns))
    })
}

/// Take the oldest request: its CDR into `buffer`, its length into `*out_len`, which request
/// it is into `*out_id` (pass it to `tracer_server_send_response`). `TRACER_ERR_EMPTY` when
/// there is none; `TRACER_ERR_BUFFER_TOO_SMALL` keeps it for the next take.
///
/// Thread-safe.
///
/// # Safety
/// `buffer` NULL or `capacity` writable bytes; `out_len`, `out_id` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tracer_server_take_request(
    server: *mut tracer_server_t,
    buffer: *mut u8,
    capacity: usize,
    out_len: *mut usize,
    out_id: *mut tracer_request_id_t,
) -> tracer_result_t {
    call("tracer_server_take_request", || {
        let ol = out(out_len, "out_len")?;
        let oi = out(out_id, "out_id")?;
        let s = SERVERS.get(server)?;
        if buffer.is_null() {
            return Err(CapiError::Null("buffer"));
        }
        // SAFETY: `buffer` not null, `capacity` writable bytes (this function's contract).
        let x = unsafe { take_into(&s.held, || s.inner.take(), buffer, capacity, ol) }?;
        oi.set(tracer_request_id_t {
            client_gid: x.meta.writer,
            sequence: x.meta.sequence,
        });
        Ok(())
    })
}

/// Send `len` bytes of CDR as the response to the request `id` (from
/// `tracer_server_take_request`). A client that has gone since gets nothing, and the call
/// succeeds.
///
/// Thread-safe.
///
/// # Safety
/// `id` NULL or readable; `cdr` NULL or `len` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn tracer_server_send_response(
    server: *mut tracer_server_t,
    id: *const tracer_request_id_t,
    cdr: *const u8,
    len: usize,
) -> tracer_result_t {
    call("tracer_server_send_response", || {
        let s = SERVERS.get(server)?;
        if id.is_null() {
            return Err(CapiError::Null("id"));
        }
        if cdr.is_null() {
            return Err(CapiError::Null("cdr"));
        }
        // SAFETY: not null, readable for the call (this function's contract); plain data.
        let id = unsafe { *id };
        // SAFETY: not null, `len` readable bytes for the call (this function's contract).
        let bytes = unsafe { std::slice::from_raw_parts(cdr, len) };
        s.inner
            .send_response(Gid(id.client_gid), id.sequence, bytes)
    })
}

/// Create a client of `service` of `type_name` with `type_hash` (or ""), `qos` NULL for the
/// default. The caller owns the new handle.
///
/// Thread-safe.
///
/// # Safety
/// As `tracer_server_create`.
#[no_mangle]
pub unsafe extern "C" fn tracer_client_create(
    context: *mut tracer_context_t,
    service: *const c_char,
    type_name: *const c_char,
    type_hash: *const c_char,
    qos: *const tracer_qos_t,
    out_client: *mut *mut tracer_client_t,
) -> tracer_result_t {
    call("tracer_client_create", || {
        let o = out(out_client, "out_client")?;
        let ctx = CONTEXTS.get(context)?;
        // SAFETY: as this function's contract.
        let spec = unsafe { spec_args(service, type_name, type_hash, qos) }?;
        o.set(CLIENTS.insert(Held::new(Client::new(ctx, spec)?)));
        Ok(())
    })
}

/// Destroy a client. The handle is dead after the call, whatever its result.
///
/// Thread-safe. `client` may be any value: NULL and dead handles are refused.
#[no_mangle]
pub extern "C" fn tracer_client_destroy(client: *mut tracer_client_t) -> tracer_result_t {
    call("tracer_client_destroy", || CLIENTS.remove(client).map(drop))
}

/// `*out_count`: the servers of the client's name and type known now (0: not available).
///
/// Thread-safe.
///
/// # Safety
/// `out_count` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tracer_client_server_count(
    client: *const tracer_client_t,
    out_count: *mut usize,
) -> tracer_result_t {
    call("tracer_client_server_count", || {
        let o = out(out_count, "out_count")?;
        o.set(CLIENTS.get(client)?.inner.server_count());
        Ok(())
    })
}

/// Send `len` bytes of CDR as a request to every server of the name and type known now;
/// `*out_sequence` is its number (the response carries it). With no server known the request
/// goes nowhere, and the call succeeds (check `tracer_client_server_count` first).
///
/// Thread-safe.
///
/// # Safety
/// `cdr` NULL or `len` readable bytes; `out_sequence` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tracer_client_send_request(
    client: *mut tracer_client_t,
    cdr: *const u8,
    len: usize,
    out_sequence: *mut u64,
) -> tracer_result_t {
    call("tracer_client_send_request", || {
        let o = out(out_sequence, "out_sequence")?;
        let c = CLIENTS.get(client)?;
        if cdr.is_null() {
            return Err(CapiError::Null("cdr"));
        }
        // SAFETY: not null, `len` readable bytes for the call (this function's contract).
        let bytes = unsafe { std::slice::from_raw_parts(cdr, len) };
        o.set(c.inner.send(bytes)?);
        Ok(())
    })
}

/// Wait until a response is there, at most `timeout_ns` (negative: forever).
///
/// Thread-safe.
#[no_mangle]
pub extern "C" fn tracer_client_wait(
    client: *const tracer_client_t,
    timeout_ns: i64,
) -> tracer_result_t {
    call("tracer_client_wait", || {
        let c = CLIENTS.get(client)?;
        if c.held.lock().is_some() {
            return Ok(());
        }
        c.inner.wait(timeout(timeout_ns))
    })
}

/// Take the oldest response: its CDR into `buffer`, its length into `*out_len`, the sequence
/// number of the request it answers into `*out_sequence`. `TRACER_ERR_EMPTY` when there is
/// none; `TRACER_ERR_BUFFER_TOO_SMALL` keeps it for the next take.
///
/// Thread-safe.
///
/// # Safety
/// `buffer` NULL or `capacity` writable bytes; `out_len`, `out_sequence` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tracer_client_take_response(
    client: *mut tracer_client_t,
    buffer: *mut u8,
    capacity: usize,
    out_len: *mut usize,
    out_sequence: *mut u64,
) -> tracer_result_t {
    call("tracer_client_take_response", || {
        let ol = out(out_len, "out_len")?;
        let os = out(out_sequence, "out_sequence")?;
        let c = CLIENTS.get(client)?;
        if buffer.is_null() {
            return Err(CapiError::Null("buffer"));
        }
        // SAFETY: `buffer` not null, `capacity` writable bytes (this function's contract).
        let x = unsafe { take_into(&c.held, || c.inner.take(), buffer, capacity, ol) }?;
        os.set(x.meta.sequence);
        Ok(())
    })
}
