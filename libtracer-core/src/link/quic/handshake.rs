//! Making links: connecting to a member of a peer host, accepting a connection, and the HELLO
//! exchange either way, with the connect-race rule (the smaller name's connection wins), the
//! bounds on handshakes in progress, and the log line of a peer refused by TLS: the
//! transport's rules, which the engine's links (`elinks.rs`) apply as their greeting
//! (`ehello.rs`) goes.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;

use super::expiry::{first, Expiry};
use super::hello::PeerHello;
use super::link::hello;
use super::peer_cert::PeerCerts;
use super::{peer_address, Inner, Table, AUTH_LOGGED_MAX, MAX_CONNECTIONS};
use crate::acl::Subject;
use crate::link::{valid_node_name, PeerIdentity};
use crate::wire::ErrorCode;

/// Why a peer's HELLO is refused: the ERROR's code and reason.
pub(crate) type Refusal = (ErrorCode, &'static str);

/// At most this many incoming handshakes at once; more are refused at once (a flood).
const MAX_HANDSHAKES: usize = 64;

/// A handshake that ended in a TLS alert (a QUIC CRYPTO_ERROR, codes 0x100-0x1ff) sent by
/// either end: a certificate refused, or none given; not a timeout nor a closed endpoint.
fn is_tls_failure(e: &quinn_proto::ConnectionError) -> bool {
    let code = match e {
        quinn_proto::ConnectionError::TransportError(t) => u64::from(t.code),
        quinn_proto::ConnectionError::ConnectionClosed(c) => u64::from(c.error_code),
        _ => return false,
    };
    (0x100..=0x1ff).contains(&code)
}

fn cooling(t: &Table, name: &str) -> bool {
    t.cooldown
        .get(name)
        .is_some_and(|until| *until > Instant::now())
}

impl Inner {
    /// A QUIC handshake with `addr` failed. With SROS2 on, that is a peer without a
    /// certificate of our keystore's CA (or one whose CA we are not of): say so once per
    /// address, since the peer will keep trying. Without, the handshake failing is a network
    /// matter the directory poll reports.
    pub(super) fn auth_failed(&self, addr: SocketAddr, e: &quinn_proto::ConnectionError) {
        if !self.identity.authenticated() || !is_tls_failure(e) {
            return;
        }
        {
            let mut t = self.table.lock();
            if t.auth_logged.len() >= AUTH_LOGGED_MAX {
                t.auth_logged.clear();
            }
            if !t.auth_logged.insert(addr) {
                return;
            }
        }
        let msg = match e {
            quinn_proto::ConnectionError::ConnectionClosed(_) => {
                format!("security: the peer at {addr} refused our certificate: {e}")
            }
            _ => format!("security: refused the peer at {addr}: {e}"),
        };
        self.log(&msg);
    }

    /// A member of a peer host: connect unless it is us, local (linked over a Unix socket),
    /// linked or being linked already, or cooling down. The handle ends when the link is up or
    /// the attempt failed.
    pub(super) fn maybe_connect(
        self: &Arc<Self>,
        name: &str,
        addr: SocketAddr,
    ) -> Option<super::chores::Joined<()>> {
        if name == self.name || !valid_node_name(name) {
            return None;
        }
        let busy = |t: &super::Table| {
            t.stopped
                || t.links.contains_key(name)
                || t.pending.contains(name)
                || t.accepting.contains(name)
                || cooling(t, name)
        };
        // The table first: a linked peer costs no look at the host's sockets (`is_local`).
        if busy(&self.table.lock()) || self.is_local(name) {
            return None;
        }
        {
            let mut t = self.table.lock();
            if busy(&t) {
                return None;
            }
            t.pending.insert(name.to_owned());
        }
        Some(self.spawn(self.clone().connect_link(name.to_owned(), addr)))
    }

    /// Connect to `peer` at `addr`; a refusal (the other direction is winning, or an old link
    /// of the peer's is about to be found dead) is retried a few times.
    async fn connect_link(self: Arc<Self>, peer: String, addr: SocketAddr) {
        for attempt in 0..5 {
            if self.stopped() || self.table.lock().links.contains_key(&peer) {
                break;
            }
            match self.handshake_out(&peer, addr).await {
                Ok(()) => break,
                Err(Some(_refused)) if attempt < 4 => {
                    super::chores::sleep(Duration::from_millis(100)).await
                }
                Err(_) => break,
            }
        }
        self.table.lock().pending.remove(&peer);
    }

    /// Whether an incoming connection may start its handshake (the bounds on handshakes and
    /// connections): if so, it is counted until `handshake_over`.
    pub(super) fn handshake_begins(&self) -> bool {
        let mut t = self.table.lock();
        let ok = !t.stopped
            && t.handshakes < MAX_HANDSHAKES
            && t.links.len() + t.handshakes < MAX_CONNECTIONS;
        if ok {
            t.handshakes += 1;
        }
        ok
    }

    /// An incoming handshake counted by `handshake_begins` is over, either way.
    pub(super) fn handshake_over(&self) {
        let mut t = self.table.lock();
        t.handshakes = t.handshakes.saturating_sub(1);
    }

    /// The acceptor's word on a peer's HELLO: refused (a name that is not one or is ours, a
    /// link up or being accepted, the cooldown, the connect race lost), or admitted, and then
    /// marked as being accepted until `accepted`.
    pub(super) fn admit_peer(&self, node: &str) -> Result<(), Refusal> {
        if !valid_node_name(node) || node == self.name {
            return Err((ErrorCode::PermissionDenied, "invalid or clashing node name"));
        }
        let mut t = self.table.lock();
        let why = if t.stopped {
            "shutting down"
        } else if t.links.contains_key(node) || t.accepting.contains(node) {
            "duplicate link: a link to you is already up"
        } else if cooling(&t, node) {
            "our link to you was closed a moment ago"
        } else if t.pending.contains(node) && self.name.as_str() < node {
            "duplicate link: my connection to you wins (smaller name)"
        } else {
            t.accepting.insert(node.to_owned());
            return Ok(());
        };
        Err((ErrorCode::Internal, why))
    }

    /// Our HELLO, with our permissions document when SROS2 is on.
    pub(super) fn hello(&self) -> crate::wire::Frame {
        let doc = (self.cfg.permissions.as_ref()).map(|p| Bytes::copy_from_slice(&p.document));
        hello(&self.name, doc, self.cfg.directory_port)
    }

    /// Hand an authenticated peer's permissions document (or its absence) to `learn`, before
    /// its link exists (docs/network.md section 5), and say when what it learned ends. Nothing
    /// without SROS2 or for a peer the handshake did not authenticate.
    pub(super) fn learn_permissions(
        &self,
        certs: &PeerCerts,
        doc: Option<&[u8]>,
    ) -> Option<Expiry> {
        let p = self.cfg.permissions.as_ref()?;
        match self.identity.peer_subject(certs) {
            Subject::Authenticated(s) => (p.learn)(&s, doc).map(Expiry::from),
            Subject::Anonymous => None,
        }
    }

    /// Who an authenticated (or admitted anonymous) peer at `remote` named `name` is, said
    /// once when it is anonymous, and when the first credential its link stands on runs out
    /// (`grant`: what `learn_permissions` answered).
    pub(super) fn identify(
        &self,
        certs: &PeerCerts,
        remote: SocketAddr,
        name: &str,
        grant: Option<Expiry>,
    ) -> (PeerIdentity, Option<Expiry>) {
        let subject = self.identity.peer_subject(certs);
        if subject == Subject::Anonymous && self.identity.authenticated() {
            let addr = peer_address(remote);
            self.log_once(
                format!("anonymous {addr}"),
                &format!(
                    "security: admitted the peer at {addr} unauthenticated (no certificate of \
                     our identity CA; the governance allows unauthenticated participants): it \
                     may use only topics without access control"
                ),
            );
        }
        let end = first([self.identity.certificates_end(certs, &subject), grant]);
        let id = PeerIdentity {
            name: name.to_owned(),
            // Not attested across hosts and not used by the ACL: a remote peer is the
            // principal its handshake proved (docs/network.md section 5).
            uid: nix::unistd::getuid().as_raw(),
            gid: nix::unistd::getgid().as_raw(),
            pid: 0,
            remote: Some(subject),
        };
        (id, end)
    }
}

/// The initiator's check of the peer's HELLO: it must be the member the directory named.
pub(super) fn expected_peer(peer: &str, h: &PeerHello) -> Result<(), Refusal> {
    if h.node != peer {
        return Err((
            ErrorCode::Malformed,
            "HELLO names a node other than the directory's",
        ));
    }
    Ok(())
}

/// Whether the initiator's link to `peer` may go in the table once its HELLO exchange is
/// over: not after shutdown, nor beside a link that came up the other way meanwhile.
pub(super) fn may_install_ours(t: &Table, peer: &str) -> bool {
    !t.stopped && !t.links.contains_key(peer)
}
