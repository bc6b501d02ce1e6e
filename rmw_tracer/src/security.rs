//! SROS2 (docs/network.md section 5): the rules are `tracer_recording::security`, shared with
//! the C API; here they get rcl's options, the rmw log and rmw's return codes
//! (`boundary::error` maps `SecurityError`).

use std::sync::Arc;

use libtracer_core::link::quic::NetLog;
use libtracer_core::link::HostUsers;
use libtracer_core::Graph;
use tracer_recording::security;
pub use tracer_recording::security::{
    dds_topic, Access, Action, Secure, SecurityOptions, ServiceTopics, WriterCheck,
};

use crate::boundary::RmwResult;

/// What security is on for rcl's options (`security::load`); warnings go to the rmw log.
pub fn load(o: &SecurityOptions, domain: u32) -> RmwResult<Option<Secure>> {
    let log: NetLog = Arc::new(|m: &str| {
        crate::log::log!(RMW_LOG_SEVERITY_WARN, "{m}");
    });
    Ok(security::load(o, domain, log)?)
}

/// What a graph on another host, or of another user of this host, may do here
/// (`security::grant_peers`).
pub fn grant_peers(
    g: &Graph,
    access: Option<&Arc<Access>>,
    networked: bool,
    users: HostUsers,
) -> RmwResult<()> {
    Ok(security::grant_peers(g, access, networked, users)?)
}
