//! A link over a Unix-domain stream socket: the HELLO handshake, the writer (caller's thread,
//! one vectored write per frame under a per-link lock) and the reader thread.

use std::io::{self, IoSlice, Read};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::socket::{sendmsg, MsgFlags};
use parking_lot::Mutex;

use super::{
    close_handler_failed, close_malformed, run_callback, Link, LinkError, LinkHandler, PeerIdentity,
};
use crate::wire::{encode_parts, ErrorCode, Frame, FrameDecoder, MAX_FRAME, PROTOCOL_VERSION};

/// Read buffer of a link's reader (large bodies bypass it, see `FrameDecoder::body_window`).
pub(crate) const READ_BUF: usize = 64 * 1024;
/// Frame bound before the HELLO exchange: a HELLO, or an ERROR with its longest message.
const HANDSHAKE_FRAME: u32 = 8 * 1024;
/// After a frame at least this large, the reader reads the next prefix on its own.
const PREFIX_FIRST: usize = 32 * 1024;

/// One end of a Unix-socket link.
pub struct UnixLink {
    peer: PeerIdentity,
    stream: UnixStream,
    write_lock: Mutex<()>,
    /// The peer's announced frame bound: nothing larger is sent.
    peer_max: u32,
    closed: AtomicBool,
    epoch: Instant,
    last_rx_ms: AtomicU64,
    last_tx_ms: AtomicU64,
    /// The reader is inside a handler callback: silence then is ours, not the peer's.
    in_callback: AtomicBool,
}

impl UnixLink {
    pub(crate) fn new(
        peer: PeerIdentity,
        stream: UnixStream,
        peer_max: u32,
        epoch: Instant,
    ) -> Self {
        let now = epoch.elapsed().as_millis() as u64;
        UnixLink {
            peer,
            stream,
            write_lock: Mutex::new(()),
            peer_max,
            closed: AtomicBool::new(false),
            epoch,
            last_rx_ms: AtomicU64::new(now),
            last_tx_ms: AtomicU64::new(now),
            in_callback: AtomicBool::new(false),
        }
    }

    /// Write `bytes` as they are (conformance tests use it to send malformed input).
    pub fn send_raw(&self, bytes: &[u8]) -> Result<(), LinkError> {
        self.write_parts(bytes, &[])
    }

    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    fn now_ms(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }

    fn ms_since_rx(&self) -> u64 {
        self.now_ms()
            .saturating_sub(self.last_rx_ms.load(Ordering::Relaxed))
    }

    pub(crate) fn ms_since_tx(&self) -> u64 {
        self.now_ms()
            .saturating_sub(self.last_tx_ms.load(Ordering::Relaxed))
    }

    /// Whether the peer has been silent for `dead_ms` while we were listening.
    pub(crate) fn peer_silent_for(&self, dead_ms: u64) -> bool {
        !self.in_callback.load(Ordering::Relaxed) && self.ms_since_rx() >= dead_ms
    }

    fn touch_rx(&self) {
        self.last_rx_ms.store(self.now_ms(), Ordering::Relaxed);
    }

    /// Send a PING (from the keepalive) or a PONG (from the reader), or skip it: these only
    /// show the peer that we are alive, and it needs none while a write is in progress (bytes
    /// are flowing, or the link is stuck and the peer's own keepalive will notice) or while the
    /// socket buffer is full (the peer has bytes of ours to read already). Never blocks: the
    /// keepalive thread serves every link, and a reader stuck on a PONG into a full buffer
    /// would stop reading, and then take the peer for silent.
    pub(crate) fn try_send_liveness(&self, frame: &Frame) {
        if self.is_closed() {
            return;
        }
        let Some(guard) = self.write_lock.try_lock() else {
            return;
        };
        let Ok(enc) = encode_parts(frame, self.peer_max) else {
            return;
        };
        let head: &[u8] = &enc.head;
        let flags = MsgFlags::MSG_NOSIGNAL | MsgFlags::MSG_DONTWAIT;
        let r = loop {
            match sendmsg::<()>(
                self.stream.as_raw_fd(),
                &[IoSlice::new(head)],
                &[],
                flags,
                None,
            ) {
                Err(Errno::EINTR) => continue,
                Err(Errno::EAGAIN) => return,
                Ok(n) if n == head.len() => break Ok(()),
                // A few bytes fitted (a PING is one small buffer, so this is rare): the frame
                // must be completed, or the stream would lose its framing.
                Ok(n) => break write_all2(&self.stream, &head[n..], &[]),
                Err(e) => break Err(io::Error::from(e)),
            }
        };
        drop(guard);
        match r {
            Ok(()) => self.last_tx_ms.store(self.now_ms(), Ordering::Relaxed),
            Err(_) => self.close(),
        }
    }

    fn write_parts(&self, head: &[u8], payload: &[u8]) -> Result<(), LinkError> {
        if self.is_closed() {
            return Err(LinkError::Closed(self.peer.name.clone()));
        }
        let guard = self.write_lock.lock();
        // Closed while we waited for the lock (a blocked write timed out): fail at once.
        if self.is_closed() {
            return Err(LinkError::Closed(self.peer.name.clone()));
        }
        let r = write_all2(&self.stream, head, payload);
        drop(guard);
        match r {
            Ok(()) => {
                self.last_tx_ms.store(self.now_ms(), Ordering::Relaxed);
                Ok(())
            }
            Err(e) => {
                self.close();
                Err(
                    if self.is_closed() && e.kind() == io::ErrorKind::BrokenPipe {
                        LinkError::Closed(self.peer.name.clone())
                    } else {
                        LinkError::Io(e)
                    },
                )
            }
        }
    }
}

/// Write `a` then `b` completely, as few syscalls as the kernel allows: one vectored `sendmsg`
/// when both fit in the socket buffer, so a payload is never copied into an intermediate buffer.
///
/// Always with MSG_NOSIGNAL: a write into a socket whose peer is gone must be an EPIPE error,
/// not SIGPIPE, whose default action kills the process (C and C++ programs keep that default,
/// and a library has no business changing a program's signal dispositions). `write`/`writev`
/// on a socket raise it; std's `UnixStream::write` happens to use `send(MSG_NOSIGNAL)`, but its
/// `write_vectored` is a plain `writev`.
fn write_all2(w: &UnixStream, mut a: &[u8], mut b: &[u8]) -> io::Result<()> {
    let fd = w.as_raw_fd();
    while !a.is_empty() || !b.is_empty() {
        let both = [IoSlice::new(a), IoSlice::new(b)];
        let iov: &[IoSlice<'_>] = match (a.is_empty(), b.is_empty()) {
            (false, false) => &both,
            (false, true) => &both[..1],
            _ => &both[1..],
        };
        let n = match sendmsg::<()>(fd, iov, &[], MsgFlags::MSG_NOSIGNAL, None) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => n,
            Err(Errno::EINTR) => continue,
            Err(e) => return Err(e.into()),
        };
        let from_a = n.min(a.len());
        a = &a[from_a..];
        b = &b[n - from_a..];
    }
    Ok(())
}

impl Link for UnixLink {
    fn send(&self, frame: &Frame) -> Result<(), LinkError> {
        if self.is_closed() {
            return Err(LinkError::Closed(self.peer.name.clone()));
        }
        let enc = encode_parts(frame, self.peer_max)?;
        let payload: &[u8] = enc.payload.as_deref().unwrap_or(&[]);
        self.write_parts(&enc.head, payload)
    }
    fn peer(&self) -> &PeerIdentity {
        &self.peer
    }
    fn close(&self) {
        if !self.closed.swap(true, Ordering::AcqRel) {
            // Wakes our reader (EOF) and any writer blocked on a full socket.
            let _ = self.stream.shutdown(std::net::Shutdown::Both);
        }
    }
}

/// Bytes read during the handshake beyond the HELLO: the reader starts with them.
pub(crate) struct Leftover {
    pub buf: Vec<u8>,
    pub start: usize,
    pub end: usize,
}

/// What the peer said in its HELLO.
pub(crate) struct PeerHello {
    pub node: String,
    pub max_frame: u32,
}

pub(crate) fn hello(local: &str) -> Frame {
    Frame::Hello {
        version: PROTOCOL_VERSION,
        node: local.to_owned(),
        max_frame: MAX_FRAME,
    }
}

pub(crate) fn write_frame(stream: &UnixStream, frame: &Frame) -> io::Result<()> {
    let enc = encode_parts(frame, MAX_FRAME).map_err(io::Error::other)?;
    write_all2(stream, &enc.head, enc.payload.as_deref().unwrap_or(&[]))
}

pub(crate) enum HelloOutcome {
    Hello(PeerHello, FrameDecoder, Leftover),
    /// The peer answered ERROR: it refused this connection (duplicate link, bad name).
    Refused(String),
}

/// Read frames until the first one, within `timeout`. It must be HELLO (or ERROR: a refusal).
pub(crate) fn read_hello(
    mut stream: &UnixStream,
    timeout: Duration,
) -> Result<HelloOutcome, String> {
    let deadline = Instant::now() + timeout;
    // Until the peer has said who it is, nothing large is accepted (nor allocated for).
    let mut dec = FrameDecoder::new(HANDSHAKE_FRAME);
    let mut buf = vec![0u8; READ_BUF];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err("timed out waiting for HELLO".into());
        }
        stream
            .set_read_timeout(Some(left))
            .map_err(|e| e.to_string())?;
        let n = match stream.read(&mut buf) {
            Ok(0) => return Err("connection closed before HELLO".into()),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                return Err("timed out waiting for HELLO".into())
            }
            Err(e) => return Err(e.to_string()),
        };
        let taken = dec.push(&buf[..n]);
        match dec.pop() {
            Ok(None) => continue,
            Ok(Some(Frame::Hello {
                version,
                node,
                max_frame,
            })) => {
                stream.set_read_timeout(None).map_err(|e| e.to_string())?;
                dec.set_max_frame(MAX_FRAME);
                if version < 1 {
                    return Err(format!("peer speaks protocol version {version}"));
                }
                if max_frame < 1024 {
                    return Err(format!(
                        "peer frame bound {max_frame} is below the 1 KiB minimum"
                    ));
                }
                let left = Leftover {
                    buf,
                    start: taken,
                    end: n,
                };
                return Ok(HelloOutcome::Hello(
                    PeerHello { node, max_frame },
                    dec,
                    left,
                ));
            }
            Ok(Some(Frame::Error { message, .. })) => return Ok(HelloOutcome::Refused(message)),
            Ok(Some(other)) => return Err(format!("first frame is not HELLO: {other:?}")),
            Err(e) => return Err(e.to_string()),
        }
    }
}

pub(crate) fn refuse(stream: &UnixStream, code: ErrorCode, why: &str) {
    let message: String = why.chars().take(200).collect();
    let _ = write_frame(
        stream,
        &Frame::Error {
            req: 0,
            code,
            message,
        },
    );
    let _ = stream.shutdown(std::net::Shutdown::Both);
}

/// The reader thread of one link: `on_up`, every frame, `on_down`. `on_exit` runs before
/// `on_down` (the transport drops the link from its table there).
pub(crate) fn run_reader(
    link: Arc<UnixLink>,
    stream: UnixStream,
    dec: FrameDecoder,
    left: Leftover,
    handler: Arc<dyn LinkHandler>,
    on_exit: impl FnOnce(&Arc<UnixLink>),
) {
    let dyn_link: Arc<dyn Link> = link.clone();
    link.in_callback.store(true, Ordering::Relaxed);
    let up = run_callback(|| handler.on_up(dyn_link.clone()));
    link.in_callback.store(false, Ordering::Relaxed);
    link.touch_rx();
    if up {
        read_frames(&link, &dyn_link, &*handler, stream, dec, left);
    } else {
        close_handler_failed(&*link);
    }
    link.close();
    on_exit(&link);
    let _ = run_callback(|| handler.on_down(&dyn_link));
}

/// Dispatch every frame the peer sends until EOF, an error, or a frame that ends the link.
fn read_frames(
    link: &Arc<UnixLink>,
    dyn_link: &Arc<dyn Link>,
    handler: &dyn LinkHandler,
    mut stream: UnixStream,
    mut dec: FrameDecoder,
    left: Leftover,
) {
    let Leftover {
        mut buf,
        mut start,
        mut end,
    } = left;
    'outer: loop {
        // Drain what is buffered.
        loop {
            start += dec.push(&buf[start..end]);
            match dec.pop() {
                Ok(Some(frame)) => {
                    if !dispatch(link, dyn_link, handler, frame) {
                        break 'outer;
                    }
                }
                Ok(None) if start == end => break,
                Ok(None) => {}
                Err(e) => {
                    close_malformed(&**link, &e.to_string());
                    break 'outer;
                }
            }
        }
        // Read more: large bodies straight into the frame buffer, the rest through `buf`. After
        // a large frame, read just the next length prefix first, so that a large body that
        // follows goes straight into its own buffer instead of through `buf`.
        let r = match dec.body_window() {
            Some(w) => stream.read(w).inspect(|&n| dec.commit(n)),
            None => {
                let want = if !dec.is_mid_frame() && dec.last_frame_len() >= PREFIX_FIRST {
                    crate::wire::LEN_PREFIX
                } else {
                    buf.len()
                };
                stream.read(&mut buf[..want]).inspect(|&n| {
                    start = 0;
                    end = n;
                })
            }
        };
        match r {
            Ok(0) => break,
            Ok(_) => link.touch_rx(),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {
                dec.commit(0);
            }
            Err(_) => break,
        }
    }
}

/// Handle one frame; false ends the link.
fn dispatch(
    link: &Arc<UnixLink>,
    dyn_link: &Arc<dyn Link>,
    handler: &dyn LinkHandler,
    frame: Frame,
) -> bool {
    match frame {
        Frame::Ping { nonce } => {
            link.try_send_liveness(&Frame::Pong { nonce });
            true
        }
        Frame::Pong { .. } => true,
        Frame::Hello { .. } => {
            close_malformed(&**link, "HELLO after the handshake");
            false
        }
        frame => {
            link.in_callback.store(true, Ordering::Relaxed);
            let ok = run_callback(|| handler.on_frame(dyn_link, frame));
            link.in_callback.store(false, Ordering::Relaxed);
            if !ok {
                close_handler_failed(&**link);
                return false;
            }
            // Whatever the peer sent while we were busy is still unread: do not count that
            // time as its silence.
            link.touch_rx();
            true
        }
    }
}
