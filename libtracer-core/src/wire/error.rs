//! Codec errors. Each names what is wrong and where, and is cheap to build (no allocation): a
//! malformed frame from a peer is routine, not exceptional.

/// Why a byte string is not a valid frame (or structural event).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("frame announces {len} bytes, above the bound of {max} bytes")]
    FrameTooLarge { len: u64, max: u32 },
    #[error("frame announces {len} bytes, shorter than the 2-byte version+kind header")]
    FrameTooShort { len: u32 },
    #[error("input ends inside a frame: {have} of {need} bytes")]
    Incomplete { have: usize, need: usize },
    #[error("unsupported protocol version {0} (this node speaks 1)")]
    UnsupportedVersion(u8),
    #[error("unknown frame kind {0:#04x}")]
    UnknownKind(u8),
    #[error("unknown mandatory TLV {tlv:#04x} in {frame}")]
    UnknownMandatoryTlv { frame: &'static str, tlv: u8 },
    #[error("TLV {tlv} does not belong in {frame}")]
    UnexpectedTlv {
        frame: &'static str,
        tlv: &'static str,
    },
    #[error("TLV {tlv} appears twice in {frame}")]
    DuplicateTlv {
        frame: &'static str,
        tlv: &'static str,
    },
    #[error("{frame} lacks its {tlv} TLV")]
    MissingTlv {
        frame: &'static str,
        tlv: &'static str,
    },
    #[error("TLV {tlv} has length {len}, expected {expected}")]
    BadLength {
        tlv: &'static str,
        len: usize,
        expected: usize,
    },
    #[error("TLV header at byte {at} is truncated")]
    TruncatedTlv { at: usize },
    #[error("TLV {tlv:#04x} announces {len} bytes but only {left} remain in the frame")]
    TlvOverrun { tlv: u8, len: u64, left: usize },
    #[error("varint at byte {at} is longer than 5 bytes or above u32")]
    VarintOverflow { at: usize },
    #[error("varint at byte {at} is not in its shortest form")]
    VarintNotCanonical { at: usize },
    #[error("{field} is not valid UTF-8")]
    BadUtf8 { field: &'static str },
    #[error("{field} is {len} bytes, above the limit of {max}")]
    StringTooLong {
        field: &'static str,
        len: usize,
        max: usize,
    },
    #[error("{field} has the invalid value {value}")]
    BadValue { field: &'static str, value: u64 },
    #[error("{field} has {extra} trailing bytes")]
    TrailingBytes { field: &'static str, extra: usize },
}

/// Why a frame cannot be encoded: it would break a limit the decoder enforces, so sending it
/// would only get the link closed as malformed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EncodeError {
    #[error("{field} is {len} bytes, above the limit of {max}")]
    StringTooLong {
        field: &'static str,
        len: usize,
        max: usize,
    },
    #[error("frame would be {len} bytes, above the bound of {max} bytes")]
    FrameTooLarge { len: u64, max: u32 },
    #[error("{field} holds {count} items; 1 to {max} are allowed")]
    BadCount {
        field: &'static str,
        count: usize,
        max: usize,
    },
}
