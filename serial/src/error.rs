//! Errors of the codec and the session. None of them ends a session: a frame or packet that
//! fails is counted ([`crate::Stats`]) and dropped, and the byte stream resynchronises at the
//! next delimiter.

/// A frame that is not a checked frame (layer 2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("frame is not valid COBS")]
    Cobs,
    #[error("frame shorter than its check")]
    TooShort,
    #[error("frame longer than the maximum frame")]
    TooLong,
    #[error("frame check (CRC) failed")]
    Check,
}

/// A checked frame whose packet is malformed (layer 3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("empty packet")]
    Empty,
    #[error("unknown packet kind {0:#04x}")]
    UnknownKind(u8),
    #[error("packet {kind:#04x} is truncated")]
    Truncated { kind: u8 },
    #[error("bytes after the last field of packet {kind:#04x}")]
    TrailingBytes { kind: u8 },
    #[error("packet {kind:#04x} has a string that is not UTF-8")]
    BadUtf8 { kind: u8 },
    #[error("packet {kind:#04x} is longer than its kind allows")]
    TooLong { kind: u8 },
    #[error("unsupported protocol version {0}")]
    Version(u8),
}

/// Why [`crate::Session::send`] refused a message; nothing was queued.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SendError {
    #[error("no MCU session is ready")]
    NotReady,
    #[error("alias {0} is not a subscription of the MCU")]
    NotSubscription(u8),
    #[error("the payload does not start with the CDR header 00 01 00 00")]
    BadEncapsulation,
    #[error("message body of {len} bytes is above the MCU's maximum of {max}")]
    TooLarge { len: usize, max: usize },
    #[error("reliable window full: wait for acknowledgements")]
    WindowFull,
}
