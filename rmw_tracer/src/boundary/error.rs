//! Errors, mapped once: every failure of an entry point is an [`RmwError`], and this module is the
//! only place that turns one into an `rmw_ret_t` and sets the rmw error string (what the
//! `RMW_SET_ERROR_MSG` macro does: `rcutils_set_error_state` with a file and line).

use std::ffi::CString;
use std::panic::Location;

use ffi::rmw_ret_t;

/// Why an entry point failed. The variant decides the `rmw_ret_t`; the text becomes the rmw error
/// string `rmw_tracer: <fn>: <text>`.
#[derive(Debug, thiserror::Error)]
pub enum RmwError {
    /// A required pointer argument is null.
    #[error("argument `{0}` is null")]
    Null(&'static str),
    /// A handle that another rmw implementation created (or garbage).
    #[error("{what} belongs to implementation `{found}`, not rmw_tracer")]
    WrongImplementation { what: &'static str, found: String },
    /// An argument that rmw documents as invalid (bad names, bad QoS, wrong state).
    #[error("{0}")]
    InvalidArgument(String),
    /// An allocation through the caller's allocator failed.
    #[error("out of memory while {0}")]
    BadAlloc(&'static str),
    /// The whole entry point is not built yet.
    #[error("is not supported yet")]
    Unsupported,
    /// A feature of an otherwise built entry point that rmw_tracer does not offer.
    #[error("{0} is not supported")]
    UnsupportedFeature(String),
    /// A wait or an acknowledgement wait ran out of time: `RMW_RET_TIMEOUT`, and by rmw's
    /// convention not an error, so no error string is set.
    #[error("timed out")]
    Timeout,
    /// A graph query named a node that does not exist.
    #[error("node `{0}` does not exist")]
    NodeNameNonExistent(String),
    /// A message could not be (de)serialized.
    #[error("serialization failed: {0}")]
    Serialization(String),
    /// Anything else that is our fault or the environment's: `RMW_RET_ERROR`.
    #[error("{0}")]
    Failed(String),
    /// The libtracer graph refused or failed an operation.
    #[error("libtracer: {0}")]
    Graph(#[from] libtracer_core::Error),
}

pub type RmwResult<T> = Result<T, RmwError>;

impl RmwError {
    /// The `rmw_ret_t` this error is reported as.
    pub fn code(&self) -> rmw_ret_t {
        match self {
            RmwError::Null(_) => ffi::RMW_RET_INVALID_ARGUMENT,
            RmwError::WrongImplementation { .. } => ffi::RMW_RET_INCORRECT_RMW_IMPLEMENTATION,
            RmwError::InvalidArgument(_) => ffi::RMW_RET_INVALID_ARGUMENT,
            RmwError::BadAlloc(_) => ffi::RMW_RET_BAD_ALLOC,
            RmwError::Unsupported => ffi::RMW_RET_UNSUPPORTED,
            RmwError::UnsupportedFeature(_) => ffi::RMW_RET_UNSUPPORTED,
            RmwError::Timeout => ffi::RMW_RET_TIMEOUT,
            RmwError::NodeNameNonExistent(_) => ffi::RMW_RET_NODE_NAME_NON_EXISTENT,
            RmwError::Serialization(_) => ffi::RMW_RET_ERROR,
            RmwError::Failed(_) => ffi::RMW_RET_ERROR,
            RmwError::Graph(e) => graph_code(e),
        }
    }

    /// Whether rmw's convention wants the error string set for this outcome.
    fn sets_error_string(&self) -> bool {
        match self {
            RmwError::Timeout => false,
            RmwError::Null(_)
            | RmwError::WrongImplementation { .. }
            | RmwError::InvalidArgument(_)
            | RmwError::BadAlloc(_)
            | RmwError::Unsupported
            | RmwError::UnsupportedFeature(_)
            | RmwError::NodeNameNonExistent(_)
            | RmwError::Serialization(_)
            | RmwError::Failed(_) => true,
            RmwError::Graph(libtracer_core::Error::Timeout) => false,
            RmwError::Graph(_) => true,
        }
    }

    /// Shorthand for [`RmwError::InvalidArgument`].
    pub fn invalid(msg: impl Into<String>) -> Self {
        RmwError::InvalidArgument(msg.into())
    }

    /// For an entry point whose header documents no `RMW_RET_INCORRECT_RMW_IMPLEMENTATION`
    /// (`rmw_destroy_guard_condition`: OK, INVALID_ARGUMENT, ERROR; `rmw_take_event`: OK,
    /// BAD_ALLOC, ERROR): another implementation's handle is an `RMW_RET_ERROR`, with the same
    /// text. Fast DDS answers ERROR for those it checks (rmw-mapping.md, "Errors and threads").
    pub fn foreign_as_error(self) -> Self {
        match self {
            RmwError::WrongImplementation { .. } => RmwError::Failed(self.to_string()),
            e => e,
        }
    }

    /// A null argument reported as `RMW_RET_ERROR` (same text), for the entry points where
    /// Jazzy's test_rmw_implementation and Fast DDS answer a null with `RMW_RET_ERROR` although
    /// rmw.h documents `RMW_RET_INVALID_ARGUMENT` (`rmw_destroy_wait_set`,
    /// `rmw_service_server_is_available`; docs/entry-points.md). Kilted's suite
    /// (rmw_implementation#234) and Fast DDS follow the header, so built for Kilted a null stays
    /// `RMW_RET_INVALID_ARGUMENT` (docs/architecture.md, "ROS 2 distributions"). Other errors are
    /// unchanged.
    pub fn null_as_error(self) -> Self {
        match self {
            RmwError::Null(_) if ffi::ROS_DISTRO == "jazzy" => RmwError::Failed(self.to_string()),
            e => e,
        }
    }

    /// Shorthand for [`RmwError::Failed`].
    pub fn failed(msg: impl Into<String>) -> Self {
        RmwError::Failed(msg.into())
    }
}

/// How a libtracer error is reported. A refusal by a peer's ACL (the seed's open question) is
/// `RMW_RET_ERROR` with the refusal in the error string: rmw has no code for "not allowed".
fn graph_code(e: &libtracer_core::Error) -> rmw_ret_t {
    use libtracer_core::Error as E;
    match e {
        E::InvalidPath { .. } => ffi::RMW_RET_INVALID_ARGUMENT,
        E::Timeout => ffi::RMW_RET_TIMEOUT,
        E::Unsupported(_) => ffi::RMW_RET_UNSUPPORTED,
        E::NotFound(_)
        | E::PermissionDenied { .. }
        | E::SchemaNotFound(_)
        | E::Malformed(_)
        | E::WrongRole { .. }
        | E::LinkDown(_)
        | E::Io(_)
        | E::TooLarge(_)
        | E::Closed(_)
        | E::Internal(_) => ffi::RMW_RET_ERROR,
    }
}

/// How SROS2 refuses: settings that cannot be met are an invalid argument of `rmw_init`, a
/// permission denied to this enclave `RMW_RET_ERROR` (as Fast DDS's `rmw_create_*`), with the
/// text naming the file or the grant.
impl From<tracer_recording::security::SecurityError> for RmwError {
    fn from(e: tracer_recording::security::SecurityError) -> RmwError {
        use tracer_recording::security::SecurityError as S;
        match e {
            S::Setup(why) => RmwError::invalid(why),
            S::Denied(why) => RmwError::failed(why),
            S::Graph(e) => e.into(),
        }
    }
}

/// How a CDR failure is reported: out of memory is `RMW_RET_BAD_ALLOC`, a type CDR cannot carry
/// is `RMW_RET_UNSUPPORTED`, a dispatcher without introspection an invalid argument, anything
/// else (bad bytes, a message over its bounds) `RMW_RET_ERROR` as in Fast DDS; the text names
/// the type and field.
impl From<crate::cdr::CdrError> for RmwError {
    fn from(e: crate::cdr::CdrError) -> RmwError {
        use crate::cdr::CdrError as C;
        match e.root() {
            C::Alloc { .. } => RmwError::BadAlloc("(de)serializing a message"),
            C::UnsupportedField { .. } => RmwError::UnsupportedFeature(e.to_string()),
            C::NullTypeSupport => RmwError::Null("type_support"),
            C::NoIntrospection(_) => RmwError::invalid(e.to_string()),
            C::BadTypeSupport(_)
            | C::BadMessage(_)
            | C::BoundExceeded { .. }
            | C::TooLong { .. }
            | C::Truncated { .. }
            | C::Malformed { .. }
            | C::Encapsulation(_)
            | C::InField { .. }
            | C::Info(_) => RmwError::Serialization(e.to_string()),
        }
    }
}

/// The error string rmw_tracer sets for `err` raised in the entry point `name`.
pub fn message(name: &str, err: &RmwError) -> String {
    match err {
        RmwError::Unsupported => format!("rmw_tracer: {name} is not supported yet"),
        other => format!("rmw_tracer: {name}: {other}"),
    }
}

/// Report `err` from the entry point `name` called at `at`: set the error string and return the
/// code.
pub fn report(name: &str, at: &'static Location<'static>, err: &RmwError) -> rmw_ret_t {
    if err.sets_error_string() {
        set_error_string(&message(name, err), at);
    }
    err.code()
}

/// Set the rcutils (= rmw) error state, as `RMW_SET_ERROR_MSG` does, with the entry point's file
/// and line.
pub fn set_error_string(msg: &str, at: &'static Location<'static>) {
    // Interior NULs cannot come from our own messages, but a user-supplied name could carry one.
    let msg = CString::new(msg.replace('\0', "\\0")).unwrap_or_default();
    let file = CString::new(at.file()).unwrap_or_default();
    // SAFETY: both strings are valid NUL-terminated C strings that outlive the call;
    // rcutils_set_error_state copies them into thread-local storage.
    unsafe { ffi::rcutils_set_error_state(msg.as_ptr(), file.as_ptr(), at.line() as usize) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsupported_message_names_the_function() {
        assert_eq!(
            message("rmw_take_loaned_message", &RmwError::Unsupported),
            "rmw_tracer: rmw_take_loaned_message is not supported yet"
        );
        assert_eq!(
            message("rmw_create_node", &RmwError::Null("name")),
            "rmw_tracer: rmw_create_node: argument `name` is null"
        );
    }

    #[test]
    fn foreign_as_error_keeps_the_text() {
        let e = RmwError::WrongImplementation {
            what: "guard_condition",
            found: "x".into(),
        };
        let text = e.to_string();
        let e = e.foreign_as_error();
        assert_eq!((e.code(), e.to_string()), (ffi::RMW_RET_ERROR, text));
        assert_eq!(
            RmwError::Null("x").foreign_as_error().code(),
            ffi::RMW_RET_INVALID_ARGUMENT
        );
    }

    #[test]
    fn null_as_error_keeps_the_text() {
        let e = RmwError::Null("wait_set");
        let text = e.to_string();
        let e = e.null_as_error();
        assert_eq!((e.code(), e.to_string()), (ffi::RMW_RET_ERROR, text));
        let foreign = RmwError::WrongImplementation {
            what: "wait_set",
            found: "x".into(),
        };
        assert_eq!(
            foreign.null_as_error().code(),
            ffi::RMW_RET_INCORRECT_RMW_IMPLEMENTATION
        );
    }

    #[test]
    fn codes() {
        assert_eq!(RmwError::Timeout.code(), ffi::RMW_RET_TIMEOUT);
        assert!(!RmwError::Timeout.sets_error_string());
        assert_eq!(
            RmwError::WrongImplementation {
                what: "node",
                found: "x".into()
            }
            .code(),
            ffi::RMW_RET_INCORRECT_RMW_IMPLEMENTATION
        );
        assert_eq!(
            RmwError::NodeNameNonExistent("n".into()).code(),
            ffi::RMW_RET_NODE_NAME_NON_EXISTENT
        );
    }
}
