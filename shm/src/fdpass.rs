//! Descriptors over a Unix stream socket (`SCM_RIGHTS`): one sent with the first bytes of a
//! frame, any received adopted as `OwnedFd` (closed on drop, never leaked into exec'd children).

use std::io::{self, IoSlice, IoSliceMut};
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

use nix::errno::Errno;
use nix::sys::socket::{recvmsg, sendmsg, ControlMessage, ControlMessageOwned, MsgFlags};

/// At most this many descriptors are accepted by one receive (a peer sends one at a time).
pub const MAX_FDS_PER_READ: usize = 8;

/// `sendmsg` of `iov` with `fd` attached (the kernel duplicates it into the receiver on the
/// read that takes the first of these bytes). Returns the bytes written, which may be fewer
/// than `iov` holds: the caller writes the rest without the descriptor.
pub fn send_with_fd(
    sock: BorrowedFd<'_>,
    iov: &[IoSlice<'_>],
    fd: BorrowedFd<'_>,
    flags: MsgFlags,
) -> nix::Result<usize> {
    let fds = [fd.as_raw_fd()];
    sendmsg::<()>(
        sock.as_raw_fd(),
        iov,
        &[ControlMessage::ScmRights(&fds)],
        flags,
        None,
    )
}

/// Bytes written to the stream socket `sock` that its peer has not read yet (`SIOCOUTQ`: the
/// kernel's accounting of them, a little more than the bytes themselves; 0 when the peer has
/// read everything). A Unix link's writer asks it to know whether its peer is behind
/// (libtracer-core `link/unix/gather.rs`). Here because the core forbids unsafe code and nix
/// has no safe call for it.
pub fn unread_by_peer(sock: BorrowedFd<'_>) -> io::Result<usize> {
    let mut n: nix::libc::c_int = 0;
    // SAFETY: SIOCOUTQ (TIOCOUTQ's number on sockets) writes one int through its pointer
    // argument, which points at `n`, live for the call; the descriptor is borrowed, so open.
    let r = unsafe { nix::libc::ioctl(sock.as_raw_fd(), nix::libc::TIOCOUTQ, &mut n) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(usize::try_from(n).unwrap_or(0))
}

/// Reads from a socket, collecting the descriptors that arrive with the bytes. Keeps its
/// control-message buffer between reads.
pub struct FdReceiver {
    cmsg: Vec<u8>,
}

impl Default for FdReceiver {
    fn default() -> Self {
        FdReceiver {
            cmsg: nix::cmsg_space!([std::os::fd::RawFd; MAX_FDS_PER_READ]),
        }
    }
}

impl FdReceiver {
    /// One `recvmsg` into `buf`; descriptors received are appended to `fds`. 0 = end of stream.
    /// Descriptors beyond [`MAX_FDS_PER_READ`] in one message are an error (the kernel closed
    /// the ones that did not fit; the link should end, as the peer broke the protocol).
    pub fn recv(
        &mut self,
        sock: BorrowedFd<'_>,
        buf: &mut [u8],
        fds: &mut Vec<OwnedFd>,
    ) -> io::Result<usize> {
        self.recv_with(sock, buf, fds, MsgFlags::empty())
    }

    /// As [`Self::recv`], but never waits (`MSG_DONTWAIT`): nothing to read is `WouldBlock`,
    /// whatever the socket's blocking mode. An event loop reads a socket this way while other
    /// threads write to the same socket with blocking writes.
    pub fn try_recv(
        &mut self,
        sock: BorrowedFd<'_>,
        buf: &mut [u8],
        fds: &mut Vec<OwnedFd>,
    ) -> io::Result<usize> {
        self.recv_with(sock, buf, fds, MsgFlags::MSG_DONTWAIT)
    }

    fn recv_with(
        &mut self,
        sock: BorrowedFd<'_>,
        buf: &mut [u8],
        fds: &mut Vec<OwnedFd>,
        flags: MsgFlags,
    ) -> io::Result<usize> {
        let mut iov = [IoSliceMut::new(buf)];
        let msg = loop {
            match recvmsg::<()>(
                sock.as_raw_fd(),
                &mut iov,
                Some(&mut self.cmsg),
                MsgFlags::MSG_CMSG_CLOEXEC | flags,
            ) {
                Err(Errno::EINTR) => continue,
                r => break r?,
            }
        };
        let n = msg.bytes;
        let cmsgs = match msg.cmsgs() {
            Ok(c) => c,
            // MSG_CTRUNC: some descriptors did not fit and, as the buffer was too small to parse,
            // those that did cannot be told apart from garbage: refuse the stream.
            Err(_) => return Err(io::Error::other("too many descriptors in one message")),
        };
        for c in cmsgs {
            if let ControlMessageOwned::ScmRights(raw) = c {
                for r in raw {
                    // SAFETY: the kernel has just installed `r` in our descriptor table for this
                    // SCM_RIGHTS message; nothing else in the process knows of it, so we own it.
                    fds.push(unsafe { OwnedFd::from_raw_fd(r) });
                }
            }
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::fd::AsFd;
    use std::os::unix::net::UnixStream;

    #[test]
    fn unread_bytes_are_counted_until_the_peer_reads_them() {
        let (a, b) = UnixStream::pair().unwrap();
        assert_eq!(unread_by_peer(a.as_fd()).unwrap(), 0);
        (&a).write_all(b"hello").unwrap();
        assert!(unread_by_peer(a.as_fd()).unwrap() >= 5);
        let mut buf = [0u8; 8];
        let n = std::io::Read::read(&mut &b, &mut buf).unwrap();
        assert_eq!(n, 5);
        assert_eq!(unread_by_peer(a.as_fd()).unwrap(), 0);
    }

    #[test]
    fn a_descriptor_arrives_with_its_bytes() {
        let (a, b) = UnixStream::pair().unwrap();
        let memfd =
            nix::sys::memfd::memfd_create(c"t", nix::sys::memfd::MemFdCreateFlag::empty()).unwrap();
        nix::unistd::ftruncate(&memfd, 12345).unwrap();
        let n = send_with_fd(
            a.as_fd(),
            &[IoSlice::new(b"head")],
            memfd.as_fd(),
            MsgFlags::MSG_NOSIGNAL,
        )
        .unwrap();
        assert_eq!(n, 4);
        (&a).write_all(b"tail").unwrap();
        let mut r = FdReceiver::default();
        let mut fds = Vec::new();
        let mut buf = [0u8; 16];
        let mut got = 0;
        while got < 8 {
            got += r.recv(b.as_fd(), &mut buf[got..], &mut fds).unwrap();
        }
        assert_eq!(&buf[..8], b"headtail");
        assert_eq!(fds.len(), 1);
        let st = nix::sys::stat::fstat(fds[0].as_raw_fd()).unwrap();
        assert_eq!(st.st_size, 12345);
    }
}
