//! The engine's sending side against a receiver made of the link's own receiving state
//! (`EdgeRx`, `ControlRx`), over loopback: order per stream, a large frame among small ones,
//! a barrier's markers reached before the READ, datagrams.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use quinn_proto::{Connection, Dir, Event, StreamEvent, StreamId};

use super::super::engine::test_pair::TestEngines;
use super::super::engine::Watcher;
use super::super::receive::{decode_datagram, Control, ControlRx, EdgeRx, Markers};
use super::super::routes::Route;
use super::Sending;
use crate::wire::{encode_parts, Frame, FrameDecoder, MAX_FRAME};
use crate::{Meta, Payload};

/// The sender's watcher: pumps on every progress (credit came, a corked flush is due).
#[derive(Default)]
struct Pumper {
    sending: OnceLock<Arc<Sending>>,
    connected: Mutex<bool>,
    changed: Condvar,
}

impl Watcher for Pumper {
    fn progress(&self, conn: &mut Connection) {
        while let Some(ev) = conn.poll() {
            if matches!(ev, Event::Connected) {
                *self.connected.lock() = true;
                self.changed.notify_all();
            }
        }
        if let Some(s) = self.sending.get() {
            let _ = s.pump(conn);
        }
    }
}

impl Pumper {
    /// Wait (at most 10 s) for the handshake to complete.
    fn wait_connected(&self) {
        let mut c = self.connected.lock();
        let deadline = Instant::now() + Duration::from_secs(10);
        while !*c {
            assert!(!self.changed.wait_until(&mut c, deadline).timed_out());
        }
    }
}

/// What the receiver got, in the order it got it: (stream, item).
#[derive(Default)]
struct Got {
    items: Vec<(Option<StreamId>, String)>,
    datagrams: usize,
}

#[derive(Default)]
struct Receiver {
    markers: Markers,
    control: Mutex<Option<(StreamId, ControlRx)>>,
    edges: Mutex<HashMap<StreamId, EdgeRx>>,
    got: Mutex<Got>,
    changed: Condvar,
}

fn label(f: &Frame) -> String {
    match f {
        Frame::Ok { req } => format!("ok {req}"),
        Frame::Read { req, .. } => format!("read {req}"),
        Frame::Delivery { meta, payload, .. } => {
            format!("delivery {} {}", meta.sequence, payload.len())
        }
        other => format!("{other:?}"),
    }
}

impl Watcher for Receiver {
    fn progress(&self, conn: &mut Connection) {
        let mut readable = Vec::new();
        while let Some(ev) = conn.poll() {
            match ev {
                Event::Stream(StreamEvent::Opened { dir }) => {
                    while let Some(id) = conn.streams().accept(dir) {
                        match dir {
                            Dir::Bi => {
                                *self.control.lock() =
                                    Some((id, ControlRx::new(FrameDecoder::new(MAX_FRAME))))
                            }
                            Dir::Uni => {
                                self.edges.lock().insert(id, EdgeRx::default());
                            }
                        }
                        readable.push(id);
                    }
                }
                Event::Stream(StreamEvent::Readable { id }) => readable.push(id),
                Event::DatagramReceived => {
                    while let Some(d) = conn.datagrams().recv() {
                        assert!(decode_datagram(&d).is_ok());
                        self.got.lock().datagrams += 1;
                    }
                }
                _ => {}
            }
        }
        let mut got = self.got.lock();
        for id in readable {
            let mut rs = conn.recv_stream(id);
            let Ok(mut chunks) = rs.read(true) else {
                continue;
            };
            while let Ok(Some(c)) = chunks.next(usize::MAX) {
                let mut pending = c.bytes;
                let mut control = self.control.lock();
                if let Some((cid, rx)) = control.as_mut().filter(|(cid, _)| *cid == id) {
                    while let Some(item) = rx.next(&mut pending).unwrap() {
                        let text = match item {
                            Control::Frame(f) => label(&f),
                            // A link's reader waits here for the named streams' markers;
                            // the test checks them at the end.
                            Control::Barrier { number, classes } => {
                                format!("barrier {number} {classes:#b}")
                            }
                            Control::Ping(n) => format!("ping {n}"),
                        };
                        got.items.push((Some(*cid), text));
                    }
                } else if let Some(rx) = self.edges.lock().get_mut(&id) {
                    while let Some(f) = rx.next(&mut pending, &self.markers).unwrap() {
                        got.items.push((Some(id), label(&f)));
                    }
                }
            }
            let _ = chunks.finalize();
        }
        self.changed.notify_all();
    }
}

fn delivery(seq: u64, len: usize) -> Frame {
    Frame::Delivery {
        edge: 7,
        meta: Meta {
            source_timestamp_ns: 1,
            sequence: seq,
            writer: [7; 16],
        },
        suffix: None,
        payload: Payload::from(vec![seq as u8; len]),
    }
}

#[test]
fn frames_arrive_in_order_per_stream_with_barriers_and_datagrams() {
    let rx = Arc::new(Receiver::default());
    let r2 = rx.clone();
    let engines = TestEngines::new(4, Box::new(move |_| Some(r2.clone() as Arc<dyn Watcher>)));
    let pumper = Arc::new(Pumper::default());
    let conn = engines.connect(pumper.clone());
    pumper.wait_connected();
    let control = conn.lock().streams().open(Dir::Bi).unwrap();
    let s = Arc::new(Sending::new(
        conn.clone(),
        control,
        Duration::from_secs(5),
        64 << 20,
    ));
    let _ = pumper.sending.set(s.clone());
    let enc = |f: &Frame| encode_parts(f, MAX_FRAME).unwrap();
    s.send(Route::Control, enc(&Frame::Ok { req: 1 })).unwrap();
    // Small deliveries, a 1 MiB one among them, then more: one stream, in order.
    const N: u64 = 20_000;
    for seq in 1..=N {
        let len = if seq == N / 2 { 1 << 20 } else { 40 };
        s.send(Route::ReliableDelivery(3, 7), enc(&delivery(seq, len)))
            .unwrap();
    }
    let read = Frame::Read {
        req: 2,
        path: "/x".into(),
    };
    s.send(Route::Barrier, enc(&read)).unwrap();
    for seq in 1..=10 {
        s.send(Route::BestEffort(5), enc(&delivery(seq, 100)))
            .unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut got = rx.got.lock();
    while got.items.len() < N as usize + 3 || got.datagrams < 1 || rx.markers.seen_of(3) < 1 {
        assert!(
            !rx.changed.wait_until(&mut got, deadline).timed_out(),
            "timed out with {} items and {} datagrams",
            got.items.len(),
            got.datagrams
        );
    }
    let on = |want: &str| -> Vec<String> {
        let ctl = got.items.first().and_then(|(id, _)| *id);
        got.items
            .iter()
            .filter(|(id, _)| (*id == ctl) == (want == "control"))
            .map(|(_, t)| t.clone())
            .collect()
    };
    assert_eq!(on("control"), ["ok 1", "barrier 1 0b1000", "read 2"]);
    // The marker of barrier 1 reached the class-3 stream after its deliveries.
    assert_eq!(rx.markers.seen_of(3), 1);
    let edge = on("edge");
    assert_eq!(edge.len(), N as usize);
    for (i, t) in edge.iter().enumerate() {
        let seq = i as u64 + 1;
        let len = if seq == N / 2 { 1 << 20 } else { 40 };
        assert_eq!(t, &format!("delivery {seq} {len}"));
    }
}

/// A sink that says it is full every `PAUSE` frames (a poker thread resumes the reading).
#[derive(Default)]
struct Strand {
    frames: Mutex<Vec<String>>,
    malformed: Mutex<Option<String>>,
}

const PAUSE: usize = 50;

impl super::super::inbound::Sink for Strand {
    fn frame(&self, frame: Frame) -> bool {
        let mut f = self.frames.lock();
        f.push(label(&frame));
        !f.len().is_multiple_of(PAUSE)
    }
    fn ping(&self, _nonce: u64) {}
    fn malformed(&self, why: String) {
        *self.malformed.lock() = Some(why);
    }
    fn lost(&self) {}
}

/// The receiving end of a link: its control stream is the first bidirectional stream.
#[derive(Default)]
struct LinkEnd {
    inbound: OnceLock<super::super::inbound::Inbound>,
    strand: Strand,
}

impl Watcher for LinkEnd {
    fn progress(&self, conn: &mut Connection) {
        if self.inbound.get().is_none() {
            let Some(id) = conn.streams().accept(Dir::Bi) else {
                return;
            };
            let _ = self.inbound.set(super::super::inbound::Inbound::new(
                id,
                FrameDecoder::new(MAX_FRAME),
                bytes::Bytes::new(),
                Duration::from_secs(5),
            ));
        }
        if let Some(i) = self.inbound.get() {
            i.progress(conn, &self.strand);
        }
    }
}

/// A sending end (client) linked to a receiving end (server) on two engines.
struct Pair {
    _engines: TestEngines,
    end: Arc<LinkEnd>,
    accepted: Arc<OnceLock<Arc<super::super::engine::Conn>>>,
    s: Arc<Sending>,
}

fn pair() -> Pair {
    let end = Arc::new(LinkEnd::default());
    let accepted: Arc<OnceLock<Arc<super::super::engine::Conn>>> = Arc::default();
    let (e2, a2) = (end.clone(), accepted.clone());
    let engines = TestEngines::new(
        4,
        Box::new(move |c| {
            let _ = a2.set(c.clone());
            Some(e2.clone() as Arc<dyn Watcher>)
        }),
    );
    let pumper = Arc::new(Pumper::default());
    let conn = engines.connect(pumper.clone());
    pumper.wait_connected();
    let control = conn.lock().streams().open(Dir::Bi).unwrap();
    let s = Arc::new(Sending::new(
        conn.clone(),
        control,
        Duration::from_secs(5),
        64 << 20,
    ));
    let _ = pumper.sending.set(s.clone());
    Pair {
        _engines: engines,
        end,
        accepted,
        s,
    }
}

impl Pair {
    /// Wait until the receiving end's strand has `n` frames, resuming it whenever it was
    /// full (the loop's `Cmd::Resume`).
    fn wait_for(&self, n: usize) -> Vec<String> {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let (Some(c), Some(i)) = (self.accepted.get(), self.end.inbound.get()) {
                i.resume();
                c.poke();
            }
            let got = self.end.strand.frames.lock().clone();
            if got.len() >= n {
                return got;
            }
            assert!(
                Instant::now() < deadline,
                "{} frames by the deadline",
                got.len()
            );
            assert!(self.end.strand.malformed.lock().is_none());
            std::thread::sleep(Duration::from_millis(2));
        }
    }
}

#[test]
fn a_link_on_the_engine_keeps_its_barrier_and_holds_the_peer_while_its_strand_is_full() {
    let p = pair();
    let s = &p.s;
    let enc = |f: &Frame| encode_parts(f, MAX_FRAME).unwrap();
    s.send(Route::Control, enc(&Frame::Ok { req: 1 })).unwrap();
    // 300 x 64 KiB on class 3: beyond the stream's and the connection's windows.
    const N: u64 = 300;
    for seq in 1..=N {
        s.send(Route::ReliableDelivery(3, 7), enc(&delivery(seq, 64 << 10)))
            .unwrap();
    }
    // The READ goes on the control stream, sent before the class-3 backlog (its priority is
    // higher), and must still be handed up after every delivery written before it.
    let read = Frame::Read {
        req: 2,
        path: "/x".into(),
    };
    s.send(Route::Barrier, enc(&read)).unwrap();
    p.wait_for(N as usize + 2);
    // Streams are not ordered with each other, but for the barrier: the OK anywhere before
    // the READ (one control stream), the deliveries in order, all before the READ.
    let frames = p.end.strand.frames.lock().clone();
    assert_eq!(frames.len(), N as usize + 2);
    assert_eq!(frames.last().unwrap(), "read 2");
    let deliveries: Vec<&String> = frames.iter().filter(|f| *f != "ok 1").collect();
    for (i, f) in deliveries[..N as usize].iter().enumerate() {
        assert_eq!(*f, &format!("delivery {} {}", i + 1, 64 << 10));
    }
}

#[test]
fn large_best_effort_samples_replace_and_abandon_each_other_and_the_newest_arrives() {
    let p = pair();
    let enc = |f: &Frame| encode_parts(f, MAX_FRAME).unwrap();
    // The control stream first, as a link's HELLO: the peer sees it once it carries bytes.
    p.s.send(Route::Control, enc(&Frame::Ok { req: 1 }))
        .unwrap();
    // Too large for a datagram: the class's best-effort stream, back to back.
    const N: u64 = 6;
    for seq in 1..=N {
        p.s.send(Route::BestEffort(2), enc(&delivery(seq, 300 << 10)))
            .unwrap();
    }
    let shed = &p.s.shed;
    let settled = || {
        let got: Vec<String> = (p.end.strand.frames.lock().iter())
            .filter(|f| *f != "ok 1")
            .cloned()
            .collect();
        let gone = shed.replaced.load(std::sync::atomic::Ordering::Relaxed)
            + shed.abandoned.load(std::sync::atomic::Ordering::Relaxed);
        (got, gone)
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (got, gone) = settled();
        if got
            .last()
            .is_some_and(|l| *l == format!("delivery {N} {}", 300 << 10))
        {
            // Every sample arrived whole or was counted as given up; none arrived twice.
            assert_eq!(got.len() as u64 + gone, N, "{got:?} and {gone} given up");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the newest did not arrive: {got:?}"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[test]
fn a_stream_the_peer_takes_nothing_from_is_stalled_after_the_write_timeout() {
    let p = pair();
    let enc = |f: &Frame| encode_parts(f, MAX_FRAME).unwrap();
    p.s.send(Route::Control, enc(&Frame::Ok { req: 1 }))
        .unwrap();
    p.wait_for(1);
    // The receiving end's strand is full from its 50th frame on and nobody resumes it, so
    // the peer's windows close: 200 x 256 KiB cannot all go.
    for seq in 1..=200 {
        p.s.send(
            Route::ReliableDelivery(1, 9),
            enc(&delivery(seq, 256 << 10)),
        )
        .unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    while !p.s.stalled() {
        assert!(Instant::now() < deadline, "never stalled");
        // The sender's watcher pumps on every progress; keep the clock moving.
        std::thread::sleep(Duration::from_millis(50));
    }
    let at = p.s.stall_deadline().unwrap();
    assert!(at <= Instant::now());
}
