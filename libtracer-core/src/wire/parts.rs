//! Messages of any size (docs/wire.md, "Messages of any size"): a DELIVERY whose payload does
//! not fit one frame of the peer's bound goes as DELIVERY_PART frames, in order on its edge
//! (`split`), and the receiving link joins them into one DELIVERY (`Joiner`). Pure, like the
//! rest of `wire`: the links call it.

use std::collections::HashMap;

use crate::payload::{Meta, Payload};
use crate::wire::codec::{encode_head, LEN_PREFIX};
use crate::wire::error::{DecodeError, EncodeError};
use crate::wire::frame::{EdgeId, Frame, Part};
use crate::wire::stream::FrameDecoder;

/// The largest message a link joins, and the most bytes of unfinished messages it holds at
/// once: a part announcing more is refused (`Joined::Refused`), and its message with it.
pub const MAX_JOINED: u64 = 4 << 30;

/// The most bytes of one DELIVERY_PART (head included), whatever the peer's bound: a link
/// sees its peer take each part, so a message of hundreds of megabytes shows progress every few
/// milliseconds (a Unix link's liveness check waits 900 ms for a sign of life).
pub const PART_FRAME: u32 = 8 << 20;

/// Whether `frame` may be too large for one frame of `max_frame` (a cheap test on the data
/// path: only then is `split` worth calling).
pub fn may_split(frame: &Frame, max_frame: u32) -> bool {
    matches!(frame, Frame::Delivery { payload, .. }
        if payload.len() + 2 * crate::wire::MAX_PATH > max_frame as usize)
}

/// The DELIVERY_PART frames that carry `frame` (a DELIVERY) within `max_frame` (and
/// [`PART_FRAME`]), or None when it fits one frame of `max_frame` as it is. Each part's chunk shares the payload's memory. A message above
/// `MAX_JOINED` is refused (`FrameTooLarge`): no receiver would join it.
pub fn split(frame: &Frame, max_frame: u32) -> Result<Option<Vec<Frame>>, EncodeError> {
    let Frame::Delivery {
        edge,
        meta,
        suffix,
        payload,
    } = frame
    else {
        return Ok(None);
    };
    let mut head = Vec::new();
    match encode_head(frame, max_frame, &mut head) {
        Ok(_) => return Ok(None),
        Err(EncodeError::FrameTooLarge { .. }) => {}
        Err(e) => return Err(e),
    }
    let max_frame = max_frame.min(PART_FRAME);
    let total = payload.len() as u64;
    if total > MAX_JOINED {
        return Err(EncodeError::FrameTooLarge {
            len: total,
            max: max_frame,
        });
    }
    // Part 0 has the longest head (META, SUFFIX); a chunk is what is left of the bound beside it.
    let first = |chunk: Payload, count: u32| Frame::DeliveryPart {
        edge: *edge,
        part: Part {
            index: 0,
            count,
            total,
        },
        meta: Some(*meta),
        suffix: suffix.clone(),
        chunk,
    };
    encode_head(&first(Payload::default(), 2), max_frame, &mut head)?;
    let room = (max_frame as usize).saturating_sub(head.len() - LEN_PREFIX + 8);
    if room == 0 {
        return Err(EncodeError::FrameTooLarge {
            len: head.len() as u64,
            max: max_frame,
        });
    }
    let len = payload.len();
    let count = len.div_ceil(room);
    let count = u32::try_from(count).map_err(|_| EncodeError::FrameTooLarge {
        len: total,
        max: max_frame,
    })?;
    let parts = (0..count)
        .map(|i| {
            let at = i as usize * room;
            let chunk = payload.slice(at..(at + room).min(len));
            if i == 0 {
                return first(chunk, count);
            }
            Frame::DeliveryPart {
                edge: *edge,
                part: Part {
                    index: i,
                    count,
                    total,
                },
                meta: None,
                suffix: None,
                chunk,
            }
        })
        .collect();
    Ok(Some(parts))
}

/// What a DELIVERY_PART made of its message.
#[derive(Debug)]
pub enum Joined {
    /// Waiting for more parts.
    More,
    /// The last part came: the whole DELIVERY (boxed: a frame is large beside the others, and
    /// this comes once per message of megabytes).
    Whole(Box<Frame>),
    /// A part of a message above `MAX_JOINED` (or that would take this link past it): the
    /// message is refused and its parts dropped as they come. A sender of this version never
    /// sends one (`split` refuses it first).
    Dropped,
}

/// One message being joined.
struct Partial {
    part: Part,
    meta: Meta,
    suffix: Option<String>,
    /// Empty for a refused message (its parts are counted, not kept).
    bytes: Vec<u8>,
    refused: bool,
}

/// The messages a link is joining, one per edge at most (parts of two messages never
/// interleave on an edge).
#[derive(Default)]
pub struct Joiner {
    open: HashMap<EdgeId, Partial>,
    /// `total` of the open messages that are kept.
    held: u64,
}

impl Joiner {
    /// `frame` as the link's handler should see it: a DELIVERY_PART is taken in (None, unless
    /// it was the last of its message: then the whole DELIVERY); any other frame as it is.
    pub fn take(&mut self, frame: Frame) -> Result<Option<Frame>, DecodeError> {
        let Frame::DeliveryPart {
            edge,
            part,
            meta,
            suffix,
            chunk,
        } = frame
        else {
            return Ok(Some(frame));
        };
        Ok(match self.push(edge, part, meta, suffix, chunk.as_ref())? {
            Joined::Whole(whole) => Some(*whole),
            Joined::More | Joined::Dropped => None,
        })
    }

    /// The next frame of `dec` for the handler (`take`), parts joined: None when `dec` holds
    /// no complete frame.
    pub fn pop(&mut self, dec: &mut FrameDecoder) -> Result<Option<Frame>, DecodeError> {
        while let Some(frame) = dec.pop()? {
            if let Some(f) = self.take(frame)? {
                return Ok(Some(f));
            }
        }
        Ok(None)
    }

    /// Take one DELIVERY_PART. A part out of order, a count or total that changes on the way,
    /// or chunks that overrun the total are malformed (the link closes, as for any malformed
    /// frame).
    pub fn push(
        &mut self,
        edge: EdgeId,
        part: Part,
        meta: Option<Meta>,
        suffix: Option<String>,
        chunk: &[u8],
    ) -> Result<Joined, DecodeError> {
        if part.index == 0 {
            if self.open.contains_key(&edge) {
                return Err(bad(0));
            }
            let meta = meta.ok_or(DecodeError::MissingTlv {
                frame: "DELIVERY_PART",
                tlv: "META",
            })?;
            let refused = part.total > MAX_JOINED || self.held + part.total > MAX_JOINED;
            let bytes = if refused {
                Vec::new()
            } else {
                self.held += part.total;
                // Reserved, not touched: pages come as chunks are written into them.
                Vec::with_capacity(part.total as usize)
            };
            self.open.insert(
                edge,
                Partial {
                    part,
                    meta,
                    suffix,
                    bytes,
                    refused,
                },
            );
        }
        self.step(edge, part, chunk)
    }

    /// Add a chunk of the message open on `edge`.
    fn step(&mut self, edge: EdgeId, part: Part, chunk: &[u8]) -> Result<Joined, DecodeError> {
        let p = self.open.get_mut(&edge).ok_or(bad(u64::from(part.index)))?;
        let expected = if part.index == 0 { 0 } else { p.part.index + 1 };
        if part.index != expected || part.count != p.part.count || part.total != p.part.total {
            return Err(bad(u64::from(part.index)));
        }
        p.part.index = part.index;
        if !p.refused {
            if p.bytes.len() as u64 + chunk.len() as u64 > p.part.total {
                return Err(bad(p.part.total));
            }
            p.bytes.extend_from_slice(chunk);
        }
        if part.index + 1 < part.count {
            return Ok(if p.refused {
                Joined::Dropped
            } else {
                Joined::More
            });
        }
        let p = self.open.remove(&edge).expect("open");
        if p.refused {
            return Ok(Joined::Dropped);
        }
        self.held -= p.part.total;
        if p.bytes.len() as u64 != p.part.total {
            return Err(bad(p.part.total));
        }
        Ok(Joined::Whole(Box::new(Frame::Delivery {
            edge,
            meta: p.meta,
            suffix: p.suffix,
            payload: Payload::from(p.bytes),
        })))
    }
}

/// A part that breaks the rules of its message (`what`: the index or total that did).
fn bad(what: u64) -> DecodeError {
    DecodeError::BadValue {
        field: "PART",
        value: what,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{decode, encode};

    fn delivery(len: usize, suffix: Option<&str>) -> Frame {
        Frame::Delivery {
            edge: 9,
            meta: Meta {
                sequence: 4,
                ..Meta::default()
            },
            suffix: suffix.map(str::to_string),
            payload: (0..len).map(|i| (i * 13) as u8).collect::<Vec<u8>>().into(),
        }
    }

    /// Through the codec and a joiner, as a link does.
    fn round_trip(frame: &Frame, max: u32) -> (usize, Vec<Frame>) {
        let parts = split(frame, max).unwrap().unwrap();
        let mut j = Joiner::default();
        let mut out = Vec::new();
        for p in &parts {
            let bytes = encode(p).unwrap();
            assert!(
                bytes.len() - LEN_PREFIX <= max as usize,
                "a part fits its bound"
            );
            let (back, _) = decode(&bytes, max).unwrap();
            out.extend(j.take(back).unwrap());
        }
        (parts.len(), out)
    }

    #[test]
    fn a_frame_that_fits_is_not_split() {
        assert!(split(&delivery(100, None), 4096).unwrap().is_none());
        assert!(split(&Frame::Ok { req: 1 }, 4096).unwrap().is_none());
    }

    #[test]
    fn parts_join_into_the_delivery_whatever_the_sizes() {
        for (len, max, suffix) in [
            (4097, 4096, None),
            (10_000, 1024, Some("/camera/image")),
            (3 * 4000, 4096, None),
            (1 << 20, 70_000, Some("/a")),
        ] {
            let f = delivery(len, suffix);
            let (n, out) = round_trip(&f, max);
            assert!(n >= 2);
            assert_eq!(out, vec![f], "{len} bytes within {max}");
        }
    }

    #[test]
    fn parts_out_of_order_or_inconsistent_are_malformed() {
        let f = delivery(10_000, None);
        let parts = split(&f, 1024).unwrap().unwrap();
        let take = |order: &[usize]| {
            let mut j = Joiner::default();
            order
                .iter()
                .map(|&i| j.take(parts[i].clone()))
                .collect::<Result<Vec<_>, _>>()
        };
        assert!(take(&[1]).is_err(), "no part 0 first");
        assert!(take(&[0, 2]).is_err(), "a part skipped");
        assert!(take(&[0, 0]).is_err(), "a second part 0 while one is open");
        let mut j = Joiner::default();
        j.take(parts[0].clone()).unwrap();
        let Frame::DeliveryPart {
            edge, part, chunk, ..
        } = parts[1].clone()
        else {
            unreachable!()
        };
        let changed = Part {
            total: part.total + 1,
            ..part
        };
        assert!(j.push(edge, changed, None, None, chunk.as_ref()).is_err());
        // Chunks longer than the total announced.
        let mut j = Joiner::default();
        j.take(parts[0].clone()).unwrap();
        let long = vec![0u8; part.total as usize];
        assert!(j.push(edge, part, None, None, &long).is_err());
    }

    #[test]
    fn a_message_above_the_bound_is_refused_on_both_sides() {
        let over = Part {
            index: 0,
            count: 2,
            total: MAX_JOINED + 1,
        };
        let mut j = Joiner::default();
        let meta = Some(Meta::default());
        assert!(matches!(
            j.push(1, over, meta, None, b"x"),
            Ok(Joined::Dropped)
        ));
        let last = Part { index: 1, ..over };
        assert!(matches!(
            j.push(1, last, None, None, b"y"),
            Ok(Joined::Dropped)
        ));
        // The edge is free again for the next message.
        let small = Part {
            index: 0,
            count: 2,
            total: 2,
        };
        assert!(matches!(
            j.push(1, small, meta, None, b"a"),
            Ok(Joined::More)
        ));
        let end = Part { index: 1, ..small };
        assert!(matches!(
            j.push(1, end, None, None, b"b"),
            Ok(Joined::Whole(_))
        ));
    }
}
