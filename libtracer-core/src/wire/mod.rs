//! Wire protocol v1: frame types (`frame`), their codec (`codec`), the streaming decoder
//! (`stream`) and the fuzzing exercise (`exercise`). Pure: no sockets here.

pub mod codec;
pub mod error;
pub mod exercise;
pub mod frame;
pub mod parts;
pub mod policy;
pub mod stream;

pub use codec::{
    decode, decode_body, decode_payload, decode_struct_event, encode, encode_head, encode_parts,
    encode_struct_event, EncodedFrame, LEN_PREFIX, MAX_MESSAGE, MAX_NODE, MAX_PATH,
    MAX_PERMISSIONS, MAX_TAG,
};
pub use error::{DecodeError, EncodeError};
pub use exercise::{exercise_decode, ExerciseReport};
pub use frame::*;
pub use stream::FrameDecoder;
