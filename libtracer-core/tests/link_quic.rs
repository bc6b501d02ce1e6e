#![cfg(feature = "quic")]
//! The QUIC transport beyond the conformance suite: bad input from the network (garbage
//! datagrams, garbage streams, a flood of connections), the host role moving when its holder
//! goes, static peers that cannot be reached (logged once, retried, reached later), and the
//! link to a member its host's directory no longer lists going down (host-level liveness).
//! Everything binds loopback.

#[path = "common/keys.rs"]
mod keys;
mod link_support;
#[path = "common/poll.rs"]
mod poll;

use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::time::{Duration, Instant};

use keys::enclaves;
use libtracer_core::link::quic::{exercise_flood, NetLog};
use libtracer_core::link::{Link, QuicSecurity, QuicTransport};
use libtracer_core::wire::Frame;
use libtracer_core::Subject;
use link_support::{free_udp_port, loopback_quic, Ev, Recorder, TempDir, T};
use parking_lot::Mutex;
use poll::eventually;

fn ok_arrives(from: &Arc<dyn Link>, to: &Recorder, req: u64) {
    from.send(&Frame::Ok { req }).expect("send");
    assert!(to.wait_for(T, |e| e
        .iter()
        .any(|e| matches!(e, Ev::Frame(_, Frame::Ok { req: r }) if *r == req))));
}

#[test]
fn garbage_datagrams_are_dropped_and_links_go_on() {
    let dir = TempDir::new("quic-garbage");
    let port = free_udp_port();
    let (ra, rb) = (Recorder::new(), Recorder::new());
    let a = QuicTransport::start(dir.path(), "a", ra.clone(), loopback_quic(port)).unwrap();
    let _b = QuicTransport::start(dir.path(), "b", rb.clone(), loopback_quic(port)).unwrap();
    let to_b = ra.wait_up("b", T);
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut x: u32 = 12345;
    for i in 0..3000usize {
        // A simple LCG: sizes 1..1400, bytes pseudo-random, some looking like QUIC long headers.
        x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
        let len = 1 + (x as usize % 1400);
        let mut buf: Vec<u8> = (0..len).map(|j| (x >> (j % 24)) as u8 ^ j as u8).collect();
        if i % 3 == 0 {
            buf[0] = 0xc0 | (buf[0] & 0x0f);
        }
        let target: u16 = if i % 2 == 0 { a.port() } else { port };
        let _ = sock.send_to(&buf, ("127.0.0.1", target));
    }
    ok_arrives(&to_b, &rb, 77);
    assert_eq!(a.peers(), vec!["b"]);
    assert!(ra.violations().is_empty() && rb.violations().is_empty());
}

#[test]
fn a_connection_flood_costs_bounded_work_and_is_closed() {
    let dir = TempDir::new("quic-flood");
    let port = free_udp_port();
    let (ra, rb) = (Recorder::new(), Recorder::new());
    let a = QuicTransport::start(dir.path(), "a", ra.clone(), loopback_quic(port)).unwrap();
    let addr = SocketAddr::from(([127, 0, 0, 1], a.port()));
    // Silent connections: never a HELLO. Closed by the handshake timeout (2 s).
    let r = exercise_flood(addr, 150, false, Duration::from_secs(4));
    assert_eq!(r.established + r.refused, 150, "{r:?}");
    assert!(r.established > 0, "{r:?}");
    assert_eq!(
        r.closed_by_target, r.established,
        "every silent connection closed: {r:?}"
    );
    // Garbage instead of HELLO: closed at once.
    let g = exercise_flood(addr, 40, true, Duration::from_secs(4));
    assert_eq!(g.closed_by_target, g.established, "{g:?}");
    assert!(g.established > 0, "{g:?}");
    // The node still links.
    let _b = QuicTransport::start(dir.path(), "b", rb.clone(), loopback_quic(port)).unwrap();
    let to_b = ra.wait_up("b", T);
    ok_arrives(&to_b, &rb, 5);
    assert!(
        ra.events().iter().all(|e| !matches!(e, Ev::Frame(..))),
        "nothing of the flood reached the handler"
    );
}

#[test]
fn the_host_role_moves_when_its_holder_goes() {
    let dir = TempDir::new("quic-role");
    let port = free_udp_port();
    let (ra, rb, rc, rd) = (
        Recorder::new(),
        Recorder::new(),
        Recorder::new(),
        Recorder::new(),
    );
    let a = QuicTransport::start(dir.path(), "a", ra.clone(), loopback_quic(port)).unwrap();
    let b = QuicTransport::start(dir.path(), "b", rb.clone(), loopback_quic(port)).unwrap();
    let c = QuicTransport::start(dir.path(), "c", rc.clone(), loopback_quic(port)).unwrap();
    rb.wait_up("c", T);
    assert!(a.holds_role() && !b.holds_role() && !c.holds_role());
    let gone = Instant::now();
    drop(a);
    assert!(
        eventually(Duration::from_secs(2), || b.holds_role() || c.holds_role()).is_some(),
        "nobody took the role"
    );
    let took = gone.elapsed();
    assert!(!(b.holds_role() && c.holds_role()), "one holder");
    // b and c kept their link; a newcomer finds both through the new holder.
    assert_eq!(b.peers(), vec!["c"]);
    let _d = QuicTransport::start(dir.path(), "d", rd.clone(), loopback_quic(port)).unwrap();
    rd.wait_up("b", T);
    rd.wait_up("c", T);
    eprintln!("role taken over {took:?} after its holder went");
}

#[test]
fn an_unreachable_static_peer_is_logged_once_then_reached() {
    let dir_a = TempDir::new("quic-unreach-a");
    let dir_b = TempDir::new("quic-unreach-b");
    let (port_a, port_b) = (free_udp_port(), free_udp_port());
    let lines: Arc<Mutex<Vec<String>>> = Arc::default();
    let l2 = lines.clone();
    let log: NetLog = Arc::new(move |m: &str| l2.lock().push(m.to_owned()));
    let mut cfg = loopback_quic(port_a);
    // b by name (resolved through /etc/hosts: nothing leaves the machine), nobody there yet.
    cfg.static_peers = vec![format!("localhost:{port_b}")];
    cfg.handshake_timeout = Duration::from_millis(300);
    cfg.initial_wait = Duration::from_millis(100);
    cfg.log = Some(log);
    let (ra, rb) = (Recorder::new(), Recorder::new());
    let _a = QuicTransport::start(dir_a.path(), "a", ra.clone(), cfg).unwrap();
    std::thread::sleep(Duration::from_secs(3));
    let about_b: Vec<String> = lines
        .lock()
        .iter()
        .filter(|l| l.contains(&format!("localhost:{port_b}")))
        .cloned()
        .collect();
    assert_eq!(about_b.len(), 1, "reported once while retried: {about_b:?}");
    // b comes up (its own host, its own directory): a reaches it and says so once.
    let mut cb = loopback_quic(port_b);
    cb.static_peers.clear();
    let _b = QuicTransport::start(dir_b.path(), "b", rb.clone(), cb).unwrap();
    ra.wait_up("b", T);
    assert!(eventually(T, || lines
        .lock()
        .iter()
        .any(|l| l.contains("reached again")))
    .is_some());
}

#[test]
fn a_member_its_directory_no_longer_lists_loses_its_link_and_gets_it_back_when_listed() {
    // Host A: a1 (the holder) and a2; host B: b, which asks A's directory. Links carry no
    // keep-alive of their own to speak of (docs/network.md section 4): a remote process that
    // died is told by its host's directory leaving it out, here by removing a2's entry while
    // a2 itself lives on. b's link to a2 goes down as lost (no cooldown), a1's stays, and a2
    // is linked again as soon as its directory lists it again.
    let dir_a = TempDir::new("quic-unlisted-a");
    let dir_b = TempDir::new("quic-unlisted-b");
    let (port_a, port_b) = (free_udp_port(), free_udp_port());
    let (ra1, ra2, rb) = (Recorder::new(), Recorder::new(), Recorder::new());
    let _a1 = QuicTransport::start(dir_a.path(), "a1", ra1.clone(), loopback_quic(port_a)).unwrap();
    let _a2 = QuicTransport::start(dir_a.path(), "a2", ra2.clone(), loopback_quic(port_a)).unwrap();
    let mut cb = loopback_quic(port_b);
    cb.static_peers = vec![format!("127.0.0.1:{port_a}")];
    let b = QuicTransport::start(dir_b.path(), "b", rb.clone(), cb).unwrap();
    rb.wait_up("a1", T);
    rb.wait_up("a2", T);
    let entry = dir_a.path().join("a2.quic");
    let text = std::fs::read_to_string(&entry).expect("a2's directory entry");
    std::fs::remove_file(&entry).unwrap();
    assert!(
        rb.wait_down("a2", T),
        "b kept its link to a member no longer listed"
    );
    assert_eq!(b.peers(), vec!["a1"]);
    rb.clear_events();
    std::fs::write(&entry, text).unwrap();
    rb.wait_up("a2", T);
    let mut peers = b.peers();
    peers.sort();
    assert_eq!(peers, vec!["a1", "a2"]);
}

#[test]
fn a_host_that_lists_us_is_watched_at_the_directory_port_its_hello_names() {
    // Host A (a1, the holder, and a2) and host B (b) with directories on different ports, as
    // with another RMW_TRACER_PORT_BASE; only A lists B. b learns A's directory port from the
    // HELLOs and watches that directory: when it no longer lists a2, b's link to a2 goes down
    // at once, as for a host b lists itself (docs/network.md section 3), not after the links'
    // 15 s backstop.
    let dir_a = TempDir::new("quic-learned-a");
    let dir_b = TempDir::new("quic-learned-b");
    let (port_a, port_b) = (free_udp_port(), free_udp_port());
    let (ra1, ra2, rb) = (Recorder::new(), Recorder::new(), Recorder::new());
    let listing_b = || {
        let mut c = loopback_quic(port_a);
        c.static_peers.push(format!("127.0.0.1:{port_b}"));
        c
    };
    let _a1 = QuicTransport::start(dir_a.path(), "a1", ra1.clone(), listing_b()).unwrap();
    let _a2 = QuicTransport::start(dir_a.path(), "a2", ra2.clone(), listing_b()).unwrap();
    let _b = QuicTransport::start(dir_b.path(), "b", rb.clone(), loopback_quic(port_b)).unwrap();
    rb.wait_up("a1", T);
    rb.wait_up("a2", T);
    std::fs::remove_file(dir_a.path().join("a2.quic")).expect("a2's directory entry");
    assert!(
        rb.wait_down("a2", T),
        "b did not watch A's directory at the port A's HELLOs named"
    );
    assert!(!rb.events().contains(&Ev::Down("a1".into())));
}

#[test]
fn a_peer_is_named_by_its_certificate_subject_or_is_anonymous() {
    let dir = TempDir::new("quic-subject");
    let port = free_udp_port();
    let (ra, rb) = (Recorder::new(), Recorder::new());
    let a = QuicTransport::start(dir.path(), "a", ra.clone(), loopback_quic(port)).unwrap();
    let b = QuicTransport::start(dir.path(), "b", rb.clone(), loopback_quic(port)).unwrap();
    assert_eq!(ra.wait_up("b", T).peer().remote, Some(Subject::Anonymous));
    assert_eq!(rb.wait_up("a", T).peer().remote, Some(Subject::Anonymous));
    drop((a, b));

    let keys = TempDir::new("quic-subject-keys");
    let s = enclaves(keys.path(), &["/robot/talker", "/robot/listener"]);
    let dir = TempDir::new("quic-subject-secure");
    let port = free_udp_port();
    let secured = |sec: &QuicSecurity| {
        let mut c = loopback_quic(port);
        c.security = Some(sec.clone());
        c
    };
    let (ra, rb) = (Recorder::new(), Recorder::new());
    let _a = QuicTransport::start(dir.path(), "a", ra.clone(), secured(&s[0])).unwrap();
    let _b = QuicTransport::start(dir.path(), "b", rb.clone(), secured(&s[1])).unwrap();
    let subject = |n: &str| Some(Subject::Authenticated(n.into()));
    assert_eq!(
        ra.wait_up("b", T).peer().remote,
        subject("CN=/robot/listener")
    );
    assert_eq!(
        rb.wait_up("a", T).peer().remote,
        subject("CN=/robot/talker")
    );
}

/// The governance's `allow_unauthenticated_participants` (docs/network.md section 5): an
/// enclave that allows them links with a process without SROS2 (no client certificate, a
/// self-signed server one) and with one of another CA, both named anonymous on both ends; a
/// peer of its own CA is authenticated as without the setting; each anonymous peer is logged
/// once. Without the setting the unauthenticated peer is refused, as before.
#[test]
fn unauthenticated_peers_are_let_in_as_anonymous_only_when_allowed() {
    let keys = TempDir::new("quic-unauth-keys");
    let ca1 = enclaves(keys.path(), &["/net/a", "/net/c"]);
    let other = TempDir::new("quic-unauth-keys2");
    let ca2 = enclaves(other.path(), &["/net/d"]);
    let dir = TempDir::new("quic-unauth");
    let port = free_udp_port();
    let lines: Arc<Mutex<Vec<String>>> = Arc::default();
    let l2 = lines.clone();
    let mut cfg_a = loopback_quic(port);
    cfg_a.security = Some(ca1[0].allow_unauthenticated(true));
    cfg_a.log = Some(Arc::new(move |m: &str| l2.lock().push(m.to_owned())));
    let with = |sec: Option<QuicSecurity>| {
        let mut c = loopback_quic(port);
        c.security = sec;
        c
    };
    let (ra, rb, rc, rd) = (
        Recorder::new(),
        Recorder::new(),
        Recorder::new(),
        Recorder::new(),
    );
    let a = QuicTransport::start(dir.path(), "a", ra.clone(), cfg_a).unwrap();
    let b = QuicTransport::start(dir.path(), "b", rb.clone(), with(None)).unwrap();
    let _c = QuicTransport::start(dir.path(), "c", rc.clone(), with(Some(ca1[1].clone()))).unwrap();
    let d = QuicTransport::start(
        dir.path(),
        "d",
        rd.clone(),
        with(Some(ca2[0].allow_unauthenticated(true))),
    )
    .unwrap();
    assert!(a.holds_role());
    let to_b = ra.wait_up("b", T);
    assert_eq!(to_b.peer().remote, Some(Subject::Anonymous));
    assert_eq!(rb.wait_up("a", T).peer().remote, Some(Subject::Anonymous));
    ok_arrives(&to_b, &rb, 11);
    let subject = |n: &str| Some(Subject::Authenticated(n.into()));
    assert_eq!(ra.wait_up("c", T).peer().remote, subject("CN=/net/c"));
    assert_eq!(rc.wait_up("a", T).peer().remote, subject("CN=/net/a"));
    assert_eq!(ra.wait_up("d", T).peer().remote, Some(Subject::Anonymous));
    assert_eq!(rd.wait_up("a", T).peer().remote, Some(Subject::Anonymous));
    let admitted = |p: u16| {
        lines
            .lock()
            .iter()
            .filter(|l| {
                l.starts_with("security: admitted the peer at ")
                    && l.contains(&format!("127.0.0.1:{p} unauthenticated"))
            })
            .count()
    };
    assert_eq!(admitted(b.port()), 1, "{:?}", lines.lock());
    assert_eq!(admitted(d.port()), 1, "{:?}", lines.lock());
    assert!(
        !lines
            .lock()
            .iter()
            .any(|l| l.contains("admitted") && l.contains("/net/c")),
        "{:?}",
        lines.lock()
    );

    // Not allowed: the same unauthenticated peer is refused in the handshake and logged.
    let dir = TempDir::new("quic-unauth-closed");
    let port = free_udp_port();
    let lines: Arc<Mutex<Vec<String>>> = Arc::default();
    let l2 = lines.clone();
    let mut cfg_e = loopback_quic(port);
    cfg_e.security = Some(ca1[0].allow_unauthenticated(false));
    cfg_e.log = Some(Arc::new(move |m: &str| l2.lock().push(m.to_owned())));
    let (re, rf) = (Recorder::new(), Recorder::new());
    let e = QuicTransport::start(dir.path(), "e", re.clone(), cfg_e).unwrap();
    let mut cfg_f = loopback_quic(port);
    cfg_f.security = None;
    let _f = QuicTransport::start(dir.path(), "f", rf.clone(), cfg_f).unwrap();
    assert!(eventually(T, || lines
        .lock()
        .iter()
        .any(|l| l.starts_with("security: refused the peer at ")))
    .is_some());
    assert!(e.peers().is_empty());
    assert!(!lines.lock().iter().any(|l| l.contains("admitted")));
}

/// Endpoints bound to every address (`[::]`, dual stack, as rmw_tracer binds them) reach a
/// peer named by its IPv4 address: on the engine, quinn-proto and quinn-udp take an address as
/// given, and an IPv4 one on an IPv6 socket must be sent to as IPv4-mapped (quinn's own
/// endpoint maps it).
#[test]
fn a_dual_stack_bind_reaches_peers_by_their_ipv4_address() {
    let dir = TempDir::new("quic-dual");
    let port = free_udp_port();
    let every = |port| {
        let mut c = loopback_quic(port);
        c.bind = libtracer_core::link::quic::every_address();
        c
    };
    let (ra, rb) = (Recorder::new(), Recorder::new());
    let _a = QuicTransport::start(dir.path(), "a", ra.clone(), every(port)).unwrap();
    let _b = QuicTransport::start(dir.path(), "b", rb.clone(), every(port)).unwrap();
    let to_b = ra.wait_up("b", T);
    ok_arrives(&to_b, &rb, 21);
}
