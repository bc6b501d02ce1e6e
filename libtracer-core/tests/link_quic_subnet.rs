//! SUBNET discovery over loopback: two "hosts" (two rendezvous directories, two directory
//! ports, no static peers) find each other through the announcements alone; garbage on the
//! announcement port is dropped and counted; and `exercise_announce` (the fuzz target's body)
//! over a seeded random corpus of garbage and mutated announcements. Everything binds
//! 127.0.0.1 and multicasts on `lo` only (TTL 1).

mod link_support;

use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use libtracer_core::link::quic::{exercise_announce, Announcement, SubnetConfig, ANNOUNCE_GROUP};
use libtracer_core::link::QuicTransport;
use link_support::{free_udp_port, loopback_quic, TempDir, T};

fn subnet_host(dir_port: u16, announce_port: u16) -> libtracer_core::link::QuicConfig {
    let mut c = loopback_quic(dir_port);
    c.static_peers.clear();
    let mut s = SubnetConfig::for_domain(9);
    s.port = announce_port;
    s.interval = Duration::from_millis(300);
    c.subnet = Some(s);
    c
}

fn wait_until(timeout: Duration, f: impl Fn() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    f()
}

fn to_group(sock: &UdpSocket, port: u16, bytes: &[u8]) {
    let _ = sock.send_to(bytes, (ANNOUNCE_GROUP, port));
}

#[test]
fn two_hosts_find_each_other_by_announcement_alone_and_garbage_is_dropped() {
    let (dir_a, dir_b) = (TempDir::new("subnet-a"), TempDir::new("subnet-b"));
    let (pa, pb, announce) = (free_udp_port(), free_udp_port(), free_udp_port());
    let (ra, rb) = (link_support::Recorder::new(), link_support::Recorder::new());
    let a = QuicTransport::start(dir_a.path(), "a", ra.clone(), subnet_host(pa, announce)).unwrap();
    // Garbage on the announcement port before b exists, and while both run.
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    socket2::SockRef::from(&sock)
        .set_multicast_if_v4(&Ipv4Addr::LOCALHOST)
        .unwrap();
    let good = libtracer_core::link::quic::announce_bytes(&Announcement {
        domain: 9,
        directory_port: 1,
        interval_ms: 1000,
        host: 42,
        authenticated: false,
    });
    let _b =
        QuicTransport::start(dir_b.path(), "b", rb.clone(), subnet_host(pb, announce)).unwrap();
    ra.wait_up("b", T);
    rb.wait_up("a", T);
    assert!(wait_until(T, || a.announced_hosts()
        == vec![SocketAddr::from(([127, 0, 0, 1], pb))]));
    // Garbage on the announcement port while both run: paced (a socket buffer's worth of tiny
    // datagrams at once would be dropped by the kernel, uncounted).
    let mut rejected_sent = 0u64;
    let mut x: u32 = 99;
    for i in 0..200usize {
        x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
        let mut b = good.to_vec();
        match i % 4 {
            0 => b.truncate(x as usize % b.len()),
            1 => b.push(x as u8),
            2 => b[4] = 2 + (x as u8 % 200),
            _ => b[0] ^= 1 + (x as u8 % 254),
        }
        to_group(&sock, announce, &b);
        rejected_sent += 1;
        if i % 20 == 19 {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    assert!(
        wait_until(T, || a.announcements_rejected() >= rejected_sent),
        "all {rejected_sent} garbage datagrams counted, got {}",
        a.announcements_rejected()
    );
    // Another domain's announcement, and our own host's, are ignored (not reached, not counted).
    to_group(
        &sock,
        announce,
        &libtracer_core::link::quic::announce_bytes(&Announcement {
            domain: 10,
            directory_port: 7,
            interval_ms: 1000,
            host: 43,
            authenticated: false,
        }),
    );
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(a.announced_hosts().len(), 1);
    assert!(a.peers() == vec!["b"]);
}

#[test]
fn a_host_found_by_announcement_is_found_again_through_its_new_holder() {
    let (dir_a, dir_b) = (TempDir::new("subnet-ta"), TempDir::new("subnet-tb"));
    let (pa, pb, announce) = (free_udp_port(), free_udp_port(), free_udp_port());
    let rec = || link_support::Recorder::new();
    let (ra, rb1, rb2, rb3) = (rec(), rec(), rec(), rec());
    let a = QuicTransport::start(dir_a.path(), "a", ra.clone(), subnet_host(pa, announce)).unwrap();
    let b1 =
        QuicTransport::start(dir_b.path(), "b1", rb1.clone(), subnet_host(pb, announce)).unwrap();
    let b2 =
        QuicTransport::start(dir_b.path(), "b2", rb2.clone(), subnet_host(pb, announce)).unwrap();
    ra.wait_up("b1", T);
    ra.wait_up("b2", T);
    assert!(b1.holds_role());
    let b = vec![SocketAddr::from(([127, 0, 0, 1], pb))];
    assert!(wait_until(T, || a.announced_hosts() == b));
    let gone = Instant::now();
    drop(b1);
    assert!(wait_until(Duration::from_secs(2), || b2.holds_role()));
    let took = gone.elapsed();
    // The host keeps its id: a still reaches one host, and a newcomer of host b is linked
    // through the new holder's directory.
    let _b3 =
        QuicTransport::start(dir_b.path(), "b3", rb3.clone(), subnet_host(pb, announce)).unwrap();
    rb3.wait_up("a", T);
    assert_eq!(a.announced_hosts(), b);
    eprintln!("role taken over {took:?} after its holder went");
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

#[test]
fn announcement_and_directory_decoding_survive_a_random_corpus() {
    let good = libtracer_core::link::quic::announce_bytes(&Announcement {
        domain: 3,
        directory_port: 24653,
        interval_ms: 3000,
        host: 0xfeed,
        authenticated: true,
    });
    let answers: [&[u8]; 3] = [b"talker 4000\nlistener 4001\n", b"a 1\n", b""];
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    exercise_announce(&good);
    for a in answers {
        exercise_announce(a);
    }
    for i in 0..20_000 {
        let seed: &[u8] = if i % 2 == 0 { &good } else { answers[i % 3] };
        let mut b = seed.to_vec();
        for _ in 0..(1 + rng.next() % 4) {
            let r = rng.next();
            match r % 4 {
                0 if !b.is_empty() => {
                    let at = (r >> 8) as usize % b.len();
                    b[at] = (r >> 32) as u8;
                }
                1 => b.push((r >> 16) as u8),
                2 if !b.is_empty() => {
                    b.truncate((r >> 8) as usize % b.len());
                }
                _ => b = (0..(r % 64)).map(|_| rng.next() as u8).collect(),
            }
        }
        exercise_announce(&b);
    }
}
