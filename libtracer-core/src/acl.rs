//! Access control: entries on a vertex's `:acl`, and the rule that decides a request.
//!
//! Inheritance: the nearest vertex at or above the target that carries an `:acl` governs, alone
//! (ACLs do not merge down the tree). Within that ACL a matching deny beats a matching allow.
//! The graph's owner (the uid that created the graph) holds every right unless the governing ACL
//! denies it, and ADMIN can never be denied to the owner (no lock-out). Anyone else holds exactly
//! what the governing ACL allows and does not deny; with no ACL on the chain, nothing.

use std::ops::{BitOr, BitOrAssign};

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
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Principal {
    Uid(u32),
    /// Matches the requester's primary gid (the one the kernel reports for a socket peer).
    Gid(u32),
    Any,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AceKind {
    Allow,
    Deny,
}

/// One access-control entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Ace {
    pub principal: Principal,
    pub kind: AceKind,
    pub rights: Rights,
}

/// The authenticated identity of a requester: the local process, or a peer as the kernel
/// reported it for the link's socket.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Credentials {
    pub uid: u32,
    pub gid: u32,
}

impl Credentials {
    /// The current process's effective uid and gid: what the kernel reports for its sockets
    /// (SO_PEERCRED), so a local caller and the same process seen over a link agree.
    pub fn current() -> Credentials {
        Credentials {
            uid: nix::unistd::geteuid().as_raw(),
            gid: nix::unistd::getegid().as_raw(),
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
    fn matches(self, who: &Credentials) -> bool {
        match self {
            Principal::Uid(u) => u == who.uid,
            Principal::Gid(g) => g == who.gid,
            Principal::Any => true,
        }
    }
}

impl Acl {
    pub fn new() -> Acl {
        Acl::default()
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
pub fn permits(governing: Option<&Acl>, owner: u32, who: &Credentials, right: Rights) -> bool {
    let is_owner = who.uid == owner;
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

    const ME: Credentials = Credentials {
        uid: 1000,
        gid: 1000,
    };
    const OTHER: Credentials = Credentials {
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
}
