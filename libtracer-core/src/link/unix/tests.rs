//! The gathering of small frames on a real socket pair (`gather.rs`): a lone frame goes at once,
//! frames wait only while the peer is behind or another thread writes, a flush always comes, and
//! order holds across gathered and direct writes.

use std::io::Read;
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::gather::GATHER_FRAME;
use super::{ShmSend, UnixLink};
use crate::link::{Link, PeerIdentity};
use crate::payload::{Meta, Payload};
use crate::wire::frame::MAX_FRAME;
use crate::wire::stream::FrameDecoder;
use crate::wire::Frame;

const T: Duration = Duration::from_secs(10);

fn pair() -> (Arc<UnixLink>, UnixStream) {
    crate::link::dispatch::start().expect("workers");
    let (a, b) = UnixStream::pair().unwrap();
    let peer = PeerIdentity {
        name: "peer".into(),
        uid: 0,
        gid: 0,
        pid: 0,
        remote: None,
    };
    let shm = ShmSend {
        enabled: false,
        retire: false,
        max_out: 0,
    };
    (UnixLink::new(peer, a, MAX_FRAME, Instant::now(), shm), b)
}

fn delivery(seq: u64, len: usize) -> Frame {
    Frame::Delivery {
        edge: 1,
        meta: Meta {
            sequence: seq,
            ..Meta::default()
        },
        suffix: None,
        payload: Payload::from(vec![seq as u8; len]),
    }
}

/// Read frames from `peer` until `n` have come (or `T` passes), without blocking past `T`.
fn read_frames(peer: &mut UnixStream, n: usize) -> Vec<Frame> {
    peer.set_read_timeout(Some(T)).unwrap();
    let mut dec = FrameDecoder::new(MAX_FRAME);
    let mut frames = Vec::new();
    let mut buf = vec![0u8; 64 << 10];
    while frames.len() < n {
        let got = peer.read(&mut buf).expect("the frames come");
        assert!(got > 0, "end of stream after {} frames", frames.len());
        let mut input = &buf[..got];
        while let Some(f) = dec.feed(&mut input).expect("well formed") {
            frames.push(f);
        }
    }
    frames
}

/// Wait (at most `T`) for the flush to find the gathering empty and end it.
fn wait_gathering_over(link: &UnixLink) {
    let t0 = Instant::now();
    while link.gather.lock().is_on() {
        assert!(t0.elapsed() < T, "the gathering never ended");
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn sequences(frames: &[Frame]) -> Vec<u64> {
    frames
        .iter()
        .map(|f| match f {
            Frame::Delivery { meta, .. } => meta.sequence,
            other => panic!("not a delivery: {other:?}"),
        })
        .collect()
}

#[test]
fn a_lone_frame_is_written_at_once() {
    let (link, mut peer) = pair();
    let f = delivery(7, 64);
    link.send(&f).unwrap();
    assert!(!link.gather.lock().is_on());
    // Already in the socket: a read that does not wait finds it whole.
    peer.set_nonblocking(true).unwrap();
    let mut buf = vec![0u8; 4096];
    let n = peer.read(&mut buf).expect("written before send returned");
    let mut dec = FrameDecoder::new(MAX_FRAME);
    assert_eq!(dec.feed(&mut &buf[..n]).unwrap(), Some(f));
}

#[test]
fn the_peer_is_behind_while_it_has_bytes_of_ours_to_read() {
    let (link, mut peer) = pair();
    link.send(&delivery(1, 64)).unwrap();
    assert!(tracer_shm::fdpass::unread_by_peer(link.socket()).unwrap() > 0);
    // The next frame is gathered; its flush comes without another send.
    link.send(&delivery(2, 64)).unwrap();
    assert_eq!(sequences(&read_frames(&mut peer, 2)), vec![1, 2]);
    assert!(!link.peer_behind());
    wait_gathering_over(&link);
}

#[test]
fn frames_gathered_behind_a_writer_are_flushed_after_it_in_order() {
    let (link, mut peer) = pair();
    link.send(&delivery(0, 10)).unwrap();
    // Another writer holds the socket: small frames gather behind it, none is written.
    let held = link.write_lock.lock();
    for seq in 1..=50 {
        link.send(&delivery(seq, (seq % 70) as usize)).unwrap();
    }
    assert!(link.gather.lock().is_on());
    assert!(link.gather.lock().bytes().len() > 50 * 20);
    assert_eq!(sequences(&read_frames(&mut peer, 1)), vec![0]);
    // A frame too large to gather waits for the socket and goes after the gathered ones.
    let big = {
        let link = link.clone();
        std::thread::spawn(move || link.send(&delivery(51, GATHER_FRAME + 1)).unwrap())
    };
    std::thread::sleep(Duration::from_millis(20));
    drop(held);
    big.join().unwrap();
    for seq in 52..=60 {
        link.send(&delivery(seq, 100)).unwrap();
    }
    assert_eq!(
        sequences(&read_frames(&mut peer, 60)),
        (1..=60).collect::<Vec<_>>()
    );
    wait_gathering_over(&link);
}

#[test]
fn a_flood_arrives_whole_and_in_order() {
    let (link, mut peer) = pair();
    let sender = {
        let link = link.clone();
        std::thread::spawn(move || {
            for seq in 0..20_000u64 {
                let len = if seq % 1000 == 999 {
                    40_000
                } else {
                    (seq % 300) as usize
                };
                link.send(&delivery(seq, len)).unwrap();
            }
        })
    };
    let frames = read_frames(&mut peer, 20_000);
    sender.join().unwrap();
    assert_eq!(sequences(&frames), (0..20_000).collect::<Vec<_>>());
    for f in &frames {
        let Frame::Delivery { meta, payload, .. } = f else {
            unreachable!()
        };
        let seq = meta.sequence;
        let len = if seq % 1000 == 999 {
            40_000
        } else {
            (seq % 300) as usize
        };
        assert_eq!(payload.as_ref(), vec![seq as u8; len].as_slice());
    }
}

/// Fill the socket (the peer reads nothing), then gather `n` more small frames behind a held
/// write lock, so nothing but a drain writes them. Returns the sequence after the last.
fn fill_then_gather(link: &UnixLink, n: u64) -> u64 {
    let mut seq = 0;
    while tracer_shm::fdpass::unread_by_peer(link.socket()).unwrap() < 300_000 {
        link.send(&delivery(seq, 8_000)).unwrap();
        seq += 1;
    }
    let held = link.write_lock.lock();
    for _ in 0..n {
        link.send(&delivery(seq, 100)).unwrap();
        seq += 1;
    }
    drop(held);
    seq
}

#[test]
fn a_drain_writes_what_is_gathered_while_the_peer_reads_and_gives_up_on_one_that_does_not() {
    // A peer that reads late: the drain waits for room and everything arrives.
    let (link, mut peer) = pair();
    let end = fill_then_gather(&link, 200);
    let reader = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        sequences(&read_frames(&mut peer, end as usize))
    });
    link.drain_gathered(Instant::now() + T);
    link.close();
    assert_eq!(reader.join().unwrap(), (0..end).collect::<Vec<_>>());

    // A peer that reads nothing: the drain ends at its bound, whether a writer holds the
    // link (a flush blocked in a write) or the socket has no room.
    let (link, _peer) = pair();
    let held = link.write_lock.lock();
    link.send(&delivery(0, 100)).unwrap();
    let t0 = Instant::now();
    link.drain_gathered(t0 + Duration::from_millis(100));
    assert!(t0.elapsed() < Duration::from_secs(5));
    drop(held);
    let (a, _b) = UnixStream::pair().unwrap();
    a.set_nonblocking(true).unwrap();
    while std::io::Write::write(&mut &a, &[0u8; 4096]).is_ok() {}
    a.set_nonblocking(false).unwrap();
    let t0 = Instant::now();
    let r = super::gather::write_all_until(&a, &[1u8; 100], t0 + Duration::from_millis(100));
    assert_eq!(r.unwrap_err().kind(), std::io::ErrorKind::TimedOut);
    assert!(t0.elapsed() >= Duration::from_millis(100));
    assert!(t0.elapsed() < Duration::from_secs(5));
}
