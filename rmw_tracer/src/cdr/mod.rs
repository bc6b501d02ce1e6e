//! CDR (XCDR1, little endian) serialization of ROS 2 messages, byte-compatible with Fast DDS.
//!
//! Driven by the introspection type supports, so it works for every type without generated
//! code: `rosidl_typesupport_introspection_c` (rclpy, C programs) and `_cpp` (rclcpp).
//! Resolve a type once with [`MessageType::from_type_support`] (at publisher / subscription
//! creation), then [`MessageType::serialize`] / [`MessageType::deserialize`] per message.
//! [`type_info`] gives the type's name, hash and `ros2msg` definition for `:schema` and MCAP.
//! See `docs/cdr.md`.
//!
//! Unsafe code: walking a C or C++ message in memory cannot be done otherwise. It lives in
//! `plan` (reading the introspection structs), `encode` / `decode` (reading and writing message
//! fields through the type support's own functions), `type_info` and `copy` (large runs of
//! bytes), each block with its `// SAFETY:`. `wire` (the byte format) is safe Rust. `exercise`
//! (the fuzz target's body) loads real type supports and makes messages with their own init
//! and fini functions.

mod copy;
mod cxx;
mod decode;
mod encode;
pub mod exercise;
mod plan;
pub mod type_info;
pub mod wire;

use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::{Arc, Mutex, OnceLock};

use ffi::rosidl_message_type_support_t;

pub use plan::Flavor;
pub use type_info::{type_info, TypeInfo};
pub use wire::Destination;

/// Everything that can go wrong in this module. Messages name the type and field.
#[derive(Debug, thiserror::Error)]
pub enum CdrError {
    #[error("type support handle is null")]
    NullTypeSupport,
    #[error(
        "type support '{0}' offers no introspection type support \
         (tried rosidl_typesupport_introspection_c and rosidl_typesupport_introspection_cpp)"
    )]
    NoIntrospection(String),
    #[error("{ty}.{field}: {what} cannot be serialized to CDR")]
    UnsupportedField {
        ty: String,
        field: String,
        what: String,
    },
    #[error("malformed introspection type support: {0}")]
    BadTypeSupport(String),
    #[error("invalid message: {0}")]
    BadMessage(&'static str),
    #[error("length {len} exceeds the bound {bound}")]
    BoundExceeded { len: usize, bound: usize },
    #[error("{what} of length {len} does not fit a 32-bit CDR length")]
    TooLong { what: String, len: usize },
    #[error("out of memory allocating a {what} of {len} elements")]
    Alloc { what: &'static str, len: usize },
    #[error("truncated CDR data: {need} bytes needed at offset {at}, {have} left")]
    Truncated { need: usize, at: usize, have: usize },
    #[error("malformed CDR data at offset {at}: {what}")]
    Malformed { at: usize, what: String },
    #[error("unsupported CDR encapsulation {0:#06x} (only CDR_LE 0x0001 and CDR_BE 0x0000)")]
    Encapsulation(u16),
    #[error("{ty}: {source}")]
    InField {
        /// `pkg/msg/Type.field.subfield` path to the field where it happened.
        ty: String,
        #[source]
        source: Box<CdrError>,
    },
    #[error("{0}")]
    Info(String),
}

impl CdrError {
    /// Adds the field path as the error travels out of nested messages:
    /// `test_msgs/msg/MultiNested.array_of_arrays.string_values: length 30 exceeds the bound 22`.
    fn in_field(self, ty: &str, field: &str) -> CdrError {
        match self {
            CdrError::InField { ty: inner, source } => {
                // `inner` is `Type.path`; keep the path, replace the type by the outer one.
                let path = inner.split_once('.').map_or(inner.as_str(), |(_, p)| p);
                CdrError::InField {
                    ty: format!("{ty}.{field}.{path}"),
                    source,
                }
            }
            other => CdrError::InField {
                ty: format!("{ty}.{field}"),
                source: Box::new(other),
            },
        }
    }

    /// The innermost error, without the field path.
    pub fn root(&self) -> &CdrError {
        match self {
            CdrError::InField { source, .. } => source.root(),
            other => other,
        }
    }

    /// True when the bytes (not the type or the message in memory) are at fault.
    pub fn is_bad_input(&self) -> bool {
        matches!(
            self.root(),
            CdrError::Truncated { .. }
                | CdrError::Malformed { .. }
                | CdrError::Encapsulation(_)
                | CdrError::BoundExceeded { .. }
        )
    }

    /// True when memory ran out (maps to RMW_RET_BAD_ALLOC).
    pub fn is_alloc(&self) -> bool {
        matches!(self.root(), CdrError::Alloc { .. })
    }
}

/// A message type resolved to its introspection type support: cheap to clone, `Send + Sync`.
#[derive(Clone, Debug)]
pub struct MessageType {
    plan: Arc<plan::TypePlan>,
    /// The introspection handle the plan was read from.
    handle: *const rosidl_message_type_support_t,
}

// SAFETY: the plan is immutable; the handle and everything it points to are static data of a
// loaded type support library, only read, from any thread.
unsafe impl Send for MessageType {}
// SAFETY: as above: no interior mutability.
unsafe impl Sync for MessageType {}

impl MessageType {
    /// Resolves `ts` (an introspection handle, or a typesupport_c / typesupport_cpp dispatcher as
    /// rcl passes it) and reads the type's layout. Fails for types CDR cannot carry (long double).
    ///
    /// # Safety
    /// `ts` must be null or a valid type support handle whose library stays loaded while the
    /// returned value is used.
    pub unsafe fn from_type_support(
        ts: *const rosidl_message_type_support_t,
    ) -> Result<MessageType, CdrError> {
        // SAFETY: forwarded contract.
        let (flavor, handle) = unsafe { plan::introspection_handle(ts) }?;
        // SAFETY: an introspection handle of `flavor` from a loaded library.
        let plan = unsafe { plan::build(flavor, handle) }?;
        Ok(MessageType { plan, handle })
    }

    /// The request and response types of a service (`rmw_create_client` / `_service`), from its
    /// `rosidl_service_type_support_t` (an introspection handle or a dispatcher). Their
    /// [`introspection_handle`](Self::introspection_handle) is null: a service's parts have
    /// members but no message handle of their own.
    ///
    /// # Safety
    /// `ts` must be null or a valid service type support handle whose library stays loaded.
    pub unsafe fn from_service_type_support(
        ts: *const ffi::rosidl_service_type_support_t,
    ) -> Result<(MessageType, MessageType), CdrError> {
        // SAFETY: forwarded contract.
        let (flavor, req, resp) = unsafe { plan::service_members(ts) }?;
        let part = |members| -> Result<MessageType, CdrError> {
            // SAFETY: static MessageMembers of `flavor` from the loaded service type support.
            let plan = unsafe { plan::build_members(flavor, members, 0) }?;
            Ok(MessageType {
                plan,
                handle: std::ptr::null(),
            })
        };
        Ok((part(req)?, part(resp)?))
    }

    /// As [`from_type_support`](Self::from_type_support), remembered per handle address so
    /// that per-message entry points (`rmw_serialize`, `rmw_deserialize`) resolve a type once.
    ///
    /// # Safety
    /// As for [`from_type_support`](Self::from_type_support); type support libraries must not be
    /// unloaded while the process runs (rcl and rclpy never unload them).
    pub unsafe fn cached(
        ts: *const rosidl_message_type_support_t,
    ) -> Result<MessageType, CdrError> {
        static CACHE: OnceLock<Mutex<HashMap<usize, MessageType>>> = OnceLock::new();
        let cache = CACHE.get_or_init(Default::default);
        let key = ts as usize;
        if let Some(t) = cache.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
            return Ok(t.clone());
        }
        // SAFETY: forwarded contract.
        let t = unsafe { MessageType::from_type_support(ts) }?;
        cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, t.clone());
        Ok(t)
    }

    /// `pkg/msg/Type`.
    pub fn name(&self) -> &str {
        &self.plan.name
    }

    pub fn flavor(&self) -> Flavor {
        self.plan.flavor
    }

    /// Size of the message struct in memory (`sizeof(pkg__msg__Type)` / `sizeof(pkg::msg::Type)`).
    pub fn size_of(&self) -> usize {
        self.plan.size_of
    }

    /// `Some(sizeof)` when the type is plain (loanable: its struct is its CDR body;
    /// docs/loans.md).
    pub fn plain_size(&self) -> Option<usize> {
        self.plan.plain_size
    }

    /// The introspection handle (for `type_info` or the init/fini functions); null for the
    /// parts of a service.
    pub fn introspection_handle(&self) -> *const rosidl_message_type_support_t {
        self.handle
    }

    /// Serializes `msg` into `out` (cleared first; its capacity is reused): header, then body.
    ///
    /// # Safety
    /// `msg` must point to an initialized message of this type, in this type's flavor's layout
    /// (a C struct for `Flavor::C`, the C++ class for `Flavor::Cpp`), not mutated meanwhile.
    pub unsafe fn serialize(&self, msg: *const c_void, out: &mut Vec<u8>) -> Result<(), CdrError> {
        if msg.is_null() {
            return Err(CdrError::BadMessage("message pointer is null"));
        }
        let mut sink = wire::VecSink::with_header(out);
        // SAFETY: forwarded contract.
        unsafe { encode::message(&self.plan, msg, &mut sink) }
    }

    /// Serializes `msg` into `out`, which [`serialized_size`](Self::serialized_size) sized: no
    /// intermediate buffer; `destination` says who reads `out` next. Returns the bytes written;
    /// a message larger than `out` is an error.
    ///
    /// # Safety
    /// As for [`serialize`](Self::serialize).
    pub unsafe fn serialize_into(
        &self,
        msg: *const c_void,
        out: &mut [u8],
        destination: Destination,
    ) -> Result<usize, CdrError> {
        if msg.is_null() {
            return Err(CdrError::BadMessage("message pointer is null"));
        }
        let mut sink = wire::SliceSink::with_header(out, destination);
        // SAFETY: forwarded contract.
        unsafe { encode::message(&self.plan, msg, &mut sink) }?;
        if sink.overflowed() {
            return Err(CdrError::BadMessage(
                "message changed size between the size pass and serialization",
            ));
        }
        Ok(sink.written())
    }

    /// The exact number of bytes [`serialize`](Self::serialize) writes for `msg`, header included.
    ///
    /// # Safety
    /// As for [`serialize`](Self::serialize).
    pub unsafe fn serialized_size(&self, msg: *const c_void) -> Result<usize, CdrError> {
        if msg.is_null() {
            return Err(CdrError::BadMessage("message pointer is null"));
        }
        let mut sink = wire::SizeSink::default();
        // SAFETY: forwarded contract.
        unsafe { encode::message(&self.plan, msg, &mut sink) }?;
        Ok(sink.total())
    }

    /// The largest serialized size of any message of this type (header included), or `None` if
    /// the type has an unbounded string or sequence.
    pub fn max_serialized_size(&self) -> Option<usize> {
        self.plan.max_body_size.map(|b| b + wire::HEADER_LEN)
    }

    /// Deserializes `bytes` (header + body; trailing bytes are ignored) into `msg`.
    ///
    /// # Safety
    /// `msg` must point to an initialized message of this type, in this type's flavor's layout,
    /// accessed by nothing else meanwhile. On error it may be partly overwritten but stays a
    /// valid message (its fini function frees it correctly).
    pub unsafe fn deserialize(&self, bytes: &[u8], msg: *mut c_void) -> Result<(), CdrError> {
        if msg.is_null() {
            return Err(CdrError::BadMessage("message pointer is null"));
        }
        let mut reader = wire::Reader::new(bytes)?;
        let mut scratch = decode::Scratch::default();
        // SAFETY: forwarded contract.
        unsafe { decode::message(&self.plan, msg, &mut reader, &mut scratch) }
    }
}

#[cfg(test)]
mod tests;
