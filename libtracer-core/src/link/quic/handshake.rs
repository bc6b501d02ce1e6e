//! Making links: connecting to a member of a peer host, accepting a connection, and the HELLO
//! exchange either way, with the connect-race rule (the smaller name's connection wins), the
//! bounds on handshakes in progress, and the log line of a peer refused by TLS.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;

use super::expiry::{self, first, Expiry};
use super::hello::{HelloOutcome, PeerHello};
use super::link::{self, hello, read_hello, refuse, write_frame, QuicLink};
use super::peer_cert::PeerCerts;
use super::{peer_address, runtime, tls, Inner, Table, AUTH_LOGGED_MAX, MAX_CONNECTIONS};
use crate::acl::Subject;
use crate::link::{valid_node_name, PeerIdentity};
use crate::wire::{ErrorCode, FrameDecoder};

/// At most this many incoming handshakes at once; more are refused at once (a flood).
const MAX_HANDSHAKES: usize = 64;

/// A handshake that ended in a TLS alert (a QUIC CRYPTO_ERROR, codes 0x100-0x1ff) sent by
/// either end: a certificate refused, or none given; not a timeout nor a closed endpoint.
fn is_tls_failure(e: &quinn::ConnectionError) -> bool {
    let code = match e {
        quinn::ConnectionError::TransportError(t) => u64::from(t.code),
        quinn::ConnectionError::ConnectionClosed(c) => u64::from(c.error_code),
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
    pub(super) fn auth_failed(&self, addr: SocketAddr, e: &quinn::ConnectionError) {
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
            quinn::ConnectionError::ConnectionClosed(_) => {
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
    ) -> Option<tokio::task::JoinHandle<()>> {
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
        Some(
            self.rt
                .spawn(self.clone().connect_link(name.to_owned(), addr)),
        )
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
                    tokio::time::sleep(Duration::from_millis(100)).await
                }
                Err(_) => break,
            }
        }
        self.table.lock().pending.remove(&peer);
    }

    /// Initiator side. `Err(Some(reason))`: the peer refused; `Err(None)`: it failed.
    async fn handshake_out(
        self: &Arc<Self>,
        peer: &str,
        addr: SocketAddr,
    ) -> Result<(), Option<String>> {
        let hs = self.cfg.handshake_timeout;
        let deadline = Instant::now() + hs;
        let connecting = self
            .endpoint
            .connect_with(self.link_client.clone(), addr, tls::SERVER_NAME)
            .map_err(|_| None)?;
        let conn = match tokio::time::timeout(hs, connecting).await {
            Ok(Ok(c)) => c,
            Ok(Err(e)) => {
                self.auth_failed(addr, &e);
                return Err(None);
            }
            Err(_) => return Err(None),
        };
        let left = deadline.saturating_duration_since(Instant::now());
        let (mut send, mut recv) = match tokio::time::timeout(left, conn.open_bi()).await {
            Ok(Ok(s)) => s,
            _ => {
                conn.close(0u32.into(), b"handshake failed");
                return Err(None);
            }
        };
        if write_frame(&mut send, &self.hello()).await.is_err() {
            conn.close(0u32.into(), b"handshake failed");
            return Err(None);
        }
        let (h, dec, rest) = match read_hello(&mut recv, deadline).await {
            Ok(HelloOutcome::Hello(h, dec, rest)) => (h, dec, rest),
            Ok(HelloOutcome::Refused(why)) => {
                conn.close(0u32.into(), b"refused");
                return Err(Some(why));
            }
            Err(_) => {
                conn.close(0u32.into(), b"handshake failed");
                return Err(None);
            }
        };
        if h.node != peer {
            refuse(
                &conn,
                &mut send,
                ErrorCode::Malformed,
                "HELLO names a node other than the directory's",
            )
            .await;
            return Err(None);
        }
        let grant = self.learn_permissions(&conn, h.permissions.as_deref());
        let mut t = self.table.lock();
        if t.stopped || t.links.contains_key(peer) {
            drop(t);
            conn.close(0u32.into(), b"duplicate link");
            return Ok(());
        }
        self.install(&mut t, conn, (send, recv), h, (dec, rest), grant);
        Ok(())
    }

    pub(super) async fn accept_loop(self: Arc<Self>) {
        let mut stop = self.stop.clone();
        loop {
            let incoming = tokio::select! {
                i = self.endpoint.accept() => i,
                _ = stop.wait_for(|s| *s) => None,
            };
            let Some(incoming) = incoming else { break };
            let admit = {
                let mut t = self.table.lock();
                let ok = !t.stopped
                    && t.handshakes < MAX_HANDSHAKES
                    && t.links.len() + t.handshakes < MAX_CONNECTIONS;
                if ok {
                    t.handshakes += 1;
                }
                ok
            };
            if !admit {
                incoming.refuse();
                continue;
            }
            let me = self.clone();
            self.rt.spawn(async move {
                me.handshake_in(incoming).await;
                me.table.lock().handshakes -= 1;
            });
        }
    }

    /// Acceptor side: the whole exchange bounded by the handshake timeout.
    async fn handshake_in(self: &Arc<Self>, incoming: quinn::Incoming) {
        let hs = self.cfg.handshake_timeout;
        let deadline = Instant::now() + hs;
        let from = peer_address(incoming.remote_address());
        let conn = match tokio::time::timeout(hs, incoming).await {
            Ok(Ok(c)) => c,
            Ok(Err(e)) => {
                self.auth_failed(from, &e);
                return;
            }
            Err(_) => return,
        };
        let left = deadline.saturating_duration_since(Instant::now());
        let (mut send, mut recv) = match tokio::time::timeout(left, conn.accept_bi()).await {
            Ok(Ok(s)) => s,
            _ => {
                conn.close(0u32.into(), b"no HELLO");
                return;
            }
        };
        let (h, dec, rest) = match read_hello(&mut recv, deadline).await {
            Ok(HelloOutcome::Hello(h, dec, rest)) => (h, dec, rest),
            _ => {
                conn.close(0u32.into(), b"no HELLO");
                return;
            }
        };
        if !valid_node_name(&h.node) || h.node == self.name {
            refuse(
                &conn,
                &mut send,
                ErrorCode::PermissionDenied,
                "invalid or clashing node name",
            )
            .await;
            return;
        }
        let refusal = {
            let mut t = self.table.lock();
            if t.stopped {
                Some("shutting down")
            } else if t.links.contains_key(&h.node) || t.accepting.contains(&h.node) {
                Some("duplicate link: a link to you is already up")
            } else if cooling(&t, &h.node) {
                Some("our link to you was closed a moment ago")
            } else if t.pending.contains(&h.node) && self.name.as_str() < h.node.as_str() {
                Some("duplicate link: my connection to you wins (smaller name)")
            } else {
                t.accepting.insert(h.node.clone());
                None
            }
        };
        if let Some(why) = refusal {
            refuse(&conn, &mut send, ErrorCode::Internal, why).await;
            return;
        }
        let grant = self.learn_permissions(&conn, h.permissions.as_deref());
        let replied = write_frame(&mut send, &self.hello()).await;
        let mut t = self.table.lock();
        t.accepting.remove(&h.node);
        if replied.is_err() || t.stopped {
            drop(t);
            conn.close(0u32.into(), b"handshake failed");
            return;
        }
        let (remote, directory) = (conn.remote_address(), h.directory);
        self.install(&mut t, conn, (send, recv), h, (dec, rest), grant);
        drop(t);
        self.watch_host_of(remote, directory);
    }

    /// Our HELLO, with our permissions document when SROS2 is on.
    fn hello(&self) -> crate::wire::Frame {
        let doc = (self.cfg.permissions.as_ref()).map(|p| Bytes::copy_from_slice(&p.document));
        hello(&self.name, doc, self.cfg.directory_port)
    }

    /// Hand an authenticated peer's permissions document (or its absence) to `learn`, before
    /// its link exists (docs/network.md section 5), and say when what it learned ends. Nothing
    /// without SROS2 or for a peer the handshake did not authenticate.
    fn learn_permissions(&self, conn: &quinn::Connection, doc: Option<&[u8]>) -> Option<Expiry> {
        let p = self.cfg.permissions.as_ref()?;
        match self.identity.peer_subject(&PeerCerts::of(conn)) {
            Subject::Authenticated(s) => (p.learn)(&s, doc).map(Expiry::from),
            Subject::Anonymous => None,
        }
    }

    /// Make the link of a connection whose HELLOs have been exchanged: the peer's `hello`,
    /// the control stream's decoder and what it read past the HELLO, and when the grant the
    /// peer sent runs out (`learn_permissions`).
    fn install(
        self: &Arc<Self>,
        t: &mut Table,
        conn: quinn::Connection,
        (send, recv): (quinn::SendStream, quinn::RecvStream),
        hello: PeerHello,
        (dec, rest): (FrameDecoder, Bytes),
        grant: Option<Expiry>,
    ) {
        let (name, peer_max) = (hello.node, hello.max_frame);
        let Ok(tx) = runtime::dispatcher() else {
            conn.close(0u32.into(), b"no dispatcher");
            return;
        };
        let certs = PeerCerts::of(&conn);
        let subject = self.identity.peer_subject(&certs);
        if subject == Subject::Anonymous && self.identity.authenticated() {
            let addr = peer_address(conn.remote_address());
            self.log_once(
                format!("anonymous {addr}"),
                &format!(
                    "security: admitted the peer at {addr} unauthenticated (no certificate of \
                     our identity CA; the governance allows unauthenticated participants): it \
                     may use only topics without access control"
                ),
            );
        }
        if let Some(end) = first([self.identity.certificates_end(&certs, &subject), grant]) {
            let task =
                expiry::close_when_due(Arc::downgrade(self), conn.clone(), name.clone(), end);
            self.rt.spawn(task);
        }
        let id = PeerIdentity {
            name: name.clone(),
            // Not attested across hosts and not used by the ACL: a remote peer is the
            // principal its handshake proved (docs/network.md section 5).
            uid: nix::unistd::getuid().as_raw(),
            gid: nix::unistd::getgid().as_raw(),
            pid: 0,
            remote: Some(subject),
        };
        let link = Arc::new(QuicLink::new(
            id,
            conn,
            send,
            peer_max,
            self.rt.clone(),
            self.cfg.write_timeout,
            self.cfg.queue_bytes,
            self.handler.clone(),
            Arc::downgrade(self),
        ));
        t.links.insert(name, link.clone());
        t.live += 1;
        self.rt.spawn(link::read_loop(link, recv, dec, rest, tx));
    }
}
