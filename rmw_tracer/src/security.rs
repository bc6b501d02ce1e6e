//! SROS2 conventions for links to other hosts (docs/network.md section 5). rcl reads
//! `ROS_SECURITY_ENABLE`, `ROS_SECURITY_STRATEGY` and `ROS_SECURITY_KEYSTORE` and passes the
//! result in `rmw_init_options_t.security_options`: whether security is enforced, and the
//! enclave's directory (`<keystore>/enclaves/<enclave>`) when it found one. The enclave's
//! `cert.pem`, `key.pem` and `identity_ca.cert.pem` become the QUIC links' identity and trust.
//!
//! | security root | Enforce | Permissive (or not enabled) |
//! |---|---|---|
//! | none | `rmw_init` fails (rcl already refuses this) | unauthenticated, as without SROS2 |
//! | files load | authenticated | authenticated |
//! | files missing or bad | `rmw_init` fails, naming the file | a warning, then unauthenticated |
//!
//! On one host the Unix-socket links stay what they are (the peer's uid is the kernel's word,
//! and the libtracer ACL decides); certificates are for links to other hosts.

use std::path::Path;

use libtracer_core::link::QuicSecurity;
use libtracer_core::{Acl, Graph, Principal, Rights};

use crate::boundary::{RmwError, RmwResult};
use crate::log::log;

/// What rcl passed in the init options' security options.
#[derive(Clone, Debug, Default)]
pub struct SecurityOptions {
    pub enforce: bool,
    /// The enclave's directory, if rcl found one.
    pub root: Option<String>,
}

/// The files of an enclave directory that rmw_tracer reads.
pub const CERT: &str = "cert.pem";
pub const KEY: &str = "key.pem";
pub const IDENTITY_CA: &str = "identity_ca.cert.pem";

/// The QUIC identity for these options: `Ok(None)` = unauthenticated.
pub fn quic_security(o: &SecurityOptions) -> RmwResult<Option<QuicSecurity>> {
    let Some(root) = o.root.as_deref().filter(|r| !r.is_empty()) else {
        if o.enforce {
            return Err(RmwError::invalid(
                "security is enforced (ROS_SECURITY_STRATEGY=Enforce) but no enclave directory was given (ROS_SECURITY_KEYSTORE, enclave)",
            ));
        }
        return Ok(None);
    };
    let dir = Path::new(root);
    match QuicSecurity::from_pem_files(&dir.join(CERT), &dir.join(KEY), &dir.join(IDENTITY_CA)) {
        Ok(s) => Ok(Some(s)),
        Err(why) if o.enforce => Err(RmwError::invalid(format!(
            "security is enforced and the enclave's identity cannot be loaded: {why}"
        ))),
        Err(why) => {
            log!(
                RMW_LOG_SEVERITY_WARN,
                "security: enclave {root}: {why}; links to other hosts run unauthenticated (ROS_SECURITY_STRATEGY is not Enforce)"
            );
            Ok(None)
        }
    }
}

/// What a graph on another host may do here. Its requests reach the core's ACL as the
/// principal its QUIC link proved: the subject of its enclave certificate with SROS2, else an
/// anonymous peer; never as this process's owner. Which rights a remote ROS participant needs:
/// SUBSCRIBE to the registry (`/.ros/endpoints`) and to topics, WRITE to service request and
/// client response vertices, READ (the `sync_peers` barrier). The root's ACL grants them to
/// every peer the link layer let in: an authenticated one (any enclave of the keystore's CA)
/// with SROS2, an anonymous one without (turning the network on without SROS2 trusts the
/// network, docs/network.md section 5). No ADMIN or CREATE, and nothing for other local users.
pub fn grant_remote(g: &Graph, authenticated: bool) -> RmwResult<()> {
    let who = if authenticated {
        Principal::Authenticated
    } else {
        Principal::Anonymous
    };
    g.set_acl(
        "/",
        Acl::new().allow(who, Rights::READ | Rights::WRITE | Rights::SUBSCRIBE),
    )?;
    Ok(())
}
