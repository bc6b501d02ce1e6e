//! `exercise_decode`: the body of the fuzz target, kept in the library so a normal test can run
//! it over a random corpus too. It feeds one byte string through every decoding path and panics
//! only if they disagree or a decoded frame does not survive a re-encode: any input must give
//! frames or errors, never a panic, a hang or an allocation beyond the frame bound.

use super::codec::{
    decode, decode_struct_event, encode_parts, encode_struct_event, frame_len, LEN_PREFIX,
};
use super::error::DecodeError;
use super::frame::Frame;
use super::stream::FrameDecoder;

/// Frame bound used by the exercise: small enough that fuzzed prefixes hit it.
pub const EXERCISE_MAX_FRAME: u32 = 1 << 20;

/// What one input gave.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExerciseReport {
    pub frames: usize,
    pub errors: usize,
    pub struct_event: bool,
}

type Outcome = Vec<Result<Frame, DecodeError>>;

fn is_framing(e: &DecodeError) -> bool {
    matches!(
        e,
        DecodeError::FrameTooLarge { .. } | DecodeError::FrameTooShort { .. }
    )
}

/// Decode `data` as a stream of frames, whole and in pseudo-random fragments (with and without
/// direct-read windows), check the paths agree, re-encode every frame, and try `data` as a
/// structural event payload.
pub fn exercise_decode(data: &[u8]) -> ExerciseReport {
    let whole = one_shot(data);
    let seed = data.iter().fold(0x9e37_79b9_7f4a_7c15u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3)
    });
    assert_eq!(
        streamed(data, seed, false),
        whole,
        "fragmented decode disagrees with one-shot decode"
    );
    assert_eq!(
        streamed(data, seed ^ 1, true),
        whole,
        "windowed decode disagrees with one-shot decode"
    );
    let mut report = ExerciseReport::default();
    for r in &whole {
        match r {
            Ok(f) => {
                report.frames += 1;
                let again = encode_parts(f, EXERCISE_MAX_FRAME)
                    .expect("a decoded frame re-encodes")
                    .to_vec();
                let (back, n) =
                    decode(&again, EXERCISE_MAX_FRAME).expect("a re-encoded frame decodes");
                assert_eq!(n, again.len());
                assert_eq!(&back, f, "frame changed across re-encode");
            }
            Err(_) => report.errors += 1,
        }
    }
    if let Ok(ev) = decode_struct_event(data) {
        report.struct_event = true;
        assert_eq!(
            decode_struct_event(&encode_struct_event(&ev)),
            Ok(ev),
            "event changed across re-encode"
        );
    }
    report
}

fn one_shot(data: &[u8]) -> Outcome {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < data.len() {
        match decode(&data[pos..], EXERCISE_MAX_FRAME) {
            Ok((f, n)) => {
                out.push(Ok(f));
                pos += n;
            }
            Err(DecodeError::Incomplete { .. }) => break,
            Err(e) if is_framing(&e) => {
                out.push(Err(e));
                break;
            }
            Err(e) => {
                out.push(Err(e));
                let len = frame_len(&data[pos..], EXERCISE_MAX_FRAME).expect("framing was valid");
                pos += LEN_PREFIX + len as usize;
            }
        }
    }
    out
}

fn streamed(data: &[u8], mut rng: u64, windows: bool) -> Outcome {
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut dec = FrameDecoder::new(EXERCISE_MAX_FRAME);
    let mut out = Vec::new();
    let mut pos = 0;
    // Each step takes at least one byte or pops a frame, so this ends.
    loop {
        match dec.pop() {
            Ok(Some(f)) => {
                out.push(Ok(f));
                continue;
            }
            Ok(None) => {}
            Err(e) => {
                let fatal = is_framing(&e);
                out.push(Err(e));
                if fatal {
                    return out;
                }
                continue;
            }
        }
        if pos == data.len() {
            return out;
        }
        let chunk = 1 + (next() % 17) as usize;
        let end = (pos + chunk).min(data.len());
        if windows {
            if let Some(w) = dec.body_window() {
                let n = w.len().min(data.len() - pos).min(chunk * 4096);
                w[..n].copy_from_slice(&data[pos..pos + n]);
                dec.commit(n);
                pos += n;
                continue;
            }
        }
        pos += dec.push(&data[pos..end]);
    }
}
