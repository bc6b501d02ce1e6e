//! A QUIC peer that stops reading (docs/network.md section 4): the write timeout bounds a stall
//! (no byte taken by the stream for that long), not a transfer, so a large frame on a slow but
//! live path is never cut (ros_tests/test_network_priority.py), while a peer that takes nothing
//! still loses its link and the sender is not blocked for longer. A file of its own: the gated
//! handler holds one of the process's two QUIC dispatcher threads, which other tests' links
//! would share. Everything binds loopback.

mod link_support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use libtracer_core::link::{Link, LinkHandler, QuicTransport};
use libtracer_core::wire::Frame;
use libtracer_core::{DeliveryPolicy, Meta, Payload};
use link_support::{free_udp_port, loopback_quic, Ev, Recorder, TempDir, T};
use parking_lot::{Condvar, Mutex};

/// Hands deliveries to a [`Recorder`] only while its gate is open: a peer that stops reading.
struct Gated {
    rec: Arc<Recorder>,
    open: Mutex<bool>,
    cv: Condvar,
}

impl Gated {
    fn set(&self, open: bool) {
        *self.open.lock() = open;
        self.cv.notify_all();
    }
}

impl LinkHandler for Gated {
    fn on_up(&self, link: Arc<dyn Link>) {
        self.rec.on_up(link)
    }
    fn on_frame(&self, link: &Arc<dyn Link>, frame: Frame) {
        if matches!(frame, Frame::Delivery { .. }) {
            let mut open = self.open.lock();
            let until = Instant::now() + Duration::from_secs(60);
            while !*open && !self.cv.wait_until(&mut open, until).timed_out() {}
        }
        self.rec.on_frame(link, frame)
    }
    fn on_down(&self, link: &Arc<dyn Link>) {
        self.rec.on_down(link)
    }
}

#[test]
fn a_peer_that_stops_reading_is_cut_once_nothing_is_taken_for_the_write_timeout() {
    let dir = TempDir::new("quic-stall");
    let port = free_udp_port();
    let ra = Recorder::new();
    let gate = Arc::new(Gated {
        rec: Recorder::new(),
        open: Mutex::new(false),
        cv: Condvar::new(),
    });
    let mut cfg = loopback_quic(port);
    cfg.write_timeout = Duration::from_secs(1);
    let _a = QuicTransport::start(dir.path(), "a", ra.clone(), cfg.clone()).unwrap();
    let _b = QuicTransport::start(dir.path(), "b", gate.clone(), cfg).unwrap();
    let to_b = ra.wait_up("b", T);
    let to_a = gate.rec.wait_up("a", T);
    to_a.send(&Frame::Subscribe {
        req: 1,
        source: "/t".into(),
        edge: 1,
        policy: DeliveryPolicy::new(true, 3, false).bits(),
    })
    .unwrap();
    assert!(ra.wait_for(T, |e| e
        .iter()
        .any(|e| matches!(e, Ev::Frame(_, Frame::Subscribe { edge: 1, .. })))));
    // b takes the first delivery and then nothing: its dispatcher queue, the QUIC windows and
    // a's queue fill, and a's sends then wait for room that never comes.
    const FRAME: usize = 64 * 1024;
    let started = Instant::now();
    let mut sent = 0u64;
    let mut last_ok = Instant::now();
    let failed = loop {
        let frame = Frame::Delivery {
            edge: 1,
            meta: Meta {
                source_timestamp_ns: 1,
                sequence: sent + 1,
                writer: [7; 16],
            },
            suffix: None,
            payload: Payload::from(vec![1u8; FRAME]),
        };
        match to_b.send(&frame) {
            Ok(()) => {
                sent += 1;
                last_ok = Instant::now();
            }
            Err(e) => break e,
        }
        assert!(sent < 4096, "256 MiB went to a peer that does not read");
    };
    let blocked = last_ok.elapsed();
    eprintln!(
        "a peer that stopped reading: {} KiB taken, then '{failed}' after {:?} ({blocked:?} blocked)",
        sent * FRAME as u64 / 1024,
        started.elapsed()
    );
    // Whichever side's clock ran out first (the writer task's, which closes the link and fails
    // the next send at once, or a send waiting for room), nothing waited for ever: the bound is
    // the write timeout, and this one only catches a hang.
    assert!(blocked < Duration::from_secs(30), "{blocked:?}");
    assert!(ra.wait_down("b", T), "a's link to b closed");
    gate.set(true);
}
