//! The `ros2` profile's channel and schema conventions, as ROS-free text builders: the
//! `offered_qos_profiles` metadata in the YAML form Jazzy's `ros2 bag` writes (policy names as
//! strings, durations as sec/nsec), and `ros2msg` schema text with its dependencies.

use std::collections::BTreeMap;
use std::fmt::Write;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum History {
    SystemDefault,
    KeepLast,
    KeepAll,
    Unknown,
}
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reliability {
    SystemDefault,
    Reliable,
    BestEffort,
    Unknown,
    BestAvailable,
}
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    SystemDefault,
    TransientLocal,
    Volatile,
    Unknown,
    BestAvailable,
}
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Liveliness {
    SystemDefault,
    Automatic,
    ManualByTopic,
    Unknown,
    BestAvailable,
}

/// A QoS duration; `INFINITE` is rmw's "infinite" as ros2 bag writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QosDuration {
    pub sec: u64,
    pub nsec: u64,
}

impl QosDuration {
    pub const INFINITE: QosDuration = QosDuration {
        sec: 9_223_372_036,
        nsec: 854_775_807,
    };
    pub const ZERO: QosDuration = QosDuration { sec: 0, nsec: 0 };
}

/// One offered QoS profile (a publisher's), as recorded for replay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OfferedQos {
    pub history: History,
    pub depth: u64,
    pub reliability: Reliability,
    pub durability: Durability,
    pub deadline: QosDuration,
    pub lifespan: QosDuration,
    pub liveliness: Liveliness,
    pub liveliness_lease_duration: QosDuration,
    pub avoid_ros_namespace_conventions: bool,
}

impl Default for OfferedQos {
    /// rclcpp's default publisher profile: keep last 10, reliable, volatile.
    fn default() -> Self {
        OfferedQos {
            history: History::KeepLast,
            depth: 10,
            reliability: Reliability::Reliable,
            durability: Durability::Volatile,
            deadline: QosDuration::INFINITE,
            lifespan: QosDuration::INFINITE,
            liveliness: Liveliness::Automatic,
            liveliness_lease_duration: QosDuration::INFINITE,
            avoid_ros_namespace_conventions: false,
        }
    }
}

fn history(h: History) -> &'static str {
    match h {
        History::SystemDefault => "system_default",
        History::KeepLast => "keep_last",
        History::KeepAll => "keep_all",
        History::Unknown => "unknown",
    }
}
fn reliability(r: Reliability) -> &'static str {
    match r {
        Reliability::SystemDefault => "system_default",
        Reliability::Reliable => "reliable",
        Reliability::BestEffort => "best_effort",
        Reliability::Unknown => "unknown",
        Reliability::BestAvailable => "best_available",
    }
}
fn durability(d: Durability) -> &'static str {
    match d {
        Durability::SystemDefault => "system_default",
        Durability::TransientLocal => "transient_local",
        Durability::Volatile => "volatile",
        Durability::Unknown => "unknown",
        Durability::BestAvailable => "best_available",
    }
}
fn liveliness(l: Liveliness) -> &'static str {
    match l {
        Liveliness::SystemDefault => "system_default",
        Liveliness::Automatic => "automatic",
        Liveliness::ManualByTopic => "manual_by_topic",
        Liveliness::Unknown => "unknown",
        Liveliness::BestAvailable => "best_available",
    }
}

/// The `offered_qos_profiles` YAML list (empty list: `[]`).
pub fn offered_qos_profiles(profiles: &[OfferedQos]) -> String {
    if profiles.is_empty() {
        return "[]".into();
    }
    let mut s = String::new();
    let dur = |s: &mut String, k: &str, d: QosDuration| {
        let _ = write!(s, "\n  {k}:\n    sec: {}\n    nsec: {}", d.sec, d.nsec);
    };
    for (i, q) in profiles.iter().enumerate() {
        if i > 0 {
            s.push('\n');
        }
        let _ = write!(
            s,
            "- history: {}\n  depth: {}\n  reliability: {}\n  durability: {}",
            history(q.history),
            q.depth,
            reliability(q.reliability),
            durability(q.durability)
        );
        dur(&mut s, "deadline", q.deadline);
        dur(&mut s, "lifespan", q.lifespan);
        let _ = write!(s, "\n  liveliness: {}", liveliness(q.liveliness));
        dur(
            &mut s,
            "liveliness_lease_duration",
            q.liveliness_lease_duration,
        );
        let _ = write!(
            s,
            "\n  avoid_ros_namespace_conventions: {}",
            q.avoid_ros_namespace_conventions
        );
    }
    s
}

/// Channel metadata for the `ros2` profile: `offered_qos_profiles`.
pub fn channel_metadata(profiles: &[OfferedQos]) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    m.insert(
        "offered_qos_profiles".into(),
        offered_qos_profiles(profiles),
    );
    m
}

/// `ros2msg` schema data: the top-level `.msg` text, then each dependency after a line of 80
/// `=` and a `MSG: <pkg/msg/Type>` line (spec 1.9).
pub fn ros2msg_schema(top: &str, dependencies: &[(&str, &str)]) -> String {
    let mut s = top.trim_end_matches('\n').to_string();
    s.push('\n');
    for (name, text) in dependencies {
        s.push_str(&"=".repeat(80));
        let _ = write!(s, "\nMSG: {name}\n{}\n", text.trim_end_matches('\n'));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qos_yaml_in_jazzy_ros2_bag_form() {
        let y = offered_qos_profiles(&[OfferedQos {
            durability: Durability::TransientLocal,
            depth: 1,
            ..Default::default()
        }]);
        assert_eq!(
            y,
            "- history: keep_last\n  depth: 1\n  reliability: reliable\n  durability: transient_local\n  deadline:\n    sec: 9223372036\n    nsec: 854775807\n  lifespan:\n    sec: 9223372036\n    nsec: 854775807\n  liveliness: automatic\n  liveliness_lease_duration:\n    sec: 9223372036\n    nsec: 854775807\n  avoid_ros_namespace_conventions: false"
        );
        assert_eq!(offered_qos_profiles(&[]), "[]");
    }

    #[test]
    fn ros2msg_with_dependencies() {
        let s = ros2msg_schema(
            "std_msgs/Header header\nstring text\n",
            &[(
                "std_msgs/msg/Header",
                "builtin_interfaces/Time stamp\nstring frame_id",
            )],
        );
        let want = format!("std_msgs/Header header\nstring text\n{}\nMSG: std_msgs/msg/Header\nbuiltin_interfaces/Time stamp\nstring frame_id\n", "=".repeat(80));
        assert_eq!(s, want);
    }
}
