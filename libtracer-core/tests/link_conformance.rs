//! Ruling 9 (links): one conformance suite for every `Link` implementation — the in-process
//! fabric, the Unix-socket host transport and the QUIC transport (its links on the
//! runtime-free engine) — checking the seam the graph builds on.

mod link_support;

use std::sync::Arc;

#[cfg(feature = "quic")]
use libtracer_core::link::QuicTransport;
use libtracer_core::link::{HostTransport, LinkError, LinkHandler, MemoryFabric, MemoryNode};
use libtracer_core::wire::{ErrorCode, Frame, ShmCaps, MAX_FRAME};
use libtracer_core::{Meta, Payload};
use link_support::{Ev, Recorder, TempDir, T};

trait Fabric {
    type Node;
    /// Whether the peer's pid is attested (same host); QUIC peers report 0.
    const ATTESTS_PID: bool = true;
    fn join(&self, name: &str, h: Arc<Recorder>) -> Self::Node;
    fn join_dyn(&self, name: &str, h: Arc<dyn LinkHandler>) -> Self::Node;
    fn raw(node: &Self::Node, peer: &str, bytes: &[u8]);
    fn peers(node: &Self::Node) -> Vec<String>;
}

struct Mem(MemoryFabric);
impl Fabric for Mem {
    type Node = MemoryNode;
    fn join(&self, name: &str, h: Arc<Recorder>) -> MemoryNode {
        self.0.join(name, h).expect("join")
    }
    fn join_dyn(&self, name: &str, h: Arc<dyn LinkHandler>) -> MemoryNode {
        self.0.join(name, h).expect("join")
    }
    fn raw(node: &MemoryNode, peer: &str, bytes: &[u8]) {
        node.link_to(peer)
            .expect("live link")
            .send_raw(bytes)
            .expect("raw send");
    }
    fn peers(node: &MemoryNode) -> Vec<String> {
        node.peers()
    }
}

struct Unix(TempDir);
impl Fabric for Unix {
    type Node = HostTransport;
    fn join(&self, name: &str, h: Arc<Recorder>) -> HostTransport {
        HostTransport::start(self.0.path(), name, h).expect("start")
    }
    fn join_dyn(&self, name: &str, h: Arc<dyn LinkHandler>) -> HostTransport {
        HostTransport::start(self.0.path(), name, h).expect("start")
    }
    fn raw(node: &HostTransport, peer: &str, bytes: &[u8]) {
        node.link_to(peer)
            .expect("live link")
            .send_raw(bytes)
            .expect("raw send");
    }
    fn peers(node: &HostTransport) -> Vec<String> {
        node.peers()
    }
}

/// QUIC nodes on loopback: each registers in one rendezvous directory, the first holds the
/// host role on a free port, and every node has that directory as its static peer.
#[cfg(feature = "quic")]
struct Quic {
    dir: TempDir,
    port: u16,
}
#[cfg(feature = "quic")]
impl Quic {
    fn new() -> Quic {
        Quic {
            dir: TempDir::new("quic-conf"),
            port: link_support::free_udp_port(),
        }
    }
}
#[cfg(feature = "quic")]
impl Fabric for Quic {
    type Node = QuicTransport;
    const ATTESTS_PID: bool = false;
    fn join(&self, name: &str, h: Arc<Recorder>) -> QuicTransport {
        self.join_dyn(name, h)
    }
    fn join_dyn(&self, name: &str, h: Arc<dyn LinkHandler>) -> QuicTransport {
        QuicTransport::start(
            self.dir.path(),
            name,
            h,
            link_support::loopback_quic(self.port),
        )
        .expect("start")
    }
    fn raw(node: &QuicTransport, peer: &str, bytes: &[u8]) {
        node.link_to(peer)
            .expect("live link")
            .send_raw(bytes)
            .expect("raw send");
    }
    fn peers(node: &QuicTransport) -> Vec<String> {
        node.peers()
    }
}

fn write(seq: u64, payload: Payload) -> Frame {
    Frame::Write {
        req: seq,
        path: "/t".into(),
        meta: Meta {
            sequence: seq,
            ..Meta::default()
        },
        payload,
    }
}

fn links_come_up_both_ways<F: Fabric>(f: F) {
    let (ra, rb) = (Recorder::new(), Recorder::new());
    let a = f.join("a", ra.clone());
    let b = f.join("b", rb.clone());
    let to_b = ra.wait_up("b", T);
    let to_a = rb.wait_up("a", T);
    assert_eq!(to_b.peer().name, "b");
    assert_eq!(to_a.peer().name, "a");
    // Same process: the identity is ours, whatever the transport says it from.
    if F::ATTESTS_PID {
        assert_eq!(to_b.peer().pid, std::process::id());
    }
    assert_eq!(to_b.peer().uid, nix::unistd::getuid().as_raw());
    assert_eq!(to_b.peer().gid, nix::unistd::getgid().as_raw());
    assert_eq!(F::peers(&a), vec!["b"]);
    assert_eq!(F::peers(&b), vec!["a"]);
    assert!(ra.violations().is_empty() && rb.violations().is_empty());
}

fn frames_arrive_in_order_and_intact<F: Fabric>(f: F) {
    let (ra, rb) = (Recorder::new(), Recorder::new());
    let _a = f.join("a", ra.clone());
    let _b = f.join("b", rb.clone());
    let to_b = ra.wait_up("b", T);
    let big: Payload = (0..(1usize << 20) + 5)
        .map(|i| (i * 7) as u8)
        .collect::<Vec<u8>>()
        .into();
    let mut sent = Vec::new();
    for i in 0..300u64 {
        let p = if i % 100 == 50 {
            big.clone()
        } else {
            Payload::from(vec![i as u8; (i % 70) as usize])
        };
        let fr = write(i, p);
        to_b.send(&fr).expect("send");
        sent.push(fr);
    }
    assert!(rb.wait_for(T, |e| e
        .iter()
        .filter(|e| matches!(e, Ev::Frame(..)))
        .count()
        == 300));
    assert_eq!(rb.frames_from("a"), sent);
    assert!(rb.violations().is_empty());
}

/// A flood of small frames, faster than the peer takes them, with frames too large to gather
/// among them (a Unix link gathers small frames while its peer is behind: wire.md section 5,
/// "Gathered writes"): every frame arrives, in order, whole, the last one with no send after it
/// to push it out; then a lone frame arrives on its own.
fn a_flood_of_small_frames_arrives_in_order_and_the_last_is_flushed<F: Fabric>(f: F) {
    let (ra, rb) = (Recorder::new(), Recorder::new());
    let _a = f.join("a", ra.clone());
    let _b = f.join("b", rb.clone());
    let to_b = ra.wait_up("b", T);
    let n = 5000u64;
    let mut sent = Vec::new();
    for i in 0..n {
        let len = if i % 500 == 250 {
            40_000
        } else {
            (i % 90) as usize
        };
        let fr = write(i, Payload::from(vec![i as u8; len]));
        to_b.send(&fr).expect("send");
        sent.push(fr);
    }
    let count = |e: &[Ev]| e.iter().filter(|e| matches!(e, Ev::Frame(..))).count();
    assert!(rb.wait_for(T, |e| count(e) == n as usize));
    std::thread::sleep(std::time::Duration::from_millis(50));
    let lone = write(n, Payload::from(vec![1u8; 64]));
    to_b.send(&lone).expect("send");
    sent.push(lone);
    assert!(rb.wait_for(T, |e| count(e) == n as usize + 1));
    assert_eq!(rb.frames_from("a"), sent);
    assert!(rb.violations().is_empty());
}

/// A transient-local replay (`send_owed`) and the live deliveries after it arrive on the edge
/// as one sequence, in order, whole, big ones too.
fn replayed_and_live_deliveries_arrive_in_order<F: Fabric>(f: F) {
    let (ra, rb) = (Recorder::new(), Recorder::new());
    let _a = f.join("a", ra.clone());
    let _b = f.join("b", rb.clone());
    let to_b = ra.wait_up("b", T);
    let to_a = rb.wait_up("a", T);
    // b's edge 1 on a: reliable, the middle class (a link of several streams learns it).
    to_a.send(&Frame::Subscribe {
        req: 1,
        source: "/t".into(),
        edge: 1,
        policy: libtracer_core::DeliveryPolicy::RELIABLE.bits(),
        tag: None,
        window: None,
    })
    .unwrap();
    assert!(ra.wait_for(T, |e| e
        .iter()
        .any(|e| matches!(e, Ev::Frame(_, Frame::Subscribe { edge: 1, .. })))));
    let mut sent = Vec::new();
    for seq in 1..=100u64 {
        let len = if seq % 25 == 0 { (1 << 20) + 3 } else { 40 };
        let fr = link_support::delivery(1, seq, len);
        if seq <= 60 {
            to_b.send_owed(&fr).expect("send_owed");
        } else {
            to_b.send(&fr).expect("send");
        }
        sent.push(fr);
    }
    assert!(rb.wait_for(T, |e| e
        .iter()
        .filter(|e| matches!(e, Ev::Frame(_, Frame::Delivery { .. })))
        .count()
        == 100));
    assert_eq!(rb.frames_from("a"), sent);
    assert!(ra.violations().is_empty() && rb.violations().is_empty());
}

fn send_from_inside_a_callback<F: Fabric>(f: F) {
    let (ra, rb) = (Recorder::new(), Recorder::echoing());
    let _a = f.join("a", ra.clone());
    let _b = f.join("b", rb.clone());
    let to_b = ra.wait_up("b", T);
    for i in 1..=50 {
        to_b.send(&write(i, vec![1, 2, 3].into())).unwrap();
    }
    assert!(ra.wait_for(T, |e| e
        .contains(&Ev::Frame("b".into(), Frame::Ok { req: 50 }))));
    let oks: Vec<Frame> = ra.frames_from("b");
    assert_eq!(
        oks,
        (1..=50).map(|req| Frame::Ok { req }).collect::<Vec<_>>()
    );
    assert!(rb.violations().is_empty());
}

fn link_frames_are_not_surfaced<F: Fabric>(f: F) {
    let (ra, rb) = (Recorder::new(), Recorder::new());
    let _a = f.join("a", ra.clone());
    let _b = f.join("b", rb.clone());
    let to_b = ra.wait_up("b", T);
    to_b.send(&Frame::Ping { nonce: 5 }).unwrap();
    to_b.send(&Frame::Pong { nonce: 6 }).unwrap();
    to_b.send(&Frame::Ok { req: 7 }).unwrap();
    // OK is the marker: frames are in order, so PING and PONG before it were not surfaced.
    assert!(rb.wait_for(T, |e| e
        .contains(&Ev::Frame("a".into(), Frame::Ok { req: 7 }))));
    assert_eq!(rb.frames_from("a"), vec![Frame::Ok { req: 7 }]);
    // b's PONG reply reached a and was not surfaced either.
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert!(ra.frames_from("b").is_empty());
}

fn close_brings_both_ends_down_once<F: Fabric>(f: F) {
    let (ra, rb) = (Recorder::new(), Recorder::new());
    let a = f.join("a", ra.clone());
    let _b = f.join("b", rb.clone());
    let to_b = ra.wait_up("b", T);
    rb.wait_up("a", T);
    to_b.close();
    to_b.close();
    assert!(ra.wait_down("b", T) && rb.wait_down("a", T));
    assert!(matches!(
        to_b.send(&Frame::Ok { req: 1 }),
        Err(LinkError::Closed(_))
    ));
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert_eq!(ra.count(&Ev::Down("b".into())), 1);
    assert_eq!(rb.count(&Ev::Down("a".into())), 1);
    assert!(F::peers(&a).is_empty());
    assert!(ra.violations().is_empty() && rb.violations().is_empty());
}

fn oversized_frame_is_refused_and_link_stays_up<F: Fabric>(f: F) {
    let (ra, rb) = (Recorder::new(), Recorder::new());
    let _a = f.join("a", ra.clone());
    let _b = f.join("b", rb.clone());
    let to_b = ra.wait_up("b", T);
    let huge = Payload::from(vec![0u8; MAX_FRAME as usize]);
    assert!(matches!(
        to_b.send(&write(1, huge)),
        Err(LinkError::Encode(_))
    ));
    to_b.send(&Frame::Ok { req: 2 }).unwrap();
    assert!(rb.wait_for(T, |e| e
        .contains(&Ev::Frame("a".into(), Frame::Ok { req: 2 }))));
    assert_eq!(rb.count(&Ev::Down("a".into())), 0);
}

/// A DELIVERY above the frame bound goes in parts and arrives as one, whole and in its place
/// among the small ones around it, on its edge and beside another edge (docs/wire.md,
/// "Messages of any size").
fn a_delivery_above_the_frame_bound_arrives_whole<F: Fabric>(f: F) {
    let (ra, rb) = (Recorder::new(), Recorder::new());
    let _a = f.join("a", ra.clone());
    let _b = f.join("b", rb.clone());
    let to_b = ra.wait_up("b", T);
    let delivery = |edge: u64, seq: u64, payload: Payload| Frame::Delivery {
        edge,
        meta: Meta {
            sequence: seq,
            ..Meta::default()
        },
        suffix: (seq == 1).then(|| "/image".to_string()),
        payload,
    };
    let n = MAX_FRAME as usize + (1 << 20) + 5;
    let big: Payload = (0..n)
        .map(|i| (i * 31 + i / 4099) as u8)
        .collect::<Vec<u8>>()
        .into();
    let sent = vec![
        delivery(7, 0, Payload::from(vec![1u8; 10])),
        delivery(7, 1, big),
        delivery(8, 2, Payload::from(vec![2u8; 10])),
        delivery(7, 3, Payload::from(vec![3u8; 10])),
    ];
    for fr in &sent {
        to_b.send(fr).expect("send");
    }
    assert!(rb.wait_for(T, |e| e
        .iter()
        .filter(|e| matches!(e, Ev::Frame(..)))
        .count()
        == sent.len()));
    assert_eq!(rb.frames_from("a"), sent);
    assert_eq!(rb.count(&Ev::Down("a".into())), 0);
    assert!(rb.violations().is_empty());
}

fn malformed_input_closes_only_that_link<F: Fabric>(f: F) {
    let (ra, rb, rc) = (Recorder::new(), Recorder::new(), Recorder::new());
    let _a = f.join("a", ra.clone());
    let _b = f.join("b", rb.clone());
    let c = f.join("c", rc.clone());
    ra.wait_up("b", T);
    ra.wait_up("c", T);
    rc.wait_up("a", T);
    // c sends a frame with an unknown mandatory TLV to a.
    F::raw(&c, "a", &[5, 0, 0, 0, 1, 0x0b, 0xf0, 0x00, 0x00]);
    assert!(rc.wait_down("a", T), "a closed the link to c");
    assert!(ra.wait_down("c", T));
    match rc.frames_from("a").as_slice() {
        [Frame::Error {
            req: 0,
            code: ErrorCode::Malformed,
            message,
        }] => assert!(!message.is_empty()),
        other => panic!("c got {other:?}"),
    }
    // A HELLO after the handshake is malformed too.
    F::raw(
        &c,
        "b",
        &libtracer_core::wire::encode(&Frame::Hello {
            version: 1,
            node: "c".into(),
            max_frame: 4096,
            shm: ShmCaps::NONE,
            permissions: None,
            directory: None,
        })
        .unwrap(),
    );
    assert!(rb.wait_down("c", T));
    // a and b go on.
    let to_b = ra.link("b").expect("a-b is still up");
    to_b.send(&Frame::Ok { req: 9 }).unwrap();
    assert!(rb.wait_for(T, |e| e
        .contains(&Ev::Frame("a".into(), Frame::Ok { req: 9 }))));
    assert!(ra.violations().is_empty() && rb.violations().is_empty() && rc.violations().is_empty());
}

fn three_nodes_link_pairwise_once<F: Fabric>(f: F) {
    let rs: Vec<Arc<Recorder>> = (0..3).map(|_| Recorder::new()).collect();
    let names = ["n0", "n1", "n2"];
    let nodes: Vec<F::Node> = names
        .iter()
        .zip(&rs)
        .map(|(n, r)| f.join(n, r.clone()))
        .collect();
    for (i, r) in rs.iter().enumerate() {
        for (j, n) in names.iter().enumerate() {
            if i != j {
                r.wait_up(n, T);
            }
        }
    }
    for (i, node) in nodes.iter().enumerate() {
        let want: Vec<String> = names
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != i)
            .map(|(_, n)| n.to_string())
            .collect();
        assert_eq!(F::peers(node), want);
        assert_eq!(
            rs[i].events().len(),
            2,
            "exactly one link per pair: {:?}",
            rs[i].events()
        );
    }
}

fn leaving_node_brings_links_down<F: Fabric>(f: F) {
    let (ra, rb, rc) = (Recorder::new(), Recorder::new(), Recorder::new());
    let a = f.join("a", ra.clone());
    let _b = f.join("b", rb.clone());
    let _c = f.join("c", rc.clone());
    rb.wait_up("a", T);
    rb.wait_up("c", T);
    rc.wait_up("a", T);
    drop(a);
    // Dropping waited for a's own on_down calls.
    assert!(
        ra.events().contains(&Ev::Down("b".into())) && ra.events().contains(&Ev::Down("c".into()))
    );
    assert!(rb.wait_down("a", T) && rc.wait_down("a", T));
    assert!(rb.link("c").is_some());
}

/// A handler that panics (a bug above the link) loses that link, cleanly: the link closes, its
/// `on_down` still runs, the peer sees it go, and the node's other links and its shutdown are
/// unaffected. Without this the reader thread would die with the link still registered: no
/// `on_down`, and a peer kept alive by our keepalive while nobody reads.
fn a_panicking_handler_loses_only_that_link<F: Fabric>(f: F) {
    let (ra, rc) = (Recorder::new(), Recorder::new());
    let rb = Recorder::panicking_on(Frame::Ok { req: 13 });
    let _a = f.join("a", ra.clone());
    let b = f.join_dyn("b", rb.clone());
    let _c = f.join("c", rc.clone());
    let to_b = ra.wait_up("b", T);
    rb.wait_up("a", T);
    rb.wait_up("c", T);
    to_b.send(&Frame::Ok { req: 13 }).unwrap();
    assert!(
        rb.wait_down("a", T),
        "b's on_down for a ran after the panic"
    );
    assert!(ra.wait_down("b", T), "a saw the link go");
    // b's link to c is untouched and still delivers (through b's handler, which still works).
    rc.link("b")
        .expect("c-b is up")
        .send(&Frame::Ok { req: 14 })
        .unwrap();
    assert!(rb.wait_for(T, |e| e
        .contains(&Ev::Frame("c".into(), Frame::Ok { req: 14 }))));
    assert!(!F::peers(&b).contains(&"a".to_owned()));
    assert!(ra.violations().is_empty() && rb.violations().is_empty() && rc.violations().is_empty());
    drop(b);
    assert!(rc.wait_down("b", T));
}

macro_rules! conformance {
    ($modname:ident, $make:expr) => {
        mod $modname {
            use super::*;
            #[test]
            fn ruling9_links_come_up_both_ways() {
                links_come_up_both_ways($make)
            }
            #[test]
            fn ruling9_frames_arrive_in_order_and_intact() {
                frames_arrive_in_order_and_intact($make)
            }
            #[test]
            fn a_flood_of_small_frames_arrives_in_order_and_the_last_is_flushed() {
                super::a_flood_of_small_frames_arrives_in_order_and_the_last_is_flushed($make)
            }
            #[test]
            fn owed_replay_then_live_deliveries_arrive_in_order() {
                replayed_and_live_deliveries_arrive_in_order($make)
            }
            #[test]
            fn ruling9_send_from_inside_a_callback() {
                send_from_inside_a_callback($make)
            }
            #[test]
            fn ruling9_ping_and_pong_stay_inside_the_link() {
                link_frames_are_not_surfaced($make)
            }
            #[test]
            fn ruling9_close_brings_both_ends_down_once() {
                close_brings_both_ends_down_once($make)
            }
            #[test]
            fn ruling8_oversized_frame_is_refused_and_link_stays_up() {
                oversized_frame_is_refused_and_link_stays_up($make)
            }
            #[test]
            fn a_delivery_above_the_frame_bound_arrives_whole() {
                super::a_delivery_above_the_frame_bound_arrives_whole($make)
            }
            #[test]
            fn ruling8_malformed_input_closes_only_that_link() {
                malformed_input_closes_only_that_link($make)
            }
            #[test]
            fn ruling9_three_nodes_link_pairwise_once() {
                three_nodes_link_pairwise_once($make)
            }
            #[test]
            fn ruling9_a_panicking_handler_loses_only_that_link() {
                a_panicking_handler_loses_only_that_link($make)
            }
            #[test]
            fn ruling9_leaving_node_brings_links_down() {
                leaving_node_brings_links_down($make)
            }
        }
    };
}

conformance!(memory, Mem(MemoryFabric::new()));
conformance!(unix, Unix(TempDir::new("conf")));
#[cfg(feature = "quic")]
conformance!(quic, Quic::new());
