//! Subscriptions: a topic, or a whole namespace subtree; callbacks, wait and take (a copy, or a
//! read-only view of the sample where it lies).

use std::ffi::{c_char, c_void};
use std::sync::Arc;

use libtracer_core::{Landed, Sample};
use parking_lot::Mutex;

use crate::call::call;
use crate::error::{tracer_result_t, CapiError, CapiResult};
use crate::handle::{out, OutPtr, Table};
use crate::qos::tracer_qos_t;
use crate::subscription::Subscription;

use super::context::{tracer_context_t, CONTEXTS};
use super::publisher::arg_qos;
use super::{arg_str, timeout};

/// The longest topic name a `tracer_sample_info_t` holds, its NUL included (ROS names are
/// shorter; a longer path is cut).
pub const TRACER_TOPIC_MAX: usize = 256;

/// A subscription (to a topic, or to a namespace subtree). Opaque.
#[allow(non_camel_case_types)]
pub struct tracer_subscription_t {
    _private: [u8; 0],
}

/// A taken sample lent to the caller where it lies (a view). Opaque.
#[allow(non_camel_case_types)]
pub struct tracer_view_t {
    _private: [u8; 0],
}

/// What came with a sample.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Clone, Copy)]
pub struct tracer_sample_info_t {
    /// When the publisher wrote it (ns since the Unix epoch).
    pub source_timestamp_ns: i64,
    /// When it landed in this process (ns since the Unix epoch).
    pub received_timestamp_ns: i64,
    /// The publisher's sequence number of it (from 1).
    pub sequence: u64,
    /// The publisher's gid (what `ros2 topic info -v` shows).
    pub publisher_gid: [u8; 16],
    /// The topic it was published on, NUL-terminated: the subscription's own, or for a
    /// namespace subscription the topic below the namespace it came from.
    pub topic: [c_char; TRACER_TOPIC_MAX],
}

/// Called once per sample that lands in a subscription, on the thread that delivered it (a
/// link's or a local publisher's): it must not block, and should only signal the program's
/// own thread, or take.
#[allow(non_camel_case_types)]
pub type tracer_callback_t =
    Option<unsafe extern "C" fn(user_data: *mut c_void, subscription: *mut tracer_subscription_t)>;

/// A subscription and the sample a too-small buffer left for the next take.
pub struct Sub {
    pub sub: Subscription,
    held: Mutex<Option<Sample>>,
}

impl Sub {
    /// A sample kept back for a larger buffer is waiting (it is taken first).
    pub fn has_held(&self) -> bool {
        self.held.lock().is_some()
    }
}

pub static SUBSCRIPTIONS: Table<Sub> = Table::new("subscription", 3);

/// A view: the sample it lends, kept alive until returned.
pub struct View {
    _sample: Sample,
}

pub static VIEWS: Table<View> = Table::new("view", 5);

fn publish(o: OutPtr<*mut tracer_subscription_t>, sub: Subscription) {
    o.set(SUBSCRIPTIONS.insert(Arc::new(Sub {
        sub,
        held: Mutex::new(None),
    })));
}

/// Create a subscription to `topic` of `type_name` with `qos` (NULL: reliable, volatile,
/// keep last 10). It takes from every publisher of the topic with that type and a matching
/// QoS, in this process, in rmw_tracer processes and in other native ones; it shows in
/// `ros2 topic info -v`. On success `*out_subscription` is a new handle the caller owns.
///
/// Thread-safe.
///
/// # Safety
/// Strings NUL-terminated or NULL; `qos` NULL or readable; `out_subscription` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tracer_subscription_create(
    context: *mut tracer_context_t,
    topic: *const c_char,
    type_name: *const c_char,
    qos: *const tracer_qos_t,
    out_subscription: *mut *mut tracer_subscription_t,
) -> tracer_result_t {
    call("tracer_subscription_create", || {
        let o = out(out_subscription, "out_subscription")?;
        let ctx = CONTEXTS.get(context)?;
        // SAFETY: C strings valid for the call (this function's contract).
        let topic = unsafe { arg_str(topic, "topic") }?;
        // SAFETY: as above.
        let type_name = unsafe { arg_str(type_name, "type_name") }?;
        // SAFETY: NULL or readable (this function's contract).
        let qos = unsafe { arg_qos(qos) }?;
        publish(o, Subscription::topic(ctx, topic, type_name, qos)?);
        Ok(())
    })
}

/// Create a subscription to every topic below `namespace` (`/robot` takes `/robot/a` and
/// `/robot/b/c`; `/` takes everything), of any type: one subtree edge per publishing
/// process, what no rmw API can say. Each sample's info names its topic. ROS tools do not show
/// it (it is no ROS subscription). Under SROS2 it is `TRACER_ERR_UNSUPPORTED` (permissions
/// name topics; a subtree takes any, those to come too). On success `*out_subscription` is a
/// new handle.
///
/// Thread-safe.
///
/// # Safety
/// As `tracer_subscription_create`.
#[no_mangle]
pub unsafe extern "C" fn tracer_subscription_create_namespace(
    context: *mut tracer_context_t,
    namespace_: *const c_char,
    qos: *const tracer_qos_t,
    out_subscription: *mut *mut tracer_subscription_t,
) -> tracer_result_t {
    call("tracer_subscription_create_namespace", || {
        let o = out(out_subscription, "out_subscription")?;
        let ctx = CONTEXTS.get(context)?;
        // SAFETY: C string valid for the call (this function's contract).
        let ns = unsafe { arg_str(namespace_, "namespace") }?;
        // SAFETY: NULL or readable (this function's contract).
        let qos = unsafe { arg_qos(qos) }?;
        publish(o, Subscription::namespace(ctx, ns, qos)?);
        Ok(())
    })
}

/// Destroy a subscription (its callback is not called any more once this returns). Views
/// still out stay valid until returned. The handle is dead after the call, whatever its
/// result.
///
/// Thread-safe. `subscription` may be any value: NULL and dead handles are refused.
#[no_mangle]
pub extern "C" fn tracer_subscription_destroy(
    subscription: *mut tracer_subscription_t,
) -> tracer_result_t {
    call("tracer_subscription_destroy", || {
        SUBSCRIPTIONS.remove(subscription).map(drop)
    })
}

/// The caller's callback and its data, called from delivering threads.
struct Callback {
    f: unsafe extern "C" fn(*mut c_void, *mut tracer_subscription_t),
    user: *mut c_void,
    handle: *mut tracer_subscription_t,
}

impl Callback {
    fn call(&self) {
        // SAFETY: the caller's function with the caller's data, as
        // `tracer_subscription_set_callback` documents; C does not unwind into Rust.
        unsafe { (self.f)(self.user, self.handle) }
    }
}

// SAFETY: the pointers are the caller's, passed back as they are and never dereferenced here;
// `tracer_subscription_set_callback` documents that the callback runs on delivering threads
// and that `user_data` must be usable from them.
unsafe impl Send for Callback {}
// SAFETY: as above (shared only to be passed back).
unsafe impl Sync for Callback {}

/// Set (or, with `callback` NULL, remove) the function called once per sample that lands in
/// the subscription, with `user_data` and the subscription's handle. Samples already queued
/// do not call it. It runs on the delivering thread, must not block, and may call
/// `tracer_take` / `tracer_view_take` on this subscription.
///
/// Thread-safe; `user_data` must be usable from any thread.
#[no_mangle]
pub extern "C" fn tracer_subscription_set_callback(
    subscription: *mut tracer_subscription_t,
    callback: tracer_callback_t,
    user_data: *mut c_void,
) -> tracer_result_t {
    call("tracer_subscription_set_callback", || {
        let s = SUBSCRIPTIONS.get(subscription)?;
        let Some(f) = callback else {
            return s.sub.set_on_land(None);
        };
        let cb = Callback {
            f,
            user: user_data,
            handle: subscription,
        };
        s.sub
            .set_on_land(Some(Arc::new(move |_: Landed| cb.call())))
    })
}

/// Wait until the subscription holds a sample, at most `timeout_ns` (negative: forever):
/// `TRACER_OK`, or `TRACER_ERR_TIMEOUT`.
///
/// Thread-safe (several threads may wait; each is woken).
#[no_mangle]
pub extern "C" fn tracer_subscription_wait(
    subscription: *const tracer_subscription_t,
    timeout_ns: i64,
) -> tracer_result_t {
    call("tracer_subscription_wait", || {
        let s = SUBSCRIPTIONS.get(subscription)?;
        if s.held.lock().is_some() {
            return Ok(());
        }
        s.sub.wait(timeout(timeout_ns))
    })
}

/// Messages this subscription lost since the last call, into `*out_lost`: dropped by its
/// ring when full (KEEP_LAST's depth, KEEP_ALL's byte budget) and, on a reliable
/// subscription with the network on, never received (a link cut for longer than the
/// publisher's resend window: the writer's sequence jumped). What rmw reports as
/// `RMW_EVENT_MESSAGE_LOST`.
///
/// Thread-safe (each loss is reported to one caller).
///
/// # Safety
/// `out_lost` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tracer_subscription_take_lost(
    subscription: *const tracer_subscription_t,
    out_lost: *mut u64,
) -> tracer_result_t {
    call("tracer_subscription_take_lost", || {
        let o = out(out_lost, "out_lost")?;
        let s = SUBSCRIPTIONS.get(subscription)?;
        o.set(s.sub.take_lost());
        Ok(())
    })
}

fn next(s: &Sub) -> CapiResult<Sample> {
    if let Some(x) = s.held.lock().take() {
        return Ok(x);
    }
    s.sub.take().ok_or(CapiError::Empty)
}

fn fill_info(s: &Sub, x: &Sample, info: *mut tracer_sample_info_t) {
    if info.is_null() {
        return;
    }
    let mut topic = [0 as c_char; TRACER_TOPIC_MAX];
    let name = s.sub.topic_of(x);
    for (d, b) in topic
        .iter_mut()
        .zip(name.bytes().take(TRACER_TOPIC_MAX - 1))
    {
        *d = b as c_char;
    }
    let v = tracer_sample_info_t {
        source_timestamp_ns: x.meta.source_timestamp_ns,
        received_timestamp_ns: x.received_timestamp_ns,
        sequence: x.meta.sequence,
        publisher_gid: x.meta.writer,
        topic,
    };
    if let Ok(o) = out(info, "info") {
        o.set(v);
    }
}

/// Take the oldest sample by copy: its CDR into `buffer` (`capacity` bytes), its length into
/// `*out_len`, what came with it into `*info` (NULL: not wanted). `TRACER_ERR_EMPTY` when
/// there is none; `TRACER_ERR_BUFFER_TOO_SMALL` (with `*out_len` the length needed) leaves
/// the sample for the next take.
///
/// Thread-safe (each sample goes to one taker).
///
/// # Safety
/// `buffer` is NULL or `capacity` writable bytes; `out_len` NULL or writable; `info` NULL or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn tracer_take(
    subscription: *mut tracer_subscription_t,
    buffer: *mut u8,
    capacity: usize,
    out_len: *mut usize,
    info: *mut tracer_sample_info_t,
) -> tracer_result_t {
    call("tracer_take", || {
        let o = out(out_len, "out_len")?;
        let s = SUBSCRIPTIONS.get(subscription)?;
        if buffer.is_null() {
            return Err(CapiError::Null("buffer"));
        }
        let x = next(&s)?;
        let bytes: &[u8] = x.payload.as_ref();
        if bytes.len() > capacity {
            o.set(bytes.len());
            let len = bytes.len();
            *s.held.lock() = Some(x);
            return Err(CapiError::BufferTooSmall { cap: capacity, len });
        }
        // SAFETY: `buffer` is not null and has `capacity` >= bytes.len() writable bytes (this
        // function's contract); a sample's bytes never overlap the caller's buffer.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), buffer, bytes.len()) };
        o.set(bytes.len());
        fill_info(&s, &x, info);
        Ok(())
    })
}

/// Take the oldest sample without a copy: `*out_data` points at its `*out_len` bytes where
/// they lie (a shared-memory slot of the publisher's, or the buffer its link read into),
/// read-only, valid until `tracer_view_return(*out_view)`. `TRACER_ERR_EMPTY` when there is
/// none. The caller owns the new view handle.
///
/// Thread-safe.
///
/// # Safety
/// The out-pointers are NULL or writable; `info` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tracer_view_take(
    subscription: *mut tracer_subscription_t,
    out_view: *mut *mut tracer_view_t,
    out_data: *mut *const u8,
    out_len: *mut usize,
    info: *mut tracer_sample_info_t,
) -> tracer_result_t {
    call("tracer_view_take", || {
        let ov = out(out_view, "out_view")?;
        let od = out(out_data, "out_data")?;
        let ol = out(out_len, "out_len")?;
        let s = SUBSCRIPTIONS.get(subscription)?;
        let x = next(&s)?;
        fill_info(&s, &x, info);
        let bytes: &[u8] = x.payload.as_ref();
        od.set(bytes.as_ptr());
        ol.set(bytes.len());
        ov.set(VIEWS.insert(Arc::new(View { _sample: x })));
        Ok(())
    })
}

/// Give a view back: its bytes may go (a peer's slot is released to it). The handle is dead
/// after the call, whatever its result.
///
/// Thread-safe. `view` may be any value: NULL and dead handles are refused.
#[no_mangle]
pub extern "C" fn tracer_view_return(view: *mut tracer_view_t) -> tracer_result_t {
    call("tracer_view_return", || VIEWS.remove(view).map(drop))
}
