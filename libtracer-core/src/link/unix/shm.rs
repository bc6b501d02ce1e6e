//! Shared memory over the link (docs/wire.md, SEGMENT / SHM_DELIVERY / RELEASE), the sending
//! side: a DELIVERY whose payload is a slot of our pool goes as a reference, its segment's
//! descriptor passed once, and the slot is held until the peer releases it; a view of the
//! peer's memory we drop is released back to it.

use std::io::{self, IoSlice};
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::sync::atomic::Ordering;

use nix::errno::Errno;
use nix::sys::socket::MsgFlags;
use tracer_shm::fdpass::send_with_fd;
use tracer_shm::Release;

use super::{write_all2, UnixLink};
use crate::link::{Link, LinkError};
use crate::payload::Payload;
use crate::wire::{encode_head, encode_parts, Frame, ShmRef, Tokens};

/// How this end sends shared-memory references to the peer.
pub(crate) struct ShmSend {
    /// The peer maps segments (HELLO) and has our uid.
    pub enabled: bool,
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
