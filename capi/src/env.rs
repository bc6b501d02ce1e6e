//! The graph a context joins, from the environment variables rmw_tracer reads (README, "Using
//! it"): `ROS_DOMAIN_ID`, `ROS_AUTOMATIC_DISCOVERY_RANGE`, `RMW_TRACER_RENDEZVOUS_DIR`.
//!
//! The network (`ROS_STATIC_PEERS`, `ROS_AUTOMATIC_DISCOVERY_RANGE=SUBNET`) and SROS2
//! (`ROS_SECURITY_ENABLE`) are read by rmw_tracer's `context.rs` and `security.rs`, which are
//! not ROS-free yet: a context asked for either is refused with `TRACER_ERR_UNSUPPORTED`
//! rather than silently staying on this host (docs/capi.md, "Not yet").

use std::os::unix::fs::DirBuilderExt;
use std::path::PathBuf;

use libtracer_core::{Discovery, GraphConfig};

use crate::error::{CapiError, CapiResult};

fn var(name: &str) -> Option<String> {
    std::env::var(name)
        .ok()
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
}

/// The domain: `requested` when it is not negative, else `ROS_DOMAIN_ID`, else 0.
pub fn domain_id(requested: i32) -> CapiResult<u32> {
    if let Ok(d) = u32::try_from(requested) {
        return Ok(d);
    }
    match var("ROS_DOMAIN_ID") {
        Some(v) => v
            .parse::<u32>()
            .map_err(|_| CapiError::invalid(format!("ROS_DOMAIN_ID `{v}` is not a number"))),
        None => Ok(0),
    }
}

/// The graph of a context on `domain_id`.
pub fn graph_config(domain_id: u32) -> CapiResult<GraphConfig> {
    let range = var("ROS_AUTOMATIC_DISCOVERY_RANGE");
    let discovery = match range.as_deref() {
        Some("OFF") => Discovery::Off,
        Some("SUBNET") => {
            return Err(CapiError::Unsupported(
                "ROS_AUTOMATIC_DISCOVERY_RANGE=SUBNET",
            ))
        }
        _ => Discovery::Host,
    };
    if discovery != Discovery::Off && var("ROS_STATIC_PEERS").is_some() {
        return Err(CapiError::Unsupported("ROS_STATIC_PEERS (other hosts)"));
    }
    if var("ROS_SECURITY_ENABLE").as_deref() == Some("true") {
        return Err(CapiError::Unsupported("ROS_SECURITY_ENABLE=true (SROS2)"));
    }
    let rendezvous_dir =
        match std::env::var_os("RMW_TRACER_RENDEZVOUS_DIR").filter(|v| !v.is_empty()) {
            Some(base) => {
                // Made (0700) when missing, as rmw_tracer does, so either may start first.
                let base = PathBuf::from(base);
                std::fs::DirBuilder::new()
                    .recursive(true)
                    .mode(0o700)
                    .create(&base)
                    .map_err(|e| {
                        CapiError::internal(format!(
                            "RMW_TRACER_RENDEZVOUS_DIR={}: cannot make it: {e}",
                            base.display()
                        ))
                    })?;
                Some(libtracer_core::link::rendezvous_dir_in(&base, domain_id))
            }
            None => None,
        };
    Ok(GraphConfig {
        name: None,
        domain_id,
        discovery,
        rendezvous_dir,
        network: None,
    })
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
