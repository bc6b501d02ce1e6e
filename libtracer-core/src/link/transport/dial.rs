//! Reaching the other graphs: the sockets found in the directory, a connection to one of them
//! (a stale socket removed, a refusal retried a few times), and the redial thread that tries
//! again with a backoff a peer that could not be reached or whose link was lost.

use std::io;
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::time::Duration;

use super::handshake::Unlinked;
use super::socket::{connect_bounded, probe_live};
use super::Inner;
use crate::link::{abstract_names, valid_node_name};

/// How a connection attempt ended.
#[derive(Clone, Copy, PartialEq, Debug)]
pub(super) enum Dialed {
    /// A link to the peer is up (ours, or the one it made to us).
    Linked,
    /// No live graph behind the name (no socket, or a stale one, removed): nothing to retry.
    Gone,
    /// It failed while the peer may be alive: try again later.
    Retry,
}

impl Inner {
    /// Names of the other graphs: the sockets in the directory, and the listeners of our scope
    /// in the abstract namespace (graphs of other containers and users), each once.
    pub(super) fn scan(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(&self.dir)
            .into_iter()
            .flatten()
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                e.file_name()
                    .to_str()
                    .and_then(|n| n.strip_suffix(".sock"))
                    .map(str::to_owned)
            })
            .collect();
        if let Some(scope) = &self.cfg.scope {
            names.extend(scope.listeners());
        }
        names.retain(|n| n != &self.name && valid_node_name(n));
        names.sort();
        names.dedup();
        names
    }

    /// Connect to `peer`: through its socket in the directory when there is one, else through
    /// its name in our scope of the abstract namespace. `NotFound` when neither is there.
    fn dial(&self, peer: &str) -> io::Result<UnixStream> {
        let path = self.dir.join(format!("{peer}.sock"));
        let in_dir = std::fs::symlink_metadata(&path).is_ok();
        match self.cfg.scope.as_ref().and_then(|s| s.listener(peer)) {
            Some(name) if !in_dir => {
                abstract_names::connect_bounded(&name, self.cfg.handshake_timeout).map_err(|e| {
                    // Nobody holds the name: the graph is gone (nothing stale is left behind).
                    if e.kind() == io::ErrorKind::ConnectionRefused {
                        io::ErrorKind::NotFound.into()
                    } else {
                        e
                    }
                })
            }
            _ => connect_bounded(&path, self.cfg.handshake_timeout),
        }
    }

    /// Connect to `peer` (registered in `pending` by the caller) and bring the link up; a
    /// refusal (the peer holds a link to us that is about to be found dead, or is itself
    /// connecting) is retried a few times.
    pub(super) fn connect_to(self: &Arc<Self>, peer: &str) -> Dialed {
        let path = self.dir.join(format!("{peer}.sock"));
        let mut outcome = Dialed::Retry;
        for attempt in 0..10 {
            {
                let table = self.table.lock();
                if table.links.contains_key(peer) {
                    outcome = Dialed::Linked;
                    break;
                }
                if table.stopped {
                    outcome = Dialed::Gone;
                    break;
                }
            }
            let stream = match self.dial(peer) {
                Ok(s) => s,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    outcome = Dialed::Gone;
                    break;
                }
                Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
                    if let Ok(false) = probe_live(&path, self.cfg.handshake_timeout) {
                        let _ = std::fs::remove_file(&path);
                        outcome = Dialed::Gone;
                    }
                    break;
                }
                // The queue stayed full (a stopped or very busy graph), or no descriptor.
                Err(_) => break,
            };
            match self.handshake_out(stream, peer) {
                Ok(()) => {
                    outcome = Dialed::Linked;
                    break;
                }
                Err(Unlinked::Foreign) => {
                    outcome = Dialed::Gone;
                    break;
                }
                Err(Unlinked::Refused) if attempt < 9 => {
                    std::thread::sleep(Duration::from_millis(100))
                }
                Err(_) => break,
            }
        }
        self.table.lock().pending.remove(peer);
        outcome
    }

    /// Try `peer` again after the backoff for `failed` attempts, from the redial thread (made
    /// now if none runs).
    pub(super) fn redial(self: &Arc<Self>, peer: &str, failed: u32) {
        if !self.redial.schedule(peer, failed) {
            return;
        }
        let inner = self.clone();
        let work = move || {
            while let Some((peer, failed)) = inner.redial.next() {
                {
                    let mut table = inner.table.lock();
                    if table.stopped || table.links.contains_key(&peer) {
                        continue;
                    }
                    // Seen by the tie-break, as the connections made at start are.
                    table.pending.insert(peer.clone());
                }
                if inner.connect_to(&peer) == Dialed::Retry {
                    inner.redial.schedule(&peer, failed + 1);
                }
            }
        };
        if std::thread::Builder::new()
            .name("tracer-redial".into())
            .spawn(work)
            .is_err()
        {
            self.redial.thread_failed();
        }
    }
}
