#![cfg(feature = "quic")]
//! A process's QUIC transports (docs/network.md section 4a, stage 3) run on threads of a fixed
//! number: its links, its host directory (server and clients), its peer hosts, SUBNET and its
//! connect attempts run on the links' one event loop (`tracer-io`, the Unix links' too) and the
//! chores' thread, and its threads are as many with eight peers as with two. One test in its
//! own binary (its own process), so that no other test's threads are counted.

mod link_support;
#[path = "common/poll.rs"]
mod poll;

use std::collections::BTreeMap;
use std::time::Duration;

use libtracer_core::link::quic::SubnetConfig;
use libtracer_core::link::QuicTransport;
use link_support::{free_udp_port, loopback_quic, Recorder, TempDir, T};

/// This process's threads by name, counted.
fn threads() -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for t in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let Ok(name) = std::fs::read_to_string(t.path().join("comm")) else {
            continue;
        };
        *out.entry(name.trim().to_owned()).or_insert(0) += 1;
    }
    out
}

/// The CPU time (user and system, in clock ticks) of this process's threads named `name`.
fn cpu_ticks(name: &str) -> u64 {
    let mut ticks = 0;
    for t in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
        if comm.trim() != name {
            continue;
        }
        let stat = std::fs::read_to_string(t.path().join("stat")).unwrap_or_default();
        // After the command's closing parenthesis: state is field 3, utime 14, stime 15.
        let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
        let f: Vec<&str> = rest.split_whitespace().collect();
        ticks += f.get(11).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        ticks += f.get(12).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    }
    ticks
}

/// The threads of the network: the test harness's own are left out.
fn network_threads() -> BTreeMap<String, usize> {
    threads()
        .into_iter()
        .filter(|(n, _)| n.starts_with("tracer") || n.starts_with("tokio") || n.contains("quinn"))
        .collect()
}

#[test]
fn a_process_on_the_engine_starts_no_runtime_and_its_threads_do_not_grow_with_its_peers() {
    // Two hosts (two rendezvous directories, two directory ports), each the other's static
    // peer (by address and by name) and announcing itself with SUBNET (on loopback): every
    // link is found through the other host's directory.
    let (dir_a, dir_b) = (TempDir::new("quic-thr-a"), TempDir::new("quic-thr-b"));
    let (port_a, port_b, announce) = (free_udp_port(), free_udp_port(), free_udp_port());
    let cfg = |own: u16, other: u16| {
        let mut c = loopback_quic(own);
        c.static_peers = vec![format!("127.0.0.1:{other}"), format!("localhost:{other}")];
        let mut s = SubnetConfig::for_domain(9);
        s.port = announce;
        s.interval = Duration::from_millis(300);
        c.subnet = Some(s);
        c
    };
    let ra = Recorder::new();
    let _a0 = QuicTransport::start(dir_a.path(), "a0", ra.clone(), cfg(port_a, port_b)).unwrap();
    let b0 =
        QuicTransport::start(dir_b.path(), "b0", Recorder::new(), cfg(port_b, port_a)).unwrap();
    ra.wait_up("b0", T);
    let a_host = vec![std::net::SocketAddr::from(([127, 0, 0, 1], port_a))];
    assert!(
        poll::eventually(T, || b0.announced_hosts() == a_host).is_some(),
        "b0 heard no announcement of host a"
    );
    let two = network_threads();
    let mut more = Vec::new();
    for i in 1..4 {
        let (da, db) = (Recorder::new(), Recorder::new());
        more.push(
            QuicTransport::start(dir_a.path(), &format!("a{i}"), da, cfg(port_a, port_b)).unwrap(),
        );
        more.push(
            QuicTransport::start(dir_b.path(), &format!("b{i}"), db, cfg(port_b, port_a)).unwrap(),
        );
    }
    for i in 1..4 {
        ra.wait_up(&format!("b{i}"), T);
    }
    // Let the polls and the connect attempts run a few rounds.
    std::thread::sleep(Duration::from_millis(500));
    // Nothing spins: over a second of eight transports polling each other's directories every
    // 100 ms and announcing every 300 ms, the chores' thread works a small part of it (a
    // spinning thread would take the whole second: 100 ticks).
    let before = cpu_ticks("tracer-quic-net");
    std::thread::sleep(Duration::from_secs(1));
    let used = cpu_ticks("tracer-quic-net") - before;
    eprintln!("the chores' thread used {used} ticks of 10 ms in 1 s");
    assert!(
        used < 30,
        "the chores' thread used {used} of 100 ticks in a quiet second"
    );
    let eight = network_threads();
    eprintln!("threads with two peers: {two:?}; with eight: {eight:?}");
    assert_eq!(two, eight, "the network's threads grew with its peers");
    // One event loop for every link: the engines' sockets and timers are on the links' loop,
    // which has no QUIC twin (docs/network.md section 4a, stage 3).
    assert_eq!(eight.get("tracer-io"), Some(&1), "{eight:?}");
    assert!(!eight.contains_key("tracer-quic-io"), "{eight:?}");
    for name in eight.keys() {
        assert!(
            !name.starts_with("tokio")
                && name != "tracer-quic"
                && !name.starts_with("tracer-quic-cb"),
            "a thread of quinn's runtime: {name}"
        );
    }
}
