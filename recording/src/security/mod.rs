//! SROS2 (docs/network.md section 5), shared by rmw_tracer and the C API. rcl reads
//! `ROS_SECURITY_ENABLE`, `ROS_SECURITY_STRATEGY` and `ROS_SECURITY_KEYSTORE` and passes the
//! result in `rmw_init_options_t.security_options`: whether security is enforced, and the
//! enclave's directory (`<keystore>/enclaves/<enclave>`) when it found one. A program that is
//! not on rcl (the C API) reads the same variables with rcl's rules ([`SecurityOptions::from_env`]).
//! The enclave's `cert.pem`, `key.pem` and `identity_ca.cert.pem` become the QUIC links' identity
//! and trust; its `governance.p7s` and `permissions.p7s` (verified against
//! `permissions_ca.cert.pem`) become the checks on what this process creates; the
//! `permissions.p7s` each peer on another host sends in its QUIC HELLO (verified the same way,
//! the grant for its proven subject) becomes what it may use here (docs/network.md section 5).
//!
//! | security root | Enforce | Permissive (or not enabled) |
//! |---|---|---|
//! | none | init fails (rcl already refuses this) | no security, as without SROS2 |
//! | files load | authenticated, permissions enforced | authenticated, permissions enforced |
//! | files missing or bad | init fails, naming the file | a warning, then no security |
//!
//! On one host the Unix-socket links stay what they are (the peer's uid is the kernel's word);
//! this process's own permissions apply whatever the range. Warnings go to the caller's log
//! (`NetLog`: the rmw log for rmw_tracer, stderr for the C API).

use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::sync::Arc;

use libtracer_core::link::quic::NetLog;
use libtracer_core::link::{GrantTurn, HostUsers, PermissionsExchange, QuicSecurity};
use libtracer_core::{Acl, Graph, Principal, Rights, Subject, SubjectCheck};
use parking_lot::Mutex;
pub use tracer_sros2::Action;

mod options;
pub use options::{SecurityOptions, DEFAULT_ENCLAVE};

/// Why security could not be set up, or refuses what was asked.
#[derive(Debug, thiserror::Error)]
pub enum SecurityError {
    /// The settings cannot be met: enforced without an enclave, or an enclave that does not
    /// load (the text names the file). rmw: an invalid argument of `rmw_init`.
    #[error("{0}")]
    Setup(String),
    /// This enclave's permissions do not allow an entity (rmw: `rmw_create_*` fails with
    /// `RMW_RET_ERROR`, as Fast DDS's does when the DataWriter is refused).
    #[error("{0}")]
    Denied(String),
    /// The graph refused the ACL of a vertex.
    #[error("{0}")]
    Graph(#[from] libtracer_core::Error),
}

pub type SecurityResult<T> = Result<T, SecurityError>;

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
pub fn load(o: &SecurityOptions, domain: u32, log: NetLog) -> SecurityResult<Option<Secure>> {
    let Some(root) = o.root.as_deref().filter(|r| !r.is_empty()) else {
        if o.enforce {
            return Err(SecurityError::Setup(
                "security is enforced (ROS_SECURITY_STRATEGY=Enforce) but no enclave directory was given (ROS_SECURITY_KEYSTORE, enclave)"
                    .into(),
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
            })
            .and_then(|(q, a)| {
                // Verified by `load`: the CA that verifies the peers' documents, and ours, sent
                // in every QUIC HELLO.
                let read = |f: &str| std::fs::read(dir.join(f)).map_err(|e| format!("{f}: {e}"));
                let ca = String::from_utf8(read(tracer_sros2::keystore::PERMISSIONS_CA)?)
                    .map_err(|_| "permissions_ca.cert.pem: not UTF-8".to_owned())?;
                let doc = read(tracer_sros2::keystore::PERMISSIONS)?;
                Ok((q, a, ca, doc))
            });
    match loaded {
        Ok((quic, access, ca, document)) => {
            let open = access.domain.allow_unauthenticated_participants;
            Ok(Some(Secure {
                quic: quic.allow_unauthenticated(open),
                document: document.into(),
                access: Arc::new(Access {
                    domain,
                    loaded: access,
                    ca,
                    learned: parking_lot::RwLock::new(HashMap::new()),
                    log,
                }),
            }))
        }
        Err(why) if o.enforce => Err(SecurityError::Setup(format!(
            "security is enforced and the enclave cannot be loaded: {why}"
        ))),
        Err(why) => {
            log(&format!(
                "security: enclave {root}: {why}; running without security (ROS_SECURITY_STRATEGY is not Enforce)"
            ));
            Ok(None)
        }
    }
}

/// An enclave's loaded security: its QUIC identity and what its permissions allow.
#[derive(Clone)]
pub struct Secure {
    pub quic: QuicSecurity,
    /// This enclave's `permissions.p7s`, as the file holds it.
    pub document: Arc<[u8]>,
    pub access: Arc<Access>,
}

impl Secure {
    /// What the QUIC transport sends in its HELLO and does with each peer's (docs/wire.md
    /// section 2, PERMISSIONS; docs/network.md section 5).
    pub fn exchange(&self) -> PermissionsExchange {
        let access = self.access.clone();
        PermissionsExchange {
            document: self.document.clone(),
            learn: Arc::new(move |subject, doc| access.learn(subject, doc)),
        }
    }
}

/// The governance and permissions this process enforces (docs/network.md section 5): its own
/// grant on what it creates, and the grants peers on other hosts sent in their HELLO on what
/// they may do here, looked up at each check (ACL entries are [`Principal::Check`]s).
pub struct Access {
    domain: u32,
    loaded: tracer_sros2::keystore::Loaded,
    /// The permissions CA (PEM) that verifies the peers' documents.
    ca: String,
    /// Per authenticated subject: the grant its peer sent (`Ok`), or why it has none (`Err`:
    /// it sent none, or one that did not verify, named another subject or was not valid).
    learned: parking_lot::RwLock<HashMap<String, Result<tracer_sros2::Grant, String>>>,
    /// Where the warnings go (a peer's grant refused or run out).
    log: NetLog,
}

/// The DDS topic name of a ROS topic (`/chatter` -> `rt/chatter`; services `rq/...Request`,
/// `rr/...Reply`), as SROS2 permissions name them.
pub fn dds_topic(prefix: &str, name: &str, suffix: &str) -> String {
    format!("{prefix}{name}{suffix}")
}

/// What SROS2 checks of a service endpoint. A service has two DDS topics, requests
/// `rq<name>Request` and replies `rr<name>Reply`: a server subscribes requests and publishes
/// replies, a client the other way (`checks`, this enclave's); the endpoint's inbox is written
/// by peers that publish the other one (`inbox`: the topic whose publish permission a writer
/// to it needs).
pub struct ServiceTopics {
    pub checks: [(Action, String); 2],
    pub inbox: String,
}

impl ServiceTopics {
    pub fn new(name: &str, server: bool) -> ServiceTopics {
        let (rq, rr) = (
            dds_topic("rq", name, "Request"),
            dds_topic("rr", name, "Reply"),
        );
        if server {
            ServiceTopics {
                inbox: rq.clone(),
                checks: [(Action::Subscribe, rq), (Action::Publish, rr)],
            }
        } else {
            ServiceTopics {
                inbox: rr.clone(),
                checks: [(Action::Publish, rq), (Action::Subscribe, rr)],
            }
        }
    }

    /// The checks as `permit` takes them.
    pub fn checks(&self) -> [(Action, &str); 2] {
        let [(a, x), (b, y)] = &self.checks;
        [(*a, x.as_str()), (*b, y.as_str())]
    }
}

impl Access {
    fn allows(&self, grant: &tracer_sros2::Grant, action: Action, topic: &str) -> bool {
        let read = action == Action::Subscribe;
        !self.loaded.domain.controlled(topic, read) || grant.decide(self.domain, action, topic)
    }

    /// May this enclave `action` the DDS `topic`? The error is what `rmw_create_*` fails with
    /// (as Fast DDS's `rmw_create_publisher` fails when the DataWriter is refused). Checked
    /// against the clock too: `rmw_init` refused a grant that was not valid then, and once it
    /// runs out it allows nothing access control covers, as a peer's expired grant does there
    /// (docs/network.md section 5, "When credentials end").
    pub fn check_own(&self, action: Action, topic: &str) -> SecurityResult<()> {
        let read = action == Action::Subscribe;
        let own = &self.loaded.own;
        let now = tracer_sros2::permissions::now_utc();
        if self.loaded.domain.controlled(topic, read) && !own.valid_at(&now) {
            return Err(SecurityError::Denied(format!(
                "security: permission denied: enclave {} may not {} {topic}: its grant (permissions.p7s) was valid from {} to {}, not now ({now} UTC)",
                self.loaded.subject,
                action.name(),
                own.not_before,
                own.not_after
            )));
        }
        if self.allows(own, action, topic) {
            return Ok(());
        }
        Err(SecurityError::Denied(format!(
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
        self.granted(subject, |g| g.decide(self.domain, action, topic))
    }

    /// What `allows` says of the grant the peer `subject` sent, while that grant is valid: a
    /// grant is checked against the clock at every check (each SUBSCRIBE, WRITE or READ of the
    /// peer's, each time a subscription's remote writers are reconciled), not only when it
    /// arrived, so once it has run out the peer's new requests are refused as a peer with no
    /// grant; that is logged once, when it is first found expired. What was made under it
    /// goes with the peer's link, which the transport closes when the grant runs out (`learn`
    /// answers when); the link made next carries no grant.
    fn granted(&self, subject: &str, allows: impl Fn(&tracer_sros2::Grant) -> bool) -> bool {
        let now = tracer_sros2::permissions::now_utc();
        {
            let t = self.learned.read();
            match t.get(subject) {
                Some(Ok(g)) if g.valid_at(&now) => return allows(g),
                Some(Ok(_)) => {}
                _ => return false,
            }
        }
        let mut t = self.learned.write();
        if let Some(entry) = t.get_mut(subject) {
            if let Ok(g) = entry {
                if g.valid_at(&now) {
                    return allows(g);
                }
                let why = format!(
                    "the grant it sent was valid from {} to {}, not now ({now} UTC)",
                    g.not_before, g.not_after
                );
                (self.log)(&format!(
                    "security: the peer {subject} has no grant here from now on (everything access control covers is refused): {why}"
                ));
                *entry = Err(why);
            }
        }
        false
    }

    /// The permissions document the peer whose link proved `subject` sent in its HELLO (`None`:
    /// none), called by the QUIC transport before the peer's link is made. Verified against our
    /// permissions CA; the grant for `subject`, valid now, is what the peer may do here from
    /// then on (it replaces what an earlier link of that subject sent), and its end is the
    /// answer: the transport closes the peer's link then (docs/network.md section 5, "When
    /// credentials end"), so that nothing made under the grant outlives it. Any failure: the
    /// peer has no grant, and the reason is logged once per subject and reason; for a grant
    /// that starts later, its start is the answer (the link made then takes it).
    pub fn learn(&self, subject: &str, doc: Option<&[u8]>) -> Option<GrantTurn> {
        let now = tracer_sros2::permissions::now_utc();
        let refused = |e: tracer_sros2::Error| format!("the permissions it sent are refused: {e}");
        let (got, turn) = match doc {
            None => (Err("it sent no permissions document".to_owned()), None),
            Some(d) => match tracer_sros2::keystore::peer_grant(d, &self.ca, subject, &now) {
                Ok(g) => {
                    let ends = g.ends().map(GrantTurn::Ends);
                    (Ok(g), ends)
                }
                // Not valid now: no grant meanwhile. One that starts later (a keystore made on
                // a host whose clock is ahead) is taken by the link made when it starts.
                Err(e) => {
                    let later = match &e {
                        tracer_sros2::Error::NotValidNow { grant, .. } => {
                            grant.starts().filter(|s| *s > std::time::SystemTime::now())
                        }
                        _ => None,
                    };
                    (Err(refused(e)), later.map(GrantTurn::Starts))
                }
            },
        };
        let mut t = self.learned.write();
        if let Err(why) = &got {
            let again = matches!(t.get(subject), Some(Err(w)) if w == why);
            if !again {
                (self.log)(&format!(
                    "security: the peer {subject} gets no grant here (everything access control covers is refused): {why}"
                ));
            }
        }
        t.insert(subject.to_owned(), got);
        turn
    }

    /// Whether the governance lets a peer with no grant for this domain in (no join access
    /// control).
    fn open_join(&self) -> bool {
        !self.loaded.domain.enable_join_access_control
    }

    /// May a peer that failed authentication (admitted as anonymous: the governance allows
    /// unauthenticated participants) `action` the DDS `topic`? Only where the governance does not
    /// control that direction of the topic, as DDS lets an unauthenticated participant match
    /// only unprotected topics.
    pub fn anonymous_may(&self, action: Action, topic: &str) -> bool {
        let read = action == Action::Subscribe;
        self.loaded.domain.allow_unauthenticated_participants
            && !self.loaded.domain.controlled(topic, read)
    }

    /// `acl` opened to every peer the governance lets use an uncontrolled vertex with `right`:
    /// any authenticated peer, and anonymous ones when unauthenticated participants are allowed.
    fn open_to_all(&self, acl: Acl, right: Rights) -> Acl {
        let acl = acl.allow(Principal::Authenticated, right);
        if self.loaded.domain.allow_unauthenticated_participants {
            return acl.allow(Principal::Anonymous, right);
        }
        acl
    }

    /// The ACL of a vertex that remote peers may use with `right` when their grant allows
    /// `action` on `topic`: one check of the grants peers sent (or every authenticated peer,
    /// and anonymous ones if the governance allows them, when it does not control the topic).
    /// The ACL is one [`Principal::Check`] that asks the grants peers sent at each request, so
    /// a grant that arrives after the vertex was made counts.
    pub fn acl_for(self: &Arc<Self>, action: Action, topic: &str, right: Rights) -> Acl {
        let read = action == Action::Subscribe;
        if !self.loaded.domain.controlled(topic, read) {
            return self.open_to_all(Acl::new(), right);
        }
        let (me, topic) = (self.clone(), topic.to_owned());
        let check = SubjectCheck::new(move |s| me.peer_may(s, action, &topic));
        Acl::new().allow(Principal::Check(check), right)
    }

    /// The registry's ACL: who may join (see the endpoints of this process): a peer whose grant
    /// names the domain, asked at each request as in [`Access::acl_for`].
    pub fn registry_acl(self: &Arc<Self>) -> Acl {
        let right = Rights::SUBSCRIBE | Rights::READ;
        if self.open_join() {
            return self.open_to_all(Acl::new(), right);
        }
        let me = self.clone();
        let check = SubjectCheck::new(move |s| me.granted(s, |g| g.covers_domain(me.domain)));
        Acl::new().allow(Principal::Check(check), right)
    }
}

/// Which peers a subscription takes a topic's data from (SROS2: the writer's publish permission),
/// checked before the subscription is wired to a peer's publishers. Each refused peer is told
/// once, however often the wiring is reconsidered.
pub struct WriterCheck {
    pub access: Arc<Access>,
    /// The ROS topic, for the log line.
    topic: String,
    /// The DDS topic (`rt/<name>`).
    pub dds: String,
    /// Peers refused so far (each logged once).
    refused: Mutex<BTreeSet<String>>,
}

impl WriterCheck {
    /// The check of a subscription to the ROS `topic` whose DDS topic is `dds`.
    pub fn new(access: Arc<Access>, topic: &str, dds: String) -> WriterCheck {
        WriterCheck {
            access,
            topic: topic.to_owned(),
            dds,
            refused: Mutex::new(BTreeSet::new()),
        }
    }

    /// Whether the publishers of `peer`, whose link proved `subject`, may feed this
    /// subscription: as a DDS DataReader ignores a remote DataWriter whose permissions do not
    /// allow it to publish the topic, the caller makes no edge to such a peer. The first
    /// refusal of each peer goes to `log`, with the reason.
    pub fn allows(&self, peer: &str, subject: Option<&Subject>, log: impl FnOnce(&str)) -> bool {
        let Some(why) = self.refuses(subject) else {
            return true;
        };
        if self.refused.lock().insert(peer.to_owned()) {
            log(&format!(
                "security: not taking {} from {peer}: {why}",
                self.topic
            ));
        }
        false
    }

    /// Why the publishers of the peer whose link proved `subject` may not feed this subscription
    /// (`None`: they may). A peer of this host (`None`) is the kernel's and the local ACL's.
    pub fn refuses(&self, subject: Option<&Subject>) -> Option<String> {
        match subject? {
            Subject::Authenticated(s) if self.access.peer_may(s, Action::Publish, &self.dds) => {
                None
            }
            Subject::Authenticated(s) => Some(format!(
                "its enclave {s} may not publish {} (the permissions it sent, domain {})",
                self.dds, self.access.domain
            )),
            Subject::Anonymous if self.access.anonymous_may(Action::Publish, &self.dds) => None,
            Subject::Anonymous if !self.access.loaded.domain.allow_unauthenticated_participants => {
                Some("it is not authenticated".to_owned())
            }
            Subject::Anonymous => Some(format!(
                "it is not authenticated and {} is access controlled for writing (governance, domain {})",
                self.dds, self.access.domain
            )),
        }
    }
}

/// What a graph on another host, or of another user of this host, may do here. Its requests
/// reach the core's ACL as the principal its link proved: across hosts the subject of its
/// enclave certificate with SROS2, else an anonymous peer; on this host its uid (the kernel's);
/// never as this process's owner unless it is the same uid here. Which rights a ROS participant
/// needs: SUBSCRIBE to the registry (`/.ros/endpoints`) and to topics, WRITE to service request
/// and client response vertices, READ (the `sync_peers` barrier). Without SROS2 the root's ACL
/// grants them to the anonymous principal when `networked` (turning the network on without
/// SROS2 trusts the network, docs/network.md section 5) and to every local user with
/// `HostUsers::All` (docs/host.md). With SROS2 each vertex a remote peer may use gets its own
/// ACL naming the certificate subjects whose permissions allow it: the registry here (who may
/// join), topics and services as they are made (`Shared::guard`); other local users get
/// nothing (no identity is proven over a Unix socket). No ADMIN or CREATE.
pub fn grant_peers(
    g: &Graph,
    access: Option<&Arc<Access>>,
    networked: bool,
    users: HostUsers,
) -> Result<(), libtracer_core::Error> {
    match access {
        Some(a) if networked => g.set_acl("/.ros/endpoints", a.registry_acl())?,
        Some(_) => {}
        None => crate::network::open_to_peers(g, networked, users)?,
    }
    Ok(())
}

#[cfg(test)]
mod tests;
