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

/// A reader whose link went may still read what it holds: a reader taken for hung resumes with
/// samples in its rings (here b's transport goes while the test holds its samples, in this same
/// process, which lives on). Their slots are not reused while its process lives, so what it
/// reads is what was sent, never the next message written there. (Freed once the process is
/// gone: `link/unix/quarantine.rs`'s unit test, with a child process.)
#[test]
fn a_reader_that_goes_away_while_its_process_lives_keeps_what_it_held() {
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
    drop(b);
    eventually(T, || link.is_closed()).expect("a's link closed");
    assert_eq!(link.shm_refs_out(), 0);
    // a writes five more of the same size: none lands in a slot b still reads.
    let more: Vec<Payload> = (0..5).map(|_| sample(&p, 50_000, 2)).collect();
    assert!(
        held.iter().all(|h| h.as_ref().iter().all(|&x| x == 1)),
        "b's samples were overwritten"
    );
    assert_eq!(p.stats().slots_in_use, 10);
    drop(more);
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
            "RETIRE of a segment never announced",
            Frame::Retire { id: 9, size: 4096 },
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

/// Mappings of this process of exactly `size` bytes whose file is a tracer-shm memfd, mapped
/// with `perms` ("rw-s": a publisher's, "r--s": a reader's).
fn memfd_mappings_of(size: u64, perms: &str) -> usize {
    std::fs::read_to_string("/proc/self/maps")
        .unwrap()
        .lines()
        .filter(|l| l.contains("memfd:tracer-shm") && l.split_whitespace().nth(1) == Some(perms))
        .filter(|l| {
            let range = l.split_whitespace().next().unwrap();
            let (lo, hi) = range.split_once('-').unwrap();
            let lo = u64::from_str_radix(lo, 16).unwrap();
            let hi = u64::from_str_radix(hi, 16).unwrap();
            hi - lo == size
        })
        .count()
}

#[test]
fn a_segment_made_for_one_message_is_retired_once_the_reader_lets_it_go() {
    let dir = TempDir::new("shm-alone");
    let (a, _ra) = start(&dir, "a", TransportConfig::default());
    let (_b, rb) = start(&dir, "b", TransportConfig::default());
    rb.wait_up("a", T);
    let link = a.link_to("b").expect("link a->b");
    let p = pool();
    // Above the pool's largest slot (1 MiB): a segment of its own, of a size no other has.
    let len = (3 << 20) + 123;
    let seg_size = (3 << 20) + 4096;
    let payload = sample(&p, len, 9);
    assert!(payload.slot().expect("shared memory").retires());
    libtracer_core::link::Link::send(&*link, &delivery(1, payload.clone())).unwrap();
    eventually(T, || payloads(&rb, "a").len() == 1).expect("the message at b");
    let got = payloads(&rb, "a");
    assert!(got[0].len() == len && got[0].as_ref().iter().all(|&x| x == 9));
    assert_eq!(link.shm_refs_out(), 1, "it went as a reference");
    assert_eq!(memfd_mappings_of(seg_size, "rw-s"), 1, "a's, to write");
    assert_eq!(memfd_mappings_of(seg_size, "r--s"), 1, "b's, to read");
    // The publisher lets it go: b's reference still holds it.
    drop(payload);
    assert_eq!(p.stats().alone, 1);
    // b lets it go: RELEASE, the segment goes, RETIRE, and b's mapping goes too. a keeps the
    // memory for the next one.
    drop(got);
    rb.clear_events();
    eventually(T, || p.stats().alone == 0).expect("the segment gone from a");
    eventually(T, || memfd_mappings_of(seg_size, "r--s") == 0).expect("b's mapping gone");
    assert_eq!(p.stats().alone_spare, 1);
    // The link is up and the next one goes the same way, in the same memory under a new
    // number, which b maps afresh.
    libtracer_core::link::Link::send(&*link, &delivery(2, sample(&p, len, 4))).unwrap();
    eventually(T, || payloads(&rb, "a").len() == 1).expect("the next one at b");
    assert!(payloads(&rb, "a")[0].as_ref().iter().all(|&x| x == 4));
    assert_eq!(memfd_mappings_of(seg_size, "rw-s"), 1, "the same memory");
    rb.clear_events();
    eventually(T, || memfd_mappings_of(seg_size, "r--s") == 0).expect("retired again");
    assert!(!link.is_closed());
    // The pool goes: so does what it kept.
    drop(p);
    assert_eq!(memfd_mappings_of(seg_size, "rw-s"), 0);
}

/// A reader whose HELLO does not say it takes RETIRE (bit 1) is never sent a segment made for
/// one message: it gets the bytes, and pool slots still as references.
#[test]
fn a_reader_that_does_not_take_retire_gets_such_a_message_as_bytes() {
    use std::io::{Read, Write};
    let dir = TempDir::new("shm-old");
    let (a, _ra) = start(&dir, "a", TransportConfig::default());
    let mut s = std::os::unix::net::UnixStream::connect(a.socket_path()).unwrap();
    let mut hello = link_support::hello("old");
    if let Frame::Hello { shm, .. } = &mut hello {
        *shm = libtracer_core::wire::ShmCaps {
            maps: true,
            retire: false,
        };
    }
    s.write_all(&encode(&hello).unwrap()).unwrap();
    eventually(T, || a.link_to("old").is_some()).expect("linked");
    let link = a.link_to("old").unwrap();
    assert!(link.sends_shm(), "it maps pool segments");
    let p = pool();
    let len = (2 << 20) + 77;
    // The reader reads while a writes: the bytes are more than a socket buffer holds.
    let reader = std::thread::spawn(move || {
        let mut dec = libtracer_core::wire::FrameDecoder::new(libtracer_core::wire::MAX_FRAME);
        let mut buf = vec![0u8; 1 << 16];
        let (mut at, mut end) = (0, 0);
        loop {
            match dec.pop().unwrap() {
                Some(Frame::Delivery { payload, .. }) => return (payload, s),
                Some(f @ (Frame::Segment { .. } | Frame::ShmDelivery { .. })) => {
                    panic!("a segment made for one message went to an old reader: {f:?}")
                }
                Some(Frame::Ping { nonce }) => s
                    .write_all(&encode(&Frame::Pong { nonce }).unwrap())
                    .unwrap(),
                Some(_) => {}
                None if at < end => at += dec.push(&buf[at..end]),
                None => {
                    end = s.read(&mut buf).unwrap();
                    assert!(end > 0, "a closed the link");
                    at = dec.push(&buf[..end]);
                }
            }
        }
    });
    libtracer_core::link::Link::send(&*link, &delivery(1, sample(&p, len, 5))).unwrap();
    let (got, _s) = reader.join().unwrap();
    assert!(got.len() == len && got.as_ref().iter().all(|&x| x == 5));
    assert_eq!(p.stats().alone, 0, "nothing of it held for the reader");
    assert_eq!(link.shm_refs_out(), 0);
}
