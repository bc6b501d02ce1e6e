//! How the QUIC links are tuned for throughput and loss (each choice measured with
//! tools/bench/net; the numbers are in docs/network.md section 11): the UDP socket's kernel
//! buffers, and the congestion controller of every connection, quinn's BBR with a floor under
//! its window.
//!
//! - **Socket buffers of `SOCKET_BUFFER`** (see there): without them a large frame's burst
//!   overflowed the receiver's default buffer, and the sender spent its time recovering losses
//!   that the wire never had (BBR with the floor below: 1 MiB round trips of 176-215 ms over a
//!   veth; 4.2 ms with the buffers).
//! - **BBR, not Cubic** (quinn's default): Cubic takes every lost packet for congestion and
//!   halves its window, so on a link that drops 5% of its packets at random with a 40 ms round
//!   trip a link moved 0.17 MB/s; BBR paces at the delivery rate it measures and keeps it
//!   through random loss (11 MB/s on the same link, 16 MB/s with the floor).
//! - **A floor of `WINDOW_FLOOR` bytes:** BBR sizes its window from the smallest round trip it
//!   has seen (tens of microseconds on a LAN, measured on small frames) times the delivery rate;
//!   when the bottleneck is the two processes rather than the wire, a large frame's packets wait
//!   for ACKs much longer than that, and the window starves the link (1 MiB round trips over a
//!   veth: 13.6 ms without the floor, 4.2 ms with it, 5.4 ms under Cubic). The floor keeps one
//!   large frame in flight whatever BBR measured, about what a DDS writer (no congestion control
//!   at all) puts on the wire at once; it is bounded, and the receive windows
//!   (`tls::transport`) bound it again.

use std::any::Any;
use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::time::Instant;

use nix::sys::socket::{setsockopt, sockopt};
use quinn_proto::congestion::{BbrConfig, Controller, ControllerFactory, ControllerMetrics};
use quinn_proto::RttEstimator;

/// Asked of the kernel for each direction; it caps the request at `net.core.rmem_max` /
/// `wmem_max` (and doubles what it grants, for its own bookkeeping).
///
/// Why: the default receive buffer (208 KiB on Linux) holds about 150 QUIC packets. A 1 MiB
/// frame arrives as some 750 packets faster than a loaded receiver drains them, so the kernel
/// dropped most of a burst and the sender spent its time in loss recovery
/// (docs/network.md section 11).
pub(crate) const SOCKET_BUFFER: usize = 8 << 20;

/// Bind a UDP socket at `addr` with the larger buffers. Buffer sizes are a request: a kernel
/// that refuses or caps them leaves a working socket.
pub(crate) fn bind(addr: SocketAddr) -> std::io::Result<UdpSocket> {
    let sock = super::bind_udp(addr)?;
    let _ = setsockopt(&sock, sockopt::RcvBuf, &SOCKET_BUFFER);
    let _ = setsockopt(&sock, sockopt::SndBuf, &SOCKET_BUFFER);
    Ok(sock)
}

/// Bytes a connection may always have in flight, whatever BBR's window says.
pub(crate) const WINDOW_FLOOR: u64 = 2 << 20;

/// Builds a [`Floored`] BBR per connection.
#[derive(Debug, Default)]
pub(crate) struct FlooredBbrConfig {
    bbr: Arc<BbrConfig>,
}

impl ControllerFactory for FlooredBbrConfig {
    fn build(self: Arc<Self>, now: Instant, current_mtu: u16) -> Box<dyn Controller> {
        Box::new(Floored {
            inner: self.bbr.clone().build(now, current_mtu),
            floor: WINDOW_FLOOR,
        })
    }
}

/// A controller whose window never drops below `floor`; everything else is `inner`'s.
struct Floored {
    inner: Box<dyn Controller>,
    floor: u64,
}

impl Controller for Floored {
    fn on_sent(&mut self, now: Instant, bytes: u64, last_packet_number: u64) {
        self.inner.on_sent(now, bytes, last_packet_number)
    }

    fn on_ack(
        &mut self,
        now: Instant,
        sent: Instant,
        bytes: u64,
        app_limited: bool,
        rtt: &RttEstimator,
    ) {
        self.inner.on_ack(now, sent, bytes, app_limited, rtt)
    }

    fn on_end_acks(
        &mut self,
        now: Instant,
        in_flight: u64,
        app_limited: bool,
        largest_packet_num_acked: Option<u64>,
    ) {
        self.inner
            .on_end_acks(now, in_flight, app_limited, largest_packet_num_acked)
    }

    fn on_congestion_event(
        &mut self,
        now: Instant,
        sent: Instant,
        is_persistent_congestion: bool,
        lost_bytes: u64,
    ) {
        self.inner
            .on_congestion_event(now, sent, is_persistent_congestion, lost_bytes)
    }

    fn on_mtu_update(&mut self, new_mtu: u16) {
        self.inner.on_mtu_update(new_mtu)
    }

    fn window(&self) -> u64 {
        self.inner.window().max(self.floor)
    }

    fn metrics(&self) -> ControllerMetrics {
        let mut m = self.inner.metrics();
        m.congestion_window = self.window();
        m
    }

    fn clone_box(&self) -> Box<dyn Controller> {
        Box::new(Floored {
            inner: self.inner.clone_box(),
            floor: self.floor,
        })
    }

    fn initial_window(&self) -> u64 {
        self.inner.initial_window().max(self.floor)
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_never_drops_below_the_floor() {
        let now = Instant::now();
        let mut c = Arc::new(FlooredBbrConfig::default()).build(now, 1200);
        assert_eq!(c.window(), WINDOW_FLOOR.max(c.initial_window()));
        // A persistent congestion event sends BBR to its minimum window; the floor holds.
        c.on_congestion_event(now, now, true, 1 << 20);
        assert!(c.window() >= WINDOW_FLOOR);
        assert_eq!(c.metrics().congestion_window, c.window());
    }
}
