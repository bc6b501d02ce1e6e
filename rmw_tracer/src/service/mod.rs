//! Services and clients (R4) over the libtracer graph; `docs/rmw-mapping.md`, section Services.
//!
//! - A service server owns a stream vertex `/.ros/services<service path>/_request/<server gid>`
//!   (its inbox, [`endpoint::Endpoint`]): requests land in its ring, from this graph or
//!   forwarded from a peer, and its arrival hook calls the on-new-request callback.
//! - A client owns a stream vertex `/.ros/clients/<client gid>/_response`, likewise.
//! - A client's request is written to the request vertex of every server of the service the
//!   registry knows (a local write, or `/net/<peer>/...` for a server on a peer) with
//!   `Meta.writer` = the client gid and `Meta.sequence` = the request's sequence number.
//! - The server answers the sample's origin: a local write to the client's response vertex, or a
//!   forwarded write `/net/<origin>/.ros/clients/<client gid>/_response`. The path is derived from
//!   the gid in the request, so a server needs no registry entry of the client to answer.
//!
//! Why under `/.ros/` rather than at `<service name>/_request`: a write at a vertex is delivered
//! to the edges of every ancestor, so a subscription to a topic `/a` (or a recorder of `/`) would
//! receive, and across a link carry, every request of every service `/a/...`.

pub mod client;
pub mod endpoint;
pub mod server;

use crate::boundary::RmwResult;
use crate::gid::Gid;
use crate::names;

/// Where the requests of the service `name` served by `server` land.
pub fn request_path(name: &str, server: Gid) -> RmwResult<String> {
    // Permissive form: the same path for every valid ROS name, and a record from a peer that
    // used avoid_ros_namespace_conventions still maps.
    let p = names::topic_path(name, true)?;
    Ok(format!("/.ros/services{p}/_request/{}", server.hex()))
}

/// The bounds of a server's or a client's queue, whatever the QoS depth: every request and
/// every response is kept until taken, within the KEEP_ALL byte budget (issue 33). A dropped
/// request or response is a call that never returns in rclpy and rclcpp, and a requests'
/// writer is not held back by credit (requests are forwarded writes, not edge deliveries), so
/// the depth of the services' profile (10 by default) would drop the eleventh call a busy
/// server had not taken yet. docs/rmw-mapping.md, Services, says so.
pub fn inbox_ring() -> libtracer_core::StreamOptions {
    libtracer_core::StreamOptions {
        depth: 0,
        byte_budget: crate::qos::KEEP_ALL_BYTE_BUDGET,
    }
}

/// The actual QoS of a server or client: the requested profile resolved, and always VOLATILE,
/// since neither inbox replays anything to an endpoint that comes later (a request written before
/// a server existed never reaches it).
pub fn resolve_qos(req: &ffi::rmw_qos_profile_t) -> RmwResult<crate::qos::Qos> {
    let mut q = crate::qos::Qos::resolve(req, crate::qos::End::Subscription)?;
    q.profile.durability = ffi::RMW_QOS_POLICY_DURABILITY_VOLATILE;
    Ok(q)
}

/// Where the responses to the client `client` land.
pub fn response_path(client: Gid) -> String {
    format!("/.ros/clients/{}/_response", client.hex())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        let g = Gid([0xab; 16]);
        assert_eq!(
            request_path("/add_two_ints", g).unwrap(),
            format!("/.ros/services/add_two_ints/_request/{}", "ab".repeat(16))
        );
        assert_eq!(
            request_path("/net/x", g).unwrap(),
            format!("/.ros/services/.net/x/_request/{}", "ab".repeat(16))
        );
        assert_eq!(
            response_path(g),
            format!("/.ros/clients/{}/_response", "ab".repeat(16))
        );
        assert!(request_path("/a b", g).is_err());
    }
}
