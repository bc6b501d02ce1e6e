//! Access control: entries on a vertex's `:acl`, and the rule that decides a request.
//!
//! Inheritance: the nearest vertex at or above the target that carries an `:acl` governs, alone
//! (ACLs do not merge down the tree). Within that ACL a matching deny beats a matching allow.
//! The graph's owner (the uid that created the graph) holds every right unless the governing ACL
//! denies it, and ADMIN can never be denied to the owner (no lock-out). Anyone else holds exactly
//! what the governing ACL allows and does not deny; with no ACL on the chain, nothing.
//!
//! Requesters are of two kinds ([`Credentials`]): a process of this host, known by the uid and
//! primary gid the kernel reports for its socket (or this process itself), and a graph on
//! another host, known by what its link authenticated: the subject of its certificate (checked
//! against the trusted CA in the TLS handshake), or nothing ([`Subject::Anonymous`]) on a link
//! that authenticates no one. A remote requester is never the owner, whatever uid it runs as
//! over there: it holds exactly what an ACL grants its subject (docs/libtracer.md, "ACL").

use std::fmt;
use std::ops::{BitOr, BitOrAssign};
use std::sync::Arc;

/// A set of rights.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Rights(u8);

impl Rights {
    pub const NONE: Rights = Rights(0);
    /// Read a stored value, pop a ring.
    pub const READ: Rights = Rights(1);
    /// Write to an existing vertex (also: be the target of a delivery, i.e. fan-in).
    pub const WRITE: Rights = Rights(2);
    /// Create vertices below this one (write-creates, create_*).
    pub const CREATE: Rights = Rights(4);
    /// Add a SUBSCRIBER edge to this vertex's `:subscribers[]` or `:children[]`.
    pub const SUBSCRIBE: Rights = Rights(8);
    /// Change `:acl`, `:schema`, ring bounds; remove.
    pub const ADMIN: Rights = Rights(16);
    pub const ALL: Rights = Rights(31);

    pub fn bits(self) -> u8 {
        self.0
    }
    pub fn from_bits_truncate(b: u8) -> Rights {
        Rights(b & Self::ALL.0)
    }
    pub fn contains(self, other: Rights) -> bool {
        self.0 & other.0 == other.0
    }
    pub fn intersects(self, other: Rights) -> bool {
        self.0 & other.0 != 0
    }
    /// The name of a single right, for error messages.
    pub fn name(self) -> &'static str {
        match self {
            Rights::READ => "READ",
            Rights::WRITE => "WRITE",
            Rights::CREATE => "CREATE",
            Rights::SUBSCRIBE => "SUBSCRIBE",
            Rights::ADMIN => "ADMIN",
            _ => "RIGHTS",
        }
    }
}

impl BitOr for Rights {
    type Output = Rights;
    fn bitor(self, o: Rights) -> Rights {
        Rights(self.0 | o.0)
    }
}

impl BitOrAssign for Rights {
    fn bitor_assign(&mut self, o: Rights) {
        self.0 |= o.0;
    }
}

/// Who an entry is about.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Principal {
    /// A local requester with this uid.
    Uid(u32),
    /// A local requester whose primary gid (the one the kernel reports for a socket peer) is this.
    Gid(u32),
    /// A remote requester whose link authenticated this certificate subject, in the form of
    /// [`Subject::Authenticated`] (RFC 4514, e.g. `CN=/talker_listener/talker`).
    Subject(Arc<str>),
    /// Any remote requester whose link authenticated it, whatever its subject.
    Authenticated,
    /// A remote requester whose authenticated subject the check admits, asked at each
    /// decision: for rules whose subjects are learned while the vertex lives (the SROS2 grants
    /// peers send in their HELLO, docs/network.md section 5).
    Check(SubjectCheck),
    /// A remote requester over a link that authenticates no one, or one admitted
    /// unauthenticated ([`Subject::Anonymous`]). Never matched by [`Principal::Authenticated`].
    Anonymous,
    /// Any local requester, whatever its uid: a process of this host (network namespace),
    /// known by its kernel credentials. How other users of the host are admitted
    /// (docs/host.md, "Who may link").
    Host,
    /// Everyone, local or remote.
    Any,
}

/// The check of a [`Principal::Check`]: compared and hashed by identity (the same check is
/// the same principal).
#[derive(Clone)]
pub struct SubjectCheck(Arc<dyn Fn(&str) -> bool + Send + Sync>);

impl SubjectCheck {
    pub fn new(f: impl Fn(&str) -> bool + Send + Sync + 'static) -> SubjectCheck {
        SubjectCheck(Arc::new(f))
    }
    fn addr(&self) -> usize {
        Arc::as_ptr(&self.0) as *const () as usize
    }
}

impl fmt::Debug for SubjectCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SubjectCheck({:#x})", self.addr())
    }
}

impl PartialEq for SubjectCheck {
    fn eq(&self, o: &SubjectCheck) -> bool {
        self.addr() == o.addr()
    }
}

impl Eq for SubjectCheck {}

impl std::hash::Hash for SubjectCheck {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.addr().hash(h)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AceKind {
    Allow,
    Deny,
}

/// One access-control entry.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Ace {
    pub principal: Principal,
    pub kind: AceKind,
    pub rights: Rights,
}

/// What a remote requester's link proved about it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Subject {
    /// The subject distinguished name of the certificate the peer presented, which chained to
    /// the trusted CA: RFC 4514 text, most specific attribute first (`CN=/talker`,
    /// `CN=/a,O=Robots`), as x509-cert prints a name.
    Authenticated(Arc<str>),
    /// Nothing: the link encrypts but authenticates no one (QUIC without SROS2), or the peer
    /// failed authentication and was let in all the same (SROS2 governance
    /// `allow_unauthenticated_participants`).
    Anonymous,
}

/// The authenticated identity of a requester.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Credentials {
    /// This process, or a process of this host as the kernel reported it for the link's socket
    /// (SO_PEERCRED).
    Local { uid: u32, gid: u32 },
    /// A graph on another host, as its link authenticated it.
    Remote(Subject),
}

impl Credentials {
    /// The current process's effective uid and gid: what the kernel reports for its sockets
    /// (SO_PEERCRED), so a local caller and the same process seen over a link agree.
    pub fn current() -> Credentials {
        Credentials::Local {
            uid: nix::unistd::geteuid().as_raw(),
            gid: nix::unistd::getegid().as_raw(),
        }
    }

    /// A local requester.
    pub fn local(uid: u32, gid: u32) -> Credentials {
        Credentials::Local { uid, gid }
    }

    /// The local uid, if the requester is local.
    pub fn uid(&self) -> Option<u32> {
        match self {
            Credentials::Local { uid, .. } => Some(*uid),
            Credentials::Remote(_) => None,
        }
    }

    /// The local primary gid, if the requester is local.
    pub fn gid(&self) -> Option<u32> {
        match self {
            Credentials::Local { gid, .. } => Some(*gid),
            Credentials::Remote(_) => None,
        }
    }

    /// The authenticated certificate subject of a remote requester.
    pub fn subject(&self) -> Option<&str> {
        match self {
            Credentials::Remote(Subject::Authenticated(s)) => Some(s),
            _ => None,
        }
    }
}

impl fmt::Display for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Credentials::Local { uid, gid } => write!(f, "uid {uid} gid {gid}"),
            Credentials::Remote(Subject::Authenticated(s)) => write!(f, "peer {s}"),
            Credentials::Remote(Subject::Anonymous) => write!(f, "an unauthenticated peer"),
        }
    }
}

/// An access-control list.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Acl {
    pub entries: Vec<Ace>,
}

/// What one ACL says about one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    Allow,
    Deny,
    /// No entry matches.
    Silent,
}

impl Principal {
    fn matches(&self, who: &Credentials) -> bool {
        match (self, who) {
            (Principal::Any, _) => true,
            (Principal::Host, Credentials::Local { .. }) => true,
            (Principal::Uid(u), Credentials::Local { uid, .. }) => u == uid,
            (Principal::Gid(g), Credentials::Local { gid, .. }) => g == gid,
            (Principal::Subject(s), Credentials::Remote(Subject::Authenticated(t))) => s == t,
            (Principal::Authenticated, Credentials::Remote(Subject::Authenticated(_))) => true,
            (Principal::Check(c), Credentials::Remote(Subject::Authenticated(t))) => (c.0)(t),
            (Principal::Anonymous, Credentials::Remote(Subject::Anonymous)) => true,
            _ => false,
        }
    }
}

impl Acl {
    pub fn new() -> Acl {
        Acl::default()
    }
    /// No entry: governs nothing but the owner's rights.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
    pub fn allow(mut self, principal: Principal, rights: Rights) -> Acl {
        self.entries.push(Ace {
            principal,
            kind: AceKind::Allow,
            rights,
        });
        self
    }
    pub fn deny(mut self, principal: Principal, rights: Rights) -> Acl {
        self.entries.push(Ace {
            principal,
            kind: AceKind::Deny,
            rights,
        });
        self
    }

    /// Whether some deny entry could refuse `who` something: the owner's fast path (an owner
    /// is allowed everything no ACL denies it) needs to know that no ACL can.
    pub fn may_deny(&self, who: &Credentials) -> bool {
        self.entries
            .iter()
            .any(|e| e.kind == AceKind::Deny && e.principal.matches(who))
    }

    /// Deny wins over allow; entry order does not matter.
    pub fn decide(&self, who: &Credentials, right: Rights) -> Decision {
        let mut allowed = false;
        for e in &self.entries {
            if e.principal.matches(who) && e.rights.intersects(right) {
                match e.kind {
                    AceKind::Deny => return Decision::Deny,
                    AceKind::Allow => allowed = true,
                }
            }
        }
        if allowed {
            Decision::Allow
        } else {
            Decision::Silent
        }
    }
}

/// The whole rule: `governing` is the nearest ACL at or above the vertex, `owner` the graph's uid.
/// A remote requester is never the owner.
pub fn permits(governing: Option<&Acl>, owner: u32, who: &Credentials, right: Rights) -> bool {
    let is_owner = who.uid() == Some(owner);
    if is_owner && right == Rights::ADMIN {
        return true;
    }
    match governing.map(|a| a.decide(who, right)) {
        Some(Decision::Deny) => false,
        Some(Decision::Allow) => true,
        Some(Decision::Silent) | None => is_owner,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ME: Credentials = Credentials::Local {
        uid: 1000,
        gid: 1000,
    };
    const OTHER: Credentials = Credentials::Local {
        uid: 2000,
        gid: 1000,
    };

    #[test]
    fn deny_wins_over_allow_in_any_order() {
        let a = Acl::new()
            .allow(Principal::Any, Rights::ALL)
            .deny(Principal::Uid(2000), Rights::WRITE);
        assert_eq!(a.decide(&OTHER, Rights::WRITE), Decision::Deny);
        assert_eq!(a.decide(&OTHER, Rights::READ), Decision::Allow);
        assert_eq!(a.decide(&ME, Rights::WRITE), Decision::Allow);
    }

    #[test]
    fn owner_keeps_admin_and_others_need_an_allow() {
        let a = Acl::new().deny(Principal::Any, Rights::ALL);
        assert!(permits(Some(&a), 1000, &ME, Rights::ADMIN));
        assert!(!permits(Some(&a), 1000, &ME, Rights::WRITE));
        assert!(permits(None, 1000, &ME, Rights::WRITE));
        assert!(!permits(None, 1000, &OTHER, Rights::READ));
        let g = Acl::new().allow(Principal::Gid(1000), Rights::READ);
        assert!(permits(Some(&g), 1000, &OTHER, Rights::READ));
        assert!(!permits(Some(&g), 1000, &OTHER, Rights::WRITE));
    }

    #[test]
    fn remote_requesters_are_never_the_owner_and_match_only_remote_principals() {
        let talker = Credentials::Remote(Subject::Authenticated("CN=/talker".into()));
        let anon = Credentials::Remote(Subject::Anonymous);
        assert!(!permits(None, 1000, &talker, Rights::ADMIN));
        assert!(!permits(None, 1000, &anon, Rights::READ));
        let a = Acl::new()
            .allow(Principal::Subject("CN=/talker".into()), Rights::SUBSCRIBE)
            .allow(Principal::Anonymous, Rights::READ)
            .allow(Principal::Uid(1000), Rights::WRITE);
        assert!(permits(Some(&a), 1000, &talker, Rights::SUBSCRIBE));
        assert!(!permits(Some(&a), 1000, &talker, Rights::READ));
        assert!(!permits(Some(&a), 1000, &talker, Rights::WRITE));
        assert!(permits(Some(&a), 1000, &anon, Rights::READ));
        assert!(!permits(Some(&a), 1000, &anon, Rights::SUBSCRIBE));
        let other = Credentials::Remote(Subject::Authenticated("CN=/other".into()));
        assert!(!permits(Some(&a), 1000, &other, Rights::SUBSCRIBE));
        let any = Acl::new().allow(Principal::Authenticated, Rights::READ);
        assert!(permits(Some(&any), 1000, &other, Rights::READ));
        assert!(!permits(Some(&any), 1000, &anon, Rights::READ));
        assert!(Acl::new().deny(Principal::Any, Rights::READ).may_deny(&ME));
        assert!(!a.may_deny(&ME));
        assert_eq!(talker.to_string(), "peer CN=/talker");
    }

    #[test]
    fn a_check_principal_is_asked_at_each_decision() {
        let admitted = Arc::new(parking_lot::Mutex::new(Vec::<String>::new()));
        let seen = admitted.clone();
        let check = SubjectCheck::new(move |s| seen.lock().iter().any(|a| a == s));
        let a = Acl::new().allow(Principal::Check(check.clone()), Rights::SUBSCRIBE);
        let talker = Credentials::Remote(Subject::Authenticated("CN=/talker".into()));
        let anon = Credentials::Remote(Subject::Anonymous);
        assert!(!permits(Some(&a), 1000, &talker, Rights::SUBSCRIBE));
        admitted.lock().push("CN=/talker".into());
        assert!(permits(Some(&a), 1000, &talker, Rights::SUBSCRIBE));
        assert!(!permits(Some(&a), 1000, &talker, Rights::WRITE));
        assert!(!permits(Some(&a), 1000, &anon, Rights::SUBSCRIBE));
        assert!(!permits(Some(&a), 1000, &OTHER, Rights::SUBSCRIBE));
        assert_eq!(Principal::Check(check.clone()), Principal::Check(check));
    }
}
