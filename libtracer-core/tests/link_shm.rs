//! Shared-memory payloads over Unix-socket links (docs/wire.md, SEGMENT / SHM_DELIVERY /
//! RELEASE): a pool slot travels as a reference and comes back when the reader drops it; a
//! reader that does not map gets copies; a reader that goes away frees what it held; the
//! per-link bound turns references into copies, never into a wait; protocol faults close.

mod link_support;
#[path = "common/poll.rs"]
mod poll;

use std::sync::Arc;

use libtracer_core::link::{HostTransport, TransportConfig};
use libtracer_core::wire::{encode, Frame};
use libtracer_core::{Meta, Payload};
use link_support::{Ev, Recorder, TempDir, T};
use poll::eventually;
use tracer_shm::{Pool, PoolConfig};

fn pool() -> Pool {
    Pool::new(PoolConfig {
        min_slot: 4096,
        max_slot: 1 << 20,
        max_bytes: 8 << 20,
        segment_bytes: 1 << 20,
    })
    .expect("this machine maps memfd segments")
}

fn sample(pool: &Pool, len: usize, fill: u8) -> Payload {
    let mut s = pool.alloc(len).expect("room in the pool");
    s.as_mut_slice().fill(fill);
    Payload::from_slot(s.freeze())
}

fn delivery(edge: u64, payload: Payload) -> Frame {
    Frame::Delivery {
        edge,
        meta: Meta {
            sequence: edge,
            ..Meta::default()
        },
        suffix: None,
        payload,
    }
}

fn start(dir: &TempDir, name: &str, cfg: TransportConfig) -> (HostTransport, Arc<Recorder>) {
    let rec = Recorder::new();
    let t = HostTransport::start_with(dir.path(), name, rec.clone(), cfg).expect("transport");
    (t, rec)
}

fn payloads(rec: &Recorder, peer: &str) -> Vec<Payload> {
    rec.frames_from(peer)
        .into_iter()
        .filter_map(|f| match f {
            Frame::Delivery { payload, .. } => Some(payload),
            _ => None,
        })
        .collect()
}

#[test]
fn a_slot_travels_as_a_reference_and_is_reused_after_release() {
    let dir = TempDir::new("shm-ref");
    let (a, _ra) = start(&dir, "a", TransportConfig::default());
    let (_b, rb) = start(&dir, "b", TransportConfig::default());
    rb.wait_up("a", T);
    let link = a.link_to("b").expect("link a->b");
    assert!(link.sends_shm(), "same uid, b maps: references");
    let p = pool();
    for (i, len) in [5000usize, 70_000, 1 << 20].into_iter().enumerate() {
        let payload = sample(&p, len, i as u8 + 1);
        libtracer_core::link::Link::send(&*link, &delivery(i as u64, payload)).unwrap();
    }
    eventually(T, || payloads(&rb, "a").len() == 3).expect("three deliveries at b");
    let got = payloads(&rb, "a");
    for (i, (g, len)) in got.iter().zip([5000usize, 70_000, 1 << 20]).enumerate() {
        assert_eq!(g.len(), len);
        assert!(g.as_ref().iter().all(|&x| x == i as u8 + 1), "bytes of {i}");
        assert!(
            g.slot().is_none(),
            "b's payload is a view, not b's own slot"
        );
    }
    // b holds views: the slots stay out of the free lists.
    assert_eq!(link.shm_refs_out(), 3);
    assert_eq!(p.stats().slots_in_use, 3);
    drop(got);
    rb.clear_events();
    eventually(T, || link.shm_refs_out() == 0).expect("b released all");
    eventually(T, || p.stats().slots_in_use == 0).expect("slots back");
    assert!(rb.violations().is_empty(), "{:?}", rb.violations());
}

#[test]
fn a_reader_that_does_not_map_gets_copies() {
    let dir = TempDir::new("shm-copy");
    let (a, _ra) = start(&dir, "a", TransportConfig::default());
    let cfg = TransportConfig {
        accept_shm: false,
        ..TransportConfig::default()
    };
    let (_b, rb) = start(&dir, "b", cfg);
    rb.wait_up("a", T);
    let link = a.link_to("b").expect("link a->b");
    assert!(!link.sends_shm());
    let p = pool();
    libtracer_core::link::Link::send(&*link, &delivery(1, sample(&p, 100_000, 9))).unwrap();
    eventually(T, || payloads(&rb, "a").len() == 1).expect("the copy at b");
    assert!(payloads(&rb, "a")[0].as_ref().iter().all(|&x| x == 9));
    assert_eq!(link.shm_refs_out(), 0);
    assert_eq!(p.stats().slots_in_use, 0, "the copy holds no slot");
}

#[test]
fn a_reader_that_goes_away_frees_what_it_held() {
    let dir = TempDir::new("shm-gone");
    let (a, _ra) = start(&dir, "a", TransportConfig::default());
    let (b, rb) = start(&dir, "b", TransportConfig::default());
    rb.wait_up("a", T);
    let link = a.link_to("b").expect("link a->b");
    let p = pool();
    for i in 0..5 {
        libtracer_core::link::Link::send(&*link, &delivery(i, sample(&p, 50_000, 1))).unwrap();
    }
    eventually(T, || payloads(&rb, "a").len() == 5).expect("five at b");
    let held = payloads(&rb, "a");
    assert_eq!(link.shm_refs_out(), 5);
    // b goes (a SIGKILLed reader's socket closes the same way): a frees its slots at once,
    // while b's views stay readable.
    drop(b);
    eventually(T, || p.stats().slots_in_use == 0).expect("a freed the slots");
    assert!(held.iter().all(|h| h.as_ref().iter().all(|&x| x == 1)));
}

#[test]
fn past_the_reference_bound_samples_go_as_copies() {
    let dir = TempDir::new("shm-bound");
    let cfg = TransportConfig {
        shm_refs_per_link: 4,
        ..TransportConfig::default()
    };
    let (a, _ra) = start(&dir, "a", cfg);
    let (_b, rb) = start(&dir, "b", TransportConfig::default());
    rb.wait_up("a", T);
    let link = a.link_to("b").expect("link a->b");
    let p = pool();
    for i in 0..10u64 {
        libtracer_core::link::Link::send(&*link, &delivery(i, sample(&p, 8000, i as u8))).unwrap();
    }
    eventually(T, || payloads(&rb, "a").len() == 10).expect("ten at b");
    assert_eq!(link.shm_refs_out(), 4, "never more than the bound out");
    for (i, g) in payloads(&rb, "a").iter().enumerate() {
        assert!(
            g.as_ref().iter().all(|&x| x == i as u8),
            "sample {i} in order"
        );
    }
    assert_eq!(p.stats().slots_in_use, 4);
}

#[test]
fn shared_memory_protocol_faults_close_the_link() {
    let faults: Vec<(&str, Frame)> = vec![
        (
            "SEGMENT without a descriptor",
            Frame::Segment { id: 1, size: 4096 },
        ),
        (
            "reference into an unknown segment",
            Frame::ShmDelivery {
                edge: 1,
                meta: Meta::default(),
                suffix: None,
                shm: libtracer_core::wire::ShmRef {
                    segment: 7,
                    offset: 0,
                    len: 10,
                    token: 1,
                },
            },
        ),
        (
            "RELEASE of a token never sent",
            Frame::Release {
                tokens: vec![42].into(),
            },
        ),
    ];
    for (what, frame) in faults {
        let dir = TempDir::new("shm-fault");
        let (a, _ra) = start(&dir, "a", TransportConfig::default());
        let (_b, rb) = start(&dir, "b", TransportConfig::default());
        rb.wait_up("a", T);
        let link = a.link_to("b").expect("link a->b");
        link.send_raw(&encode(&frame).unwrap()).unwrap();
        assert!(rb.wait_down("a", T), "{what}: b closes the link");
        assert!(
            !rb.events()
                .iter()
                .any(|e| matches!(e, Ev::Frame(_, Frame::Delivery { .. }))),
            "{what}: nothing reached the handler"
        );
    }
}

#[test]
fn views_outlive_the_publisher_and_its_pool() {
    let dir = TempDir::new("shm-pubgone");
    let (a, _ra) = start(&dir, "a", TransportConfig::default());
    let (_b, rb) = start(&dir, "b", TransportConfig::default());
    rb.wait_up("a", T);
    let link = a.link_to("b").expect("link a->b");
    let p = pool();
    for i in 0..3 {
        libtracer_core::link::Link::send(&*link, &delivery(i, sample(&p, 300_000, 7))).unwrap();
    }
    eventually(T, || payloads(&rb, "a").len() == 3).expect("three at b");
    let held = payloads(&rb, "a");
    rb.clear_events();
    // The publisher's link, transport and pool all go: b's views map the segments on their own.
    drop(link);
    drop(a);
    drop(p);
    assert!(rb.wait_down("a", T));
    assert!(held
        .iter()
        .all(|h| h.len() == 300_000 && h.as_ref().iter().all(|&x| x == 7)));
}
