//! The engine alone, over loopback (nothing leaves the machine): handshake, a stream both
//! ways, a transfer larger than every window, datagrams, close, and one loop thread however
//! many connections.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use parking_lot::{Condvar, Mutex};
use quinn_proto::{Connection, Dir, Event, StreamEvent, StreamId, WriteError};

use super::super::tls;
use super::{Engine, Watcher};

const PATIENCE: Duration = Duration::from_secs(10);

/// What a test watcher saw.
#[derive(Default)]
struct Seen {
    connected: bool,
    lost: bool,
    /// Bytes read from the peer's streams, in order (one stream at a time in these tests).
    bytes: Vec<u8>,
    datagrams: Vec<Bytes>,
    /// Times a stream became writable again.
    writable: u64,
}

/// Records everything; with `echo`, writes what it reads back on the same (bidirectional)
/// stream, from the loop, under the connection's lock.
#[derive(Default)]
struct Recorder {
    seen: Mutex<Seen>,
    changed: Condvar,
    echo: bool,
    keep: bool,
}

impl Recorder {
    fn new(echo: bool, keep: bool) -> Arc<Recorder> {
        Arc::new(Recorder {
            echo,
            keep,
            ..Recorder::default()
        })
    }

    fn wait(&self, what: &str, done: impl Fn(&Seen) -> bool) {
        let deadline = Instant::now() + PATIENCE;
        let mut s = self.seen.lock();
        while !done(&s) {
            assert!(
                !self.changed.wait_until(&mut s, deadline).timed_out(),
                "timed out waiting for {what}"
            );
        }
    }
}

impl Watcher for Recorder {
    fn progress(&self, conn: &mut Connection) {
        let mut s = self.seen.lock();
        let mut readable: Vec<StreamId> = Vec::new();
        while let Some(ev) = conn.poll() {
            match ev {
                Event::Connected => s.connected = true,
                Event::ConnectionLost { .. } => s.lost = true,
                Event::Stream(StreamEvent::Opened { dir }) => {
                    while let Some(id) = conn.streams().accept(dir) {
                        readable.push(id);
                    }
                }
                Event::Stream(StreamEvent::Readable { id }) => readable.push(id),
                Event::Stream(StreamEvent::Writable { .. }) => s.writable += 1,
                Event::DatagramReceived => {
                    while let Some(d) = conn.datagrams().recv() {
                        s.datagrams.push(d);
                    }
                }
                _ => {}
            }
        }
        for id in readable {
            let mut got = Vec::new();
            let mut rs = conn.recv_stream(id);
            if let Ok(mut chunks) = rs.read(true) {
                while let Ok(Some(c)) = chunks.next(usize::MAX) {
                    got.extend_from_slice(&c.bytes);
                }
                let _ = chunks.finalize();
            }
            if self.echo && !got.is_empty() {
                let _ = conn.send_stream(id).write(&got);
            }
            if self.keep {
                s.bytes.extend_from_slice(&got);
            }
        }
        self.changed.notify_all();
    }
}

fn transport() -> Arc<quinn_proto::TransportConfig> {
    tls::transport(Duration::from_secs(5), Duration::from_secs(1))
}

/// A server engine on loopback whose connections are recorded by `rec`.
fn server(rec: Arc<Recorder>) -> Engine {
    let id = tls::Identity::self_signed().unwrap();
    let sc = tls::server_config(&id, tls::ALPN_LINK, transport()).unwrap();
    Engine::bind(
        SocketAddr::from(([127, 0, 0, 1], 0)),
        Some(sc),
        16,
        Box::new(move |_| Some(rec.clone() as Arc<dyn Watcher>)),
    )
    .unwrap()
}

fn client_engine() -> Engine {
    Engine::bind(
        SocketAddr::from(([127, 0, 0, 1], 0)),
        None,
        16,
        Box::new(|_| None),
    )
    .unwrap()
}

fn client_config() -> quinn_proto::ClientConfig {
    let id = tls::Identity::self_signed().unwrap();
    tls::client_config(&id, tls::ALPN_LINK, transport()).unwrap()
}

fn connect(client: &Engine, to: &Engine, rec: Arc<Recorder>) -> Arc<super::Conn> {
    let c = client
        .connect(
            client_config(),
            to.local_addr().unwrap(),
            tls::SERVER_NAME,
            rec.clone(),
        )
        .unwrap();
    rec.wait("the handshake", |s| s.connected);
    c
}

#[test]
fn a_stream_is_echoed_from_the_loop_and_sent_inline() {
    let srv = server(Recorder::new(true, false));
    let cli = client_engine();
    let rec = Recorder::new(false, true);
    let c = connect(&cli, &srv, rec.clone());
    let id = c.lock().streams().open(Dir::Bi).unwrap();
    for round in 0..100u32 {
        let msg = format!("ping {round}");
        // Written and sent by this thread: the guard's drop flushes.
        c.lock().send_stream(id).write(msg.as_bytes()).unwrap();
        rec.wait("the echo", |s| s.bytes.ends_with(msg.as_bytes()));
    }
}

#[test]
fn a_transfer_larger_than_every_window_arrives_whole_and_in_order() {
    let rec_srv = Recorder::new(false, true);
    let srv = server(rec_srv.clone());
    let cli = client_engine();
    let rec = Recorder::new(false, false);
    let c = connect(&cli, &srv, rec.clone());
    // 40 MiB: more than the stream's (8 MiB) and the connection's (16 MiB) windows, so the
    // writer goes on only as the peer's credit comes, and waits for it when it is behind.
    const TOTAL: usize = 40 << 20;
    let data: Vec<u8> = (0..TOTAL).map(|i| (i % 251) as u8).collect();
    let id = c.lock().streams().open(Dir::Uni).unwrap();
    let mut at = 0;
    let mut blocked = 0u64;
    while at < TOTAL {
        let seen_writable = rec.seen.lock().writable;
        let r = c
            .lock()
            .send_stream(id)
            .write(&data[at..(at + (1 << 20)).min(TOTAL)]);
        match r {
            Ok(n) => at += n,
            Err(WriteError::Blocked) => {
                blocked += 1;
                rec.wait("room in the stream", |s| s.writable > seen_writable);
            }
            Err(e) => panic!("write: {e}"),
        }
    }
    c.lock().send_stream(id).finish().unwrap();
    rec_srv.wait("the whole transfer", |s| s.bytes.len() >= TOTAL);
    let got = std::mem::take(&mut rec_srv.seen.lock().bytes);
    assert!(got == data, "the bytes differ");
    // Whether flow control held the writer back depends on how fast the receiver returned
    // credit (usually it did: `blocked` > 0); either way every byte arrived in order.
    let _ = blocked;
}

/// Packets held for a full socket go when the loop sees room, and the loop waits for room only
/// meanwhile: the socket is in the loop as writable from the stall to the first room nobody
/// waited for (`Wire::watch_room`).
#[test]
fn packets_held_for_a_full_socket_go_when_there_is_room() {
    let rec_srv = Recorder::new(false, true);
    let srv = server(rec_srv.clone());
    let cli = client_engine();
    let c = connect(&cli, &srv, Recorder::new(false, false));
    let watched = || cli.shared.wire.stalled.lock().watched;
    assert!(
        !watched(),
        "a socket with nothing held waits for datagrams alone"
    );
    let id = c.lock().streams().open(Dir::Uni).unwrap();
    c.hold_as_if_full(id, b"held");
    assert!(watched(), "a stall waits for room");
    // The loop saw the room (only its `writable` takes the stall; a timer's flush would send
    // the packet but leave the stall noted) and sent the packet.
    let deadline = Instant::now() + PATIENCE;
    while !cli.shared.wire.stalled.lock().ids.is_empty() {
        assert!(Instant::now() < deadline, "the loop never saw the room");
        std::thread::sleep(Duration::from_millis(1));
    }
    rec_srv.wait("the held packet", |s| s.bytes == b"held");
    // The next send's freed buffer is room nobody waits for: datagrams alone again.
    let deadline = Instant::now() + PATIENCE;
    let mut round = 0u32;
    while watched() {
        assert!(Instant::now() < deadline, "still waiting for room");
        c.lock().send_stream(id).write(&[round as u8]).unwrap();
        round += 1;
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn datagrams_arrive_one_each() {
    let rec_srv = Recorder::new(false, false);
    let srv = server(rec_srv.clone());
    let cli = client_engine();
    let c = connect(&cli, &srv, Recorder::new(false, false));
    for i in 0..50u8 {
        c.lock()
            .datagrams()
            .send(Bytes::from(vec![i; 100]), true)
            .unwrap();
    }
    // Loopback loses nothing unless a buffer overflows; at least the first ones arrive intact.
    rec_srv.wait("datagrams", |s| s.datagrams.len() >= 10);
    for d in &rec_srv.seen.lock().datagrams {
        assert_eq!(d.len(), 100);
        assert!(d.iter().all(|b| *b == d[0]));
    }
}

#[test]
fn a_closed_connection_is_lost_to_the_peer_and_drained_from_both_engines() {
    let rec_srv = Recorder::new(false, false);
    let srv = server(rec_srv.clone());
    let cli = client_engine();
    let rec = Recorder::new(false, false);
    let c = connect(&cli, &srv, rec.clone());
    c.lock()
        .close(Instant::now(), 0u32.into(), Bytes::from_static(b"bye"));
    rec_srv.wait("the close", |s| s.lost);
    // Drained after three probe timeouts, by the timers alone.
    let deadline = Instant::now() + PATIENCE;
    while cli.connections() + srv.connections() > 0 {
        assert!(Instant::now() < deadline, "not drained");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn the_loop_is_one_thread_whatever_the_number_of_connections() {
    let srv = server(Recorder::new(false, false));
    let cli = client_engine();
    let conns: Vec<_> = (0..12)
        .map(|_| connect(&cli, &srv, Recorder::new(false, false)))
        .collect();
    let names: Vec<String> = std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .map(|n| n.trim().to_owned())
        .collect();
    // The links' loop (engines only here: it starts with the first), no loop of QUIC's own.
    assert_eq!(names.iter().filter(|n| *n == "tracer-io").count(), 1);
    assert!(!names.iter().any(|n| n == "tracer-quic-io"), "{names:?}");
    assert_eq!(conns.len(), 12);
}

#[test]
fn small_writes_are_gathered_and_arrive_whole_and_in_order() {
    let rec_srv = Recorder::new(false, true);
    let srv = server(rec_srv.clone());
    let cli = client_engine();
    let rec = Recorder::new(false, false);
    let c = connect(&cli, &srv, rec.clone());
    let id = c.lock().streams().open(Dir::Uni).unwrap();
    // 400,000 writes of 37 bytes (15 MB): through the stage's bound and the stream's window.
    let mut want = Vec::new();
    for i in 0..400_000u32 {
        let msg: Vec<u8> = (0..37).map(|k| (i as u8).wrapping_add(k)).collect();
        let mut at = 0;
        while at < msg.len() {
            let seen = rec.seen.lock().writable;
            match c.lock().stage(id, &msg[at..]) {
                super::Staged::Took(0) => {
                    rec.wait("room in the stream", |s| s.writable > seen);
                }
                super::Staged::Took(n) => at += n,
                super::Staged::Gone => panic!("the stream went"),
            }
        }
        want.extend_from_slice(&msg);
    }
    rec_srv.wait("every write", |s| s.bytes.len() >= want.len());
    assert!(rec_srv.seen.lock().bytes == want, "the bytes differ");
}

#[test]
fn the_loop_goes_on_while_a_writer_holds_a_connection() {
    let srv = server(Recorder::new(true, false));
    let cli = client_engine();
    let (ra, rb) = (Recorder::new(false, true), Recorder::new(false, true));
    let a = connect(&cli, &srv, ra.clone());
    let b = connect(&cli, &srv, rb.clone());
    let ida = a.lock().streams().open(Dir::Bi).unwrap();
    let idb = b.lock().streams().open(Dir::Bi).unwrap();
    let mut held = a.lock();
    held.send_stream(ida).write(b"to a").unwrap();
    held.flush();
    b.lock().send_stream(idb).write(b"to b").unwrap();
    rb.wait("b's echo while a is held", |s| s.bytes == b"to b");
    // a's echo came meanwhile and waits in a's inbox.
    std::thread::sleep(Duration::from_millis(50));
    assert!(ra.seen.lock().bytes.is_empty());
    drop(held);
    ra.wait("a's echo, taken in by the holder as it let go", |s| {
        s.bytes == b"to a"
    });
}

#[test]
fn the_peers_certificate_is_read_from_an_engine_connection() {
    let srv = server(Recorder::new(false, false));
    let cli = client_engine();
    let c = connect(&cli, &srv, Recorder::new(false, false));
    let certs = super::super::peer_cert::PeerCerts::of(&c.lock());
    assert_eq!(certs.side, quinn_proto::Side::Client);
    // The server's self-signed certificate (what an unauthenticated link presents).
    let chain = certs.chain.expect("a chain");
    assert_eq!(chain.len(), 1);
    assert!(super::super::peer_cert::subject_of(&chain[0]).is_ok());
}

/// Asks to be woken 50 ms after its first look, and notes when it is looked at.
#[derive(Default)]
struct Sleeper {
    conn: std::sync::OnceLock<Arc<super::Conn>>,
    asked: Mutex<Option<Instant>>,
    woken: Mutex<Vec<Instant>>,
    changed: Condvar,
}

impl Watcher for Sleeper {
    fn progress(&self, conn: &mut Connection) {
        while conn.poll().is_some() {}
        let now = Instant::now();
        self.woken.lock().push(now);
        let mut asked = self.asked.lock();
        if asked.is_none() {
            if let Some(c) = self.conn.get() {
                c.wake_at(now + Duration::from_millis(50));
                *asked = Some(now);
            }
        }
        self.changed.notify_all();
    }
}

#[test]
fn a_watcher_is_woken_at_the_deadline_it_asked_for() {
    let srv = server(Recorder::new(false, false));
    let cli = client_engine();
    let s = Arc::new(Sleeper::default());
    let c = cli
        .connect(
            client_config(),
            srv.local_addr().unwrap(),
            tls::SERVER_NAME,
            s.clone(),
        )
        .unwrap();
    let _ = s.conn.set(c.clone());
    // Looked at again once the handshake moves the connection; then asks for 50 ms later.
    let deadline = Instant::now() + PATIENCE;
    let mut woken = s.woken.lock();
    loop {
        let asked = *s.asked.lock();
        if let Some(at) = asked {
            let want = at + Duration::from_millis(50);
            // The keep-alive (1 s) would wake it too, but much later.
            if woken
                .iter()
                .any(|t| *t >= want && *t < want + Duration::from_millis(500))
            {
                break;
            }
        }
        assert!(
            !s.changed.wait_until(&mut woken, deadline).timed_out(),
            "not woken at its deadline"
        );
    }
}

#[test]
fn a_connection_given_a_drained_ones_handle_keeps_receiving_when_that_one_is_locked_again() {
    // The endpoint frees a drained connection's handle, and gives it to the next connection
    // accepted or dialled. Whoever still holds the drained one (its link: closed again, woken,
    // asked its address) may lock it later, and each let-go of a drained connection forgets
    // it: that forget took the new connection's table entry, and every datagram for the new
    // one was dropped while it still sent, a link up on one end only (docs/network.md
    // section 7, "A link only one end uses").
    let srv = server(Recorder::new(true, false));
    let cli = client_engine();
    let a = connect(&cli, &srv, Recorder::new(false, false));
    a.lock()
        .close(Instant::now(), 0u32.into(), Bytes::from_static(b"bye"));
    let deadline = Instant::now() + PATIENCE;
    while cli.connections() > 0 {
        assert!(Instant::now() < deadline, "not drained");
        std::thread::sleep(Duration::from_millis(20));
    }
    let rec = Recorder::new(false, true);
    let b = connect(&cli, &srv, rec.clone());
    assert_eq!(
        b.handle, a.handle,
        "the endpoint gives the freed handle first"
    );
    // A's holder locks it again (as its link does, closed again or asked its address): the
    // let-go of a drained connection forgets it once more.
    assert!(a.lock().is_drained());
    assert_eq!(
        cli.connections(),
        1,
        "the new connection stays in the table"
    );
    let id = b.lock().streams().open(Dir::Bi).unwrap();
    b.lock().send_stream(id).write(b"still heard").unwrap();
    rec.wait("the echo", |s| s.bytes.ends_with(b"still heard"));
}

#[test]
fn a_timer_fired_under_a_writer_leaves_the_corks_deadline_in_the_clock() {
    let srv = server(Recorder::new(true, false));
    let cli = client_engine();
    let rec = Recorder::new(false, true);
    let c = connect(&cli, &srv, rec.clone());
    // A cork long enough for the steps below to run inside it.
    c.set_cork(Duration::from_secs(30));
    let id = c.lock().streams().open(Dir::Bi).unwrap();
    let mut want = Vec::new();
    for round in 0..20 {
        // Sent inline: the cork starts.
        let first = format!("inline {round};");
        c.lock().send_stream(id).write(first.as_bytes()).unwrap();
        want.extend_from_slice(first.as_bytes());
        rec.wait("the inline write's echo", |s| s.bytes == want);
        // Corked: the clock holds the earlier of quinn's timers and the cork's deadline.
        let corked = format!("corked {round};");
        c.lock().send_stream(id).write(corked.as_bytes()).unwrap();
        want.extend_from_slice(corked.as_bytes());
        // Another writer holds the connection as the loop fires its timer (quinn's own,
        // before the cork's) and takes its deadline out of the clock.
        let mut g = c.lock();
        let Some(until) = g.corked_until() else {
            // The loop fired in between and sent the corked write: try again.
            drop(g);
            rec.wait("the corked write's echo", |s| s.bytes == want);
            continue;
        };
        let more = format!("more {round};");
        g.send_stream(id).write(more.as_bytes()).unwrap();
        want.extend_from_slice(more.as_bytes());
        c.fire_timer_while_held();
        drop(g);
        // The writer took in the fired timer; what it and the first corked writer wrote still
        // has a deadline for the loop to send it by.
        let at = c.clock_deadline();
        assert!(
            at.is_some_and(|at| at <= until),
            "corked until {until:?}, the clock holds {at:?}"
        );
        rec.wait("every write's echo", |s| s.bytes == want);
        return;
    }
    panic!("the loop sent every corked write before another writer held the connection");
}
