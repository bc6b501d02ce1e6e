//! Two engines on loopback for the tests of what runs on them (the links' sending side, the
//! links, the HELLO exchange): a server whose connections go to its `on_accept`, and a client
//! that accepts nothing, both with one self-signed identity and a link's transport settings.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use super::{Conn, Engine, OnAccept, Watcher};
use crate::link::quic::tls;

pub(crate) struct TestEngines {
    pub server: Engine,
    pub client: Engine,
    id: tls::Identity,
    transport: Arc<quinn_proto::TransportConfig>,
}

impl TestEngines {
    /// Bind both engines, each for at most `max` connections.
    pub(crate) fn new(max: usize, on_accept: OnAccept) -> TestEngines {
        let transport = tls::transport(Duration::from_secs(5), Duration::from_secs(1));
        let id = tls::Identity::self_signed().unwrap();
        let sc = tls::server_config(&id, tls::ALPN_LINK, transport.clone()).unwrap();
        let loopback = SocketAddr::from(([127, 0, 0, 1], 0));
        let server = Engine::bind(loopback, Some(sc), max, on_accept).unwrap();
        let client = Engine::bind(loopback, None, max, Box::new(|_| None)).unwrap();
        TestEngines {
            server,
            client,
            id,
            transport,
        }
    }

    /// A connection from the client to the server, watched by `watcher` (its handshake under
    /// way: the caller waits for what it needs).
    pub(crate) fn connect(&self, watcher: Arc<dyn Watcher>) -> Arc<Conn> {
        let cc = tls::client_config(&self.id, tls::ALPN_LINK, self.transport.clone()).unwrap();
        let to = self.server.local_addr().unwrap();
        self.client
            .connect(cc, to, tls::SERVER_NAME, watcher)
            .unwrap()
    }
}
