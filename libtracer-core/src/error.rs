//! The one error type of the core. Every wire error code maps to exactly one variant and back
//! (`Error::code`, `Error::from_wire`), so a refusal on a peer reaches a local caller unchanged.

use std::sync::Arc;

use crate::wire::frame::{ErrorCode, Role};

#[derive(Debug, Clone, thiserror::Error)]
pub enum Error {
    #[error("invalid path {path:?}: {reason}")]
    InvalidPath { path: String, reason: &'static str },
    #[error("not found: {0}")]
    NotFound(String),
    /// `by` names the requester the ACL refused (` for peer CN=/talker`), or is empty when the
    /// refusal came from a peer (its text is then in `path`).
    #[error("{}", denied_text(.path, .right, .by))]
    PermissionDenied {
        path: String,
        right: &'static str,
        by: String,
    },
    #[error("schema not found: {0}")]
    SchemaNotFound(String),
    #[error("malformed: {0}")]
    Malformed(String),
    #[error("wrong role: {path} is {role:?}, {wanted}")]
    WrongRole {
        path: String,
        role: Role,
        wanted: &'static str,
    },
    #[error("link down: {0}")]
    LinkDown(String),
    #[error("timed out")]
    Timeout,
    #[error("i/o: {0}")]
    Io(Arc<std::io::Error>),
    #[error("unsupported: {0}")]
    Unsupported(String),
    #[error("too large: {0}")]
    TooLarge(String),
    /// The edge was removed (unsubscribed, or its source or target went away).
    #[error("edge closed: {0}")]
    Closed(String),
    #[error("internal: {0}")]
    Internal(String),
}

/// The `right` of a refusal that came from a peer (its whole text is in `path`).
const REMOTE: &str = "remote";

fn denied_text(path: &str, right: &str, by: &str) -> String {
    if right == REMOTE {
        format!("refused by the peer: {path}")
    } else {
        format!("permission denied: {right} on {path}{by}")
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::Io(Arc::new(e))
    }
}

impl Error {
    /// The wire code that carries this error to a peer.
    pub fn code(&self) -> ErrorCode {
        match self {
            Error::InvalidPath { .. } | Error::Malformed(_) => ErrorCode::Malformed,
            Error::NotFound(_) | Error::Closed(_) => ErrorCode::NotFound,
            Error::PermissionDenied { .. } => ErrorCode::PermissionDenied,
            Error::SchemaNotFound(_) => ErrorCode::SchemaNotFound,
            Error::WrongRole { .. } => ErrorCode::WrongRole,
            Error::Unsupported(_) => ErrorCode::Unsupported,
            Error::TooLarge(_) => ErrorCode::TooLarge,
            Error::LinkDown(_) | Error::Timeout | Error::Io(_) | Error::Internal(_) => {
                ErrorCode::Internal
            }
        }
    }

    /// The local error for a wire error reply; `message` is the peer's text.
    pub fn from_wire(code: ErrorCode, message: &str) -> Error {
        let m = message.to_string();
        match code {
            ErrorCode::NotFound => Error::NotFound(m),
            ErrorCode::PermissionDenied => Error::PermissionDenied {
                path: m,
                right: REMOTE,
                by: String::new(),
            },
            ErrorCode::SchemaNotFound => Error::SchemaNotFound(m),
            ErrorCode::Malformed => Error::Malformed(m),
            ErrorCode::Unsupported => Error::Unsupported(m),
            ErrorCode::TooLarge => Error::TooLarge(m),
            ErrorCode::WrongRole => Error::WrongRole {
                path: m,
                role: Role::Inner,
                wanted: "refused by the peer",
            },
            ErrorCode::Internal => Error::Internal(m),
        }
    }
}
