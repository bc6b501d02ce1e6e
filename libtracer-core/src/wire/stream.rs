//! The streaming decoder: bytes in any fragmentation go in, whole frames come out.
//!
//! Memory is bounded by one frame: the decoder holds at most the frame being assembled, and the
//! length prefix is checked against the bound before anything is allocated for the body. The
//! body buffer is reserved whole up to `EAGER_RESERVE` (4 MiB) and beyond that grows with the
//! bytes that actually arrived (never past the announced length), so a peer that announces a
//! 60 MiB frame and then stalls costs 4 MiB, not 60.

use bytes::Bytes;

use super::codec::{check_frame_len, decode_body, LEN_PREFIX};
use super::error::DecodeError;
use super::frame::Frame;

/// Below this many missing body bytes a direct-read window is not worth offering.
const WINDOW_MIN: usize = 16 * 1024;
/// A body up to this size is reserved whole when its prefix arrives (no reallocation while it
/// fills); a larger one starts here and doubles as bytes arrive. So a peer that announces a
/// large frame and stalls costs at most this much.
pub const EAGER_RESERVE: usize = 4 << 20;

#[derive(Debug)]
enum State {
    /// Collecting the length prefix.
    Prefix { buf: [u8; LEN_PREFIX], have: usize },
    /// Collecting `need` body bytes into `body`.
    Body { body: Vec<u8>, need: usize },
    /// A complete body waits for `pop`.
    Ready(Vec<u8>),
    /// The framing itself is broken (bad length prefix): nothing after it can be trusted.
    Failed(DecodeError),
}

/// Streaming frame decoder. `push` bytes, `pop` frames.
///
/// `push` takes bytes only up to the end of the frame being assembled; once a frame is
/// complete it takes nothing more until that frame is popped, so the decoder never holds more
/// than one frame. A body that does not decode is returned as an error by `pop` and the decoder
/// goes on with the next frame (the framing is intact); a bad length prefix poisons it for good.
#[derive(Debug)]
pub struct FrameDecoder {
    max_frame: u32,
    state: State,
    /// Filled length of the body when a `body_window` was handed out and not yet committed.
    window: Option<usize>,
}

impl FrameDecoder {
    /// A decoder that rejects any frame announcing more than `max_frame` body bytes.
    pub fn new(max_frame: u32) -> Self {
        FrameDecoder {
            max_frame,
            state: State::Prefix {
                buf: [0; LEN_PREFIX],
                have: 0,
            },
            window: None,
        }
    }

    pub fn max_frame(&self) -> u32 {
        self.max_frame
    }

    /// Lower (or raise) the bound for frames whose prefix has not been read yet.
    pub fn set_max_frame(&mut self, max_frame: u32) {
        self.max_frame = max_frame;
    }

    /// Feed bytes; returns how many were taken (fewer than `data.len()` when a frame completed,
    /// or after a framing error). Call `pop` after every `push`.
    pub fn push(&mut self, data: &[u8]) -> usize {
        // A window handed out and never committed holds no data.
        self.commit(0);
        let mut taken = 0;
        while taken < data.len() {
            let rest = &data[taken..];
            match &mut self.state {
                State::Prefix { buf, have } => {
                    let n = rest.len().min(LEN_PREFIX - *have);
                    buf[*have..*have + n].copy_from_slice(&rest[..n]);
                    *have += n;
                    taken += n;
                    if *have == LEN_PREFIX {
                        let len = u32::from_le_bytes(*buf);
                        self.state = match check_frame_len(len, self.max_frame) {
                            Ok(len) => State::Body {
                                body: Vec::new(),
                                need: len as usize,
                            },
                            Err(e) => State::Failed(e),
                        };
                    }
                }
                State::Body { body, need } => {
                    let n = rest.len().min(*need - body.len());
                    grow(body, *need, n);
                    body.extend_from_slice(&rest[..n]);
                    taken += n;
                    if body.len() == *need {
                        self.state = State::Ready(std::mem::take(body));
                    }
                }
                State::Ready(_) | State::Failed(_) => break,
            }
        }
        taken
    }

    /// Take the next complete frame, if one is assembled.
    pub fn pop(&mut self) -> Result<Option<Frame>, DecodeError> {
        match &mut self.state {
            State::Ready(body) => {
                let body = Bytes::from(std::mem::take(body));
                self.state = State::Prefix {
                    buf: [0; LEN_PREFIX],
                    have: 0,
                };
                decode_body(&body).map(Some)
            }
            State::Failed(e) => Err(e.clone()),
            _ => Ok(None),
        }
    }

    /// `push` then `pop`, advancing `input` past the bytes taken: loop on it until it returns
    /// `Ok(None)` to drain a read buffer.
    pub fn feed(&mut self, input: &mut &[u8]) -> Result<Option<Frame>, DecodeError> {
        let n = self.push(input);
        *input = &input[n..];
        self.pop()
    }

    /// Whether the decoder is in the middle of a frame (a clean end of stream has none).
    pub fn is_mid_frame(&self) -> bool {
        match &self.state {
            State::Prefix { have, .. } => *have > 0,
            State::Body { .. } | State::Ready(_) => true,
            State::Failed(_) => false,
        }
    }

    /// For a large body still missing: a window of the body buffer to read into directly
    /// (skipping a copy through a read buffer); report what was read with [`Self::commit`].
    /// `None` when no large body is being assembled. The window never reaches past the
    /// announced length, and grows with what arrives.
    pub fn body_window(&mut self) -> Option<&mut [u8]> {
        let State::Body { body, need } = &mut self.state else {
            return None;
        };
        let start = self.window.unwrap_or(body.len());
        let missing = *need - start;
        if missing < WINDOW_MIN {
            return None;
        }
        body.truncate(start);
        // Use the room already reserved; past it, grow by at least 64 KiB.
        let chunk = missing.min((body.capacity() - start).max(64 * 1024));
        grow(body, *need, chunk);
        body.resize(start + chunk, 0);
        self.window = Some(start);
        Some(&mut body[start..])
    }

    /// `n` bytes were written at the start of the last [`Self::body_window`].
    pub fn commit(&mut self, n: usize) {
        let Some(start) = self.window.take() else {
            return;
        };
        let State::Body { body, need } = &mut self.state else {
            return;
        };
        body.truncate(start + n.min(body.len() - start));
        if body.len() == *need {
            self.state = State::Ready(std::mem::take(body));
        }
    }
}

/// Ensure room for `n` more bytes without ever reserving past `need` (Vec's own doubling could).
fn grow(body: &mut Vec<u8>, need: usize, n: usize) {
    let want = body.len() + n;
    if want <= body.capacity() {
        return;
    }
    let target = want.max(body.capacity() * 2).min(need);
    body.reserve_exact(target - body.len());
}
