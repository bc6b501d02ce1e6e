//! The receiving state of a QUIC link's streams and datagrams (docs/network.md section 7),
//! fed by the link's watcher (`inbound.rs`): each edge stream's decoder, the control stream's,
//! the barrier markers the edge streams reach (wire.md section 5), and the decoding of a
//! datagram.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::{Buf, Bytes};
use parking_lot::Mutex;

use super::streams::{parse_barrier, BEST_EFFORT_TAG, CLASSES};
use crate::payload::WriterId;
use crate::wire::parts::Joiner;
use crate::wire::{EdgeId, Frame, FrameDecoder, MAX_FRAME};

/// The receiving side's view of the peer's edge streams: the newest barrier marker each
/// reliable stream has handed to the graph, and the newest best-effort sample of each writer
/// and edge handed up from a best-effort stream.
#[derive(Default)]
pub(crate) struct Markers {
    seen: [AtomicU64; CLASSES],
    /// Reliable stream tags already opened by the peer (each once per link).
    opened: Mutex<u8>,
    /// Best-effort samples go on a stream each (`streams.rs`), read side by side: the newest
    /// sequence handed up per edge and writer, so that an older one finishing later is dropped
    /// rather than handed up after a newer one (a KEEP_LAST(1) reader would keep the stale
    /// one), as a DDS best-effort reader drops a sample older than one it has.
    best_effort: Mutex<HashMap<(EdgeId, WriterId), u64>>,
    /// Best-effort samples dropped so, as older than one handed up.
    stale: AtomicU64,
}

/// Past this many edges and writers the best-effort order starts again: a writer gone leaves its
/// entry behind, and the order is a courtesy of best effort, not a promise.
const BEST_EFFORT_WRITERS: usize = 4096;

impl Markers {
    /// A best-effort stream's DELIVERY of `edge` by `writer` numbered `sequence`: false if a
    /// newer one of theirs was handed up already (dropped, counted).
    pub(crate) fn fresh(&self, edge: EdgeId, writer: WriterId, sequence: u64) -> bool {
        let mut order = self.best_effort.lock();
        if order.len() >= BEST_EFFORT_WRITERS && !order.contains_key(&(edge, writer)) {
            order.clear();
        }
        let newest = order.entry((edge, writer)).or_insert(0);
        if sequence <= *newest {
            self.stale.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        *newest = sequence;
        true
    }

    /// Best-effort samples dropped on arrival as older than one handed up.
    pub(crate) fn stale(&self) -> u64 {
        self.stale.load(Ordering::Relaxed)
    }

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
    }

    /// The newest marker the stream of `class` handed up.
    pub(crate) fn seen_of(&self, class: u8) -> u64 {
        self.seen[usize::from(class)].load(Ordering::Acquire)
    }
}

/// One datagram to a frame: exactly one length-prefixed DELIVERY filling the datagram
/// (wire.md section 1's framing; network.md section 7). Anything else is malformed.
///
/// The frame's body is copied out of the datagram, into a block of the buffer pool, before it
/// is decoded: the datagram is a slice of the whole GRO receipt it came in (`engine/udp.rs`
/// `datagrams`), and a payload sharing it would keep all of that receipt (up to 64 KiB) alive
/// for as long as a ring keeps the sample. A datagram is one packet, so the copy is small.
pub fn decode_datagram(d: &Bytes) -> Result<Frame, String> {
    use crate::payload::buffer;
    use crate::wire::{codec::LEN_PREFIX, decode_payload};
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
    let body = &d[LEN_PREFIX..];
    let mut own = buffer::global().take(body.len());
    own.as_mut_slice().copy_from_slice(body);
    match decode_payload(&own.freeze(body.len())).map_err(|e| e.to_string())? {
        f @ Frame::Delivery { .. } => Ok(f),
        other => Err(format!("a datagram carries only DELIVERY, not {other:?}")),
    }
}

/// The receiving state of one edge stream, fed with the chunks the stream gives (by the link's
/// watcher, `inbound.rs`): its tag, its decoder, and the parts of a message being joined (they
/// travel on one reliable stream, `QuicLink`'s sends).
pub(crate) struct EdgeRx {
    /// The stream's tag, once its first byte came.
    tag: Option<u8>,
    dec: FrameDecoder,
    joiner: Joiner,
}

impl Default for EdgeRx {
    fn default() -> EdgeRx {
        EdgeRx {
            tag: None,
            dec: FrameDecoder::new(MAX_FRAME),
            joiner: Joiner::default(),
        }
    }
}

impl EdgeRx {
    /// The next frame for the handler from `pending` (taken as far as needed; `Ok(None)`: it
    /// is used up and more is needed). Markers of a reliable stream are noted in `markers`,
    /// never handed up. `Err`: the stream is malformed (the link answers ERROR and closes).
    pub(crate) fn next(
        &mut self,
        pending: &mut Bytes,
        markers: &Markers,
    ) -> Result<Option<Frame>, String> {
        let tag = match self.tag {
            Some(tag) => tag,
            None => {
                let Some(&tag) = pending.first() else {
                    return Ok(None);
                };
                pending.advance(1);
                if usize::from(tag) >= 2 * CLASSES {
                    return Err(format!("unknown stream tag {tag}"));
                }
                if tag < BEST_EFFORT_TAG && !markers.open(tag) {
                    return Err(format!("a second reliable stream of class {tag}"));
                }
                self.tag = Some(tag);
                tag
            }
        };
        let reliable = tag < BEST_EFFORT_TAG;
        loop {
            let n = self.dec.push(pending);
            pending.advance(n);
            match self.joiner.pop(&mut self.dec) {
                Ok(Some(Frame::Ping { nonce })) if reliable => markers.reached(tag, nonce),
                Ok(Some(Frame::Delivery { edge, meta, .. }))
                    if !reliable && !markers.fresh(edge, meta.writer, meta.sequence) => {}
                Ok(Some(frame)) if carried(&frame, reliable) => return Ok(Some(frame)),
                Ok(Some(other)) => return Err(format!("an edge stream carries no {other:?}")),
                Ok(None) if pending.is_empty() => return Ok(None),
                Ok(None) => {}
                Err(e) => return Err(e.to_string()),
            }
        }
    }
}

/// What the control stream has for its reader, besides frames for the handler.
pub(crate) enum Control {
    /// A frame for the handler (learned by the sending side first: `Outgoing::learn`).
    Frame(Frame),
    /// A barrier: the frames after it wait until the named reliable streams have handed up
    /// marker `number` (wire.md section 5).
    Barrier { number: u64, classes: u8 },
    /// The peer's PING, to answer with PONG.
    Ping(u64),
}

/// The receiving state of a link's control stream after the HELLO exchange, fed chunk by
/// chunk as `EdgeRx`: its decoder (the handshake's, with its frame bound raised) and the parts
/// of a message on an edge the peer made before we knew its stream.
pub(crate) struct ControlRx {
    dec: FrameDecoder,
    joiner: Joiner,
}

impl ControlRx {
    pub(crate) fn new(dec: FrameDecoder) -> ControlRx {
        ControlRx {
            dec,
            joiner: Joiner::default(),
        }
    }

    /// The next item from `pending` (`Ok(None)`: used up, more needed). PONG is dropped (this
    /// transport never needs it); `Err`: malformed (a HELLO after the handshake, a bad frame).
    pub(crate) fn next(&mut self, pending: &mut Bytes) -> Result<Option<Control>, String> {
        loop {
            let n = self.dec.push(pending);
            pending.advance(n);
            match self.joiner.pop(&mut self.dec) {
                Ok(Some(Frame::Ping { nonce })) => {
                    return Ok(Some(match parse_barrier(nonce) {
                        Some((number, classes)) => Control::Barrier { number, classes },
                        None => Control::Ping(nonce),
                    }))
                }
                Ok(Some(Frame::Pong { .. })) => {}
                Ok(Some(Frame::Hello { .. })) => return Err("HELLO after the handshake".into()),
                Ok(Some(frame)) => return Ok(Some(Control::Frame(frame))),
                Ok(None) if pending.is_empty() => return Ok(None),
                Ok(None) => {}
                Err(e) => return Err(e.to_string()),
            }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::encode_parts;

    fn bytes_of(frames: &[Frame]) -> Vec<u8> {
        let mut v = Vec::new();
        for f in frames {
            let e = encode_parts(f, MAX_FRAME).unwrap();
            v.extend_from_slice(&e.head);
            if let Some(p) = e.payload {
                v.extend_from_slice(&p);
            }
        }
        v
    }

    /// Everything `rx` hands up from `stream` given one byte at a time (the worst split).
    fn feed(rx: &mut EdgeRx, markers: &Markers, stream: &[u8]) -> Result<Vec<Frame>, String> {
        let mut out = Vec::new();
        for b in stream {
            let mut pending = Bytes::copy_from_slice(&[*b]);
            while let Some(f) = rx.next(&mut pending, markers)? {
                out.push(f);
            }
            assert!(pending.is_empty());
        }
        Ok(out)
    }

    #[test]
    fn a_datagram_s_delivery_owns_its_payload_and_not_the_datagram_s_memory() {
        let frame = Frame::Delivery {
            edge: 7,
            meta: crate::payload::Meta {
                source_timestamp_ns: 1,
                sequence: 2,
                writer: [3; 16],
            },
            suffix: None,
            payload: crate::payload::Payload::from(vec![9u8; 100]),
        };
        let d = Bytes::from(bytes_of(&[frame]));
        let Frame::Delivery { payload, meta, .. } = decode_datagram(&d).unwrap() else {
            panic!("not a DELIVERY");
        };
        assert_eq!((payload.as_ref(), meta.sequence), (&[9u8; 100][..], 2));
        let (at, span) = (
            payload.as_ref().as_ptr() as usize,
            d.as_ptr() as usize..d.as_ptr() as usize + d.len(),
        );
        assert!(
            !span.contains(&at),
            "the payload is a slice of the datagram"
        );
        assert!(payload.is_pooled());
        // Anything but exactly one DELIVERY filling the datagram is malformed.
        assert!(decode_datagram(&d.slice(..d.len() - 1)).is_err());
        assert!(decode_datagram(&Bytes::from(bytes_of(&[Frame::Ok { req: 1 }]))).is_err());
        assert!(decode_datagram(&Bytes::from_static(&[1, 0])).is_err());
    }

    #[test]
    fn an_edge_stream_hands_up_its_frames_in_order_and_notes_its_markers() {
        let markers = Markers::default();
        let frames = [
            Frame::Ok { req: 7 },
            Frame::Ping { nonce: 41 },
            Frame::Ok { req: 8 },
        ];
        let mut stream = vec![3u8];
        stream.extend(bytes_of(&frames));
        let got = feed(&mut EdgeRx::default(), &markers, &stream).unwrap();
        assert_eq!(got.len(), 2);
        assert!(matches!(got[0], Frame::Ok { req: 7 }));
        assert!(matches!(got[1], Frame::Ok { req: 8 }));
        assert_eq!(markers.seen[3].load(Ordering::Acquire), 41);
    }

    #[test]
    fn bad_tags_and_frames_an_edge_stream_does_not_carry_are_malformed() {
        let markers = Markers::default();
        assert!(feed(&mut EdgeRx::default(), &markers, &[16]).is_err());
        assert!(feed(&mut EdgeRx::default(), &markers, &[2]).is_ok());
        let again = feed(&mut EdgeRx::default(), &markers, &[2]);
        assert!(again.unwrap_err().contains("second reliable stream"));
        // A marker on a best-effort stream is not one: nothing carries it there.
        let mut stream = vec![8 + 2];
        stream.extend(bytes_of(&[Frame::Ping { nonce: 1 }]));
        assert!(feed(&mut EdgeRx::default(), &markers, &stream).is_err());
    }

    #[test]
    fn the_control_stream_tells_barriers_pings_and_frames_apart() {
        use super::super::streams::barrier_nonce;
        let frames = [
            Frame::Pong { nonce: 5 },
            Frame::Ping { nonce: 9 },
            Frame::Ping {
                nonce: barrier_nonce(12, 0b1000),
            },
            Frame::Ok { req: 3 },
        ];
        let mut rx = ControlRx::new(FrameDecoder::new(MAX_FRAME));
        let mut got = Vec::new();
        for b in bytes_of(&frames) {
            let mut pending = Bytes::copy_from_slice(&[b]);
            while let Some(c) = rx.next(&mut pending).unwrap() {
                got.push(c);
            }
        }
        assert_eq!(got.len(), 3);
        assert!(matches!(got[0], Control::Ping(9)));
        assert!(matches!(
            got[1],
            Control::Barrier {
                number: 12,
                classes: 0b1000
            }
        ));
        assert!(matches!(got[2], Control::Frame(Frame::Ok { req: 3 })));
        let hello = super::super::hello::hello("n", None, 1);
        let mut pending = Bytes::from(bytes_of(&[hello]));
        let mut rx = ControlRx::new(FrameDecoder::new(MAX_FRAME));
        assert!(rx.next(&mut pending).is_err());
    }
}
