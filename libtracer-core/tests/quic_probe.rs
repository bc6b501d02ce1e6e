#![cfg(feature = "quic")]
//! The bare QUIC probe of the benchmarks (`link::quic::probe_*`, `examples/bench_quic.rs`):
//! its round trips and bursts come back whole in every shape (quinn's two with the
//! `quinn-probe` feature), one connection after another
//! against one echo (the benchmark runs a ping and then a burst), and a request it cannot
//! honour is an error, not a hang. Everything binds loopback.

mod link_support;

use std::net::SocketAddr;
use std::time::Duration;

use libtracer_core::link::quic::{probe_burst, probe_echo, probe_ping, ProbeMode};
use link_support::free_udp_port;

fn echo(mode: ProbeMode) -> SocketAddr {
    let addr = SocketAddr::from(([127, 0, 0, 1], free_udp_port()));
    // The echo outlives the test's use of it (it ends when idle); the process ends it.
    std::thread::spawn(move || probe_echo(addr, mode).expect("echo"));
    addr
}

fn check(mode: ProbeMode) {
    let addr = echo(mode);
    let t = probe_ping(addr, 64, 200, mode).expect("64 B round trips");
    assert_eq!(t.len(), 200, "every measured round trip is returned");
    assert!(t
        .iter()
        .all(|d| *d > Duration::ZERO && *d < Duration::from_secs(5)));
    // The next connection to the same echo: a large message, then bursts.
    let t = probe_ping(addr, 1 << 20, 5, mode).expect("1 MiB round trips");
    assert_eq!(t.len(), 5);
    let t = probe_burst(addr, 1 << 20, 4, 3, mode).expect("bursts of 1 MiB");
    assert_eq!(t.len(), 3, "every measured round of the burst is returned");
    let t = probe_burst(addr, 64, 500, 2, mode).expect("bursts of 64 B");
    assert_eq!(t.len(), 2);
}

#[cfg(feature = "quinn-probe")]
#[test]
fn round_trips_and_bursts_on_the_runtime() {
    check(ProbeMode::Task);
}

#[cfg(feature = "quinn-probe")]
#[test]
fn round_trips_and_bursts_from_a_thread() {
    check(ProbeMode::Thread);
}

#[test]
fn round_trips_and_bursts_on_quinn_proto_inline() {
    check(ProbeMode::Inline);
}

#[test]
fn round_trips_and_bursts_on_the_engine() {
    check(ProbeMode::Engine);
}

#[test]
fn a_request_it_cannot_honour_is_an_error() {
    let addr = echo(ProbeMode::Engine);
    assert!(
        probe_ping(addr, 64, 0, ProbeMode::Engine).is_err(),
        "no rounds"
    );
    assert!(
        probe_ping(addr, 65 << 20, 1, ProbeMode::Engine).is_err(),
        "too large"
    );
    assert!(
        probe_burst(addr, 64, 0, 1, ProbeMode::Inline).is_err(),
        "empty bursts"
    );
    assert_eq!(ProbeMode::parse("thread"), Some(ProbeMode::Thread));
    assert_eq!(ProbeMode::parse("task").map(ProbeMode::name), Some("task"));
    assert_eq!(
        ProbeMode::parse("inline").map(ProbeMode::name),
        Some("inline")
    );
    assert_eq!(
        ProbeMode::parse("engine").map(ProbeMode::name),
        Some("engine")
    );
    assert_eq!(ProbeMode::parse("fast"), None);
}

/// Nothing listens there: the handshake times out (10 s) with an error.
fn nobody_answers(mode: ProbeMode) {
    let nobody = SocketAddr::from(([127, 0, 0, 1], free_udp_port()));
    assert!(probe_ping(nobody, 64, 1, mode).is_err());
}

#[cfg(feature = "quinn-probe")]
#[test]
fn no_echo_is_an_error_on_the_runtime() {
    nobody_answers(ProbeMode::Task);
}

/// Without the `quinn-probe` feature quinn is not built in: its shapes say so at once.
#[cfg(not(feature = "quinn-probe"))]
#[test]
fn the_quinn_shapes_need_their_feature() {
    let addr = SocketAddr::from(([127, 0, 0, 1], free_udp_port()));
    for mode in [ProbeMode::Task, ProbeMode::Thread] {
        let e = probe_ping(addr, 64, 1, mode).unwrap_err();
        assert!(e.contains("quinn-probe"), "{e}");
        let e = probe_echo(addr, mode).unwrap_err();
        assert!(e.contains("quinn-probe"), "{e}");
    }
}

#[test]
fn no_echo_is_an_error_inline() {
    nobody_answers(ProbeMode::Inline);
}

#[test]
fn no_echo_is_an_error_on_the_engine() {
    nobody_answers(ProbeMode::Engine);
}
