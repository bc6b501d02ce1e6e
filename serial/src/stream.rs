//! Per-endpoint streams of the host session (docs/serial.md sections 3-5): the receiving side of
//! an MCU publisher (sequence reconstruction, reliable in-order acceptance, reassembly) and the
//! sending side towards an MCU subscription (sequence numbers, go-back-N window).

use std::collections::VecDeque;

use crate::frame::CDR_HEADER;

/// A message as it arrived: whole (DATA, CDATA) or one fragment (FRAG).
pub(crate) enum Piece<'a> {
    Whole(&'a [u8]),
    Frag {
        index: u8,
        total: Option<u16>,
        bytes: &'a [u8],
    },
}

/// What the session answers for a received frame.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Reply {
    None,
    Ack(u8),
    Nack(u8),
}

/// A complete message: full sequence, full CDR (header restored), best-effort messages lost
/// just before it.
pub(crate) struct Delivered {
    pub sequence: u64,
    pub payload: Vec<u8>,
    pub lost: u64,
}

/// Why a received piece was dropped, for the session's counters.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Drop {
    None,
    /// Not the next expected (reliable), a CDATA on a reliable endpoint, a fragment out of
    /// order: the normal cost of a lossy line.
    OutOfOrder,
    /// A message above the host's `max_message`.
    TooLarge,
}

struct Reassembly {
    seq_low: u8,
    next_index: u8,
    total: usize,
    buf: Vec<u8>,
}

pub(crate) struct RxStream {
    /// Next expected full sequence number.
    pub next: u64,
    reliable: bool,
    reasm: Option<Reassembly>,
    /// The expected seq last NACKed and when, so a burst of frames past a gap costs one NACK
    /// per retransmission timeout.
    last_nack: Option<(u64, u64)>,
}

impl RxStream {
    pub fn new(next: u64, reliable: bool) -> Self {
        RxStream {
            next,
            reliable,
            reasm: None,
            last_nack: None,
        }
    }

    /// Bytes held by a partial message.
    pub fn heap_bytes(&self) -> usize {
        self.reasm.as_ref().map_or(0, |r| r.buf.capacity())
    }

    fn nack(&mut self, now: u64, rto: u64) -> Reply {
        match self.last_nack {
            Some((seq, at)) if seq == self.next && now.saturating_sub(at) < rto => Reply::None,
            _ => {
                self.last_nack = Some((self.next, now));
                Reply::Nack(self.next as u8)
            }
        }
    }

    /// One received DATA / CDATA / FRAG with the low `bits` bits of its sequence.
    pub fn on_piece(
        &mut self,
        now: u64,
        rto: u64,
        low: u8,
        bits: u32,
        piece: Piece<'_>,
        max_message: usize,
    ) -> (Option<Delivered>, Reply, Drop) {
        if self.reliable {
            if bits != 8 {
                return (None, Reply::None, Drop::OutOfOrder);
            }
            let d = low.wrapping_sub(self.next as u8);
            if d != 0 {
                self.reasm = None;
                // Behind: a copy of what we have, whose ACK was lost: acknowledge again.
                // Ahead: a gap: ask for the expected one.
                let reply = if d >= 128 {
                    Reply::Ack(self.next as u8)
                } else {
                    self.nack(now, rto)
                };
                return (None, reply, Drop::OutOfOrder);
            }
        }
        let mask = (1u64 << bits) - 1;
        let full = self.next + ((u64::from(low).wrapping_sub(self.next)) & mask);
        let payload = match piece {
            Piece::Whole(body) => {
                self.reasm = None;
                if body.len() > max_message {
                    return (None, Reply::None, Drop::TooLarge);
                }
                let mut p = Vec::with_capacity(4 + body.len());
                p.extend_from_slice(&CDR_HEADER);
                p.extend_from_slice(body);
                p
            }
            Piece::Frag {
                index,
                total,
                bytes,
            } => match self.fragment(index, total, low, bytes, max_message) {
                Ok(Some(p)) => p,
                Ok(None) => return (None, Reply::None, Drop::None),
                Err(drop) => {
                    let reply = if self.reliable && drop == Drop::OutOfOrder {
                        self.nack(now, rto)
                    } else {
                        Reply::None
                    };
                    return (None, reply, drop);
                }
            },
        };
        let lost = full - self.next;
        self.next = full + 1;
        let reply = if self.reliable {
            Reply::Ack(self.next as u8)
        } else {
            Reply::None
        };
        (
            Some(Delivered {
                sequence: full,
                payload,
                lost,
            }),
            reply,
            Drop::None,
        )
    }

    /// Adds a fragment; the whole CDR when it completed the message.
    fn fragment(
        &mut self,
        index: u8,
        total: Option<u16>,
        low: u8,
        bytes: &[u8],
        max_message: usize,
    ) -> Result<Option<Vec<u8>>, Drop> {
        if index == 0 {
            let total = usize::from(total.unwrap_or(0));
            self.reasm = None;
            if total > max_message {
                return Err(Drop::TooLarge);
            }
            let mut buf = Vec::with_capacity(4 + total);
            buf.extend_from_slice(&CDR_HEADER);
            self.reasm = Some(Reassembly {
                seq_low: low,
                next_index: 0,
                total,
                buf,
            });
        }
        let Some(r) = self.reasm.as_mut() else {
            return Err(Drop::OutOfOrder);
        };
        if r.seq_low != low || r.next_index != index || r.buf.len() - 4 + bytes.len() > r.total {
            self.reasm = None;
            return Err(Drop::OutOfOrder);
        }
        r.buf.extend_from_slice(bytes);
        r.next_index = r.next_index.wrapping_add(1);
        if r.buf.len() - 4 == r.total {
            return Ok(self.reasm.take().map(|r| r.buf));
        }
        Ok(None)
    }
}

/// The host sending to an MCU subscription.
pub(crate) struct TxStream {
    /// Sequence number of the next new message.
    pub next: u64,
    reliable: bool,
    /// Reliable: bodies of `base .. next`, not yet acknowledged.
    held: VecDeque<Vec<u8>>,
    sent_at: u64,
}

impl TxStream {
    pub fn new(next: u64, reliable: bool) -> Self {
        TxStream {
            next,
            reliable,
            held: VecDeque::new(),
            sent_at: 0,
        }
    }

    pub fn base(&self) -> u64 {
        self.next - self.held.len() as u64
    }

    pub fn in_flight(&self) -> usize {
        self.held.len()
    }

    pub fn heap_bytes(&self) -> usize {
        self.held.iter().map(Vec::capacity).sum()
    }

    /// Assigns the next sequence number; a reliable message is kept until acknowledged.
    pub fn push(&mut self, now: u64, body: &[u8]) -> u64 {
        let seq = self.next;
        self.next += 1;
        if self.reliable {
            if self.held.is_empty() {
                self.sent_at = now;
            }
            self.held.push_back(body.to_vec());
        }
        seq
    }

    /// ACK or NACK of `low`: everything before it arrived. Returns true when the held messages
    /// must be sent again (a NACK with some left).
    pub fn on_ack(&mut self, now: u64, low: u8, nack: bool) -> bool {
        let base = self.base();
        let d = u64::from(low.wrapping_sub(base as u8));
        if d > self.held.len() as u64 {
            return false; // outside the window: stale or corrupt
        }
        self.held.drain(..d as usize);
        if d > 0 {
            self.sent_at = now;
        }
        nack && !self.held.is_empty()
    }

    /// A DECLARE of the subscription says it expects `seq` next: what is before it arrived.
    pub fn on_declared(&mut self, seq: u64) {
        let base = self.base();
        if seq > self.next {
            self.held.clear();
            self.next = seq;
        } else if seq > base {
            self.held.drain(..(seq - base) as usize);
        }
    }

    /// The held messages with their sequence numbers, to send again.
    pub fn held(&self) -> impl Iterator<Item = (u64, &[u8])> {
        let base = self.base();
        self.held
            .iter()
            .enumerate()
            .map(move |(i, b)| (base + i as u64, b.as_slice()))
    }

    /// When the oldest held message is due to be sent again.
    pub fn deadline(&self, rto: u64) -> Option<u64> {
        (!self.held.is_empty()).then_some(self.sent_at + rto)
    }

    pub fn mark_sent(&mut self, now: u64) {
        self.sent_at = now;
    }
}
