//! The graph a context joins, from the environment variables rmw_tracer reads (README, "Using
//! it"; docs/network.md section 2): `ROS_DOMAIN_ID`, `ROS_AUTOMATIC_DISCOVERY_RANGE`,
//! `ROS_STATIC_PEERS`, `RMW_TRACER_RENDEZVOUS_DIR`, `RMW_TRACER_HOST_USERS`, `RMW_TRACER_PORT_BASE`,
//! `RMW_TRACER_BIND`.
//! The rules are rmw_tracer's own, read by the same code (`tracer_recording::network`), so a
//! context joins the graph an rmw_tracer node given the same environment joins, on this host
//! and on others.
//!
//! SROS2 (`ROS_SECURITY_ENABLE`) is read by rmw_tracer's `security.rs`, which is not ROS-free
//! yet: a context asked for it is refused with `TRACER_ERR_UNSUPPORTED` rather than joining
//! other hosts unauthenticated (docs/capi.md, "Not yet").

use libtracer_core::link::quic::NetLog;
use libtracer_core::GraphConfig;
use tracer_recording::network::{self, EnvError};

use crate::error::{CapiError, CapiResult};

fn var(name: &str) -> Option<String> {
    std::env::var(name)
        .ok()
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
}

/// A setting of the environment, reported as the C API reports it.
fn env_error(e: EnvError) -> CapiError {
    if e.is_invalid_value() {
        CapiError::invalid(e.to_string())
    } else {
        CapiError::internal(e.to_string())
    }
}

/// The domain: `requested` when it is not negative, else `ROS_DOMAIN_ID`, else 0.
pub fn domain_id(requested: i32) -> CapiResult<u32> {
    match u32::try_from(requested) {
        Ok(d) => Ok(d),
        Err(_) => network::domain_from_env().map_err(env_error),
    }
}

/// The graph of a context on `domain_id`: discovery, rendezvous directory and network as
/// rmw_tracer's (`tracer_recording::network::graph_config`); the network's warnings go to
/// stderr.
pub fn graph_config(domain_id: u32) -> CapiResult<GraphConfig> {
    if var("ROS_SECURITY_ENABLE").as_deref() == Some("true") {
        return Err(CapiError::Unsupported("ROS_SECURITY_ENABLE=true (SROS2)"));
    }
    let log: NetLog = std::sync::Arc::new(|m: &str| eprintln!("[libtracer] {m}"));
    network::graph_config(domain_id, Some(log)).map_err(env_error)
}

/// The vertex path of a ROS topic name (rmw_tracer's mapping: `/net/..` lives at `/.net/..`).
pub fn topic_path(topic: &str) -> CapiResult<String> {
    if !topic.starts_with('/') || topic.len() > 1 && topic.ends_with('/') {
        return Err(CapiError::invalid(format!(
            "topic `{topic}` is not a fully qualified name (it starts with `/` and does not end with one)"
        )));
    }
    let path = if topic == "/net" || topic.starts_with("/net/") {
        format!("/.{}", &topic[1..])
    } else {
        topic.to_owned()
    };
    libtracer_core::Path::parse(&path)
        .map_err(|e| CapiError::invalid(format!("topic `{topic}`: {e}")))?;
    Ok(path)
}

/// The ROS topic name of a vertex path (`None` for libtracer's own `/.`-paths).
pub fn path_topic(path: &str) -> Option<String> {
    if let Some(rest) = path.strip_prefix("/.net") {
        if rest.is_empty() || rest.starts_with('/') {
            return Some(format!("/net{rest}"));
        }
    }
    (!path.starts_with("/.")).then(|| path.to_owned())
}
