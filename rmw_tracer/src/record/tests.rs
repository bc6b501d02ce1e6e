//! Unit tests of rmw_tracer's side of the recording that need no ROS process (the end-to-end checks are
//! `ros_tests/test_record.py`).

use crate::gid::GidSource;
use crate::qos::Qos;
use crate::registry::{EntityKind, Record};
use tracer_recording::{decode, Announcement};

/// rmw_tracer and `tracer record` share one codec of the registry record
/// (`tracer_recording::endpoint`): a record made the way a node makes it, from a resolved rmw
/// profile, decodes to the same record and to the offered QoS the recorder writes.
#[test]
fn registry_records_decode_to_what_the_recorder_needs() {
    let src = GidSource::new();
    let mut r = Record::new(EntityKind::Publisher, src.next());
    r.node_gid = Some(src.next());
    r.node_name = "talker".into();
    r.node_namespace = "/".into();
    r.topic = "/chatter".into();
    r.type_name = "std_msgs/msg/String".into();
    r.type_hash = "RIHS01_abc".into();
    let q = Qos::system_default();
    r.qos = Some(q.numbers());
    let text = r.encode().unwrap();
    let Some(Announcement::Present(e)) = decode(text.as_bytes()) else {
        panic!("not decoded: {text}");
    };
    assert_eq!(*e, r);
    assert_eq!(
        Qos::from_numbers(e.qos.unwrap()).profile.depth,
        q.profile.depth
    );
    let oq = e.qos.unwrap().offered();
    assert_eq!(oq.depth, q.profile.depth as u64);
    assert_eq!(oq.history, tracer_mcap::ros2::History::KeepLast);
    assert_eq!(oq.reliability, tracer_mcap::ros2::Reliability::Reliable);
    assert_eq!(oq.durability, tracer_mcap::ros2::Durability::Volatile);
    let gone = Record::encode_gone(EntityKind::Publisher, r.gid);
    assert_eq!(decode(gone.as_bytes()), Some(Announcement::Gone(r.gid)));
}
