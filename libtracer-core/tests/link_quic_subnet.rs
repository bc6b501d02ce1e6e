#![cfg(feature = "quic")]
//! SUBNET discovery over loopback: two "hosts" (two rendezvous directories, two directory
//! ports, no static peers) find each other through the announcements alone; garbage on the
//! announcement port is dropped and counted; and `exercise_announce` (the fuzz target's body)
//! over a seeded random corpus of garbage and mutated announcements (tests/common/corpus.rs). Everything binds
//! 127.0.0.1 and multicasts on `lo` only (TTL 1).

#[path = "common/corpus.rs"]
mod corpus;
mod link_support;
#[path = "common/poll.rs"]
mod poll;

use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::sync::Arc;
use std::time::{Duration, Instant};

use corpus::Rng;
use libtracer_core::link::quic::{exercise_announce, Announcement, SubnetConfig, ANNOUNCE_GROUP};
use libtracer_core::link::QuicTransport;
use link_support::{free_udp_port, loopback_quic, TempDir};
use poll::eventually;

/// Bound of every wait here: generous, for a loaded machine (each wait ends when its condition
/// holds).
const LONG: Duration = Duration::from_secs(30);

fn subnet_host(dir_port: u16, announce_port: u16) -> libtracer_core::link::QuicConfig {
    let mut c = loopback_quic(dir_port);
    c.static_peers.clear();
    let mut s = SubnetConfig::for_domain(9);
    s.port = announce_port;
    s.interval = Duration::from_millis(300);
    c.subnet = Some(s);
    c
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
    ra.wait_up("b", LONG);
    rb.wait_up("a", LONG);
    let b_host = vec![SocketAddr::from(([127, 0, 0, 1], pb))];
    assert!(eventually(LONG, || a.announced_hosts() == b_host).is_some());
    // Garbage on the announcement port while both run, 20 datagrams at a time, each batch
    // counted before the next is sent (a socket buffer's worth of tiny datagrams at once
    // would be dropped by the kernel, uncounted, on a busy machine).
    let mut sent = 0u64;
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
        sent += 1;
        if i % 20 == 19 {
            assert!(
                eventually(LONG, || a.announcements_rejected() >= sent).is_some(),
                "{sent} garbage datagrams sent, {} counted",
                a.announcements_rejected()
            );
        }
    }
    // Another domain's announcement is ignored (not reached, not counted); the garbage
    // datagram after it, counted, shows it was read (one socket reads in order).
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
    to_group(&sock, announce, &good[..3]);
    assert!(eventually(LONG, || a.announcements_rejected() == sent + 1).is_some());
    assert_eq!(a.announced_hosts(), b_host);
    assert_eq!(a.announcements_rejected(), sent + 1);
    assert!(a.peers() == vec!["b"]);
}

#[test]
fn a_host_found_by_announcement_is_found_again_through_its_new_holder() {
    let (dir_a, dir_b) = (TempDir::new("subnet-ta"), TempDir::new("subnet-tb"));
    let (pa, pb, announce) = (free_udp_port(), free_udp_port(), free_udp_port());
    let rec = || link_support::Recorder::new();
    let (ra, rb1, rb2, rb3) = (rec(), rec(), rec(), rec());
    // A transport of host a or b: its directory and its host's directory port.
    let start = |dir: &TempDir, port, name: &str, r: &Arc<link_support::Recorder>| {
        QuicTransport::start(dir.path(), name, r.clone(), subnet_host(port, announce)).unwrap()
    };
    let a = start(&dir_a, pa, "a", &ra);
    let b1 = start(&dir_b, pb, "b1", &rb1);
    let b2 = start(&dir_b, pb, "b2", &rb2);
    ra.wait_up("b1", LONG);
    ra.wait_up("b2", LONG);
    assert!(b1.holds_role());
    let b = vec![SocketAddr::from(([127, 0, 0, 1], pb))];
    assert!(eventually(LONG, || a.announced_hosts() == b).is_some());
    let gone = Instant::now();
    drop(b1);
    // b2 retries the role every 100 ms here; the bound is for a loaded machine.
    assert!(eventually(LONG, || b2.holds_role()).is_some());
    let took = gone.elapsed();
    // The host keeps its id: a still reaches one host, and a newcomer of host b is linked
    // through the new holder's directory.
    let _b3 = start(&dir_b, pb, "b3", &rb3);
    rb3.wait_up("a", LONG);
    assert!(eventually(LONG, || a.announced_hosts() == b).is_some());
    eprintln!("role taken over {took:?} after its holder went");
}

#[test]
fn announcement_decoding_survives_a_random_corpus() {
    let seed = |authenticated, host| {
        libtracer_core::link::quic::announce_bytes(&Announcement {
            domain: 3,
            directory_port: 24653,
            interval_ms: 3000,
            host,
            authenticated,
        })
        .to_vec()
    };
    let seeds = vec![seed(true, 0xfeed), seed(false, u64::MAX), Vec::new()];
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut accepted = 0usize;
    for i in 0..20_000 {
        accepted += usize::from(exercise_announce(&corpus::input(
            &mut rng,
            i,
            &seeds,
            64,
            corpus::FEW,
        )));
    }
    // Both outcomes were reached, so the corpus was not vacuous.
    assert!((1000..20_000).contains(&accepted), "{accepted}");
}
