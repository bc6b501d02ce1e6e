//! Errors, mapped once: every failure of the C API is a [`CapiError`], and this module is the
//! only place that turns one into a [`tracer_result_t`] and sets the calling thread's error
//! string (`tracer_last_error`). Each code has a static text (`tracer_result_str`).

use std::cell::RefCell;
use std::ffi::{c_char, CStr, CString};
use std::panic::Location;

/// The result of every call of the C API. `TRACER_OK` is 0; every other value is a failure
/// whose static text `tracer_result_str` gives, and whose details (which call, which
/// argument, what the graph said) `tracer_last_error` gives on the same thread.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum tracer_result_t {
    /// Success.
    TRACER_OK = 0,
    /// A required pointer argument is NULL.
    TRACER_ERR_NULL_ARGUMENT = 1,
    /// A handle that is not (or no longer) a live handle of its type: destroyed, returned, or
    /// never made by this library.
    TRACER_ERR_INVALID_HANDLE = 2,
    /// An argument out of its domain: a bad topic or type name, a QoS value, a length.
    TRACER_ERR_INVALID_ARGUMENT = 3,
    /// A wait ran out of time (not an error: no error string is set).
    TRACER_ERR_TIMEOUT = 4,
    /// A take found nothing to take (not an error: no error string is set).
    TRACER_ERR_EMPTY = 5,
    /// The caller's buffer is smaller than the sample (its length is reported; nothing taken).
    TRACER_ERR_BUFFER_TOO_SMALL = 6,
    /// The graph's access control, or this enclave's SROS2 permissions, refused the operation.
    TRACER_ERR_PERMISSION_DENIED = 7,
    /// The link to a peer is down, or a peer refused a request.
    TRACER_ERR_LINK_DOWN = 8,
    /// A message too big for a link or a pool.
    TRACER_ERR_TOO_LARGE = 9,
    /// No shared-memory slot (and no buffer) could be borrowed.
    TRACER_ERR_NO_MEMORY = 10,
    /// The operation is not offered (yet): the error string names it.
    TRACER_ERR_UNSUPPORTED = 11,
    /// Anything else that is the environment's fault or ours: the error string says what.
    TRACER_ERR_INTERNAL = 12,
    /// A bug: a panic was caught at the boundary (it never unwinds into C).
    TRACER_ERR_PANIC = 13,
}

/// Why a call failed. The variant decides the code; the text becomes the error string
/// `<function>: <text>`.
#[derive(Debug, thiserror::Error)]
pub enum CapiError {
    #[error("argument `{0}` is NULL")]
    Null(&'static str),
    #[error("`{0}` is not a live {0} handle (destroyed, returned, or not made by libtracer)")]
    Handle(&'static str),
    #[error("{0}")]
    Invalid(String),
    #[error("timed out")]
    Timeout,
    /// A publish that waited its bound for a RELIABLE + KEEP_ALL subscription's room: a failure
    /// (the message went nowhere), reported as a timeout with its reason.
    #[error("{0}")]
    PublishTimedOut(String),
    #[error("nothing to take")]
    Empty,
    #[error("the buffer holds {cap} bytes, the sample has {len}")]
    BufferTooSmall { cap: usize, len: usize },
    #[error("no memory for a loan of {0} bytes")]
    NoMemory(usize),
    #[error("{0} is not supported yet")]
    Unsupported(&'static str),
    /// This enclave's SROS2 permissions do not allow it (the text names the grant and topic).
    #[error("{0}")]
    Denied(String),
    #[error("{0}")]
    Internal(String),
    #[error("libtracer: {0}")]
    Graph(#[from] libtracer_core::Error),
}

pub type CapiResult<T> = Result<T, CapiError>;

impl CapiError {
    pub fn invalid(msg: impl Into<String>) -> CapiError {
        CapiError::Invalid(msg.into())
    }

    pub fn internal(msg: impl Into<String>) -> CapiError {
        CapiError::Internal(msg.into())
    }

    /// The code this error is reported as.
    pub fn code(&self) -> tracer_result_t {
        use tracer_result_t::*;
        match self {
            CapiError::Null(_) => TRACER_ERR_NULL_ARGUMENT,
            CapiError::Handle(_) => TRACER_ERR_INVALID_HANDLE,
            CapiError::Invalid(_) => TRACER_ERR_INVALID_ARGUMENT,
            CapiError::Timeout | CapiError::PublishTimedOut(_) => TRACER_ERR_TIMEOUT,
            CapiError::Empty => TRACER_ERR_EMPTY,
            CapiError::BufferTooSmall { .. } => TRACER_ERR_BUFFER_TOO_SMALL,
            CapiError::NoMemory(_) => TRACER_ERR_NO_MEMORY,
            CapiError::Unsupported(_) => TRACER_ERR_UNSUPPORTED,
            CapiError::Denied(_) => TRACER_ERR_PERMISSION_DENIED,
            CapiError::Internal(_) => TRACER_ERR_INTERNAL,
            CapiError::Graph(e) => graph_code(e),
        }
    }

    /// Timeouts and empty takes are outcomes, not errors: they leave the error string alone.
    fn sets_error_string(&self) -> bool {
        match self {
            CapiError::Timeout | CapiError::Empty => false,
            CapiError::Graph(libtracer_core::Error::Timeout) => false,
            CapiError::Null(_)
            | CapiError::Handle(_)
            | CapiError::Invalid(_)
            | CapiError::PublishTimedOut(_)
            | CapiError::BufferTooSmall { .. }
            | CapiError::NoMemory(_)
            | CapiError::Unsupported(_)
            | CapiError::Denied(_)
            | CapiError::Internal(_)
            | CapiError::Graph(_) => true,
        }
    }
}

/// How SROS2 refuses: settings that cannot be met (enforced with no enclave, a file that does
/// not load) are an invalid argument of `tracer_context_create`, naming the variable or file;
/// what this enclave may not do is `TRACER_ERR_PERMISSION_DENIED`.
impl From<tracer_recording::security::SecurityError> for CapiError {
    fn from(e: tracer_recording::security::SecurityError) -> CapiError {
        use tracer_recording::security::SecurityError as S;
        match e {
            S::Setup(why) => CapiError::Invalid(why),
            S::Denied(why) => CapiError::Denied(why),
            S::Graph(e) => CapiError::Graph(e),
        }
    }
}

/// How a libtracer error is reported.
fn graph_code(e: &libtracer_core::Error) -> tracer_result_t {
    use libtracer_core::Error as E;
    use tracer_result_t::*;
    match e {
        E::InvalidPath { .. } => TRACER_ERR_INVALID_ARGUMENT,
        E::Timeout => TRACER_ERR_TIMEOUT,
        E::Unsupported(_) => TRACER_ERR_UNSUPPORTED,
        E::PermissionDenied { .. } => TRACER_ERR_PERMISSION_DENIED,
        E::LinkDown(_) | E::Closed(_) => TRACER_ERR_LINK_DOWN,
        E::TooLarge(_) => TRACER_ERR_TOO_LARGE,
        E::NotFound(_)
        | E::SchemaNotFound(_)
        | E::Malformed(_)
        | E::WrongRole { .. }
        | E::Io(_)
        | E::Internal(_) => TRACER_ERR_INTERNAL,
    }
}

/// The static text of a code (never NULL; an unknown value has a text too).
pub fn result_str(code: tracer_result_t) -> &'static CStr {
    use tracer_result_t::*;
    match code {
        TRACER_OK => c"ok",
        TRACER_ERR_NULL_ARGUMENT => c"a required pointer argument is NULL",
        TRACER_ERR_INVALID_HANDLE => c"not a live handle (destroyed, returned, or foreign)",
        TRACER_ERR_INVALID_ARGUMENT => c"invalid argument",
        TRACER_ERR_TIMEOUT => c"timed out",
        TRACER_ERR_EMPTY => c"nothing to take",
        TRACER_ERR_BUFFER_TOO_SMALL => c"the buffer is smaller than the sample",
        TRACER_ERR_PERMISSION_DENIED => c"permission denied",
        TRACER_ERR_LINK_DOWN => c"the link to a peer is down",
        TRACER_ERR_TOO_LARGE => c"message too large",
        TRACER_ERR_NO_MEMORY => c"no memory for a loan",
        TRACER_ERR_UNSUPPORTED => c"not supported",
        TRACER_ERR_INTERNAL => c"internal error",
        TRACER_ERR_PANIC => c"internal panic (a bug in libtracer)",
    }
}

thread_local! {
    /// The calling thread's last error string (`tracer_last_error`).
    static LAST: RefCell<CString> = RefCell::new(CString::default());
}

/// The error string of `err` raised in `name`.
pub fn message(name: &str, err: &CapiError) -> String {
    format!("{name}: {err}")
}

/// Report `err` from `name`: set the thread's error string (with the entry point's location
/// in debug builds' sense: file and line of the call) and return the code.
pub fn report(name: &str, at: &'static Location<'static>, err: &CapiError) -> tracer_result_t {
    if err.sets_error_string() {
        set_last(&message(name, err), at);
    }
    err.code()
}

/// Set the thread's error string.
pub fn set_last(msg: &str, at: &'static Location<'static>) {
    let text = format!("{msg} (at {}:{})", at.file(), at.line());
    let c = CString::new(text.replace('\0', "\\0")).unwrap_or_default();
    LAST.with(|l| *l.borrow_mut() = c);
}

/// The thread's error string; valid until the next call that fails on this thread.
pub fn last() -> *const c_char {
    LAST.with(|l| l.borrow().as_ptr())
}

/// Clear the thread's error string.
pub fn clear() {
    LAST.with(|l| *l.borrow_mut() = CString::default());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[allow(unsafe_code)]
    fn codes_and_strings() {
        assert_eq!(
            CapiError::Null("x").code(),
            tracer_result_t::TRACER_ERR_NULL_ARGUMENT
        );
        let at = Location::caller();
        assert_eq!(
            report("tracer_x", at, &CapiError::Timeout),
            tracer_result_t::TRACER_ERR_TIMEOUT
        );
        clear();
        report("tracer_x", at, &CapiError::Handle("publisher"));
        // SAFETY: `last` points at the thread's NUL-terminated error string, alive here.
        let s = unsafe { CStr::from_ptr(last()) }
            .to_string_lossy()
            .into_owned();
        assert!(s.starts_with("tracer_x: `publisher` is not a live"), "{s}");
    }
}
