//! The reading side of one Unix-socket link, run by the event loop (`unix_loop.rs`): decode what
//! the socket holds, do the link's own business (PING answered, PONG dropped, SEGMENT mapped,
//! RELEASE returned, SHM_DELIVERY turned into a DELIVERY of a view of the peer's memory) and
//! put every other frame on the link's strand (`strand.rs`) for a worker. Never blocks: reads
//! are `MSG_DONTWAIT`, and anything that may write more than a liveness reply goes to the strand.

use std::collections::HashMap;
use std::io;
use std::os::fd::OwnedFd;
use std::sync::{Arc, Weak};
use std::time::Duration;

use tracer_shm::fdpass::FdReceiver;
use tracer_shm::{MapError, Mapping, Release};

use super::dispatch::{self, Job};
use super::strand::{Event, Hooks, Strand};
use super::unix::{Leftover, UnixLink};
use super::unix_loop::{self, Source};
use super::LinkHandler;
use crate::payload::Payload;
use crate::wire::parts::Joiner;
use crate::wire::{Frame, FrameDecoder, ShmRef};

/// After a frame at least this large, the reader reads the next prefix on its own.
const PREFIX_FIRST: usize = 32 * 1024;
/// Segments a peer may announce on one link.
const MAX_SEGMENTS: usize = 4096;
/// Descriptors that may wait for their SEGMENT frame.
pub(crate) const MAX_WAITING_FDS: usize = 8;
/// Reads of one link per turn of the loop: a link that always has bytes cannot starve others.
const READS_PER_TURN: usize = 8;

/// An established link as the loop reads it.
pub(crate) struct LinkRx {
    pub(crate) link: Arc<UnixLink>,
    pub(crate) strand: Arc<Strand>,
    dec: FrameDecoder,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    recv: FdReceiver,
    shm: ShmReceive,
    /// Messages arriving in parts (DELIVERY_PART), joined here.
    joiner: Joiner,
    pub(crate) ping_ms: u64,
    pub(crate) dead_ms: u64,
    /// The strand is full: not read until it asks.
    pub(crate) paused: bool,
}

/// What the transport gives the loop for a new link.
pub(crate) struct NewLink {
    pub link: Arc<UnixLink>,
    pub dec: FrameDecoder,
    pub left: Leftover,
    pub handler: Arc<dyn LinkHandler>,
    pub ping: Duration,
    pub dead_after: Duration,
    /// Run around its callbacks (`after_up`, `on_exit`, `on_done`: all set).
    pub hooks: Hooks,
}

/// Queue `on_up` for the new link and give its socket to the loop.
pub(crate) fn add_link(n: NewLink) {
    let weak: Weak<UnixLink> = Arc::downgrade(&n.link);
    let token = unix_loop::new_token();
    let strand = Strand::new(n.link.clone(), n.handler, token.0, n.hooks);
    strand.push(Event::Up);
    unix_loop::tick_at_most(n.ping.as_millis() as u64 / 2);
    let Leftover {
        buf,
        start,
        end,
        fds,
    } = n.left;
    let rx = LinkRx {
        link: n.link,
        strand,
        dec: n.dec,
        buf,
        start,
        end,
        recv: FdReceiver::default(),
        joiner: Joiner::default(),
        shm: ShmReceive {
            fds,
            maps: HashMap::new(),
            release: Arc::new(Releaser(weak)),
        },
        ping_ms: n.ping.as_millis() as u64,
        dead_ms: n.dead_after.as_millis() as u64,
        paused: false,
    };
    unix_loop::add_as(token, Source::Link(Box::new(rx)));
}

pub(crate) enum Pumped {
    /// Nothing more to read now (or the link is paused).
    Idle,
    /// Its turn ended with bytes maybe left: read it again on the next turn.
    More,
    Ended,
}

enum Step {
    Go,
    Full,
    End,
}

impl LinkRx {
    /// Decode what is buffered and read more, until the socket is empty, the strand full, the
    /// turn over or the link ended.
    pub(crate) fn pump(&mut self) -> Pumped {
        for _ in 0..READS_PER_TURN {
            if self.paused {
                return Pumped::Idle;
            }
            loop {
                self.start += self.dec.push(&self.buf[self.start..self.end]);
                match self.dec.pop() {
                    Ok(Some(frame)) => match self.frame(frame) {
                        Step::Go => {}
                        Step::Full => {
                            self.paused = true;
                            self.link.set_paused(true);
                            // The tick PINGs the peer while we do not read it.
                            unix_loop::watch();
                            return Pumped::Idle;
                        }
                        Step::End => return Pumped::Ended,
                    },
                    Ok(None) if self.start == self.end => break,
                    Ok(None) => {}
                    Err(e) => {
                        self.strand.push(Event::Malformed(e.to_string()));
                        return Pumped::Ended;
                    }
                }
            }
            // Read more: large bodies straight into the frame buffer, the rest through `buf`.
            // After a large frame, read just the next length prefix first, so that a large body
            // that follows goes straight into its own buffer instead of through `buf`.
            // Always recvmsg: descriptors (SEGMENT) come with the bytes.
            let sock = self.link.socket();
            let r = match self.dec.body_window() {
                Some(w) => {
                    let r = self.recv.try_recv(sock, w, &mut self.shm.fds);
                    // Nothing read is a commit of 0: the window is given back either way.
                    self.dec.commit(*r.as_ref().unwrap_or(&0));
                    r
                }
                None => {
                    let want =
                        if !self.dec.is_mid_frame() && self.dec.last_frame_len() >= PREFIX_FIRST {
                            crate::wire::LEN_PREFIX
                        } else {
                            self.buf.len()
                        };
                    let r = self
                        .recv
                        .try_recv(sock, &mut self.buf[..want], &mut self.shm.fds);
                    if let Ok(n) = r {
                        self.start = 0;
                        self.end = n;
                    }
                    r
                }
            };
            if self.shm.fds.len() > MAX_WAITING_FDS {
                self.strand.push(Event::Malformed(
                    "descriptors sent without SEGMENT frames".into(),
                ));
                return Pumped::Ended;
            }
            match r {
                Ok(0) => return Pumped::Ended,
                Ok(_) => self.link.touch_rx(),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Pumped::Idle,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return Pumped::Ended,
            }
        }
        Pumped::More
    }

    /// A link-level frame's outcome: go on, or the peer broke the protocol and the link ends.
    fn checked(&mut self, r: Result<(), String>) -> Step {
        match r {
            Ok(()) => Step::Go,
            Err(why) => {
                self.strand.push(Event::Malformed(why));
                Step::End
            }
        }
    }

    /// The link's own business here; anything else onto the strand.
    fn frame(&mut self, frame: Frame) -> Step {
        let frame = match frame {
            Frame::Segment { id, size } => {
                let r = self.shm.segment(id, size);
                return self.checked(r);
            }
            Frame::Retire { id, size } => {
                let r = self.shm.retire(id, size);
                return self.checked(r);
            }
            Frame::Release { tokens } => {
                if self.link.released(&tokens) {
                    return Step::Go;
                }
                self.strand.push(Event::Malformed(
                    "RELEASE of a reference that is not out".into(),
                ));
                return Step::End;
            }
            Frame::ShmDelivery {
                edge,
                meta,
                suffix,
                shm,
            } => match self.shm.payload(&shm) {
                Ok(ShmPayload::View(payload)) => Frame::Delivery {
                    edge,
                    meta,
                    suffix,
                    payload,
                },
                // Its segment could not be mapped here: released unread, by a worker (a send
                // may block; the loop never does).
                Ok(ShmPayload::Unmapped) => {
                    return if self.strand.push(Event::Release(shm.token)) {
                        Step::Go
                    } else {
                        Step::Full
                    };
                }
                Err(why) => {
                    self.strand.push(Event::Malformed(why));
                    return Step::End;
                }
            },
            part @ Frame::DeliveryPart { .. } => match self.joiner.take(part) {
                Ok(Some(whole)) => whole,
                Ok(None) => return Step::Go,
                Err(e) => {
                    self.strand.push(Event::Malformed(e.to_string()));
                    return Step::End;
                }
            },
            other => other,
        };
        match frame {
            Frame::Ping { nonce } => {
                self.link.send_pong(nonce);
                Step::Go
            }
            Frame::Pong { .. } => {
                self.link.answered();
                Step::Go
            }
            Frame::Hello { .. } => {
                self.strand
                    .push(Event::Malformed("HELLO after the handshake".into()));
                Step::End
            }
            frame => {
                if self.strand.push(Event::Frame(frame)) {
                    Step::Go
                } else {
                    Step::Full
                }
            }
        }
    }
}

/// The reader's shared-memory state: descriptors waiting for their SEGMENT, the peer's
/// segments mapped (None: could not be mapped here), and the hook views release through.
struct ShmReceive {
    fds: Vec<OwnedFd>,
    maps: HashMap<u32, Option<Arc<Mapping>>>,
    release: Arc<Releaser>,
}

/// What the link's views of the peer's memory release through: the link's RELEASE. A view may
/// be dropped on the loop thread (a delivery landed there evicts the oldest sample of a ring),
/// and the loop never blocks: there the RELEASE is written only if it fits at once, else a
/// worker writes it. RELEASEs need no order among the link's frames. Views dropped after the
/// loop let the link go (it ended) release nothing: the peer has taken everything back.
struct Releaser(Weak<UnixLink>);

impl Release for Releaser {
    fn release(&self, token: u64) {
        let Some(link) = self.0.upgrade() else {
            return;
        };
        if !unix_loop::on_loop() {
            link.release(token);
        } else if !link.try_release(token) {
            dispatch::schedule(Arc::new(ReleaseLater { link, token }));
        }
    }
}

/// A RELEASE the loop could not write at once, written by a worker.
struct ReleaseLater {
    link: Arc<UnixLink>,
    token: u64,
}

impl Job for ReleaseLater {
    fn run(&self) -> bool {
        self.link.release(self.token);
        false
    }
}

/// A retired segment's mapping, dropped by a worker.
struct Unmap(parking_lot::Mutex<Option<Arc<Mapping>>>);

impl Job for Unmap {
    fn run(&self) -> bool {
        drop(self.0.lock().take());
        false
    }
}

enum ShmPayload {
    View(Payload),
    /// The segment could not be mapped here: the reference is to be released at once.
    Unmapped,
}

impl ShmReceive {
    /// A SEGMENT: map its descriptor. Err: the peer broke the protocol.
    fn segment(&mut self, id: u32, size: u64) -> Result<(), String> {
        if self.fds.is_empty() {
            return Err(format!("SEGMENT {id} came without a descriptor"));
        }
        if self.maps.contains_key(&id) {
            return Err(format!("SEGMENT {id} announced twice"));
        }
        if self.maps.len() >= MAX_SEGMENTS {
            return Err(format!("more than {MAX_SEGMENTS} segments"));
        }
        let fd = self.fds.remove(0);
        let map = match Mapping::map(fd, size) {
            Ok(m) => Some(Arc::new(m)),
            // Out of address space or map count here: its samples are released unread.
            Err(MapError::Os(_)) => None,
            Err(e) => return Err(format!("SEGMENT {id}: {e}")),
        };
        self.maps.insert(id, map);
        Ok(())
    }

    /// A RETIRE: the segment leaves the table (its mapping goes with its last view, and its
    /// sender never uses its number again). Err: the peer broke the protocol.
    /// (On an error the link ends, and the table with it.)
    fn retire(&mut self, id: u32, size: u64) -> Result<(), String> {
        match self.maps.remove(&id) {
            None => Err(format!("RETIRE of segment {id}, which is not announced")),
            Some(Some(m)) if m.size() as u64 != size => Err(format!(
                "RETIRE of segment {id} as {size} bytes, announced as {}",
                m.size()
            )),
            // Its last holder, usually (the views went before the RELEASEs that led to the
            // RETIRE): unmapping hundreds of megabytes takes milliseconds, which the loop,
            // serving every link, does not spend.
            Some(Some(map)) => {
                dispatch::schedule(Arc::new(Unmap(parking_lot::Mutex::new(Some(map)))));
                Ok(())
            }
            // Never mapped here.
            Some(None) => Ok(()),
        }
    }

    /// An SHM_DELIVERY's payload, a view of the peer's segment.
    fn payload(&self, r: &ShmRef) -> Result<ShmPayload, String> {
        let map = match self.maps.get(&r.segment) {
            None => return Err(format!("reference into unknown segment {}", r.segment)),
            Some(None) => return Ok(ShmPayload::Unmapped),
            Some(Some(m)) => m,
        };
        let release: Weak<dyn Release> = Arc::downgrade(&self.release) as Weak<dyn Release>;
        map.view(r.offset, u64::from(r.len), release, r.token)
            .map(|v| ShmPayload::View(Payload::from_view(v)))
            .ok_or_else(|| format!("reference past the end of segment {}", r.segment))
    }
}
