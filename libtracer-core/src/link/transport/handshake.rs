//! The HELLO exchange of a new connection, on either side, and the installing of the link
//! that follows: its entry in the table, its reading on the event loop, and what happens to the
//! table (and the redial) when it goes.

use std::io;
use std::os::unix::net::UnixStream;
use std::sync::{mpsc, Arc};
use std::time::Instant;

use super::socket::peer_identity;
use super::{HostUsers, Inner, Table};
use crate::link::strand::Hooks;
use crate::link::unix::{
    hello, read_hello, refuse, write_frame, HelloOutcome, Leftover, PeerHello, ShmSend, UnixLink,
};
use crate::link::unix_rx::NewLink;
use crate::link::{valid_node_name, Link, PeerIdentity};
use crate::wire::ErrorCode;

/// Why an outgoing handshake did not bring a link up.
pub(super) enum Unlinked {
    /// The peer refused for now (a duplicate link about to go, its own connection to us wins).
    Refused,
    /// One side does not link to the other's user (`HostUsers::Own`): not to be tried again.
    Foreign,
    /// It failed (timeout, a bad answer).
    Failed,
}

/// The refusal a graph of another user gets from one that links to its own user's only.
const FOREIGN: &str =
    "this graph links only to graphs of its own user (RMW_TRACER_HOST_USERS=self)";

impl Inner {
    /// Whether a local peer with these kernel credentials may link to us.
    fn admits(&self, id: &PeerIdentity) -> bool {
        self.cfg.users == HostUsers::All || id.uid == nix::unistd::geteuid().as_raw()
    }

    /// Initiator side.
    pub(super) fn handshake_out(
        self: &Arc<Self>,
        stream: UnixStream,
        peer: &str,
    ) -> Result<(), Unlinked> {
        let _ = stream.set_write_timeout(Some(self.cfg.handshake_timeout));
        write_frame(&stream, &hello(&self.name, self.cfg.accept_shm))
            .map_err(|_| Unlinked::Failed)?;
        let (h, dec, left) = match read_hello(&stream, self.cfg.handshake_timeout) {
            Ok(HelloOutcome::Hello(h, dec, left)) => (h, dec, left),
            Ok(HelloOutcome::Refused(ErrorCode::PermissionDenied)) => {
                return Err(Unlinked::Foreign)
            }
            Ok(HelloOutcome::Refused(_)) => return Err(Unlinked::Refused),
            Err(_) => return Err(Unlinked::Failed),
        };
        if h.node != peer {
            refuse(
                &stream,
                ErrorCode::Malformed,
                "HELLO names a node other than the socket's",
            );
            return Err(Unlinked::Failed);
        }
        let id = peer_identity(&stream, h.node.clone()).map_err(|_| Unlinked::Failed)?;
        if !self.admits(&id) {
            refuse(&stream, ErrorCode::PermissionDenied, FOREIGN);
            return Err(Unlinked::Foreign);
        }
        let (up_tx, up_rx) = mpsc::sync_channel(1);
        {
            let mut table = self.table.lock();
            if table.stopped || table.links.contains_key(peer) {
                // The tie-break makes the second case unreachable; keep the link that exists.
                drop(table);
                let _ = stream.shutdown(std::net::Shutdown::Both);
                return Ok(());
            }
            self.install(&mut table, stream, id, &h, (dec, left), Some(up_tx))
                .map_err(|_| Unlinked::Failed)?;
        }
        // `on_up` runs on a worker; the caller (`start_with`) promises it has
        // run, so that the peer is mounted when the transport's start returns. Bounded: a
        // handler that hangs in `on_up` costs one handshake timeout.
        let _ = up_rx.recv_timeout(self.cfg.handshake_timeout);
        Ok(())
    }
    /// Acceptor side, on the event loop once the connection's HELLO is in: refuse, or answer
    /// and install the link.
    pub(crate) fn accept_hello(
        self: &Arc<Self>,
        stream: UnixStream,
        h: PeerHello,
        dec: crate::wire::FrameDecoder,
        left: Leftover,
    ) {
        let _ = stream.set_write_timeout(Some(self.cfg.handshake_timeout));
        if !valid_node_name(&h.node) || h.node == self.name {
            refuse(
                &stream,
                ErrorCode::PermissionDenied,
                "invalid or clashing node name",
            );
            return;
        }
        let Ok(id) = peer_identity(&stream, h.node.clone()) else {
            return;
        };
        if !self.admits(&id) {
            refuse(&stream, ErrorCode::PermissionDenied, FOREIGN);
            return;
        }
        let mut table = self.table.lock();
        if table.stopped {
            return;
        }
        if table.links.contains_key(&h.node) {
            drop(table);
            refuse(
                &stream,
                ErrorCode::Internal,
                "duplicate link: a link to you is already up",
            );
            return;
        }
        if table.pending.contains(&h.node) && self.name.as_str() < h.node.as_str() {
            drop(table);
            refuse(
                &stream,
                ErrorCode::Internal,
                "duplicate link: my connection to you wins (smaller name)",
            );
            return;
        }
        // Reply while holding the table so no second connection from the peer slips in.
        if write_frame(&stream, &hello(&self.name, self.cfg.accept_shm)).is_err() {
            return;
        }
        let _ = self.install(&mut table, stream, id, &h, (dec, left), None);
    }

    fn install(
        self: &Arc<Self>,
        table: &mut Table,
        stream: UnixStream,
        id: PeerIdentity,
        hello: &PeerHello,
        // What the handshake read past the HELLO: the decoder's state and the bytes after.
        (dec, left): (crate::wire::FrameDecoder, Leftover),
        // Told once the link's `on_up` has returned.
        up: Option<mpsc::SyncSender<()>>,
    ) -> io::Result<()> {
        stream.set_write_timeout(Some(self.cfg.write_timeout))?;
        stream.set_read_timeout(None)?;
        let name = id.name.clone();
        // References only to a peer that maps them and is of our own uid: a segment holds
        // samples of every topic of this process, and another user may be granted only some.
        let shm = ShmSend {
            enabled: hello.shm.maps && id.uid == nix::unistd::geteuid().as_raw(),
            retire: hello.shm.retire,
            max_out: self.cfg.shm_refs_per_link,
        };
        let link = UnixLink::new(id, stream, hello.max_frame, Instant::now(), shm);
        table.links.insert(name, link.clone());
        table.live += 1;
        let weak = Arc::downgrade(self);
        let done = weak.clone();
        crate::link::unix_rx::add_link(NewLink {
            link,
            dec,
            left,
            handler: self.handler.clone(),
            ping: self.cfg.ping_interval,
            dead_after: self.cfg.dead_after,
            hooks: Hooks {
                after_up: Some(Box::new(move || {
                    if let Some(up) = up {
                        let _ = up.send(());
                    }
                })),
                on_exit: Some(Box::new(move |l| {
                    if let Some(inner) = weak.upgrade() {
                        let mut t = inner.table.lock();
                        let peer = &l.peer().name;
                        if t.links.get(peer).is_some_and(|x| Arc::ptr_eq(x, l)) {
                            t.links.remove(peer);
                        }
                        // The peer may live on (a liveness check closed the link, on either
                        // side): link again while its socket is live. A peer that exited has
                        // removed its socket, or left a stale one, and is not tried again.
                        let again = !t.stopped && !t.links.contains_key(peer);
                        drop(t);
                        if again {
                            inner.redial(peer, 0);
                        }
                    }
                })),
                on_done: Some(Box::new(move || {
                    if let Some(inner) = done.upgrade() {
                        inner.table.lock().live -= 1;
                        inner.gone.notify_all();
                    }
                })),
            },
        });
        Ok(())
    }
}
