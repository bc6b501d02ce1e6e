//! The HELLO exchange of a new connection over a Unix socket: our HELLO, reading the peer's
//! (bounded in time and in size until it has said who it is) and checking it, and the ERROR
//! that refuses a connection.

use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use tracer_shm::fdpass::FdReceiver;

use super::{write_all2, HANDSHAKE_FRAME, READ_BUF};
use crate::wire::{
    encode_parts, ErrorCode, Frame, FrameDecoder, ShmCaps, MAX_FRAME, PROTOCOL_VERSION,
};

/// Bytes read during the handshake beyond the HELLO: the reader starts with them.
pub(crate) struct Leftover {
    pub buf: Vec<u8>,
    pub start: usize,
    pub end: usize,
    /// Descriptors that came with those bytes (a SEGMENT right after the peer's HELLO).
    pub fds: Vec<OwnedFd>,
}

/// What the peer said in its HELLO.
pub(crate) struct PeerHello {
    pub node: String,
    pub max_frame: u32,
    pub shm: ShmCaps,
}

/// Our HELLO; `shm`: we map segments sent to us (and take RETIRE for those made per message).
pub(crate) fn hello(local: &str, shm: bool) -> Frame {
    Frame::Hello {
        version: PROTOCOL_VERSION,
        node: local.to_owned(),
        max_frame: MAX_FRAME,
        shm: if shm { ShmCaps::ALL } else { ShmCaps::NONE },
        permissions: None,
        directory: None,
    }
}

pub(crate) fn write_frame(stream: &UnixStream, frame: &Frame) -> io::Result<()> {
    let enc = encode_parts(frame, MAX_FRAME).map_err(io::Error::other)?;
    write_all2(stream, &enc.head, enc.payload.as_deref().unwrap_or(&[]))
}

pub(crate) enum HelloOutcome {
    Hello(PeerHello, FrameDecoder, Leftover),
    /// The peer answered ERROR: it refused this connection (duplicate link, bad name, a user
    /// it does not link to: `PermissionDenied`).
    Refused(ErrorCode),
}

/// Read frames until the first one, within `timeout`. It must be HELLO (or ERROR: a refusal).
pub(crate) fn read_hello(stream: &UnixStream, timeout: Duration) -> Result<HelloOutcome, String> {
    let deadline = Instant::now() + timeout;
    // Until the peer has said who it is, nothing large is accepted (nor allocated for).
    let mut dec = FrameDecoder::new(HANDSHAKE_FRAME);
    let mut buf = vec![0u8; READ_BUF];
    // Through recvmsg: a descriptor sent right after the peer's HELLO must not be lost.
    let mut recv = FdReceiver::default();
    let mut fds = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err("timed out waiting for HELLO".into());
        }
        stream
            .set_read_timeout(Some(left))
            .map_err(|e| e.to_string())?;
        let n = match recv.recv(stream.as_fd(), &mut buf, &mut fds) {
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
            Ok(Some(frame)) => {
                stream.set_read_timeout(None).map_err(|e| e.to_string())?;
                let left = Leftover {
                    buf,
                    start: taken,
                    end: n,
                    fds,
                };
                return check_hello(frame, dec, left);
            }
            Err(e) => return Err(e.to_string()),
        }
    }
}

/// The first frame of a connection: HELLO (checked, the decoder then takes full-size frames),
/// or ERROR (a refusal); anything else fails the handshake.
pub(crate) fn check_hello(
    frame: Frame,
    mut dec: FrameDecoder,
    left: Leftover,
) -> Result<HelloOutcome, String> {
    match frame {
        // PERMISSIONS and DIRECTORY never travel on a Unix link (docs/wire.md, HELLO): ignored.
        Frame::Hello {
            version,
            node,
            max_frame,
            shm,
            ..
        } => {
            dec.set_max_frame(MAX_FRAME);
            if version < 1 {
                return Err(format!("peer speaks protocol version {version}"));
            }
            if max_frame < 1024 {
                return Err(format!(
                    "peer frame bound {max_frame} is below the 1 KiB minimum"
                ));
            }
            Ok(HelloOutcome::Hello(
                PeerHello {
                    node,
                    max_frame,
                    shm,
                },
                dec,
                left,
            ))
        }
        Frame::Error { code, .. } => Ok(HelloOutcome::Refused(code)),
        other => Err(format!("first frame is not HELLO: {other:?}")),
    }
}

pub(crate) fn refuse(stream: &UnixStream, code: ErrorCode, why: &str) {
    let _ = write_frame(stream, &crate::link::refusal(code, why));
    let _ = stream.shutdown(std::net::Shutdown::Both);
}
