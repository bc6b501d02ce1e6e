//! Ruling 9 (same-host links) and ruling 4 (a private rendezvous directory): the Unix-socket
//! transport's formation, stale sockets, the connect race, liveness and its refusals.

mod link_support;

use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use libtracer_core::link::{default_rendezvous_dir, HostTransport, LinkError, TransportConfig};
use libtracer_core::wire::{encode, Frame, FrameDecoder, MAX_FRAME};
use link_support::{Ev, Recorder, TempDir, T};

#[test]
fn ruling9_stale_sockets_are_removed() {
    let dir = TempDir::new("stale");
    // A socket whose listener is gone refuses connections: what a killed process leaves.
    drop(UnixListener::bind(dir.path().join("ghost.sock")).unwrap());
    drop(UnixListener::bind(dir.path().join("a.sock")).unwrap());
    let r = Recorder::new();
    let a = HostTransport::start(dir.path(), "a", r.clone())
        .expect("a stale socket of our own name is reclaimed");
    assert!(
        !dir.path().join("ghost.sock").exists(),
        "stale ghost.sock removed"
    );
    assert!(a.peers().is_empty());
    assert!(a.socket_path().exists());
    drop(a);
    assert!(
        !dir.path().join("a.sock").exists(),
        "shutdown unlinks the socket"
    );
}

#[test]
fn ruling9_a_live_name_cannot_be_taken() {
    let dir = TempDir::new("taken");
    let _a = HostTransport::start(dir.path(), "a", Recorder::new()).unwrap();
    assert!(matches!(
        HostTransport::start(dir.path(), "a", Recorder::new()),
        Err(LinkError::NameTaken(_))
    ));
    assert!(matches!(
        HostTransport::start(dir.path(), "a/b", Recorder::new()),
        Err(LinkError::InvalidName(_))
    ));
    assert!(matches!(
        HostTransport::start(dir.path(), "..", Recorder::new()),
        Err(LinkError::InvalidName(_))
    ));
}

#[test]
fn ruling4_rendezvous_dir_must_be_private() {
    let dir = TempDir::new("perm");
    let open = dir.path().join("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert!(matches!(
        HostTransport::start(&open, "a", Recorder::new()),
        Err(LinkError::InsecureDir { .. })
    ));
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(dir.path(), &link).unwrap();
    assert!(matches!(
        HostTransport::start(&link, "a", Recorder::new()),
        Err(LinkError::InsecureDir { .. })
    ));
    // A directory we create gets mode 0700.
    let fresh = dir.path().join("fresh");
    let _a = HostTransport::start(&fresh, "a", Recorder::new()).unwrap();
    assert_eq!(
        std::fs::metadata(&fresh).unwrap().permissions().mode() & 0o777,
        0o700
    );
    // Owned by someone else (we can only arrange that as root).
    if nix::unistd::geteuid().is_root() {
        let theirs = dir.path().join("theirs");
        std::fs::create_dir(&theirs).unwrap();
        std::fs::set_permissions(&theirs, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::os::unix::fs::chown(&theirs, Some(65534), None).unwrap();
        let e = HostTransport::start(&theirs, "a", Recorder::new())
            .err()
            .expect("refused");
        assert!(e.to_string().contains("owned by uid 65534"), "{e}");
    }
}

#[test]
fn ruling9_default_rendezvous_dir_is_per_user_and_domain() {
    let d = default_rendezvous_dir(42);
    assert!(d.ends_with("domain-42"));
    let parent = d.parent().unwrap().to_str().unwrap().to_owned();
    let uid = nix::unistd::geteuid().as_raw();
    match std::env::var("XDG_RUNTIME_DIR") {
        Ok(x) if x.starts_with('/') => assert_eq!(parent, format!("{x}/libtracer")),
        _ => assert_eq!(parent, format!("/tmp/libtracer-{uid}")),
    }
}

#[test]
fn ruling9_simultaneous_starts_keep_one_link_per_pair() {
    for round in 0..4 {
        let dir = TempDir::new("race");
        let n = 5;
        let barrier = Arc::new(Barrier::new(n));
        let rs: Vec<Arc<Recorder>> = (0..n).map(|_| Recorder::new()).collect();
        let threads: Vec<_> = (0..n)
            .map(|i| {
                let (b, r, p) = (barrier.clone(), rs[i].clone(), dir.path().to_owned());
                std::thread::spawn(move || {
                    b.wait();
                    HostTransport::start(&p, &format!("g{i}"), r).unwrap()
                })
            })
            .collect();
        let ts: Vec<HostTransport> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        for (i, r) in rs.iter().enumerate() {
            for j in (0..n).filter(|j| *j != i) {
                r.wait_up(&format!("g{j}"), T);
            }
        }
        // Let any losing connection play out, then check nothing went down or came up twice.
        std::thread::sleep(Duration::from_millis(300));
        for (i, (r, t)) in rs.iter().zip(&ts).enumerate() {
            assert_eq!(
                t.peers().len(),
                n - 1,
                "round {round} g{i}: {:?}",
                t.peers()
            );
            assert!(
                r.events().iter().all(|e| matches!(e, Ev::Up(_))),
                "round {round} g{i}: {:?}",
                r.events()
            );
            assert_eq!(r.events().len(), n - 1, "round {round} g{i}");
            assert!(r.violations().is_empty());
        }
        // Each pair's two ends are one connection: a frame sent on i->j arrives from i at j.
        let to_1 = rs[0].link("g1").unwrap();
        to_1.send(&Frame::Ok { req: 77 }).unwrap();
        assert!(rs[1].wait_for(T, |e| e
            .contains(&Ev::Frame("g0".into(), Frame::Ok { req: 77 }))));
    }
}

/// A fake peer that completes the handshake and then goes silent, as a stopped process would.
fn silent_peer(dir: &std::path::Path, name: &str) -> std::thread::JoinHandle<UnixStream> {
    let listener = UnixListener::bind(dir.join(format!("{name}.sock"))).unwrap();
    let name = name.to_owned();
    std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut dec = FrameDecoder::new(MAX_FRAME);
        let mut buf = [0u8; 512];
        loop {
            let n = s.read(&mut buf).unwrap();
            dec.push(&buf[..n]);
            if let Some(f) = dec.pop().unwrap() {
                assert!(matches!(f, Frame::Hello { .. }));
                break;
            }
        }
        s.write_all(&encode(&link_support::hello(&name)).unwrap())
            .unwrap();
        s
    })
}

#[test]
fn ruling9_a_hung_peer_is_found_by_keepalive_within_a_second() {
    let dir = TempDir::new("hung");
    let fake = silent_peer(dir.path(), "zz");
    let r = Recorder::new();
    let _a = HostTransport::start(dir.path(), "a", r.clone()).unwrap();
    r.wait_up("zz", T);
    let up = Instant::now();
    let _held_open = fake.join().unwrap();
    assert!(r.wait_down("zz", T), "keepalive closed the silent link");
    let took = up.elapsed();
    eprintln!("silent peer declared dead after {took:?}");
    // The rule is one second from the last byte heard; allow scheduling slack on a busy host.
    assert!(took < Duration::from_millis(1800), "took {took:?}");
}

#[test]
fn ruling9_keepalive_keeps_a_quiet_link_up() {
    let dir = TempDir::new("quiet");
    let cfg = TransportConfig {
        // dead_after far above ping_interval: a loaded machine may stall a thread for a while.
        ping_interval: Duration::from_millis(50),
        dead_after: Duration::from_millis(700),
        ..Default::default()
    };
    let (ra, rb) = (Recorder::new(), Recorder::new());
    let _a = HostTransport::start_with(dir.path(), "a", ra.clone(), cfg.clone()).unwrap();
    let _b = HostTransport::start_with(dir.path(), "b", rb.clone(), cfg).unwrap();
    ra.wait_up("b", T);
    std::thread::sleep(Duration::from_millis(2100));
    assert_eq!(
        ra.events(),
        vec![Ev::Up("b".into())],
        "three dead_after periods of silence, link still up"
    );
}

#[test]
fn ruling9_bad_handshakes_are_refused_without_harm() {
    let dir = TempDir::new("hs");
    let cfg = TransportConfig {
        handshake_timeout: Duration::from_millis(300),
        ..Default::default()
    };
    let ra = Recorder::new();
    let a = HostTransport::start_with(dir.path(), "a", ra.clone(), cfg).unwrap();
    // Connects and says nothing: times out, harmlessly.
    let _mute = UnixStream::connect(a.socket_path()).unwrap();
    // Claims to be `a` itself: refused with ERROR.
    let mut liar = UnixStream::connect(a.socket_path()).unwrap();
    liar.write_all(&encode(&link_support::hello("a")).unwrap())
        .unwrap();
    let mut buf = Vec::new();
    liar.read_to_end(&mut buf).unwrap();
    assert!(matches!(
        libtracer_core::wire::decode(&buf, MAX_FRAME),
        Ok((Frame::Error { .. }, _))
    ));
    // Opens with something other than HELLO: dropped.
    let mut rude = UnixStream::connect(a.socket_path()).unwrap();
    rude.write_all(&encode(&Frame::Ping { nonce: 1 }).unwrap())
        .unwrap();
    let mut buf = Vec::new();
    let _ = rude.read_to_end(&mut buf);
    // Meanwhile a real graph links as usual.
    let rb = Recorder::new();
    let _b = HostTransport::start(dir.path(), "b", rb.clone()).unwrap();
    rb.wait_up("a", T);
    assert_eq!(a.peers(), vec!["b"]);
    assert!(ra.events().iter().all(|e| *e == Ev::Up("b".into())));
}

/// Sleeps in `on_frame` for OK{1}: a handler that is slow for longer than `dead_after`.
struct Slow(Arc<Recorder>);

impl libtracer_core::link::LinkHandler for Slow {
    fn on_up(&self, link: Arc<dyn libtracer_core::link::Link>) {
        self.0.on_up(link)
    }
    fn on_frame(&self, link: &Arc<dyn libtracer_core::link::Link>, frame: Frame) {
        if frame == (Frame::Ok { req: 1 }) {
            std::thread::sleep(Duration::from_millis(1500));
        }
        self.0.on_frame(link, frame)
    }
    fn on_down(&self, link: &Arc<dyn libtracer_core::link::Link>) {
        self.0.on_down(link)
    }
}

#[test]
fn ruling9_a_slow_handler_is_not_taken_for_a_dead_peer() {
    let dir = TempDir::new("slow");
    let (ra, rb) = (Recorder::new(), Recorder::new());
    let _a = HostTransport::start(dir.path(), "a", ra.clone()).unwrap();
    let _b = HostTransport::start(dir.path(), "b", Arc::new(Slow(rb.clone()))).unwrap();
    let to_b = ra.wait_up("b", T);
    to_b.send(&Frame::Ok { req: 1 }).unwrap();
    to_b.send(&Frame::Ok { req: 2 }).unwrap();
    assert!(rb.wait_for(T, |e| e
        .contains(&Ev::Frame("a".into(), Frame::Ok { req: 2 }))));
    // b's reader was stuck for longer than dead_after with a's pings unread: no link dropped.
    assert!(
        !rb.events().contains(&Ev::Down("a".into())),
        "{:?}",
        rb.events()
    );
    assert!(
        !ra.events().contains(&Ev::Down("b".into())),
        "{:?}",
        ra.events()
    );
}

/// Run `f` on a thread and wait for it with a generous deadline: a hang fails the test instead
/// of stalling the run (the hung thread is left behind).
fn finishes_in_time(what: &str, f: impl FnOnce() + Send + 'static) {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        f();
        let _ = tx.send(());
    });
    assert!(
        rx.recv_timeout(Duration::from_secs(30)).is_ok(),
        "{what} hung"
    );
}

#[test]
fn ruling9_shutdown_returns_when_the_rendezvous_dir_is_gone() {
    let dir = TempDir::new("gone");
    let sub = dir.path().join("d");
    let (ra, rb) = (Recorder::new(), Recorder::new());
    let a = HostTransport::start(&sub, "a", ra.clone()).unwrap();
    // Not dropped if the test fails: its drop would hang the same way.
    let b = std::mem::ManuallyDrop::new(HostTransport::start(&sub, "b", rb.clone()).unwrap());
    ra.wait_up("b", T);
    // Someone cleans up the runtime directory under the running graphs.
    std::fs::remove_dir_all(&sub).unwrap();
    finishes_in_time("shutdown with the directory gone", move || drop(a));
    assert!(rb.wait_down("a", T), "b saw a go");
    assert!(ra.wait_down("b", T));
    let b = std::mem::ManuallyDrop::into_inner(b);
    finishes_in_time("shutdown of the last one", move || drop(b));
}

#[test]
fn ruling9_shutdown_returns_when_its_socket_file_belongs_to_another() {
    let dir = TempDir::new("squat");
    let a = HostTransport::start(dir.path(), "a", Recorder::new()).unwrap();
    // Our socket file was taken for stale and replaced by a listener that never accepts.
    std::fs::remove_file(a.socket_path()).unwrap();
    let squatter = UnixListener::bind(dir.path().join("a.sock")).unwrap();
    finishes_in_time("shutdown with another's socket at our path", move || {
        drop(a)
    });
    assert!(
        dir.path().join("a.sock").exists(),
        "the other's socket file is left alone"
    );
    drop(squatter);
}

/// A listener that never accepts and whose queue is full, as a graph stopped (SIGSTOP, a
/// debugger) or stuck before `accept` ends up once others have kept connecting to it: a plain
/// `connect` to it blocks forever.
fn full_listener(path: &std::path::Path) -> (std::os::fd::OwnedFd, UnixStream) {
    use nix::sys::socket::{bind, listen, socket, AddressFamily, Backlog, SockFlag, SockType};
    use std::os::fd::AsRawFd;
    let fd = socket(
        AddressFamily::Unix,
        SockType::Stream,
        SockFlag::SOCK_CLOEXEC,
        None,
    )
    .unwrap();
    bind(
        fd.as_raw_fd(),
        &nix::sys::socket::UnixAddr::new(path).unwrap(),
    )
    .unwrap();
    // Backlog 0 holds one connection; the next connect waits for an accept that never comes.
    listen(&fd, Backlog::new(0).unwrap()).unwrap();
    let queued = UnixStream::connect(path).unwrap();
    (fd, queued)
}

#[test]
fn ruling9_start_does_not_hang_on_a_graph_that_never_accepts() {
    let dir = TempDir::new("stuck");
    let _stuck = full_listener(&dir.path().join("stuck.sock"));
    let cfg = TransportConfig {
        handshake_timeout: Duration::from_millis(300),
        ..Default::default()
    };
    let (tx, rx) = std::sync::mpsc::channel();
    let (p, c) = (dir.path().to_owned(), cfg.clone());
    std::thread::spawn(move || {
        let a = HostTransport::start_with(&p, "a", Recorder::new(), c.clone());
        let taken = HostTransport::start_with(&p, "stuck", Recorder::new(), c).err();
        let _ = tx.send((a, taken));
    });
    let (a, taken) = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("start hung on a listener that never accepts");
    let a = a.expect("start succeeds without the stuck peer");
    assert!(a.peers().is_empty());
    assert!(
        dir.path().join("stuck.sock").exists(),
        "a live (if stuck) graph's socket is not taken for stale"
    );
    assert!(
        matches!(taken, Some(LinkError::NameTaken(_))),
        "a stuck graph still holds its name: {taken:?}"
    );
    // The newcomer itself is reachable as usual.
    let rb = Recorder::new();
    let _b = HostTransport::start_with(dir.path(), "b", rb.clone(), cfg).unwrap();
    rb.wait_up("a", T);
}

#[test]
fn ruling8_a_huge_first_frame_is_refused_before_any_handshake() {
    let dir = TempDir::new("hugefirst");
    let cfg = TransportConfig {
        handshake_timeout: Duration::from_secs(20),
        ..Default::default()
    };
    let a = HostTransport::start_with(dir.path(), "a", Recorder::new(), cfg).unwrap();
    let mut s = UnixStream::connect(a.socket_path()).unwrap();
    // A prefix announcing a 60 MiB body (a WRITE), from a peer that has not said who it is.
    let mut prefix = (60u32 << 20).to_le_bytes().to_vec();
    prefix.extend([1, 3]);
    s.write_all(&prefix).unwrap();
    // Dropped at once: no waiting (and no buffer) for the body; the handshake timeout is far.
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut buf = Vec::new();
    let r = s.read_to_end(&mut buf);
    assert!(r.is_ok(), "the connection was not dropped: {r:?}");
}

#[test]
fn ruling9_handshakes_with_several_slow_peers_run_in_parallel() {
    let dir = TempDir::new("slowpeers");
    // Graphs that stopped (SIGSTOP, a debugger) before accepting: a connect succeeds into the
    // queue, and no HELLO ever comes back.
    let _stopped: Vec<UnixListener> = (0..6)
        .map(|i| UnixListener::bind(dir.path().join(format!("stopped{i}.sock"))).unwrap())
        .collect();
    let cfg = TransportConfig {
        handshake_timeout: Duration::from_secs(1),
        ..Default::default()
    };
    let start = Instant::now();
    let a = HostTransport::start_with(dir.path(), "a", Recorder::new(), cfg).unwrap();
    let took = start.elapsed();
    eprintln!("start with 6 silent peers took {took:?}");
    assert!(a.peers().is_empty());
    // One after another would be six timeouts; together it is one (plus scheduling slack).
    assert!(took < Duration::from_secs(4), "took {took:?}");
    for i in 0..6 {
        assert!(dir.path().join(format!("stopped{i}.sock")).exists());
    }
}

#[test]
fn ruling9_a_peer_that_says_hello_then_nothing_is_dropped() {
    let dir = TempDir::new("hellothen");
    let r = Recorder::new();
    let a = HostTransport::start(dir.path(), "a", r.clone()).unwrap();
    let mut s = UnixStream::connect(a.socket_path()).unwrap();
    s.write_all(&encode(&link_support::hello("mute")).unwrap())
        .unwrap();
    r.wait_up("mute", T);
    // Never a byte more, socket held open: the keepalive finds the silence and drops it.
    assert!(
        r.wait_down("mute", Duration::from_secs(20)),
        "a silent peer was kept"
    );
    assert!(a.peers().is_empty());
    drop(s);
}

/// Ruling 9 (observers told within a second): one peer that stops reading must not stall the
/// keepalive for the others. The keepalive PINGs every idle link; when a peer's socket buffer
/// is full, a blocking PING would hold the keepalive thread for the whole write timeout, and no
/// hung peer would be found meanwhile. Nor may the reader block on a PONG into that full buffer:
/// it would stop reading, and take the peer (which keeps writing) for silent.
#[test]
fn ruling9_a_full_socket_does_not_stall_the_keepalive() {
    let dir = TempDir::new("fullbuf");
    // b: alive (it writes a PING to a every 50 ms) but never reads, so a's PINGs pile up in
    // the socket until its buffer is full.
    let listener = UnixListener::bind(dir.path().join("b.sock")).unwrap();
    let b = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut dec = FrameDecoder::new(MAX_FRAME);
        let mut buf = [0u8; 512];
        while dec.pop().unwrap().is_none() {
            let n = s.read(&mut buf).unwrap();
            dec.push(&buf[..n]);
        }
        let hello = link_support::hello("b");
        s.write_all(&encode(&hello).unwrap()).unwrap();
        let ping = encode(&Frame::Ping { nonce: 1 }).unwrap();
        while s.write_all(&ping).is_ok() {
            std::thread::sleep(Duration::from_millis(50));
        }
    });
    let cfg = TransportConfig {
        // A PING every keepalive tick (10 ms): a few hundred fill the socket buffer.
        ping_interval: Duration::from_millis(1),
        write_timeout: Duration::from_secs(60),
        ..Default::default()
    };
    let r = Recorder::new();
    let a = HostTransport::start_with(dir.path(), "a", r.clone(), cfg).unwrap();
    r.wait_up("b", T);
    // Long enough for the buffer to fill, several times over.
    std::thread::sleep(Duration::from_secs(6));
    // d says HELLO, then nothing: the keepalive must still find it.
    let mut d = UnixStream::connect(a.socket_path()).unwrap();
    d.write_all(&encode(&link_support::hello("d")).unwrap())
        .unwrap();
    r.wait_up("d", T);
    let up = Instant::now();
    assert!(
        r.wait_down("d", Duration::from_secs(15)),
        "the keepalive was stuck: silent d kept"
    );
    eprintln!("silent d dropped after {:?}", up.elapsed());
    assert!(r.link("b").is_some(), "b (alive, not reading) is kept");
    drop(a);
    let _ = b.join();
}

/// A handler whose `on_up` takes a while (a graph mounting a peer on a loaded machine).
struct SlowUp(Arc<Recorder>);

impl libtracer_core::link::LinkHandler for SlowUp {
    fn on_up(&self, link: Arc<dyn libtracer_core::link::Link>) {
        std::thread::sleep(Duration::from_millis(150));
        self.0.on_up(link)
    }
    fn on_frame(&self, link: &Arc<dyn libtracer_core::link::Link>, frame: Frame) {
        self.0.on_frame(link, frame)
    }
    fn on_down(&self, link: &Arc<dyn libtracer_core::link::Link>) {
        self.0.on_down(link)
    }
}

#[test]
fn ruling9_start_returns_after_on_up_for_the_graphs_already_there() {
    // `start` promises that the links to the graphs already in the directory are up, their
    // `on_up` called, when it returns; rmw_tracer's rmw_init relies on it (the peer is mounted,
    // so it can wait for that peer's registry). `on_up` runs on the link's reader thread.
    let dir = TempDir::new("upfirst");
    let (ra, rb) = (Recorder::new(), Recorder::new());
    let _a = HostTransport::start(dir.path(), "a", ra.clone()).unwrap();
    let _b = HostTransport::start(dir.path(), "b", Arc::new(SlowUp(rb.clone()))).unwrap();
    assert_eq!(rb.live(), vec!["a".to_owned()], "{:?}", rb.events());
}
