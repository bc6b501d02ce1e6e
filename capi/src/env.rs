//! The graph a context joins, from the environment variables rmw_tracer reads (README, "Using
//! it"; docs/network.md section 2): `ROS_DOMAIN_ID`, `ROS_AUTOMATIC_DISCOVERY_RANGE`,
//! `ROS_STATIC_PEERS`, `RMW_TRACER_RENDEZVOUS_DIR`, `RMW_TRACER_HOST_USERS`, `RMW_TRACER_PORT_BASE`,
//! `RMW_TRACER_BIND`.
//! The rules are rmw_tracer's own, read by the same code (`tracer_recording::network`), so a
//! context joins the graph an rmw_tracer node given the same environment joins, on this host
//! and on others.
//!
//! SROS2 (`ROS_SECURITY_ENABLE`, `ROS_SECURITY_STRATEGY`, `ROS_SECURITY_KEYSTORE`,
//! `ROS_SECURITY_ENCLAVE_OVERRIDE`) is read with rcl's rules and enforced by rmw_tracer's own
//! code (`tracer_recording::security`): a context runs as the enclave the override names, else
//! rcl's default `/` (docs/capi.md, "Security").

use std::sync::Arc;

use libtracer_core::link::quic::NetLog;
use libtracer_core::GraphConfig;
use tracer_recording::network::{self, EnvError};
use tracer_recording::record;
use tracer_recording::security::{self, Secure, SecurityOptions, DEFAULT_ENCLAVE};

use crate::error::{CapiError, CapiResult};

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

/// Where the library's warnings go (the network's, security's): stderr, each line marked.
pub fn log() -> NetLog {
    Arc::new(|m: &str| eprintln!("[libtracer] {m}"))
}

/// What the recording (`RMW_TRACER_RECORD`) reports to, and its process-exit hook.
pub static RECORD_HOST: record::Host = record::Host {
    log: |_, m| eprintln!("[libtracer] {m}"),
    at_exit: tracer_boundary::atexit::register,
};

/// The graph of a context on `domain_id`: discovery, rendezvous directory and network as
/// rmw_tracer's (`tracer_recording::network::graph_config`), and SROS2 as rcl and rmw_tracer
/// would set it up from the same environment: the links' identity and the permissions sent to
/// peers; what this enclave may do is the answer's second part.
pub fn graph_config(domain_id: u32) -> CapiResult<(GraphConfig, Option<Secure>)> {
    let log = log();
    let options = SecurityOptions::from_env(DEFAULT_ENCLAVE, Some(&log))?;
    let secure = security::load(&options, domain_id, log.clone())?;
    let mut cfg = network::graph_config(domain_id, Some(log)).map_err(env_error)?;
    if let (Some(n), Some(s)) = (cfg.network.as_mut(), secure.as_ref()) {
        n.security = Some(s.quic.clone());
        n.permissions = Some(s.exchange());
    }
    Ok((cfg, secure))
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
