//! Two links on engines, made without the transport (and in the first test without the HELLO
//! exchange): the seam's promises the conformance suite checks of every transport, in small.

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use parking_lot::{Condvar, Mutex};
use quinn_proto::{Connection, Dir};

use super::super::engine::test_pair::TestEngines;
use super::super::engine::{Conn, Watcher};
use super::{Forward, Made, QuicLink};
use crate::link::strand::Hooks;
use crate::link::{Link, LinkHandler, PeerIdentity};
use crate::wire::{Frame, FrameDecoder, MAX_FRAME};
use crate::{Meta, Payload};

/// Records every callback; answers each DELIVERY with an OK of its sequence number, from
/// inside the callback (which the engine loop runs itself for a delivery to an idle strand).
#[derive(Default)]
struct Recorder {
    seen: Mutex<Vec<String>>,
    changed: Condvar,
}

impl Recorder {
    fn note(&self, what: String) {
        self.seen.lock().push(what);
        self.changed.notify_all();
    }

    fn wait(&self, what: &str, done: impl Fn(&[String]) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut s = self.seen.lock();
        while !done(&s) {
            assert!(
                !self.changed.wait_until(&mut s, deadline).timed_out(),
                "timed out waiting for {what}: {} seen",
                s.len()
            );
        }
    }
}

impl LinkHandler for Recorder {
    fn on_up(&self, _link: Arc<dyn Link>) {
        self.note("up".into());
    }
    fn on_frame(&self, link: &Arc<dyn Link>, frame: Frame) {
        match frame {
            Frame::Delivery { meta, .. } => {
                link.send(&Frame::Ok { req: meta.sequence }).unwrap();
                self.note(format!("delivery {}", meta.sequence));
            }
            Frame::Ok { req } => self.note(format!("ok {req}")),
            other => self.note(format!("{other:?}")),
        }
    }
    fn on_down(&self, _link: &Arc<dyn Link>) {
        self.note("down".into());
    }
    fn deliveries_never_block(&self) -> bool {
        true
    }
}

fn identity(name: &str) -> PeerIdentity {
    PeerIdentity {
        name: name.into(),
        uid: 0,
        gid: 0,
        pid: 0,
        remote: None,
    }
}

fn made(peer: &str, conn: Arc<Conn>, control: quinn_proto::StreamId) -> Made {
    Made {
        peer: identity(peer),
        conn,
        control,
        peer_max: MAX_FRAME,
        dec: FrameDecoder::new(MAX_FRAME),
        rest: Bytes::new(),
        write_timeout: Duration::from_secs(5),
        queue_bytes: 64 << 20,
        expiry: None,
        log: None,
    }
}

fn no_hooks() -> Hooks<QuicLink> {
    Hooks {
        after_up: None,
        on_exit: None,
        on_done: None,
    }
}

/// The accepting side: makes its link when the peer's control stream shows up.
struct Acceptor {
    conn: OnceLock<Arc<Conn>>,
    forward: Forward,
    handler: Arc<Recorder>,
}

impl Watcher for Acceptor {
    fn progress(&self, conn: &mut Connection) {
        if self.forward.0.get().is_none() {
            let (Some(c), Some(id)) = (self.conn.get(), conn.streams().accept(Dir::Bi)) else {
                return;
            };
            let link = QuicLink::start(made("a", c.clone(), id), self.handler.clone(), no_hooks());
            let _ = self.forward.0.set(link);
        }
        self.forward.progress(conn);
    }
}

#[test]
fn links_on_engines_carry_frames_both_ways_and_go_down_once() {
    let on_b = Arc::new(Recorder::default());
    let acceptor = Arc::new(Acceptor {
        conn: OnceLock::new(),
        forward: Forward::default(),
        handler: on_b.clone(),
    });
    let acc = acceptor.clone();
    // b is the server, a the client.
    let engines = TestEngines::new(
        4,
        Box::new(move |c| {
            let _ = acc.conn.set(c.clone());
            Some(acc.clone() as Arc<dyn Watcher>)
        }),
    );
    let forward = Arc::new(Forward::default());
    let conn = engines.connect(forward.clone());
    let deadline = Instant::now() + Duration::from_secs(10);
    while conn.lock().is_handshaking() {
        assert!(Instant::now() < deadline, "no handshake");
        std::thread::sleep(Duration::from_millis(5));
    }
    let on_a = Arc::new(Recorder::default());
    let control = conn.lock().streams().open(Dir::Bi).unwrap();
    let link_a = QuicLink::start(made("b", conn.clone(), control), on_a.clone(), no_hooks());
    let _ = forward.0.set(link_a.clone());
    on_a.wait("a's on_up", |s| s.first().is_some_and(|f| f == "up"));
    // Deliveries from a; b answers each from inside its callback (landed by the loop).
    const N: u64 = 2000;
    for seq in 1..=N {
        let d = Frame::Delivery {
            edge: 7,
            meta: Meta {
                source_timestamp_ns: 1,
                sequence: seq,
                writer: [7; 16],
            },
            suffix: None,
            payload: Payload::from(vec![seq as u8; 100]),
        };
        link_a.send(&d).unwrap();
    }
    on_a.wait("every answer", |s| s.len() > N as usize);
    let answers: Vec<String> = on_a.seen.lock()[1..].to_vec();
    let want: Vec<String> = (1..=N).map(|n| format!("ok {n}")).collect();
    assert_eq!(answers, want);
    let got_b = on_b.seen.lock().clone();
    assert_eq!(got_b[0], "up");
    assert_eq!(got_b.len(), N as usize + 1);
    // Closing one end brings both down, once each.
    link_a.close();
    on_a.wait("a's on_down", |s| s.last().is_some_and(|f| f == "down"));
    on_b.wait("b's on_down", |s| s.last().is_some_and(|f| f == "down"));
    assert!(link_a.send(&Frame::Ok { req: 1 }).is_err());
    std::thread::sleep(Duration::from_millis(100));
    for r in [&on_a, &on_b] {
        assert_eq!(r.seen.lock().iter().filter(|f| *f == "down").count(), 1);
    }
}

/// One side's greeting, making a link with `handler` once the HELLOs are exchanged; `refuse`
/// names a peer this side refuses.
fn greeting(
    side: super::super::hello::Side,
    name: &str,
    refuse: Option<&'static str>,
    handler: Arc<Recorder>,
) -> Arc<super::super::hello::Greeting> {
    use super::super::hello::Greeting;
    let hello = super::super::hello::hello(name, None, 7400);
    Arc::new(Greeting::new(
        side,
        &hello,
        Instant::now() + Duration::from_secs(5),
        Box::new(move |h| match refuse {
            Some(n) if h.node == n => Err((
                crate::wire::ErrorCode::PermissionDenied,
                format!("{n} is not welcome"),
            )),
            _ => Ok(()),
        }),
        Box::new(move |conn, _state, h, control, dec, rest| {
            let mut m = made(&h.node, conn, control);
            (m.dec, m.rest, m.peer_max) = (dec, rest, h.max_frame);
            Some(QuicLink::start(m, handler.clone(), no_hooks()))
        }),
    ))
}

#[test]
fn links_on_engines_are_made_by_the_hello_exchange_or_refused() {
    use super::super::hello::Side;
    let on_b = Arc::new(Recorder::default());
    let accepted: Arc<Mutex<Vec<Arc<super::super::hello::Greeting>>>> = Arc::default();
    let (acc, hb) = (accepted.clone(), on_b.clone());
    // b is the server, a the client.
    let engines = TestEngines::new(
        4,
        Box::new(move |c| {
            let g = greeting(Side::Acceptor, "b", Some("stranger"), hb.clone());
            let _ = g.conn.set(c.clone());
            acc.lock().push(g.clone());
            Some(g as Arc<dyn Watcher>)
        }),
    );
    let on_a = Arc::new(Recorder::default());
    let ga = greeting(Side::Initiator, "a", None, on_a.clone());
    let conn = engines.connect(ga.clone());
    let _ = ga.conn.set(conn.clone());
    conn.poke();
    on_a.wait("a's on_up", |s| s.first().is_some_and(|f| f == "up"));
    on_b.wait("b's on_up", |s| s.first().is_some_and(|f| f == "up"));
    // `on_up` may run before the greeting has noted its link.
    let deadline = Instant::now() + Duration::from_secs(5);
    while ga.link().is_none() {
        assert!(Instant::now() < deadline, "no link noted");
        std::thread::sleep(Duration::from_millis(1));
    }
    let link_a = ga.link().unwrap().clone();
    assert_eq!(link_a.peer().name, "b");
    let d = Frame::Delivery {
        edge: 7,
        meta: Meta {
            source_timestamp_ns: 1,
            sequence: 42,
            writer: [7; 16],
        },
        suffix: None,
        payload: Payload::from(vec![1u8; 100]),
    };
    link_a.send(&d).unwrap();
    on_a.wait("b's answer", |s| s.iter().any(|f| f == "ok 42"));
    // A peer b refuses: no link on either side, and the initiator's connection goes.
    let on_c = Arc::new(Recorder::default());
    let gc = greeting(Side::Initiator, "stranger", None, on_c.clone());
    let conn_c = engines.connect(gc.clone());
    let _ = gc.conn.set(conn_c.clone());
    conn_c.poke();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !conn_c.lock().is_closed() {
        assert!(Instant::now() < deadline, "the refused connection stayed");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(gc.link().is_none());
    assert!(on_c.seen.lock().is_empty());
    assert_eq!(
        accepted
            .lock()
            .iter()
            .filter(|g| g.link().is_some())
            .count(),
        1
    );
}

/// The initiator refuses the acceptor's HELLO (not the peer it dialled): it says why with
/// ERROR, and the acceptor's link hears it before the connection goes.
#[test]
fn an_initiator_refusing_the_acceptor_says_why() {
    use super::super::hello::Side;
    let on_b = Arc::new(Recorder::default());
    let hb = on_b.clone();
    let engines = TestEngines::new(
        2,
        Box::new(move |c| {
            let g = greeting(Side::Acceptor, "b", None, hb.clone());
            let _ = g.conn.set(c.clone());
            Some(g as Arc<dyn Watcher>)
        }),
    );
    let on_a = Arc::new(Recorder::default());
    let ga = greeting(Side::Initiator, "a", Some("b"), on_a.clone());
    let conn = engines.connect(ga.clone());
    let _ = ga.conn.set(conn.clone());
    conn.poke();
    on_b.wait("b's link hearing a's ERROR", |s| {
        s.iter()
            .any(|f| f.contains("Error") && f.contains("b is not welcome"))
    });
    let deadline = Instant::now() + Duration::from_secs(10);
    while !conn.lock().is_closed() {
        assert!(
            Instant::now() < deadline,
            "the refusing side's connection stayed"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(ga.link().is_none());
    assert!(on_a.seen.lock().is_empty());
}
