//! Helpers shared by the graph tests.
#![allow(dead_code)]

pub mod net;
pub mod poll;

use std::sync::{Arc, Mutex};

use libtracer_core::wire::frame::Frame;
use libtracer_core::{
    Graph, GraphConfig, Link, LinkError, LinkId, Meta, Payload, PeerIdentity, Sample, StructEvent,
    Subject, Vertex,
};

pub fn graph(name: &str) -> Graph {
    Graph::new(GraphConfig {
        name: Some(name.into()),
        ..GraphConfig::default()
    })
    .unwrap()
}

/// The configuration of a graph that finds its peers on this host through `dir`
/// (host discovery, no network): what every multi-graph and multi-process test uses.
pub fn host_config(dir: &std::path::Path, name: &str, domain_id: u32) -> GraphConfig {
    GraphConfig {
        name: Some(name.into()),
        domain_id,
        discovery: libtracer_core::Discovery::Host,
        rendezvous_dir: Some(dir.to_owned()),
        host_users: Default::default(),
        #[cfg(feature = "quic")]
        network: None,
    }
}

pub fn p(b: &[u8]) -> Payload {
    Payload::copy_from_slice(b)
}

pub fn m(seq: u64) -> Meta {
    Meta {
        sequence: seq,
        ..Meta::default()
    }
}

/// Pop everything, as (sequence, suffix).
pub fn drain(v: &Vertex) -> Vec<(u64, Option<String>)> {
    std::iter::from_fn(|| v.pop())
        .map(|s: Sample| (s.meta.sequence, s.suffix))
        .collect()
}

/// Pop everything from a structural feed's target, decoded.
pub fn events(v: &Vertex) -> Vec<StructEvent> {
    std::iter::from_fn(|| v.pop())
        .map(|s| StructEvent::decode(s.payload.as_ref()).unwrap())
        .collect()
}

/// A link whose peer identity the test chooses, recording every frame the graph sends on it.
pub struct Scripted {
    pub info: PeerIdentity,
    pub sent: Mutex<Vec<Frame>>,
}

impl Scripted {
    /// The last frame the graph sent, taken off the record.
    pub fn pop(&self) -> Option<Frame> {
        self.sent.lock().unwrap().pop()
    }
}

impl Link for Scripted {
    fn send(&self, frame: &Frame) -> Result<(), LinkError> {
        self.sent.lock().unwrap().push(frame.clone());
        Ok(())
    }
    fn peer(&self) -> &PeerIdentity {
        &self.info
    }
    fn close(&self) {}
}

/// Attach a scripted link to `g` from the peer `name` with the kernel-attested `uid` / `gid`.
pub fn scripted(g: &Graph, name: &str, uid: u32, gid: u32) -> (Arc<Scripted>, LinkId) {
    scripted_as(g, name, uid, gid, None)
}

/// Attach a scripted link from a graph on another host that its link authenticated as
/// `remote` (it runs as our own uid over there, which must not matter).
pub fn scripted_remote(g: &Graph, name: &str, remote: Subject) -> (Arc<Scripted>, LinkId) {
    let me = g.owner();
    scripted_as(g, name, me.uid().unwrap(), me.gid().unwrap(), Some(remote))
}

fn scripted_as(
    g: &Graph,
    name: &str,
    uid: u32,
    gid: u32,
    remote: Option<Subject>,
) -> (Arc<Scripted>, LinkId) {
    let l = Arc::new(Scripted {
        info: PeerIdentity {
            name: name.into(),
            uid,
            gid,
            pid: 1,
            remote,
        },
        sent: Mutex::new(Vec::new()),
    });
    let id = g.attach_link(l.clone()).unwrap();
    (l, id)
}
