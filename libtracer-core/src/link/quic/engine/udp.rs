//! An engine's UDP socket: quinn-udp's (GSO on send, GRO and ECN on receipt), non-blocking,
//! written from any thread (a publisher sends its own packets) and read by the loop only.

use std::io::{self, IoSliceMut};
use std::net::{SocketAddr, UdpSocket};

use bytes::BytesMut;
use quinn_proto::Transmit;
use quinn_udp::{RecvMeta, UdpSocketState};

use super::super::tuning;

/// quinn-proto's largest UDP payload: the default upper bound of its path MTU discovery.
const MAX_PACKET: usize = 1452;
/// What one receipt may hold: a datagram of up to 64 KiB, or that much of GRO-coalesced ones.
pub(in crate::link::quic) const RECEIPT: usize = 128 << 10;
/// Receipts one `recvmmsg` takes. Two, not one: fewer than asked for means the socket was
/// empty at that moment, so the loop stops without the call that would only say "would
/// block" (epoll's edge comes again with the next datagram). One system call less per receipt
/// of a lone datagram, the case of every round trip.
pub(in crate::link::quic) const RECEIPTS_PER_CALL: usize = 2;

/// Packets per GSO send on `state`: one send is one IP datagram before the kernel cuts it, so
/// the packets together stay within 64 KiB less the IPv6 and UDP headers (45 of
/// [`MAX_PACKET`]), and within what the socket says it takes (1 where the device refuses GSO:
/// quinn-udp lowers it after a failed send, so it is read at each transmit). A larger send
/// fails with EMSGSIZE, which quinn-udp takes for an MTU probe's and drops. The engine's and
/// the inline probe's (`probe_inline.rs`) one rule.
pub(in crate::link::quic) fn gso_segments(state: &UdpSocketState) -> usize {
    let fits = (usize::from(u16::MAX) - 40 - 8) / MAX_PACKET;
    state.max_gso_segments().clamp(1, fits)
}

/// The datagrams of one receipt (`receipt`, as `meta` says: several at the kernel's stride with
/// GRO), each as its own `BytesMut` for quinn-proto, which decrypts it in place and keeps the
/// stream data it carries as slices of it. The receipt is copied once, into one allocation that
/// the datagrams share (as quinn's own endpoint does), not once per datagram: a 64 KiB message
/// arrives as 45 datagrams, and a copy each cost a `malloc` and a `free` each. The engine's and
/// the inline probe's one rule.
pub(in crate::link::quic) fn datagrams(
    receipt: &[u8],
    meta: &RecvMeta,
) -> impl Iterator<Item = BytesMut> {
    let stride = meta.stride.max(1);
    let mut rest = BytesMut::from(&receipt[..meta.len.min(receipt.len())]);
    std::iter::from_fn(move || (!rest.is_empty()).then(|| rest.split_to(stride.min(rest.len()))))
}

/// Send the packets quinn-proto built into `out` for `t` on `sock` (one `sendmsg`, several
/// packets with GSO). A full socket buffer is `Sent::Full`, not an error.
pub(in crate::link::quic) fn send_transmit(
    state: &UdpSocketState,
    sock: &UdpSocket,
    out: &[u8],
    t: &Transmit,
) -> io::Result<Sent> {
    let t = quinn_udp::Transmit {
        destination: t.destination,
        ecn: t
            .ecn
            .and_then(|e| quinn_udp::EcnCodepoint::from_bits(e as u8)),
        contents: &out[..t.size],
        segment_size: t.segment_size,
        src_ip: t.src_ip,
    };
    match state.send(sock.into(), &t) {
        Ok(()) => Ok(Sent::Sent),
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(Sent::Full),
        Err(e) => Err(e),
    }
}

pub(super) struct Udp {
    sock: UdpSocket,
    state: UdpSocketState,
}

/// What became of one send.
#[derive(Debug, PartialEq, Eq)]
pub(in crate::link::quic) enum Sent {
    Sent,
    /// The socket's buffer is full: keep the packets and send them when it is writable.
    Full,
}

impl Udp {
    pub(super) fn bind(addr: SocketAddr) -> io::Result<Udp> {
        Udp::on(tuning::bind(addr)?)
    }

    /// On a socket bound already (the directory's port, bound to learn whether it is free).
    pub(super) fn on(sock: UdpSocket) -> io::Result<Udp> {
        // Also makes the socket non-blocking: the loop reads until it would block, and a
        // publisher never waits in `sendmsg`.
        let state = UdpSocketState::new((&sock).into())?;
        Ok(Udp { sock, state })
    }

    pub(super) fn socket(&self) -> &UdpSocket {
        &self.sock
    }

    pub(super) fn local_addr(&self) -> io::Result<SocketAddr> {
        self.sock.local_addr()
    }

    /// `to` as this socket sends to it: an IPv4 peer of a dual-stack `[::]` socket as its
    /// IPv4-mapped IPv6 address (quinn's endpoint does the same; quinn-proto and quinn-udp
    /// take the address as given, and an IPv4 one on an IPv6 socket is refused by the
    /// kernel); an IPv6 peer of an IPv4 socket cannot be reached.
    pub(super) fn destination(&self, to: SocketAddr) -> Result<SocketAddr, String> {
        let v6 = self.local_addr().map_err(|e| e.to_string())?.is_ipv6();
        match (v6, to) {
            (true, SocketAddr::V4(a)) => {
                Ok(SocketAddr::new(a.ip().to_ipv6_mapped().into(), a.port()))
            }
            (false, SocketAddr::V6(a)) => match a.ip().to_ipv4_mapped() {
                Some(ip) => Ok(SocketAddr::new(ip.into(), a.port())),
                None => Err(format!("{to}: an IPv6 peer of an IPv4 socket")),
            },
            _ => Ok(to),
        }
    }

    /// Packets per GSO send ([`gso_segments`]).
    pub(super) fn segments(&self) -> usize {
        gso_segments(&self.state)
    }

    /// Send the packets quinn-proto built into `out` for `t` (one `sendmsg`).
    pub(super) fn send(&self, out: &[u8], t: &Transmit) -> io::Result<Sent> {
        send_transmit(&self.state, &self.sock, out, t)
    }

    /// Receipts into `bufs` (one `recvmmsg`; each receipt several datagrams with GRO, at its
    /// `stride`), their metadata in `metas`: how many came, 0 when the socket has nothing.
    pub(super) fn recv(
        &self,
        bufs: &mut [Vec<u8>; RECEIPTS_PER_CALL],
        metas: &mut [RecvMeta; RECEIPTS_PER_CALL],
    ) -> io::Result<usize> {
        let mut slices = bufs.each_mut().map(|b| IoSliceMut::new(b));
        match self.state.recv((&self.sock).into(), &mut slices, metas) {
            Ok(n) => Ok(n),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(0),
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(len: usize, stride: usize) -> RecvMeta {
        RecvMeta {
            len,
            stride,
            ..RecvMeta::default()
        }
    }

    #[test]
    fn a_receipt_is_cut_at_its_stride_and_no_further_than_its_length() {
        // Three datagrams, the last one short, in a buffer with room to spare after them.
        let mut receipt = vec![0xEE; 8192];
        for (i, b) in receipt[..1452 * 2 + 100].iter_mut().enumerate() {
            *b = (i / 1452) as u8;
        }
        let got: Vec<BytesMut> = datagrams(&receipt, &meta(1452 * 2 + 100, 1452)).collect();
        assert_eq!(
            got.iter().map(|d| d.len()).collect::<Vec<_>>(),
            [1452, 1452, 100]
        );
        for (i, d) in got.iter().enumerate() {
            assert!(d.iter().all(|&b| b == i as u8), "datagram {i}");
        }
        // One datagram without GRO (stride = its length), and a stride of 0 taken as 1.
        assert_eq!(datagrams(&receipt, &meta(64, 64)).count(), 1);
        assert_eq!(datagrams(&receipt, &meta(3, 0)).count(), 3);
        // Nothing received: no datagram; a length past the buffer is cut at the buffer.
        assert_eq!(datagrams(&receipt, &meta(0, 1452)).count(), 0);
        let whole: usize = datagrams(&receipt[..100], &meta(1452, 1452))
            .map(|d| d.len())
            .sum();
        assert_eq!(whole, 100);
    }
}
