//! Match once, on both ends of an edge.
//!
//! The producer: every subscription tags its edges with its gid (`Graph::subscribe_tagged`,
//! the SUBSCRIBE frame's TAG), and every topic vertex with a local publisher has the registry's
//! edge filter (`Registry::edge_filter`), which judges a (writer, subscription) pair once, from
//! their records, and keeps the answer: a write of a writer the subscription does not match is
//! never handed to its edge, so it does not cross the link.
//!
//! The consumer: the registry's verdict on every known writer of a subscription's topic,
//! decided when the registry learns of the writer (or of a change to it) and read by the
//! subscription's ring as each sample arrives (`crate::admission`), for what a producer did not
//! filter (one that predates tags, a writer whose record came late).
//!
//! DDS matches a reader with a writer of the same topic, type and compatible QoS; a writer it
//! does not match never delivers to it. An edge here is per topic vertex (every local writer
//! of the topic) and per peer (every writer of the topic on that peer), so a writer of another
//! type or an incompatible QoS can share an edge with one that matches: its samples are refused
//! on arrival, before they take a ring slot or wake anything.

use std::collections::HashMap;

use parking_lot::RwLock;

use super::{delivers_to, record_qos, EntityKind, Inner, Record, State, SubscriptionLink};
use crate::gid::Gid;
use tracer_recording::INFINITE_NS;

/// What a subscription does with one writer's samples.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// Its type is ours and its QoS meets ours (DDS would have matched them).
    pub takes: bool,
    /// Its lifespan in ns (`INFINITE_NS`: none): a sample older than this at take is dropped.
    pub lifespan_ns: u64,
}

impl Verdict {
    /// A writer with no record (a tool writing the topic vertex directly, or a remote
    /// publisher whose record has not arrived yet): taken as it comes.
    pub const UNKNOWN: Verdict = Verdict {
        takes: true,
        lifespan_ns: INFINITE_NS,
    };
}

/// The verdicts of one subscription, by writer.
#[derive(Default)]
pub struct Verdicts(RwLock<HashMap<Gid, Verdict>>);

impl Verdicts {
    /// The verdict on `writer` (`Verdict::UNKNOWN` when the registry knows no such publisher).
    pub fn of(&self, writer: &[u8; 16]) -> Verdict {
        self.0
            .read()
            .get(&Gid(*writer))
            .copied()
            .unwrap_or(Verdict::UNKNOWN)
    }
}

fn judge(r: &Record, sub: &SubscriptionLink) -> Verdict {
    Verdict {
        takes: delivers_to(r, &sub.topic, &sub.type_name, &sub.qos),
        lifespan_ns: r.qos.map_or(INFINITE_NS, |q| q.lifespan_ns),
    }
}

/// Judge every publisher of `sub`'s topic the registry knows, here and on every peer; a writer
/// that went is forgotten.
pub(super) fn judge_all(st: &State, sub: &SubscriptionLink) {
    let on_topic = |r: &&Record| r.kind == EntityKind::Publisher && r.topic == sub.topic;
    let all: HashMap<Gid, Verdict> = st
        .local
        .values()
        .chain(st.peers.values().flat_map(|p| p.records.values()))
        .filter(on_topic)
        .map(|r| (r.gid, judge(r, sub)))
        .collect();
    let mut v = sub.verdicts.0.write();
    if *v != all {
        *v = all;
    }
}

/// A local publisher was announced (or re-announced): judged for every local subscription of
/// its topic before its first publication can reach them.
pub(super) fn judge_local(st: &State, publisher: &Record) {
    if publisher.kind != EntityKind::Publisher {
        return;
    }
    for sub in st.subs.iter().filter_map(std::sync::Weak::upgrade) {
        if sub.topic == publisher.topic {
            sub.verdicts
                .0
                .write()
                .insert(publisher.gid, judge(publisher, &sub));
        }
    }
}

/// The producer's answers, by (writer, subscription): cleared whenever the registry changes
/// (`Inner::notify`), so a record that arrives later is judged afresh.
#[derive(Default)]
pub(super) struct PairVerdicts(RwLock<HashMap<(Gid, Gid), bool>>);

impl PairVerdicts {
    pub(super) fn clear(&self) {
        let mut m = self.0.write();
        if !m.is_empty() {
            m.clear();
        }
    }
}

impl Inner {
    /// Whether the subscription whose gid is `tag` takes what `writer` writes. A pair either
    /// of whose records is not known (yet) is taken and judged again next time.
    pub(super) fn takes(&self, writer: Gid, tag: &[u8]) -> bool {
        let Ok(sub) = <[u8; 16]>::try_from(tag).map(Gid) else {
            return true; // not a subscription's tag: not ours to judge
        };
        if let Some(&v) = self.pairs.0.read().get(&(writer, sub)) {
            return v;
        }
        let st = self.state.lock();
        let find = |g: &Gid| {
            st.local
                .get(g)
                .or_else(|| st.peers.values().find_map(|p| p.records.get(g)))
        };
        let (Some(w), Some(s)) = (find(&writer), find(&sub)) else {
            return true;
        };
        let takes = match record_qos(s) {
            Some(q) => {
                s.kind == EntityKind::Subscription && delivers_to(w, &s.topic, &s.type_name, &q)
            }
            None => w.topic == s.topic && w.type_name == s.type_name,
        };
        drop(st);
        self.pairs.0.write().insert((writer, sub), takes);
        takes
    }
}
