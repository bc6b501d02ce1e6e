//! Binds the graph to the link layer: a `LinkHandler` that turns a transport's links into
//! mounts, and `Discovery::Host` = a `HostTransport` in the rendezvous directory (plus a
//! `QuicTransport` to other hosts when the network is on).

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Weak};

use parking_lot::Mutex;

use super::{attach, detach, on_frame};
use crate::error::Error;
use crate::link::{HostTransport, Link, LinkHandler, TransportConfig};
use crate::peers::{link_error, LinkId};
use crate::state::GraphInner;
use crate::wire::frame::Frame;

/// The graph as a transport's `LinkHandler`. Holds the graph weakly: a transport never keeps a
/// graph alive.
pub struct GraphHandler {
    graph: Weak<GraphInner>,
    ids: Mutex<HashMap<usize, LinkId>>,
}

fn key(link: &Arc<dyn Link>) -> usize {
    Arc::as_ptr(link) as *const () as usize
}

impl GraphHandler {
    pub(crate) fn new(g: &Arc<GraphInner>) -> Arc<GraphHandler> {
        Arc::new(GraphHandler {
            graph: Arc::downgrade(g),
            ids: Mutex::new(HashMap::new()),
        })
    }
}

impl LinkHandler for GraphHandler {
    fn on_up(&self, link: Arc<dyn Link>) {
        let Some(g) = self.graph.upgrade() else {
            link.close();
            return;
        };
        let k = key(&link);
        if let Ok(id) = attach(&g, link) {
            self.ids.lock().insert(k, id);
        }
    }

    fn on_frame(&self, link: &Arc<dyn Link>, frame: Frame) {
        let id = self.ids.lock().get(&key(link)).copied();
        if let (Some(id), Some(g)) = (id, self.graph.upgrade()) {
            on_frame(&g, id, frame);
        }
    }

    fn on_down(&self, link: &Arc<dyn Link>) {
        let id = self.ids.lock().remove(&key(link));
        if let (Some(id), Some(g)) = (id, self.graph.upgrade()) {
            detach(&g, id);
        }
    }
    /// A delivery lands in its target's ring (`Vertex::land`), which never waits.
    fn deliveries_never_block(&self) -> bool {
        true
    }
}

/// `Discovery::Host`: join the rendezvous directory `dir` (and `cfg`'s scope of the abstract
/// namespace). Returns the graph's handler, which the network's transport feeds too
/// (`start_network`), so a remote graph is mounted like a local one.
pub(crate) fn start_host(
    g: &Arc<GraphInner>,
    dir: &Path,
    cfg: TransportConfig,
) -> Result<Arc<GraphHandler>, Error> {
    let handler = GraphHandler::new(g);
    let t = HostTransport::start_with(dir, &g.name, handler.clone(), cfg).map_err(link_error)?;
    g.peers.add_transport(Box::new(t));
    Ok(handler)
}

/// With the network on: reach other hosts over QUIC (the `quic` feature).
#[cfg(feature = "quic")]
pub(crate) fn start_network(
    g: &Arc<GraphInner>,
    dir: &Path,
    handler: Arc<GraphHandler>,
    cfg: crate::link::QuicConfig,
) -> Result<(), Error> {
    let q = crate::link::QuicTransport::start(dir, &g.name, handler, cfg).map_err(link_error)?;
    g.peers.add_transport(Box::new(q));
    Ok(())
}
