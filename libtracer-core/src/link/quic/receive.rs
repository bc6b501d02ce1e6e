//! The receiving side of a QUIC link's edge streams and datagrams (docs/network.md section 7):
//! the readers that hand their frames to the link's dispatcher, the barrier markers they
//! reach (wire.md section 5), and the decoding of a datagram.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, Bytes};
use parking_lot::Mutex;
use tokio::sync::Notify;

use super::link::{Event, QuicLink, ToDispatcher, READ_CHUNK};
use super::streams::{BEST_EFFORT_TAG, CLASSES};
use crate::wire::parts::Joiner;
use crate::wire::{Frame, FrameDecoder, MAX_FRAME};

/// The receiving side's view of the peer's barriers: the newest marker each reliable stream
/// has handed to the graph.
#[derive(Default)]
pub(crate) struct Markers {
    seen: [AtomicU64; CLASSES],
    /// Reliable stream tags already opened by the peer (each once per link).
    opened: Mutex<u8>,
    changed: Notify,
}

impl Markers {
    /// A reliable stream of `class` was opened; false if one was already (malformed).
    pub(crate) fn open(&self, class: u8) -> bool {
        let mut o = self.opened.lock();
        let bit = 1u8 << class;
        let fresh = *o & bit == 0;
        *o |= bit;
        fresh
    }

    /// The stream of `class` handed up every frame before marker `number`.
    pub(crate) fn reached(&self, class: u8, number: u64) {
        self.seen[usize::from(class)].fetch_max(number, Ordering::AcqRel);
        self.changed.notify_waiters();
    }

    /// Wait until every class in `classes` has reached `number`, or `deadline`: false then.
    pub(crate) async fn wait(&self, number: u64, classes: u8, deadline: Duration) -> bool {
        let until = tokio::time::Instant::now() + deadline;
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let done = (0..CLASSES)
                .filter(|c| classes & (1 << c) != 0)
                .all(|c| self.seen[c].load(Ordering::Acquire) >= number);
            if done {
                return true;
            }
            if tokio::time::timeout_at(until, changed).await.is_err() {
                return false;
            }
        }
    }
}

/// One datagram to a frame: exactly one length-prefixed DELIVERY filling the datagram
/// (wire.md section 1's framing; network.md section 7). Anything else is malformed.
pub fn decode_datagram(d: &Bytes) -> Result<Frame, String> {
    use crate::wire::{codec::LEN_PREFIX, decode_body};
    let Some(prefix) = d.get(..LEN_PREFIX) else {
        return Err(format!(
            "datagram of {} bytes has no length prefix",
            d.len()
        ));
    };
    let len = u32::from_le_bytes(prefix.try_into().expect("4 bytes")) as usize;
    if len != d.len() - LEN_PREFIX {
        return Err(format!(
            "datagram of {} bytes announces a frame of {len}",
            d.len()
        ));
    }
    match decode_body(&d.slice(LEN_PREFIX..)).map_err(|e| e.to_string())? {
        f @ Frame::Delivery { .. } => Ok(f),
        other => Err(format!("a datagram carries only DELIVERY, not {other:?}")),
    }
}

/// Accept the peer's edge streams (unidirectional, `streams.rs`) while the link lives.
pub(super) async fn accept_streams(link: Arc<QuicLink>, tx: ToDispatcher) {
    let mut closing = link.closing.subscribe();
    loop {
        let r = tokio::select! {
            r = link.conn.accept_uni() => r,
            _ = closing.wait_for(|c| *c) => break,
        };
        let Ok(recv) = r else { break };
        link.rt.spawn(read_stream(link.clone(), recv, tx.clone()));
    }
}

/// One edge stream: its tag byte, then frames of edges (DELIVERY, STRUCTURE, the answer to a
/// SUBSCRIBE), barrier markers and, on a reliable stream, WRITEs (wire.md section 5, ruling 3). A best-effort stream reset by its sender ends quietly, with
/// the frame it was cut in dropped.
async fn read_stream(link: Arc<QuicLink>, mut recv: quinn::RecvStream, tx: ToDispatcher) {
    let mut closing = link.closing.subscribe();
    let malformed = |why: String| Event::Malformed(link.clone(), why);
    let first = tokio::select! {
        r = recv.read_chunk(READ_CHUNK, true) => r,
        _ = closing.wait_for(|c| *c) => return,
    };
    let mut pending = match first {
        Ok(Some(c)) => c.bytes,
        _ => return,
    };
    let Some(&tag) = pending.first() else { return };
    pending.advance(1);
    let reliable = tag < BEST_EFFORT_TAG;
    if usize::from(tag) >= 2 * CLASSES {
        tx.post(malformed(format!("unknown stream tag {tag}")))
            .await;
        return;
    }
    if reliable && !link.markers.open(tag) {
        let why = format!("a second reliable stream of class {tag}");
        tx.post(malformed(why)).await;
        return;
    }
    let mut dec = FrameDecoder::new(MAX_FRAME);
    // The parts of a message travel on one reliable stream (`QuicLink::send_in_parts`).
    let mut joiner = Joiner::default();
    loop {
        loop {
            let n = dec.push(&pending);
            pending.advance(n);
            match joiner.pop(&mut dec) {
                Ok(Some(Frame::Ping { nonce })) if reliable => link.markers.reached(tag, nonce),
                Ok(Some(frame)) if carried(&frame, reliable) => {
                    if !tx.frame(&link, frame).await {
                        return;
                    }
                }
                Ok(Some(other)) => {
                    let why = format!("an edge stream carries no {other:?}");
                    tx.post(malformed(why)).await;
                    return;
                }
                Ok(None) if pending.is_empty() => break,
                Ok(None) => {}
                Err(e) => {
                    tx.post(malformed(e.to_string())).await;
                    return;
                }
            }
            if *closing.borrow() {
                return;
            }
        }
        // Biased, as the control stream's reader (`link::read_loop`).
        tokio::select! {
            biased;
            r = recv.read_chunk(READ_CHUNK, true) => match r {
                Ok(Some(c)) => pending = c.bytes,
                // Finished, reset (best effort abandoned a sample) or the connection went:
                // the control stream's reader reports a lost link.
                Ok(None) | Err(_) => return,
            },
            _ = closing.wait_for(|c| *c) => return,
        }
    }
}

/// Whether an edge stream may carry `frame` (the sender's routes, `streams.rs`).
fn carried(frame: &Frame, reliable: bool) -> bool {
    match frame {
        Frame::Delivery { .. }
        | Frame::Structure { .. }
        | Frame::Ok { .. }
        | Frame::Error { .. } => true,
        Frame::Write { .. } => reliable,
        _ => false,
    }
}

/// The peer's datagrams: one best-effort DELIVERY each (`streams::decode_datagram`).
pub(super) async fn read_datagrams(link: Arc<QuicLink>, tx: ToDispatcher) {
    let mut closing = link.closing.subscribe();
    loop {
        // Biased (no random pick per datagram), the close first: nothing else checks it here.
        let r = tokio::select! {
            biased;
            _ = closing.wait_for(|c| *c) => return,
            r = link.conn.read_datagram() => r,
        };
        let Ok(d) = r else { return };
        match decode_datagram(&d) {
            Ok(frame) => {
                if !tx.frame(&link, frame).await {
                    return;
                }
            }
            Err(why) => {
                tx.post(Event::Malformed(link.clone(), why)).await;
                return;
            }
        }
    }
}
