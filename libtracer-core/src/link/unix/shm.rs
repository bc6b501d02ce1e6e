//! Shared memory over the link (docs/wire.md, SEGMENT / SHM_DELIVERY / RELEASE / RETIRE), the
//! sending side: a DELIVERY whose payload is a slot of our pool goes as a reference, its
//! segment's descriptor passed once, and the slot is held until the peer releases it; a
//! segment made for one message is retired once it is gone; a view of the peer's memory we
//! drop is released back to it.

use std::io::{self, IoSlice};
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

use nix::errno::Errno;
use nix::sys::socket::MsgFlags;
use tracer_shm::fdpass::send_with_fd;
use tracer_shm::{Release, Retire, SegmentId};

use super::{write_all2, UnixLink};
use crate::link::dispatch::{self, Job};
use crate::link::{unix_loop, Link, LinkError};
use crate::payload::Payload;
use crate::wire::{encode_head, encode_parts, Frame, ShmRef, Tokens};

/// How this end sends shared-memory references to the peer.
pub(crate) struct ShmSend {
    /// The peer maps segments (HELLO) and has our uid.
    pub enabled: bool,
    /// The peer takes RETIRE (HELLO): segments made for one message may go to it as references.
    pub retire: bool,
    /// References out at once; past it, copies.
    pub max_out: usize,
}

impl UnixLink {
    /// Send a DELIVERY of a pool slot as SHM_DELIVERY (announcing its segment first, once).
    /// `Ok(false)`: not sent, the caller sends the bytes (the peer holds `max_out` references).
    pub(super) fn send_reference(
        &self,
        edge: u64,
        meta: &crate::payload::Meta,
        suffix: &Option<String>,
        payload: &Payload,
        slot: &tracer_shm::Slot,
    ) -> Result<bool, LinkError> {
        // A segment made for this message alone goes only to a reader that will be told when
        // it is gone; an older one gets the bytes (in parts when they pass its frame bound).
        if slot.retires() && !self.shm.retire {
            return Ok(false);
        }
        let token = self.next_token.fetch_add(1, Ordering::Relaxed);
        {
            let mut out = self.out.lock();
            if out.len() >= self.shm.max_out {
                return Ok(false);
            }
            // Before the write: the peer may release it as soon as the frame is out.
            out.insert(token, payload.clone());
        }
        let frame = Frame::ShmDelivery {
            edge,
            meta: *meta,
            suffix: suffix.clone(),
            shm: ShmRef {
                segment: slot.segment().0,
                offset: slot.offset(),
                len: slot.len() as u32,
                token,
            },
        };
        let seg = slot.segment().0;
        let r = self.locked_write(
            |ws| encode_head(&frame, self.peer_max, &mut ws.head).map(drop),
            |ws, ()| {
                if !ws.announced.contains(&seg) {
                    // Once per segment: its own (allocated) encoding.
                    let announce = Frame::Segment {
                        id: seg,
                        size: slot.segment_size(),
                    };
                    let a = encode_parts(&announce, self.peer_max).map_err(io::Error::other)?;
                    write_with_fd(&self.stream, &a.head, slot)?;
                    ws.announced.insert(seg);
                    slot.on_retire(Arc::downgrade(&self.retirer) as Weak<dyn Retire>);
                }
                write_all2(&self.stream, &ws.head, &[])
            },
        );
        if r.is_err() {
            self.out.lock().remove(&token);
        }
        r.map(|()| true)
    }

    /// The peer returned references: their slots may be reused (once nobody else holds them).
    /// False when a token was not out (the peer broke the protocol).
    pub(crate) fn released(&self, tokens: &[u64]) -> bool {
        let mut ok = true;
        for t in tokens {
            // Each slot goes back to the pool outside the lock (one lock per token: a RELEASE
            // carries one token or a few).
            let gone = self.out.lock().remove(t);
            ok &= gone.is_some();
            drop(gone);
        }
        ok
    }

    /// A segment made for one message that we announced is gone: RETIRE it, so the peer's
    /// table (at most 4096 segments) and its mapping let it go. Nothing when the link is down
    /// (the peer dropped every segment of ours with it) or never announced it.
    fn retire(&self, id: SegmentId, size: u64) {
        let frame = Frame::Retire { id: id.0, size };
        let _ = self.locked_write(
            |ws| {
                if !ws.announced.remove(&id.0) {
                    return Ok(false);
                }
                encode_head(&frame, self.peer_max, &mut ws.head).map(|_| true)
            },
            |ws, announced| match announced {
                true => write_all2(&self.stream, &ws.head, &[]),
                false => Ok(()),
            },
        );
    }
}

/// Told by the segments made for one message that this link announced, when they go. A segment
/// goes with its last holder, which may be the event loop (a RELEASE it read dropped the last
/// reference): the loop never blocks on a write, so there a worker writes the RETIRE.
pub(super) struct Retirer(pub(super) Weak<UnixLink>);

impl Retire for Retirer {
    fn retire(&self, segment: SegmentId, size: u64) {
        let Some(link) = self.0.upgrade() else {
            return;
        };
        if unix_loop::on_loop() {
            dispatch::schedule(Arc::new(RetireLater {
                link,
                segment,
                size,
            }));
        } else {
            link.retire(segment, size);
        }
    }
}

/// A RETIRE written by a worker.
struct RetireLater {
    link: Arc<UnixLink>,
    segment: SegmentId,
    size: u64,
}

impl Job for RetireLater {
    fn run(&self) -> bool {
        self.link.retire(self.segment, self.size);
        false
    }
}

/// A view of the peer's memory was dropped: tell the peer (if the link is still up; when it is
/// not, the peer released everything already).
impl Release for UnixLink {
    fn release(&self, token: u64) {
        if !self.is_closed() {
            let _ = self.send(&Frame::Release {
                tokens: Tokens::one(token),
            });
        }
    }
}

/// Write a SEGMENT frame's bytes with the segment's descriptor attached to the first of them.
fn write_with_fd(w: &UnixStream, head: &[u8], slot: &tracer_shm::Slot) -> io::Result<()> {
    let n = loop {
        match send_with_fd(
            w.as_fd(),
            &[IoSlice::new(head)],
            slot.segment_fd(),
            MsgFlags::MSG_NOSIGNAL,
        ) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => break n,
            Err(Errno::EINTR) => continue,
            Err(e) => return Err(e.into()),
        }
    };
    write_all2(w, &head[n..], &[])
}
