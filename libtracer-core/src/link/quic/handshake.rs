//! Making links (docs/network.md sections 3 and 4a): the engine's socket takes the links (its
//! port the one the directory lists); each connection, accepted or dialled, is greeted by
//! `hello.rs`'s `Greeting` under the transport's rules here: the bounds on handshakes in
//! progress and on connections, the connect-race rule (the smaller name's connection wins),
//! the cooldown, SROS2's permissions learned and the credentials' end, and the log line of a
//! peer refused by TLS. Its link is a `QuicLink` whose callbacks run on the Unix links'
//! workers. The connect attempts and their retries are the peer loops', run on the chores'
//! thread (`chores.rs`) with the directory clients.

use std::net::SocketAddr;
use std::sync::{Arc, OnceLock, Weak};
use std::time::{Duration, Instant};

use bytes::Bytes;
use parking_lot::Mutex;
use quinn_proto::{Connection, StreamId};

use super::engine::{Conn, Engine, Watcher};
use super::expiry::{first, Expiry};
use super::hello::{hello, Ended, Greeting, PeerHello, Side};
use super::link::{Made, QuicLink, LINGER};
use super::peer_cert::PeerCerts;
use super::{peer_address, tls, Inner, Table, AUTH_LOGGED_MAX, MAX_CONNECTIONS};
use crate::acl::Subject;
use crate::link::strand::Hooks;
use crate::link::{valid_node_name, LinkError, PeerIdentity};
use crate::wire::{ErrorCode, FrameDecoder};

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
        Some(super::chores::spawn(
            self.clone().connect_link(name.to_owned(), addr),
        ))
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

/// Where the engine's accepted connections go: the transport, once it exists.
pub(super) type Owner = Arc<OnceLock<Weak<Inner>>>;

/// The links' engine at `addr`, accepting with `server`; its connections go to the transport
/// set in the returned slot (refused until then).
pub(super) fn bind(
    addr: SocketAddr,
    server: quinn_proto::ServerConfig,
) -> Result<(Arc<Engine>, Owner), LinkError> {
    // The callbacks run on the Unix links' workers: started now, so that a failure is ours.
    crate::link::dispatch::start().map_err(super::io_err)?;
    let owner: Owner = Arc::default();
    let to = owner.clone();
    let engine = Engine::bind(
        addr,
        Some(server),
        MAX_CONNECTIONS,
        Box::new(move |c| to.get()?.upgrade()?.engine_accept(c)),
    )?;
    Ok((Arc::new(engine), owner))
}

/// The transport shuts down: wait (at most the linger, and a little) until the connections
/// of its closed engine links have closed, so that what they wrote reaches their peers.
pub(super) fn wait_lingered(links: &[Arc<QuicLink>]) {
    let deadline = Instant::now() + LINGER + Duration::from_millis(100);
    for l in links {
        while !l.lingered() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(2));
        }
    }
}

impl Inner {
    fn engine(&self) -> Option<Arc<Engine>> {
        self.engine.lock().clone()
    }

    /// The engine accepted a connection: greeted within the bounds of `handshake_begins`,
    /// else refused.
    fn engine_accept(self: &Arc<Self>, c: &Arc<Conn>) -> Option<Arc<dyn Watcher>> {
        if !self.handshake_begins() {
            return None;
        }
        let from = peer_address(c.lock().remote_address());
        // The name `admit_peer` marked as being accepted, unmarked however the greeting ends.
        let node: Arc<Mutex<Option<String>>> = Arc::default();
        let me = Arc::downgrade(self);
        let (named, gone) = (node.clone(), me.clone());
        let admit = Box::new(move |h: &PeerHello| {
            let me = gone
                .upgrade()
                .ok_or((crate::wire::ErrorCode::Internal, "shutting down".to_owned()))?;
            me.admit_peer(&h.node)
                .map_err(|(c, why)| (c, why.to_owned()))?;
            *named.lock() = Some(h.node.clone());
            Ok(())
        });
        let on_end = Box::new(move |how: Ended| {
            let Some(me) = me.upgrade() else {
                return;
            };
            if let Some(n) = node.lock().take() {
                me.table.lock().accepting.remove(&n);
            }
            me.handshake_over();
            if let Ended::Failed(Some(e)) = how {
                me.auth_failed(from, &e);
            }
        });
        let g = Greeting::new(
            Side::Acceptor,
            &self.hello(),
            Instant::now() + self.cfg.handshake_timeout,
            admit,
            self.make_link(Side::Acceptor),
        )
        .on_end(on_end);
        let g = Arc::new(g);
        let _ = g.conn.set(c.clone());
        Some(g)
    }

    /// Initiator side: `Err(Some(reason))`: the peer refused; `Err(None)`: it failed.
    pub(super) async fn handshake_out(
        self: &Arc<Self>,
        peer: &str,
        addr: SocketAddr,
    ) -> Result<(), Option<String>> {
        let engine = self.engine().ok_or(None)?;
        let (tx, rx) = tokio::sync::oneshot::channel();
        let want = peer.to_owned();
        let admit = Box::new(move |h: &PeerHello| {
            expected_peer(&want, h).map_err(|(c, why)| (c, why.to_owned()))
        });
        let hs = self.cfg.handshake_timeout;
        let g = Greeting::new(
            Side::Initiator,
            &self.hello(),
            Instant::now() + hs,
            admit,
            self.make_link(Side::Initiator),
        )
        .on_end(Box::new(move |how| {
            let _ = tx.send(how);
        }));
        let g = Arc::new(g);
        let c = engine
            .connect(self.link_client.clone(), addr, tls::SERVER_NAME, g.clone())
            .map_err(|_| None)?;
        drop(engine);
        let _ = g.conn.set(c.clone());
        c.poke();
        // The greeting ends by its deadline; the margin is for a loop that is late.
        match super::chores::timeout(hs + Duration::from_secs(1), rx).await {
            Ok(Ok(Ended::Linked | Ended::NoLink)) => Ok(()),
            Ok(Ok(Ended::Refused(why))) => Err(Some(why)),
            Ok(Ok(Ended::Failed(lost))) => {
                if let Some(e) = lost {
                    self.auth_failed(addr, &e);
                }
                Err(None)
            }
            // Our ERROR is on its way: the greeting closes once the peer has it.
            Ok(Ok(Ended::WeRefused)) => Err(None),
            Ok(Err(_)) | Err(_) => {
                c.lock().close(
                    Instant::now(),
                    0u32.into(),
                    Bytes::from_static(b"handshake failed"),
                );
                Err(None)
            }
        }
    }

    /// What makes a greeted connection's link (`hello::MakeLink`), `install`'s work on the
    /// engine.
    fn make_link(self: &Arc<Self>, side: Side) -> super::hello::MakeLink {
        let me = Arc::downgrade(self);
        Box::new(
            move |c: Arc<Conn>,
                  conn: &mut Connection,
                  h: PeerHello,
                  control: StreamId,
                  dec: FrameDecoder,
                  rest: Bytes| {
                me.upgrade()?
                    .install_engine(c, conn, h, (control, dec, rest), side)
            },
        )
    }

    /// Make the link of a connection whose HELLOs have been exchanged and put it in the
    /// table; `None` when it may not be (shut down, or a link that came up the other way).
    fn install_engine(
        self: &Arc<Self>,
        c: Arc<Conn>,
        conn: &mut Connection,
        h: PeerHello,
        (control, dec, rest): (StreamId, FrameDecoder, Bytes),
        side: Side,
    ) -> Option<Arc<QuicLink>> {
        let certs = PeerCerts::of(conn);
        let grant = self.learn_permissions(&certs, h.permissions.as_deref());
        let remote = conn.remote_address();
        let mut t = self.table.lock();
        let ok = match side {
            Side::Acceptor => {
                t.accepting.remove(&h.node);
                !t.stopped
            }
            Side::Initiator => may_install_ours(&t, &h.node),
        };
        if !ok {
            return None;
        }
        let (peer, expiry) = self.identify(&certs, remote, &h.node, grant);
        let gone = Arc::downgrade(self);
        let made = Made {
            peer,
            conn: c,
            control,
            peer_max: h.max_frame,
            dec,
            rest,
            write_timeout: self.cfg.write_timeout,
            queue_bytes: self.cfg.queue_bytes,
            expiry,
            log: Some(Arc::new(move |m: &str| {
                if let Some(me) = gone.upgrade() {
                    me.log(m);
                }
            })),
        };
        let link = QuicLink::start(made, self.handler.clone(), self.engine_hooks());
        t.links.insert(h.node.clone(), link.clone());
        t.live += 1;
        drop(t);
        if side == Side::Acceptor {
            self.watch_host_of(remote, h.directory);
        }
        Some(link)
    }

    /// What runs around an engine link's callbacks: it leaves the table before `on_down`
    /// (a link we closed puts its peer on the cooldown list), and is counted down after.
    fn engine_hooks(self: &Arc<Self>) -> Hooks<QuicLink> {
        let (me, done) = (Arc::downgrade(self), Arc::downgrade(self));
        Hooks {
            after_up: None,
            on_exit: Some(Box::new(move |l: &Arc<QuicLink>| {
                if let Some(me) = me.upgrade() {
                    me.forget(l, !l.peer_ended());
                }
            })),
            on_done: Some(Box::new(move || {
                if let Some(me) = done.upgrade() {
                    me.down_done();
                }
            })),
        }
    }
}
