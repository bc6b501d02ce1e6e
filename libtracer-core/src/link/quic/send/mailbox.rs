//! The best-effort stream of one class on the engine (docs/network.md section 7, "Best-effort
//! edges"): a best-effort sample too large for a datagram waits in a one-sample mailbox, a
//! newer one replaces it (counted), and one half written when a newer comes is abandoned: its
//! stream is reset (counted; the receiver drops the cut frame) and the newer goes on a new
//! stream. Each sample has a stream of its own, finished once the sample is written, so a
//! reset never takes a whole sample with it. Each stream starts with the tag `8 + class`. A
//! best-effort send never waits.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;

use bytes::Bytes;
use quinn_proto::{Connection, Dir, StreamId, VarInt, WriteError};

use super::super::streams::{Shed, BEST_EFFORT_TAG};
use crate::wire::EncodedFrame;

pub(super) struct Mailbox {
    class: u8,
    /// The newest sample not started yet.
    next: Option<EncodedFrame>,
    /// The stream the samples go on, and whether its tag went.
    stream: Option<(StreamId, bool)>,
    /// What is left of the sample being written.
    chunks: VecDeque<Bytes>,
}

impl Mailbox {
    pub(super) fn new(class: u8) -> Mailbox {
        Mailbox {
            class,
            next: None,
            stream: None,
            chunks: VecDeque::new(),
        }
    }

    /// A newer sample: it replaces the one waiting, and abandons the one half written.
    pub(super) fn offer(&mut self, conn: &mut Connection, enc: EncodedFrame, shed: &Shed) {
        if self.next.replace(enc).is_some() {
            shed.replaced.fetch_add(1, Ordering::Relaxed);
        }
        if !self.chunks.is_empty() {
            if let Some((id, _)) = self.stream.take() {
                let _ = conn.send_stream(id).reset(VarInt::from_u32(0));
            }
            self.chunks.clear();
            shed.abandoned.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Write what the stream takes: the rest of the sample in progress, then the waiting one.
    pub(super) fn pump(&mut self, conn: &mut Connection) {
        loop {
            if self.chunks.is_empty() {
                let Some(enc) = self.next.take() else {
                    return;
                };
                self.chunks.push_back(Bytes::from(enc.head));
                if let Some(p) = enc.payload {
                    self.chunks.push_back(p);
                }
            }
            let (id, tagged) = match self.stream {
                Some(s) => s,
                None => {
                    // At the peer's stream limit: tried again at the next progress.
                    let Some(id) = conn.streams().open(Dir::Uni) else {
                        return;
                    };
                    let _ = conn.send_stream(id).set_priority(2 * i32::from(self.class));
                    self.stream = Some((id, false));
                    (id, false)
                }
            };
            if !tagged {
                match conn.send_stream(id).write(&[BEST_EFFORT_TAG + self.class]) {
                    Ok(1) => self.stream = Some((id, true)),
                    _ => return,
                }
            }
            match conn
                .send_stream(id)
                .write_chunks(self.chunks.make_contiguous())
            {
                Ok(w) => {
                    while self.chunks.front().is_some_and(Bytes::is_empty) {
                        self.chunks.pop_front();
                    }
                    if self.chunks.is_empty() {
                        // Whole: its stream is finished and the next sample takes a new one,
                        // since a reset drops everything on its stream not yet acknowledged,
                        // and would lose this sample uncounted with the newer half written.
                        let _ = conn.send_stream(id).finish();
                        self.stream = None;
                    } else if w.bytes == 0 {
                        return;
                    }
                }
                Err(WriteError::Blocked) => return,
                // The peer stopped the stream: the sample is lost, as best effort may be; the
                // next goes on a new stream.
                Err(_) => {
                    self.stream = None;
                    self.chunks.clear();
                }
            }
        }
    }
}
