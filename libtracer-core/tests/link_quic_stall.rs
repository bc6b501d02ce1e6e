#![cfg(feature = "quic")]
//! A QUIC peer that stops reading (docs/network.md sections 4 and 7): the publisher never
//! waits for the network. A reliable stream's queue is bounded; when it is full the oldest
//! queued deliveries are dropped and counted, so every send returns at once, memory stays
//! bounded, and when the peer reads again the newest samples arrive in order with a sequence
//! gap equal to the drops (what the subscriber reports as lost messages). The write timeout
//! bounds a stall (no byte taken by the stream for that long), not a transfer: a peer that
//! takes nothing loses its link. A file of its own: the gated handler holds one of the
//! process's link workers, which other tests' links would share (so the tests here run one at
//! a time). Everything binds loopback.

mod link_support;

use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use libtracer_core::link::{Link, LinkHandler, QuicLinkHandle, QuicTransport};
use libtracer_core::wire::Frame;
use libtracer_core::{DeliveryPolicy, Meta, Payload};
use link_support::{free_udp_port, loopback_quic, Ev, Recorder, TempDir, T};
use parking_lot::{Condvar, Mutex};

/// Bytes a reliable stream's queue holds (`link/quic/queue.rs`, `QUEUE_BYTES`).
const QUEUE_BYTES: u64 = 64 << 20;
/// The payload of each delivery.
const FRAME: usize = 64 * 1024;

/// One test at a time: each holds a link worker with its gate.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

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

struct Stalled {
    _dir: TempDir,
    /// What a's transport logged.
    said: Arc<Mutex<Vec<String>>>,
    a: QuicTransport,
    _b: QuicTransport,
    ra: Arc<Recorder>,
    gate: Arc<Gated>,
    to_b: Arc<dyn Link>,
}

/// a and b linked, b's gate closed, and a reliable edge 1 (class 3) that b made on a.
fn stalled(tag: &str, write_timeout: Option<Duration>) -> Stalled {
    let dir = TempDir::new(tag);
    let port = free_udp_port();
    let ra = Recorder::new();
    let gate = Arc::new(Gated {
        rec: Recorder::new(),
        open: Mutex::new(false),
        cv: Condvar::new(),
    });
    let mut cfg = loopback_quic(port);
    if let Some(t) = write_timeout {
        cfg.write_timeout = t;
    }
    let b_cfg = cfg.clone();
    let said = Arc::new(Mutex::new(Vec::new()));
    let to = said.clone();
    cfg.log = Some(Arc::new(move |m: &str| to.lock().push(m.to_owned())));
    let a = QuicTransport::start(dir.path(), "a", ra.clone(), cfg).unwrap();
    let b = QuicTransport::start(dir.path(), "b", gate.clone(), b_cfg).unwrap();
    let to_b = ra.wait_up("b", T);
    let to_a = gate.rec.wait_up("a", T);
    to_a.send(&Frame::Subscribe {
        req: 1,
        source: "/t".into(),
        edge: 1,
        policy: DeliveryPolicy::new(true, 3, false).bits(),
        tag: None,
        window: None,
    })
    .unwrap();
    assert!(ra.wait_for(T, |e| e
        .iter()
        .any(|e| matches!(e, Ev::Frame(_, Frame::Subscribe { edge: 1, .. })))));
    Stalled {
        _dir: dir,
        said,
        a,
        _b: b,
        ra,
        gate,
        to_b,
    }
}

/// A delivery of edge 1 with a payload of FRAME bytes.
fn delivery(seq: u64) -> Frame {
    link_support::delivery(1, seq, FRAME)
}

/// Send deliveries 1..=n on a thread (each send must return; the thread is joined with a
/// generous bound, only to catch a hang); the results.
fn send_all(to_b: &Arc<dyn Link>, n: u64) -> Vec<Result<(), String>> {
    let (tx, rx) = mpsc::channel();
    let link = to_b.clone();
    std::thread::spawn(move || {
        let r: Vec<Result<(), String>> = (1..=n)
            .map(|seq| link.send(&delivery(seq)).map_err(|e| e.to_string()))
            .collect();
        let _ = tx.send(r);
    });
    rx.recv_timeout(Duration::from_secs(120))
        .expect("the sends returned")
}

/// The sequences of the deliveries b has taken, in the order it took them.
fn sequences(s: &Stalled) -> Vec<u64> {
    s.gate
        .rec
        .frames_from("a")
        .iter()
        .filter_map(|f| match f {
            Frame::Delivery { meta, .. } => Some(meta.sequence),
            _ => None,
        })
        .collect()
}

fn quic_link(s: &Stalled) -> QuicLinkHandle {
    s.a.link_to("b").expect("a's link to b")
}

#[test]
fn a_publisher_never_waits_for_a_stalled_peer_and_the_newest_arrive_with_a_gap_equal_to_the_drops()
{
    let _one = ONE_AT_A_TIME.lock();
    let s = stalled("quic-overflow", None);
    // 2000 x 64 KiB (125 MiB) to a peer that takes the first and then nothing: the QUIC
    // windows (8 MiB per stream) and the 64 MiB queue fill, and the rest drops the oldest.
    const N: u64 = 2000;
    let sent = send_all(&s.to_b, N);
    assert!(sent.iter().all(|r| r.is_ok()), "every send returned Ok");
    // A service call behind them is never dropped: it makes room by dropping a delivery.
    s.to_b
        .send(&Frame::Write {
            req: 9,
            path: "/srv".into(),
            meta: Meta::default(),
            payload: Payload::from(vec![9u8; 64]),
        })
        .unwrap();
    let shed = quic_link(&s).shed();
    assert!(!quic_link(&s).is_closed(), "the link stayed up");
    s.gate.set(true);
    assert!(
        s.gate.rec.wait_for(Duration::from_secs(60), |e| e
            .iter()
            .any(|e| matches!(e, Ev::Frame(_, Frame::Write { req: 9, .. })))),
        "the service call arrived"
    );
    let got = sequences(&s);
    let mut gaps = 0;
    let mut last = 0;
    for &q in &got {
        assert!(q > last, "in order, nothing twice: {q} after {last}");
        gaps += q - last - 1;
        last = q;
    }
    let frame_len = (FRAME + 64) as u64;
    let newest = QUEUE_BYTES / frame_len - 1;
    eprintln!(
        "overflow: {N} sent, {} arrived, {} dropped, {gaps} in gaps, queue peak {} KiB \
         (bound {} KiB), the newest {} in a row",
        got.len(),
        shed.dropped,
        shed.queued_peak / 1024,
        QUEUE_BYTES / 1024,
        got.iter()
            .rev()
            .zip((1..=N).rev())
            .take_while(|(a, b)| **a == *b)
            .count()
    );
    assert_eq!(last, N, "the newest arrived");
    assert!(shed.dropped > 0, "the queue overflowed");
    assert_eq!(
        got.len() as u64 + shed.dropped,
        N,
        "each one arrived or was dropped"
    );
    assert_eq!(gaps, shed.dropped, "the gap is the drops");
    // The publisher's process says so too: once at the first drops (then at most every 10 s).
    let lines: Vec<String> = s
        .said
        .lock()
        .iter()
        .filter(|m| m.contains("reliable deliveries dropped"))
        .cloned()
        .collect();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].starts_with("link to b: ") && lines[0].contains("at most 64 MiB waits per stream"),
        "{}",
        lines[0]
    );
    assert!(
        shed.queued_peak <= QUEUE_BYTES,
        "{} queued",
        shed.queued_peak
    );
    let tail: Vec<u64> = got[got.len() - newest as usize..].to_vec();
    assert_eq!(
        tail,
        (N - newest + 1..=N).collect::<Vec<_>>(),
        "the newest kept ones"
    );
    assert!(s.ra.violations().is_empty() && s.gate.rec.violations().is_empty());
}

#[test]
fn a_replay_to_a_stalled_peer_is_kept_whole_and_live_deliveries_behind_it_keep_the_bound() {
    let _one = ONE_AT_A_TIME.lock();
    let s = stalled("quic-owed", None);
    // A transient-local replay of 1500 x 64 KiB (94 MiB, past the 64 MiB queue) to a peer that
    // takes nothing: every send returns at once and nothing is dropped.
    const REPLAY: u64 = 1500;
    let (tx, rx) = mpsc::channel();
    let link = s.to_b.clone();
    std::thread::spawn(move || {
        let ok = (1..=REPLAY).all(|seq| link.send_owed(&delivery(seq)).is_ok());
        let _ = tx.send(ok);
    });
    assert!(
        rx.recv_timeout(Duration::from_secs(120)).unwrap(),
        "every send returned Ok"
    );
    assert_eq!(
        quic_link(&s).shed().dropped,
        0,
        "nothing of a replay is dropped"
    );
    // Live deliveries behind it have the whole bound of their own: 100 fit, nothing dropped.
    let live = |from: u64, n: u64| (from..from + n).all(|seq| s.to_b.send(&delivery(seq)).is_ok());
    assert!(live(REPLAY + 1, 100));
    assert_eq!(quic_link(&s).shed().dropped, 0);
    s.gate.set(true);
    let all = REPLAY + 100;
    assert!(
        s.gate
            .rec
            .wait_for(Duration::from_secs(60), |e| e.iter().any(
                |e| matches!(e, Ev::Frame(_, Frame::Delivery { meta, .. }) if meta.sequence == all)
            )),
        "the last live delivery arrived"
    );
    let got = sequences(&s);
    assert_eq!(got, (1..=all).collect::<Vec<_>>(), "all of it, in order");
    assert!(s.ra.violations().is_empty() && s.gate.rec.violations().is_empty());
}

#[test]
fn a_peer_that_stops_reading_is_cut_once_nothing_is_taken_for_the_write_timeout() {
    let _one = ONE_AT_A_TIME.lock();
    let s = stalled("quic-stall", Some(Duration::from_secs(1)));
    // b takes the first delivery and then nothing: the sends still return at once (the
    // oldest queued are dropped), and the stream, taking no byte for the write timeout
    // (1 s here), closes the link.
    let started = Instant::now();
    let sent = send_all(&s.to_b, 512);
    let took = started.elapsed();
    let ok = sent.iter().take_while(|r| r.is_ok()).count();
    assert!(s.ra.wait_down("b", T), "a's link to b closed");
    let after = s.to_b.send(&delivery(513));
    eprintln!(
        "a peer that stopped reading: {ok} of 512 sends Ok in {took:?}, then the link went \
         after {:?}; a send after it: {after:?}",
        started.elapsed()
    );
    assert!(ok > 0, "the first sends went");
    assert!(after.is_err(), "a send on the closed link fails");
    s.gate.set(true);
}
