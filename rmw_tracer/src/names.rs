//! ROS names and libtracer paths.
//!
//! A ROS topic `T` is the vertex at path `T`. ROS names cannot contain `.`, so every path whose
//! first segment starts with `.` is rmw_tracer's own (`/.ros/...`), and a topic whose first
//! segment is `net` (which libtracer reserves for peer mounts) becomes `/.net/...`.

use crate::boundary::clib;
use crate::boundary::{RmwError, RmwResult};

/// The vertex path of the topic `topic`. With `avoid_ros_namespace_conventions` the name is
/// not checked against ROS's rules (a missing leading `/` is added), but must still be a valid
/// path and must not reach into rmw_tracer's own `/.`-prefixed namespace.
pub fn topic_path(topic: &str, avoid_ros_namespace_conventions: bool) -> RmwResult<String> {
    let full = if avoid_ros_namespace_conventions {
        if topic.starts_with('/') {
            topic.to_owned()
        } else {
            format!("/{topic}")
        }
    } else {
        clib::validate_full_topic_name(topic)?;
        topic.to_owned()
    };
    let mut segments = full[1..].split('/');
    let first = segments.next().unwrap_or("");
    if first.starts_with('.') {
        return Err(RmwError::invalid(format!(
            "topic name `{topic}` starts with `.`, which rmw_tracer reserves for its own vertices"
        )));
    }
    for seg in full[1..].split('/') {
        if seg.is_empty() || !seg.bytes().all(segment_byte) {
            return Err(RmwError::invalid(format!(
                "topic name `{topic}` has a segment `{seg}` that is not a libtracer path segment \
                 ([A-Za-z0-9_.~-]+)"
            )));
        }
    }
    Ok(if first == "net" {
        format!("/.{}", &full[1..])
    } else {
        full
    })
}

/// The ROS topic name of a topic vertex path (the inverse of [`topic_path`]).
#[allow(dead_code)] // for the graph queries (R3), which list topics from vertex paths
pub fn path_topic(path: &str) -> String {
    match path.strip_prefix("/.net") {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => format!("/net{rest}"),
        _ => path.to_owned(),
    }
}

fn segment_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'~' | b'-')
}

/// `/net/<peer><path>`: the same vertex on a peer.
pub fn on_peer(peer: &str, path: &str) -> String {
    format!("/net/{peer}{path}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topics_map_to_paths() {
        assert_eq!(topic_path("/chatter", false).unwrap(), "/chatter");
        assert_eq!(topic_path("/ns/a/b", false).unwrap(), "/ns/a/b");
        assert_eq!(topic_path("/net/x", false).unwrap(), "/.net/x");
        assert_eq!(topic_path("/network", false).unwrap(), "/network");
        assert_eq!(path_topic("/.net/x"), "/net/x");
        assert_eq!(path_topic("/.network"), "/.network");
        assert_eq!(path_topic("/chatter"), "/chatter");
        assert!(topic_path("chatter", false).is_err());
        assert!(topic_path("/a//b", false).is_err());
        assert_eq!(topic_path("rt/chatter", true).unwrap(), "/rt/chatter");
        assert!(topic_path("/.ros/endpoints", true).is_err());
        assert!(topic_path("/a b", true).is_err());
    }
}
