//! In-process links: a fabric that every joining node is linked to every other node of, like the
//! Unix transport's rendezvous directory but without sockets. Frames still go through the codec
//! and a `FrameDecoder`, so size bounds and malformed-input handling are the real ones.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;

use parking_lot::Mutex;

use super::{
    close_handler_failed, close_malformed, own_identity, run_callback, valid_node_name, Link,
    LinkError, LinkHandler, PeerIdentity,
};
use crate::wire::parts::Joiner;
use crate::wire::{encode_parts, parts, Frame, FrameDecoder, MAX_FRAME};

enum Msg {
    Bytes(Vec<u8>),
    Close,
}

/// One end of an in-process link.
pub struct MemoryLink {
    peer: PeerIdentity,
    to_peer: Sender<Msg>,
    to_self: Sender<Msg>,
    closed: AtomicBool,
}

impl MemoryLink {
    /// Hand the peer these bytes as if they had come over a wire (conformance tests use it to
    /// send malformed input).
    pub fn send_raw(&self, bytes: &[u8]) -> Result<(), LinkError> {
        if self.closed.load(Ordering::Acquire) {
            return Err(LinkError::Closed(self.peer.name.clone()));
        }
        self.to_peer
            .send(Msg::Bytes(bytes.to_vec()))
            .map_err(|_| LinkError::Closed(self.peer.name.clone()))
    }
}

impl Link for MemoryLink {
    fn send(&self, frame: &Frame) -> Result<(), LinkError> {
        if self.closed.load(Ordering::Acquire) {
            return Err(LinkError::Closed(self.peer.name.clone()));
        }
        // A message in parts goes as one hand-over, so parts of two never interleave.
        let bytes = match parts::split(frame, MAX_FRAME)? {
            Some(parts) => {
                let mut all = Vec::new();
                for p in &parts {
                    all.extend_from_slice(&encode_parts(p, MAX_FRAME)?.to_vec());
                }
                all
            }
            None => encode_parts(frame, MAX_FRAME)?.to_vec(),
        };
        self.to_peer
            .send(Msg::Bytes(bytes))
            .map_err(|_| LinkError::Closed(self.peer.name.clone()))
    }
    fn peer(&self) -> &PeerIdentity {
        &self.peer
    }
    fn close(&self) {
        if !self.closed.swap(true, Ordering::AcqRel) {
            // Both readers stop: ours reports on_down here, the peer's sees the close as EOF.
            let _ = self.to_self.send(Msg::Close);
            let _ = self.to_peer.send(Msg::Close);
        }
    }
}

struct NodeInner {
    name: String,
    handler: Arc<dyn LinkHandler>,
    links: Mutex<HashMap<String, Arc<MemoryLink>>>,
    readers: Mutex<Vec<JoinHandle<()>>>,
}

/// A set of in-process nodes, each linked to every other.
#[derive(Clone, Default)]
pub struct MemoryFabric {
    nodes: Arc<Mutex<HashMap<String, Weak<NodeInner>>>>,
}

/// Membership of one node in a fabric; dropping it (or `shutdown`) closes its links.
pub struct MemoryNode {
    inner: Arc<NodeInner>,
    fabric: MemoryFabric,
}

impl MemoryFabric {
    pub fn new() -> Self {
        Self::default()
    }

    /// Join as `name`: a link to every node already in the fabric comes up (on_up on both
    /// sides, from the links' reader threads).
    pub fn join(&self, name: &str, handler: Arc<dyn LinkHandler>) -> Result<MemoryNode, LinkError> {
        if !valid_node_name(name) {
            return Err(LinkError::InvalidName(name.to_owned()));
        }
        let mut nodes = self.nodes.lock();
        nodes.retain(|_, w| w.strong_count() > 0);
        if nodes.contains_key(name) {
            return Err(LinkError::NameTaken(name.to_owned()));
        }
        let me = Arc::new(NodeInner {
            name: name.to_owned(),
            handler,
            links: Mutex::new(HashMap::new()),
            readers: Mutex::new(Vec::new()),
        });
        let others: Vec<Arc<NodeInner>> = nodes.values().filter_map(Weak::upgrade).collect();
        nodes.insert(name.to_owned(), Arc::downgrade(&me));
        drop(nodes);
        // On an error below, dropping `node` leaves the fabric and closes the links made so far.
        let node = MemoryNode {
            inner: me.clone(),
            fabric: self.clone(),
        };
        for other in others {
            let (tx_me, rx_me) = channel();
            let (tx_other, rx_other) = channel();
            let mine = Arc::new(MemoryLink {
                peer: own_identity(&other.name),
                to_peer: tx_other.clone(),
                to_self: tx_me.clone(),
                closed: AtomicBool::new(false),
            });
            let theirs = Arc::new(MemoryLink {
                peer: own_identity(&me.name),
                to_peer: tx_me,
                to_self: tx_other,
                closed: AtomicBool::new(false),
            });
            // A reader that cannot be started closes its link: the other end's reader (if it
            // runs) sees the close and reports on_down, as for any link that drops.
            if let Err(e) = spawn_reader(&me, mine.clone(), rx_me) {
                mine.close();
                return Err(e.into());
            }
            if let Err(e) = spawn_reader(&other, theirs.clone(), rx_other) {
                theirs.close();
                return Err(e.into());
            }
        }
        Ok(node)
    }
}

fn spawn_reader(
    node: &Arc<NodeInner>,
    link: Arc<MemoryLink>,
    rx: Receiver<Msg>,
) -> std::io::Result<()> {
    // Registered before the reader runs: it unregisters the link when it ends.
    let key = link.peer.name.clone();
    node.links.lock().insert(key.clone(), link.clone());
    let weak = Arc::downgrade(node);
    let handler = node.handler.clone();
    let name = format!("tracer-mem-{key}");
    let mine = link.clone();
    let handle = match std::thread::Builder::new()
        .name(name)
        .spawn(move || run_reader(link, rx, handler, weak))
    {
        Ok(h) => h,
        Err(e) => {
            let mut links = node.links.lock();
            if links.get(&key).is_some_and(|l| Arc::ptr_eq(l, &mine)) {
                links.remove(&key);
            }
            return Err(e);
        }
    };
    let mut readers = node.readers.lock();
    readers.retain(|h| !h.is_finished());
    readers.push(handle);
    Ok(())
}

fn run_reader(
    link: Arc<MemoryLink>,
    rx: Receiver<Msg>,
    handler: Arc<dyn LinkHandler>,
    node: Weak<NodeInner>,
) {
    let dyn_link: Arc<dyn Link> = link.clone();
    let up = run_callback(|| handler.on_up(dyn_link.clone()));
    if !up {
        close_handler_failed(&*link);
    }
    let mut dec = FrameDecoder::new(MAX_FRAME);
    let mut joiner = Joiner::default();
    'outer: while let Some(Ok(msg)) = up.then(|| rx.recv()) {
        let Msg::Bytes(bytes) = msg else { break };
        let mut input = &bytes[..];
        loop {
            let fed = match dec.feed(&mut input) {
                Ok(Some(frame)) => match joiner.take(frame) {
                    Ok(None) => continue,
                    joined => joined,
                },
                other => other,
            };
            match fed {
                Ok(Some(Frame::Ping { nonce })) => {
                    let _ = link.send(&Frame::Pong { nonce });
                }
                Ok(Some(Frame::Pong { .. })) => {}
                Ok(Some(Frame::Hello { .. })) => {
                    close_malformed(&*link, "HELLO after the handshake");
                    break 'outer;
                }
                Ok(Some(frame)) => {
                    if !run_callback(|| handler.on_frame(&dyn_link, frame)) {
                        close_handler_failed(&*link);
                        break 'outer;
                    }
                }
                Ok(None) if input.is_empty() => break,
                Ok(None) => {}
                Err(e) => {
                    close_malformed(&*link, &e.to_string());
                    break 'outer;
                }
            }
        }
    }
    link.closed.store(true, Ordering::Release);
    if let Some(node) = node.upgrade() {
        let mut links = node.links.lock();
        if links
            .get(&link.peer.name)
            .is_some_and(|l| Arc::ptr_eq(l, &link))
        {
            links.remove(&link.peer.name);
        }
    }
    let _ = run_callback(|| handler.on_down(&dyn_link));
}

impl MemoryNode {
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The live link to `peer`, if any.
    pub fn link_to(&self, peer: &str) -> Option<Arc<MemoryLink>> {
        self.inner.links.lock().get(peer).cloned()
    }

    /// Names of the peers with a live link.
    pub fn peers(&self) -> Vec<String> {
        let mut v: Vec<String> = self.inner.links.lock().keys().cloned().collect();
        v.sort();
        v
    }

    /// Leave the fabric: close every link and wait for their `on_down` (except when called from
    /// one of this node's own reader threads, which cannot wait for itself).
    pub fn shutdown(&self) {
        {
            let mut nodes = self.fabric.nodes.lock();
            if nodes
                .get(&self.inner.name)
                .is_some_and(|w| std::ptr::eq(w.as_ptr(), Arc::as_ptr(&self.inner)))
            {
                nodes.remove(&self.inner.name);
            }
        }
        let links: Vec<Arc<MemoryLink>> = self.inner.links.lock().values().cloned().collect();
        for l in links {
            l.close();
        }
        let me = std::thread::current().id();
        let handles: Vec<JoinHandle<()>> = std::mem::take(&mut *self.inner.readers.lock());
        for h in handles {
            if h.thread().id() != me {
                let _ = h.join();
            }
        }
    }
}

impl Drop for MemoryNode {
    fn drop(&mut self) {
        self.shutdown();
    }
}
