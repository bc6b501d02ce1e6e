//! Unit tests of the recording's pieces that need no ROS process (the end-to-end checks are
//! `ros_tests/test_record.py`).

use super::session::Window;
use crate::gid::GidSource;
use crate::qos::Qos;
use crate::registry::{EntityKind, Record};
use tracer_recording::EndpointRecord;

/// Ruling (issue 4, item 3): a message several subscriptions of one process take is recorded
/// once; every new sequence number of a writer is recorded.
#[test]
fn window_records_each_sequence_once() {
    let mut w = Window::default();
    assert!((1..=100).all(|s| w.first_time(s)));
    assert!((1..=100).all(|s| !w.first_time(s)));
    // Out of order within the window.
    assert!(w.first_time(105));
    assert!(w.first_time(103));
    assert!(!w.first_time(103));
    assert!(w.first_time(101));
    // A jump larger than the window forgets the old bits, and older numbers count as seen.
    assert!(w.first_time(100 + 3 * Window::SPAN));
    assert!(!w.first_time(105));
    assert!(w.first_time(100 + 3 * Window::SPAN - 1));
}

/// `tracer record` reads the registry with `tracer_recording::EndpointRecord`; it must read
/// what rmw_tracer's encoder writes.
#[test]
fn endpoint_reader_reads_the_registry_encoder() {
    let src = GidSource::new();
    let mut r = Record::new(EntityKind::Publisher, src.next());
    r.node_gid = Some(src.next());
    r.node_name = "talker".into();
    r.node_namespace = "/".into();
    r.topic = "/chatter".into();
    r.type_name = "std_msgs/msg/String".into();
    r.type_hash = "RIHS01_abc".into();
    let q = Qos::system_default();
    r.qos = Some(q);
    let text = r.encode().unwrap();
    let e = EndpointRecord::decode(text.as_bytes()).unwrap();
    assert!(e.is_publisher() && !e.gone);
    assert_eq!(e.gid, r.gid.0);
    assert_eq!(e.topic, "/chatter");
    assert_eq!(e.type_name, "std_msgs/msg/String");
    assert_eq!(e.type_hash, "RIHS01_abc");
    let oq = e.qos.unwrap();
    assert_eq!(oq.depth, q.profile.depth as u64);
    assert_eq!(oq.reliability, tracer_mcap::ros2::Reliability::Reliable);
    assert_eq!(oq.durability, tracer_mcap::ros2::Durability::Volatile);
    let gone = Record::encode_gone(EntityKind::Publisher, r.gid);
    assert!(EndpointRecord::decode(gone.as_bytes()).unwrap().gone);
}
