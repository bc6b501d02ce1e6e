//! SROS2 (docs/network.md section 5). rcl reads `ROS_SECURITY_ENABLE`,
//! `ROS_SECURITY_STRATEGY` and `ROS_SECURITY_KEYSTORE` and passes the result in
//! `rmw_init_options_t.security_options`: whether security is enforced, and the enclave's
//! directory (`<keystore>/enclaves/<enclave>`) when it found one. The enclave's `cert.pem`,
//! `key.pem` and `identity_ca.cert.pem` become the QUIC links' identity and trust; its
//! `governance.p7s` and `permissions.p7s` (verified against `permissions_ca.cert.pem`) and the
//! permissions of the keystore's other enclaves become the checks on what this process creates
//! and the ACLs on what peers may use.
//!
//! | security root | Enforce | Permissive (or not enabled) |
//! |---|---|---|
//! | none | `rmw_init` fails (rcl already refuses this) | no security, as without SROS2 |
//! | files load | authenticated, permissions enforced | authenticated, permissions enforced |
//! | files missing or bad | `rmw_init` fails, naming the file | a warning, then no security |
//!
//! On one host the Unix-socket links stay what they are (the peer's uid is the kernel's word);
//! this process's own permissions apply whatever the range.

use std::path::Path;
use std::sync::Arc;

use libtracer_core::link::QuicSecurity;
use libtracer_core::{Acl, Graph, Principal, Rights, Subject};
pub use tracer_sros2::Action;

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

/// What security is on for these options: `Ok(None)` = none (unauthenticated links, no
/// permission checks).
///
/// SROS2's strategies: with a security root, every file of the enclave (`cert.pem`, `key.pem`,
/// `identity_ca.cert.pem`, `permissions_ca.cert.pem`, `governance.p7s`, `permissions.p7s`)
/// must be there, verified and valid; then authentication and access control are on under
/// both strategies. When one is not, Enforce fails `rmw_init` naming the file, Permissive warns
/// and runs without security (what Fast DDS's rmw does with an incomplete enclave).
pub fn load(o: &SecurityOptions, domain: u32) -> RmwResult<Option<Secure>> {
    let Some(root) = o.root.as_deref().filter(|r| !r.is_empty()) else {
        if o.enforce {
            return Err(RmwError::invalid(
                "security is enforced (ROS_SECURITY_STRATEGY=Enforce) but no enclave directory was given (ROS_SECURITY_KEYSTORE, enclave)",
            ));
        }
        return Ok(None);
    };
    let dir = Path::new(root);
    let loaded =
        QuicSecurity::from_pem_files(&dir.join(CERT), &dir.join(KEY), &dir.join(IDENTITY_CA))
            .and_then(|q| {
                tracer_sros2::keystore::load(dir, domain)
                    .map(|a| (q, a))
                    .map_err(|e| e.to_string())
            });
    match loaded {
        Ok((quic, access)) => {
            for s in &access.skipped {
                log!(RMW_LOG_SEVERITY_WARN, "security: skipped {s}");
            }
            Ok(Some(Secure {
                quic,
                access: Arc::new(Access {
                    domain,
                    loaded: access,
                }),
            }))
        }
        Err(why) if o.enforce => Err(RmwError::invalid(format!(
            "security is enforced and the enclave cannot be loaded: {why}"
        ))),
        Err(why) => {
            log!(
                RMW_LOG_SEVERITY_WARN,
                "security: enclave {root}: {why}; running without security (ROS_SECURITY_STRATEGY is not Enforce)"
            );
            Ok(None)
        }
    }
}

/// An enclave's loaded security: its QUIC identity and what its permissions allow.
#[derive(Clone)]
pub struct Secure {
    pub quic: QuicSecurity,
    pub access: Arc<Access>,
}

/// The governance and permissions this process enforces (docs/network.md section 5): its own
/// grant on what it creates, and the grants of the keystore's enclaves on what their processes
/// may do here, as ACL entries naming their certificate subjects.
pub struct Access {
    domain: u32,
    loaded: tracer_sros2::keystore::Loaded,
}

/// The DDS topic name of a ROS topic (`/chatter` -> `rt/chatter`; services `rq/...Request`,
/// `rr/...Reply`), as SROS2 permissions name them.
pub fn dds_topic(prefix: &str, name: &str, suffix: &str) -> String {
    format!("{prefix}{name}{suffix}")
}

impl Access {
    fn allows(&self, grant: &tracer_sros2::Grant, action: Action, topic: &str) -> bool {
        let read = action == Action::Subscribe;
        !self.loaded.domain.controlled(topic, read) || grant.decide(self.domain, action, topic)
    }

    /// May this enclave `action` the DDS `topic`? The error is what `rmw_create_*` fails with
    /// (as Fast DDS's `rmw_create_publisher` fails when the DataWriter is refused).
    pub fn check_own(&self, action: Action, topic: &str) -> RmwResult<()> {
        if self.allows(&self.loaded.own, action, topic) {
            return Ok(());
        }
        Err(RmwError::failed(format!(
            "security: permission denied: enclave {} may not {} {topic} (its permissions.p7s, domain {})",
            self.loaded.subject,
            action.name(),
            self.domain
        )))
    }

    /// May the process on another host whose link authenticated `subject` `action` the DDS
    /// `topic`, by its grant in this keystore? (Not controlled by the governance: anyone
    /// authenticated may; a subject with no grant here: no.) What a DDS DataReader checks of a
    /// remote DataWriter before it takes the writer's data.
    pub fn peer_may(&self, subject: &str, action: Action, topic: &str) -> bool {
        let read = action == Action::Subscribe;
        if !self.loaded.domain.controlled(topic, read) {
            return true;
        }
        self.loaded.peers.iter().any(|g| {
            subject_text(&g.subject_name) == subject && g.decide(self.domain, action, topic)
        })
    }

    /// Whether the governance lets a peer with no grant for this domain in (no join access
    /// control).
    fn open_join(&self) -> bool {
        !self.loaded.domain.enable_join_access_control
    }

    /// The ACL of a vertex that remote peers may use with `right` when their grant allows
    /// `action` on `topic`: one allow entry per such subject (or every authenticated peer,
    /// when the governance does not control the topic).
    pub fn acl_for(&self, action: Action, topic: &str, right: Rights) -> Acl {
        let read = action == Action::Subscribe;
        if !self.loaded.domain.controlled(topic, read) {
            return Acl::new().allow(Principal::Authenticated, right);
        }
        let mut acl = Acl::new();
        for g in &self.loaded.peers {
            if g.decide(self.domain, action, topic) {
                acl = acl.allow(
                    Principal::Subject(subject_text(&g.subject_name).into()),
                    right,
                );
            }
        }
        acl
    }

    /// The registry's ACL: who may join (see the endpoints of this process).
    pub fn registry_acl(&self) -> Acl {
        let right = Rights::SUBSCRIBE | Rights::READ;
        if self.open_join() {
            return Acl::new().allow(Principal::Authenticated, right);
        }
        let mut acl = Acl::new();
        for g in &self.loaded.peers {
            if g.covers_domain(self.domain) {
                acl = acl.allow(
                    Principal::Subject(subject_text(&g.subject_name).into()),
                    right,
                );
            }
        }
        acl
    }
}

/// Which peers a subscription takes a topic's data from (SROS2: the writer's publish permission),
/// checked before the registry wires the subscription to a peer's publishers.
pub struct WriterCheck {
    pub access: Arc<Access>,
    /// The DDS topic (`rt/<name>`).
    pub dds: String,
}

impl WriterCheck {
    /// Why the publishers of the peer whose link proved `subject` may not feed this subscription
    /// (`None`: they may). A peer of this host (`None`) is the kernel's and the local ACL's.
    pub fn refuses(&self, subject: Option<&Subject>) -> Option<String> {
        match subject? {
            Subject::Authenticated(s) if self.access.peer_may(s, Action::Publish, &self.dds) => {
                None
            }
            Subject::Authenticated(s) => Some(format!(
                "its enclave {s} may not publish {} (its permissions.p7s in our keystore, domain {})",
                self.dds, self.access.domain
            )),
            Subject::Anonymous => Some("it is not authenticated".to_owned()),
        }
    }
}

/// A grant's subject name as the core names a certificate subject (RFC 4514, no spaces around
/// `=` and `,`): `CN = /a` -> `CN=/a`. Grants written in the other order (`O=x,CN=y`) are not
/// reordered here: write them as the certificate's subject prints (docs/network.md section 5).
fn subject_text(name: &str) -> String {
    name.split(',')
        .map(|a| match a.split_once('=') {
            Some((k, v)) => format!("{}={}", k.trim().to_ascii_uppercase(), v.trim()),
            None => a.trim().to_owned(),
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// What a graph on another host may do here. Its requests reach the core's ACL as the
/// principal its QUIC link proved: the subject of its enclave certificate with SROS2, else an
/// anonymous peer; never as this process's owner. Which rights a remote ROS participant needs:
/// SUBSCRIBE to the registry (`/.ros/endpoints`) and to topics, WRITE to service request and
/// client response vertices, READ (the `sync_peers` barrier). Without SROS2 the root's ACL
/// grants them to the anonymous principal (turning the network on without SROS2 trusts the
/// network, docs/network.md section 5). With SROS2 each vertex a peer may use gets its own ACL
/// naming the certificate subjects whose permissions allow it: the registry here (who may
/// join), topics and services as they are made (`Shared::guard`). No ADMIN or CREATE, and
/// nothing for other local users.
pub fn grant_remote(g: &Graph, access: Option<&Access>) -> RmwResult<()> {
    match access {
        // With SROS2 each vertex a peer may use carries its own ACL, from the permissions:
        // the registry here, topics and services as they are made (`Shared::protect`).
        Some(a) => g.set_acl("/.ros/endpoints", a.registry_acl())?,
        None => g.set_acl(
            "/",
            Acl::new().allow(
                Principal::Anonymous,
                Rights::READ | Rights::WRITE | Rights::SUBSCRIBE,
            ),
        )?,
    }
    Ok(())
}
