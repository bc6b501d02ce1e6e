//! When a link's credentials end (docs/network.md section 5, "When credentials end"). An
//! authenticated link stands on this process's certificate, the peer's and, with SROS2, the
//! grant the peer sent; each is valid until a moment written in it. The handshake checks them
//! once; a link that outlives the first of them to run out would go on carrying what the peer
//! may no longer have. So the link is closed at that moment, as a DDS participant whose
//! identity or permissions expire is disconnected. Whatever the peer may still do is settled
//! again by the next handshake: an expired certificate no longer chains, an expired grant is
//! no grant. A grant not valid yet when the link was made is no grant until it starts; the
//! link is closed when it does, and the next handshake takes it.
//!
//! The link's own watcher looks at the moment (a deadline of the engine's clock, `QuicLink`):
//! no thread, nothing for links without authentication.

use std::time::{Duration, SystemTime};

use super::config::GrantTurn;

/// Whose validity ends a link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Credential {
    OurCertificate,
    PeerCertificate,
    /// What the peer's permissions allow here runs out (`LearnPermissions`'s answer).
    PeerGrant,
    /// The grant the peer sent, not valid yet when learned, starts.
    PeerGrantStarts,
}

impl Credential {
    /// Why the link to a peer was closed at `at`.
    fn why(self, at: &str) -> String {
        match self {
            Credential::OurCertificate => format!("our certificate ran out at {at}"),
            Credential::PeerCertificate => format!("its certificate ran out at {at}"),
            Credential::PeerGrant => format!("the grant it sent ran out at {at}"),
            Credential::PeerGrantStarts => {
                format!("the grant it sent starts at {at} (the next link takes it)")
            }
        }
    }
}

/// The moment a credential of a link runs out: the first at which it is no longer valid (a
/// certificate's notAfter and a grant's `not_after` name the last second that is); or, for a
/// grant not valid yet, the moment it starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Expiry {
    pub(crate) at: SystemTime,
    pub(crate) what: Credential,
}

impl From<GrantTurn> for Expiry {
    fn from(turn: GrantTurn) -> Expiry {
        match turn {
            GrantTurn::Ends(at) => Expiry {
                at,
                what: Credential::PeerGrant,
            },
            GrantTurn::Starts(at) => Expiry {
                at,
                what: Credential::PeerGrantStarts,
            },
        }
    }
}

/// The first to run out of `ends`.
pub(crate) fn first(ends: impl IntoIterator<Item = Option<Expiry>>) -> Option<Expiry> {
    ends.into_iter().flatten().min_by_key(|e| e.at)
}

/// The longest sleep between looks at the clock: the wall clock decides validity and may be
/// set meanwhile, and a timer need take no deadline years away.
const LOOK_AGAIN: Duration = Duration::from_secs(60);

impl Expiry {
    /// How long to wait before looking at the clock again; `None`: it has come.
    pub(crate) fn look_in(&self) -> Option<Duration> {
        match self.at.duration_since(SystemTime::now()) {
            Ok(left) if !left.is_zero() => Some(left.min(LOOK_AGAIN)),
            _ => None,
        }
    }

    /// What the log says when the link to `peer` is closed for it.
    pub(crate) fn closed_line(&self, peer: &str) -> String {
        format!(
            "security: closed the link to {peer}: {}",
            self.what.why(&utc(self.at))
        )
    }
}

/// `at` as RFC 3339 UTC (`2026-12-04T03:30:00Z`), as certificates and grants write it.
fn utc(at: SystemTime) -> String {
    x509_cert::der::DateTime::from_system_time(at)
        .map_or_else(|_| format!("{at:?}"), |d| d.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_credential_to_run_out_decides() {
        let t = |s: u64, what| {
            Some(Expiry {
                at: SystemTime::UNIX_EPOCH + Duration::from_secs(s),
                what,
            })
        };
        assert_eq!(first([None, None]), None);
        assert_eq!(
            first([t(20, Credential::OurCertificate), None]),
            t(20, Credential::OurCertificate)
        );
        assert_eq!(
            first([
                t(20, Credential::OurCertificate),
                t(10, Credential::PeerCertificate),
                t(15, Credential::PeerGrant),
            ]),
            t(10, Credential::PeerCertificate)
        );
        assert_eq!(
            utc(SystemTime::UNIX_EPOCH + Duration::from_secs(1_796_196_300)),
            "2026-12-02T07:25:00Z"
        );
    }
}
