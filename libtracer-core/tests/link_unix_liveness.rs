//! Ruling 9, liveness of same-host links without per-link periodic traffic (docs/wire.md,
//! "Liveness"): an idle link sends nothing once its peer has answered for what we wrote; a peer
//! that hangs is found as soon as it owes us an answer; a peer that reads a one-way stream and
//! answers PINGs is kept, however long we keep writing.

mod link_support;
#[path = "common/poll.rs"]
mod poll;

use std::io::{Read, Write};
use std::os::unix::net::UnixListener;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use libtracer_core::link::{HostTransport, Link, TransportConfig};
use libtracer_core::wire::{encode, Frame, FrameDecoder, MAX_FRAME};
use link_support::{Ev, Recorder, TempDir, T};
use parking_lot::Mutex;
use poll::eventually;

/// A PING every `ping_ms` while owed, a hung peer given up after `dead_ms` (far above the
/// interval, and above the stalls of a loaded machine).
fn timing(ping_ms: u64, dead_ms: u64) -> TransportConfig {
    TransportConfig {
        ping_interval: Duration::from_millis(ping_ms),
        dead_after: Duration::from_millis(dead_ms),
        ..Default::default()
    }
}

/// A hand-made peer `name` listening in `dir`: says HELLO back, then reads every frame and
/// records it with its arrival time; answers PINGs with PONG while `answer` is set, and stops
/// reading altogether once `answer` is cleared and a frame other than PING has come (a
/// process that hung while it had nothing to do).
struct FakePeer {
    frames: Arc<Mutex<Vec<(Instant, Frame)>>>,
    answer: Arc<AtomicBool>,
    _thread: std::thread::JoinHandle<()>,
}

impl FakePeer {
    fn start(dir: &std::path::Path, name: &str) -> FakePeer {
        let listener = UnixListener::bind(dir.join(format!("{name}.sock"))).unwrap();
        let name = name.to_owned();
        let frames = Arc::new(Mutex::new(Vec::new()));
        let answer = Arc::new(AtomicBool::new(true));
        let (f, a) = (frames.clone(), answer.clone());
        let thread = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut dec = FrameDecoder::new(MAX_FRAME);
            let mut buf = [0u8; 4096];
            let hello = link_support::hello(&name);
            let mut greeted = false;
            loop {
                let n = match s.read(&mut buf) {
                    Ok(0) | Err(_) => return,
                    Ok(n) => n,
                };
                let mut at = 0;
                while at < n {
                    at += dec.push(&buf[at..n]);
                    while let Ok(Some(frame)) = dec.pop() {
                        if !greeted {
                            greeted = true;
                            s.write_all(&encode(&hello).unwrap()).unwrap();
                            continue;
                        }
                        let answering = a.load(Ordering::SeqCst);
                        let is_ping = matches!(frame, Frame::Ping { .. });
                        if let (true, Frame::Ping { nonce }) = (answering, &frame) {
                            let _ = s.write_all(&encode(&Frame::Pong { nonce: *nonce }).unwrap());
                        }
                        f.lock().push((Instant::now(), frame));
                        if !answering && !is_ping {
                            // Hung: the socket stays open, nothing more is read.
                            std::thread::sleep(Duration::from_secs(3600));
                        }
                    }
                }
            }
        });
        FakePeer {
            frames,
            answer,
            _thread: thread,
        }
    }

    /// Wait (at most 30 s) until no frame has come for a second: the new link's probe is
    /// answered and settled. A PONG slow to reach the prober (a loaded machine) may cost a
    /// second PING; a link PINGed for ever never settles.
    fn settle(&self) {
        let end = Instant::now() + Duration::from_secs(30);
        loop {
            let n = self.frames.lock().len();
            std::thread::sleep(Duration::from_secs(1));
            if n >= 1 && self.frames.lock().len() == n {
                return;
            }
            assert!(Instant::now() < end, "the link never went quiet");
        }
    }

    fn pings(&self) -> usize {
        self.frames
            .lock()
            .iter()
            .filter(|(_, f)| matches!(f, Frame::Ping { .. }))
            .count()
    }
}

#[test]
fn ruling9_an_idle_link_sends_nothing_once_answered() {
    let dir = TempDir::new("idle");
    let peer = FakePeer::start(dir.path(), "zz");
    let r = Recorder::new();
    let _a = HostTransport::start_with(dir.path(), "a", r.clone(), timing(200, 3000)).unwrap();
    r.wait_up("zz", T);
    // The new link is probed (our HELLO wants an answer too) ...
    assert!(
        eventually(T, || peer.pings() >= 1).is_some(),
        "the new link was never probed"
    );
    peer.settle();
    let first = peer.frames.lock().len();
    // ... and then, idle both ways, nothing: fifteen PING intervals, and not one frame.
    std::thread::sleep(Duration::from_secs(3));
    let frames = peer.frames.lock();
    assert_eq!(
        frames.len(),
        first,
        "an idle link sent {:?}",
        &frames[first..]
    );
    assert_eq!(
        r.events(),
        vec![Ev::Up("zz".into())],
        "the idle link was kept"
    );
}

#[test]
fn ruling9_a_peer_that_hangs_while_idle_is_found_once_it_owes_an_answer() {
    let dir = TempDir::new("hangidle");
    let peer = FakePeer::start(dir.path(), "zz");
    let r = Recorder::new();
    let _a = HostTransport::start_with(dir.path(), "a", r.clone(), timing(100, 1000)).unwrap();
    let to_zz = r.wait_up("zz", T);
    assert!(eventually(T, || peer.pings() >= 1).is_some());
    peer.settle();
    // The peer hangs while it has nothing of ours to read: nobody waits for it, so nothing
    // tells (as with a stopped DDS participant before its lease ends), and the link stays
    // for three dead_after periods.
    peer.answer.store(false, Ordering::SeqCst);
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(r.events(), vec![Ev::Up("zz".into())]);
    // A frame it does not answer for: found, within dead_after plus scheduling slack.
    let sent = Instant::now();
    to_zz.send(&Frame::Ok { req: 1 }).unwrap();
    assert!(
        r.wait_down("zz", Duration::from_secs(20)),
        "a hung peer that owes us an answer was kept"
    );
    eprintln!("hung peer dropped {:?} after the frame", sent.elapsed());
}

#[test]
fn ruling9_a_one_way_stream_to_a_live_peer_keeps_its_link() {
    // b only reads (and answers PINGs from its event loop): it never writes a frame of its
    // own, so a hears nothing but PONGs for five seconds (2.5 dead_after periods) of writing.
    let dir = TempDir::new("oneway");
    let (ra, rb) = (Recorder::new(), Recorder::new());
    let _a = HostTransport::start_with(dir.path(), "a", ra.clone(), timing(100, 2000)).unwrap();
    let _b = HostTransport::start_with(dir.path(), "b", rb.clone(), timing(100, 2000)).unwrap();
    let to_b = ra.wait_up("b", T);
    let end = Instant::now() + Duration::from_secs(5);
    let mut n = 0u64;
    while Instant::now() < end {
        n += 1;
        to_b.send(&Frame::Ok { req: n }).unwrap();
        std::thread::sleep(Duration::from_millis(2));
    }
    assert!(rb.wait_for(T, |e| e
        .contains(&Ev::Frame("a".into(), Frame::Ok { req: n }))));
    assert!(
        !ra.events().iter().any(|e| matches!(e, Ev::Down(_))),
        "{:?}",
        ra.events()
            .iter()
            .filter(|e| !matches!(e, Ev::Frame(..)))
            .collect::<Vec<_>>()
    );
    assert!(!rb.events().iter().any(|e| matches!(e, Ev::Down(_))));
}

/// Read frames from `s` until one is complete (the peer's HELLO), then say HELLO as `name`.
fn greet(s: &mut std::os::unix::net::UnixStream, name: &str) {
    let mut dec = FrameDecoder::new(MAX_FRAME);
    let mut buf = [0u8; 512];
    while dec.pop().unwrap().is_none() {
        let n = s.read(&mut buf).unwrap();
        dec.push(&buf[..n]);
    }
    let hello = link_support::hello(name);
    s.write_all(&encode(&hello).unwrap()).unwrap();
}

#[test]
fn ruling9_a_peer_found_hung_is_linked_again_once_it_answers() {
    let dir = TempDir::new("redial");
    let listener = UnixListener::bind(dir.path().join("zz.sock")).unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let d = done.clone();
    let peer = std::thread::spawn(move || {
        // First connection: HELLO, then it hangs (reads nothing, answers nothing).
        let (mut first, _) = listener.accept().unwrap();
        greet(&mut first, "zz");
        // Second (the redial): HELLO, then PINGs answered, as a resumed process would.
        let (mut second, _) = listener.accept().unwrap();
        greet(&mut second, "zz");
        second
            .set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        let mut dec = FrameDecoder::new(MAX_FRAME);
        let mut buf = [0u8; 4096];
        while !d.load(Ordering::SeqCst) {
            match second.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    dec.push(&buf[..n]);
                    while let Ok(Some(f)) = dec.pop() {
                        if let Frame::Ping { nonce } = f {
                            second
                                .write_all(&encode(&Frame::Pong { nonce }).unwrap())
                                .unwrap();
                        }
                    }
                }
                Err(_) => {}
            }
        }
        drop(first);
    });
    let r = Recorder::new();
    let a = HostTransport::start_with(dir.path(), "a", r.clone(), timing(100, 2000)).unwrap();
    let up_down_up = |e: &[Ev]| {
        e == [
            Ev::Up("zz".into()),
            Ev::Down("zz".into()),
            Ev::Up("zz".into()),
        ]
    };
    assert!(
        r.wait_for(Duration::from_secs(30), up_down_up),
        "{:?}",
        r.events()
    );
    // The new link is answered: it stays.
    std::thread::sleep(Duration::from_millis(1500));
    assert!(up_down_up(&r.events()), "{:?}", r.events());
    assert_eq!(a.peers(), vec!["zz"]);
    done.store(true, Ordering::SeqCst);
    peer.join().unwrap();
}

#[test]
fn ruling9_a_link_closed_while_both_live_comes_back_once() {
    let dir = TempDir::new("relink");
    let (ra, rb) = (Recorder::new(), Recorder::new());
    let (a, b) = (
        HostTransport::start_with(dir.path(), "a", ra.clone(), timing(200, 5000)).unwrap(),
        HostTransport::start_with(dir.path(), "b", rb.clone(), timing(200, 5000)).unwrap(),
    );
    rb.wait_up("a", T);
    ra.wait_up("b", T);
    // As when one side's liveness check gave up on the other: both ends see it go, both
    // may dial again at once, and the tie-break keeps one link.
    b.link_to("a").unwrap().close();
    for (r, peer) in [(&ra, "b"), (&rb, "a")] {
        assert!(
            r.wait_for(Duration::from_secs(30), |e| e
                .iter()
                .filter(|x| **x == Ev::Up(peer.into()))
                .count()
                == 2),
            "{:?}",
            r.events()
        );
    }
    std::thread::sleep(Duration::from_millis(500));
    for (r, peer) in [(&ra, "b"), (&rb, "a")] {
        assert_eq!(
            r.events(),
            vec![
                Ev::Up(peer.into()),
                Ev::Down(peer.into()),
                Ev::Up(peer.into())
            ]
        );
    }
    assert_eq!(a.peers(), vec!["b"]);
    assert_eq!(b.peers(), vec!["a"]);
    // One connection: a frame sent on a's link arrives at b.
    a.link_to("b").unwrap().send(&Frame::Ok { req: 9 }).unwrap();
    assert!(rb.wait_for(T, |e| e
        .contains(&Ev::Frame("a".into(), Frame::Ok { req: 9 }))));
}
