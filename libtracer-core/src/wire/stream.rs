//! The streaming decoder: bytes in any fragmentation go in, whole frames come out.
//!
//! Memory is bounded by one frame: the decoder holds at most the frame being assembled, and the
//! length prefix is checked against the bound before anything is allocated for the body. A body
//! of up to `EAGER_RESERVE` (4 MiB) is reserved whole when its prefix arrives; a larger one
//! starts there and grows with the bytes that actually arrive (never past the announced
//! length), so a peer that announces a 60 MiB frame and then stalls costs 4 MiB, not 60.
//!
//! A body that fits the buffer pool's classes (up to [`crate::payload::buffer::LARGEST`], 4 MiB + 512 B)
//! is read into a block of the pool (`buffer.rs`): its payload is a slice of that block, and when
//! the last holder drops it the block is free for the next frame, already initialized, so the
//! steady path reads straight into it with no allocation, no page faults and no zeroing. A
//! pool with no free block in the class falls back to a plain allocation (counted).

use bytes::Bytes;

use super::codec::{check_frame_len, decode_payload, LEN_PREFIX};
use super::error::DecodeError;
use super::frame::Frame;
use crate::payload::buffer::{self, BufMut, BufferPool};
use crate::payload::Payload;

/// Below this many missing body bytes a direct-read window is not worth offering.
const WINDOW_MIN: usize = 16 * 1024;
/// A body past the pool's classes up to this size is reserved whole when its prefix arrives (no
/// reallocation while it fills); a larger one starts here and doubles as bytes arrive. So a
/// peer that announces a large frame and stalls costs at most this much.
pub const EAGER_RESERVE: usize = 4 << 20;

/// Where a body's bytes go.
enum Store {
    /// A pool block of `need` bytes, written in place (`filled` of them so far).
    Pooled(BufMut),
    /// Past the pool's classes: a Vec grown as the bytes arrive (`buf.len() >= filled`;
    /// `buf[filled..]` is initialized scratch, a window handed out for reading).
    Grown(Vec<u8>),
}

/// A body being assembled: `filled` of `need` bytes received.
struct Body {
    store: Store,
    filled: usize,
    need: usize,
}

impl std::fmt::Debug for Body {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Body({} of {} bytes{})",
            self.filled,
            self.need,
            if matches!(self.store, Store::Pooled(_)) {
                ", pooled"
            } else {
                ""
            }
        )
    }
}

impl Body {
    fn new(need: usize, pool: &'static BufferPool) -> Body {
        let store = if need <= buffer::LARGEST {
            Store::Pooled(pool.take(need))
        } else {
            Store::Grown(Vec::with_capacity(need.min(EAGER_RESERVE)))
        };
        Body {
            store,
            filled: 0,
            need,
        }
    }

    fn missing(&self) -> usize {
        self.need - self.filled
    }

    fn push(&mut self, data: &[u8]) -> usize {
        let n = data.len().min(self.missing());
        let end = self.filled + n;
        match &mut self.store {
            Store::Pooled(b) => b.as_mut_slice()[self.filled..end].copy_from_slice(&data[..n]),
            Store::Grown(buf) if end <= buf.len() => {
                buf[self.filled..end].copy_from_slice(&data[..n])
            }
            Store::Grown(buf) => {
                buf.truncate(self.filled);
                grow(buf, self.need, n);
                buf.extend_from_slice(&data[..n]);
            }
        }
        self.filled = end;
        n
    }

    /// Initialized room after `filled` to read into, at most up to `need`.
    fn window(&mut self) -> &mut [u8] {
        let (filled, need) = (self.filled, self.need);
        match &mut self.store {
            Store::Pooled(b) => &mut b.as_mut_slice()[filled..need],
            Store::Grown(buf) => {
                if buf.len() < need {
                    // Use the room already reserved; past it, grow by at least 64 KiB.
                    let room = buf.capacity().saturating_sub(filled).max(64 * 1024);
                    let end = need.min(filled + room);
                    if buf.len() < end {
                        buf.truncate(filled);
                        grow(buf, need, end - filled);
                        buf.resize(end, 0);
                    }
                }
                let end = need.min(buf.len());
                &mut buf[filled..end]
            }
        }
    }

    fn into_payload(self) -> Payload {
        match self.store {
            Store::Pooled(b) => b.freeze(self.need),
            Store::Grown(mut buf) => {
                buf.truncate(self.need);
                Payload::new(Bytes::from(buf))
            }
        }
    }
}

#[derive(Debug)]
enum State {
    /// Collecting the length prefix.
    Prefix { buf: [u8; LEN_PREFIX], have: usize },
    /// Collecting the body.
    Body(Body),
    /// A complete body waits for `pop`.
    Ready(Body),
    /// The framing itself is broken (bad length prefix): nothing after it can be trusted.
    Failed(DecodeError),
}

const START: State = State::Prefix {
    buf: [0; LEN_PREFIX],
    have: 0,
};

/// Streaming frame decoder. `push` bytes, `pop` frames.
///
/// `push` takes bytes only up to the end of the frame being assembled; once a frame is
/// complete it takes nothing more until that frame is popped, so the decoder never holds more
/// than one frame. A body that does not decode is returned as an error by `pop` and the decoder
/// goes on with the next frame (the framing is intact); a bad length prefix poisons it for good.
pub struct FrameDecoder {
    max_frame: u32,
    state: State,
    /// Length of the `body_window` handed out and not yet committed.
    window: usize,
    /// Body length of the last frame popped.
    last_len: usize,
    pool: &'static BufferPool,
}

impl std::fmt::Debug for FrameDecoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FrameDecoder")
            .field("max_frame", &self.max_frame)
            .field("state", &self.state)
            .finish()
    }
}

impl FrameDecoder {
    /// A decoder that rejects any frame announcing more than `max_frame` body bytes.
    pub fn new(max_frame: u32) -> Self {
        FrameDecoder::with_pool(max_frame, buffer::global())
    }

    /// A decoder whose bodies come from `pool` (tests use their own).
    pub fn with_pool(max_frame: u32, pool: &'static BufferPool) -> Self {
        FrameDecoder {
            max_frame,
            state: START,
            window: 0,
            last_len: 0,
            pool,
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
        self.window = 0;
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
                            Ok(len) => State::Body(Body::new(len as usize, self.pool)),
                            Err(e) => State::Failed(e),
                        };
                    }
                }
                State::Body(body) => {
                    taken += body.push(rest);
                    self.finish_body();
                }
                State::Ready(_) | State::Failed(_) => break,
            }
        }
        taken
    }

    fn finish_body(&mut self) {
        if matches!(&self.state, State::Body(b) if b.missing() == 0) {
            if let State::Body(b) = std::mem::replace(&mut self.state, START) {
                self.state = State::Ready(b);
            }
        }
    }

    /// Take the next complete frame, if one is assembled.
    pub fn pop(&mut self) -> Result<Option<Frame>, DecodeError> {
        match &self.state {
            State::Ready(_) => {
                let State::Ready(body) = std::mem::replace(&mut self.state, START) else {
                    unreachable!()
                };
                self.last_len = body.need;
                decode_payload(&body.into_payload()).map(Some)
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

    /// Body length of the last frame popped (a reader can tell large-frame traffic by it).
    pub fn last_frame_len(&self) -> usize {
        self.last_len
    }

    /// Whether the decoder is in the middle of a frame (a clean end of stream has none).
    pub fn is_mid_frame(&self) -> bool {
        match &self.state {
            State::Prefix { have, .. } => *have > 0,
            State::Body(_) | State::Ready(_) => true,
            State::Failed(_) => false,
        }
    }

    /// For a large body still missing: a window of the body buffer to read into directly
    /// (skipping a copy through a read buffer); report what was read with [`Self::commit`].
    /// `None` when no large body is being assembled. The window never reaches past the
    /// announced length.
    pub fn body_window(&mut self) -> Option<&mut [u8]> {
        let State::Body(body) = &mut self.state else {
            return None;
        };
        if body.missing() < WINDOW_MIN {
            return None;
        }
        let w = body.window();
        self.window = w.len();
        Some(w)
    }

    /// `n` bytes were written at the start of the last [`Self::body_window`].
    pub fn commit(&mut self, n: usize) {
        let n = n.min(std::mem::take(&mut self.window));
        if let State::Body(body) = &mut self.state {
            body.filled += n;
            self.finish_body();
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::payload::{Meta, Payload};
    use crate::wire::codec::encode;

    fn delivery(n: usize, byte: u8) -> Frame {
        Frame::Delivery {
            edge: 1,
            meta: Meta::default(),
            suffix: None,
            payload: Payload::from(vec![byte; n]),
        }
    }

    fn read_through_windows(dec: &mut FrameDecoder, bytes: &[u8]) -> Frame {
        let mut pos = dec.push(&bytes[..64]);
        while pos < bytes.len() {
            match dec.body_window() {
                Some(w) => {
                    let n = w.len().min(bytes.len() - pos);
                    w[..n].copy_from_slice(&bytes[pos..pos + n]);
                    dec.commit(n);
                    pos += n;
                }
                None => pos += dec.push(&bytes[pos..]),
            }
        }
        dec.pop().unwrap().unwrap()
    }

    #[test]
    fn large_frame_buffers_are_reused_once_released() {
        // A pool of its own: another test's frames cannot take the released buffer first.
        let pool: &'static BufferPool = Box::leak(Box::default());
        let mut dec = FrameDecoder::with_pool(crate::wire::MAX_FRAME, pool);
        let (one, two) = (
            encode(&delivery(1 << 20, 1)).unwrap(),
            encode(&delivery(1 << 20, 2)).unwrap(),
        );
        let f1 = read_through_windows(&mut dec, &one);
        let Frame::Delivery { payload: p1, .. } = &f1 else {
            panic!()
        };
        let ptr1 = p1.as_ref().as_ptr();
        // While the first payload lives, the second frame gets another buffer.
        let f2 = read_through_windows(&mut dec, &two);
        let Frame::Delivery { payload: p2, .. } = &f2 else {
            panic!()
        };
        assert_ne!(p2.as_ref().as_ptr(), ptr1);
        assert!(p2.as_ref().iter().all(|b| *b == 2));
        drop(f1);
        // Released: the next frame reads straight into it, and sees only its own bytes.
        let f3 = read_through_windows(&mut dec, &one);
        let Frame::Delivery { payload: p3, .. } = &f3 else {
            panic!()
        };
        assert_eq!(p3.as_ref().as_ptr(), ptr1);
        assert!(p3.as_ref().iter().all(|b| *b == 1));
        assert_eq!(f3, delivery(1 << 20, 1));
    }
}
