//! The transport's links on the runtime-free engine (stage 2 of docs/network.md section 4a):
//! the engine's socket takes the links (its port the one the directory lists), each connection is greeted by `ehello.rs`'s `Greeting` under the
//! transport's rules of `handshake.rs` (the bounds on handshakes and connections, the table,
//! the connect race, the cooldown, SROS2's permissions and the credentials' end, the log of a
//! peer refused by TLS), and its link is an `EngineLink` whose callbacks run on the Unix
//! links' workers. The connect attempts and their retries are the peer loops', run on the
//! chores' thread (`chores.rs`) with the directory clients.

use std::net::SocketAddr;
use std::sync::{Arc, OnceLock, Weak};
use std::time::{Duration, Instant};

use bytes::Bytes;
use parking_lot::Mutex;
use quinn_proto::{Connection, StreamId};

use super::ehello::{Ended, Greeting, Side};
use super::elink::{EngineLink, Made};
use super::engine::{Conn, Engine, Watcher};
use super::handshake::{expected_peer, may_install_ours};
use super::hello::PeerHello;
use super::link::{ShedCounts, LINGER};
use super::peer_cert::PeerCerts;
use super::{peer_address, tls, Inner, MAX_CONNECTIONS};
use crate::link::strand::Hooks;
use crate::link::{Link, LinkError};
use crate::wire::FrameDecoder;

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
pub(super) fn wait_lingered(links: &[Arc<EngineLink>]) {
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

    /// What makes a greeted connection's link (`ehello::MakeLink`), `install`'s work on the
    /// engine.
    fn make_link(self: &Arc<Self>, side: Side) -> super::ehello::MakeLink {
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
    ) -> Option<Arc<EngineLink>> {
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
        let link = EngineLink::start(made, self.handler.clone(), self.engine_hooks());
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
    fn engine_hooks(self: &Arc<Self>) -> Hooks<EngineLink> {
        let (me, done) = (Arc::downgrade(self), Arc::downgrade(self));
        Hooks {
            after_up: None,
            on_exit: Some(Box::new(move |l: &Arc<EngineLink>| {
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

/// A live link of a `QuicTransport` (`link_to`): its counts and test hooks.
#[derive(Clone)]
pub struct QuicLinkHandle(pub(super) Arc<EngineLink>);

impl QuicLinkHandle {
    /// The link as the handler sees it.
    pub fn link(&self) -> Arc<dyn Link> {
        self.0.clone()
    }

    /// What the sending side gave up or sent as datagrams, and what the receiving side
    /// dropped as stale.
    pub fn shed(&self) -> ShedCounts {
        self.0.shed()
    }

    pub fn is_closed(&self) -> bool {
        self.0.is_closed()
    }

    /// The peer's UDP address.
    pub fn remote_address(&self) -> SocketAddr {
        self.0.remote_address()
    }

    /// Write `bytes` as they are on the control stream (tests send malformed input so).
    pub fn send_raw(&self, bytes: &[u8]) -> Result<(), LinkError> {
        self.0.send_raw(bytes)
    }

    /// Send `bytes` as they are as one datagram (tests send malformed input so).
    pub fn send_raw_datagram(&self, bytes: &[u8]) -> Result<(), LinkError> {
        self.0.send_raw_datagram(bytes)
    }
}
