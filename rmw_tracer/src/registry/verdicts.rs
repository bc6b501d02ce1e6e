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
use std::sync::atomic::{AtomicBool, Ordering};

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

/// The verdicts of one subscription, by writer, read on every sample: `takes` as it arrives,
/// `lifespan_ns` at take. In the common case (every writer matched, none with a lifespan)
/// both answer from an atomic, without the lock or the map.
#[derive(Default)]
pub struct Verdicts {
    map: RwLock<HashMap<Gid, Verdict>>,
    /// Some known writer is refused: `takes` must look it up.
    some_refused: AtomicBool,
    /// Some known writer has a lifespan: `lifespan_ns` must look it up.
    some_lifespan: AtomicBool,
}

impl Verdicts {
    /// The verdict on `writer` (`Verdict::UNKNOWN` when the registry knows no such publisher).
    pub fn of(&self, writer: &[u8; 16]) -> Verdict {
        self.map
            .read()
            .get(&Gid(*writer))
            .copied()
            .unwrap_or(Verdict::UNKNOWN)
    }

    /// Whether the subscription takes `writer`'s samples.
    pub fn takes(&self, writer: &[u8; 16]) -> bool {
        !self.some_refused.load(Ordering::Acquire) || self.of(writer).takes
    }

    /// `writer`'s lifespan in ns (`INFINITE_NS`: none).
    pub fn lifespan_ns(&self, writer: &[u8; 16]) -> u64 {
        if !self.some_lifespan.load(Ordering::Acquire) {
            return INFINITE_NS;
        }
        self.of(writer).lifespan_ns
    }

    /// Change the map with `f`, then the flags from what it holds (under its lock, so a
    /// reader never sees a flag lowered while the map still refuses).
    fn update(&self, f: impl FnOnce(&mut HashMap<Gid, Verdict>)) {
        let mut m = self.map.write();
        f(&mut m);
        let refused = m.values().any(|v| !v.takes);
        let lifespan = m.values().any(|v| v.lifespan_ns != INFINITE_NS);
        // Raised before the map is read by anyone who saw the flag low: stores under the lock.
        self.some_refused.store(refused, Ordering::Release);
        self.some_lifespan.store(lifespan, Ordering::Release);
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
    if *sub.verdicts.map.read() != all {
        sub.verdicts.update(|m| *m = all);
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
            let v = judge(publisher, &sub);
            sub.verdicts.update(|m| {
                m.insert(publisher.gid, v);
            });
        }
    }
}

/// The producer's answers, by (writer, subscription), judged once per pair and kept until the
/// registry changes (`Inner::notify` resets them, so a record that arrives later is judged
/// afresh). Read on every write to a tagged edge: in the common case, no known pair refused,
/// the answer is one atomic load.
#[derive(Default)]
pub(super) struct PairVerdicts {
    map: RwLock<HashMap<(Gid, Gid), bool>>,
    /// Some local publisher and some known subscription of its topic do not match.
    some_refused: AtomicBool,
}

impl PairVerdicts {
    /// Forget every answer and work out afresh whether any pair is refused.
    pub(super) fn reset(&self, st: &State) {
        let mut m = self.map.write();
        m.clear();
        let subs = st
            .local
            .values()
            .chain(st.peers.values().flat_map(|p| p.records.values()))
            .filter(|r| r.kind == EntityKind::Subscription);
        let refused = subs.into_iter().any(|s| {
            st.local
                .values()
                .filter(|w| w.kind == EntityKind::Publisher && w.topic == s.topic)
                .any(|w| !pair_takes(w, s))
        });
        self.some_refused.store(refused, Ordering::Release);
    }

    /// True when no pair is refused: every tagged edge takes every write.
    pub(super) fn none_refused(&self) -> bool {
        !self.some_refused.load(Ordering::Acquire)
    }
}

/// Whether subscription record `s` takes what publisher record `w` writes.
fn pair_takes(w: &Record, s: &Record) -> bool {
    match record_qos(s) {
        Some(q) => s.kind == EntityKind::Subscription && delivers_to(w, &s.topic, &s.type_name, &q),
        None => w.topic == s.topic && w.type_name == s.type_name,
    }
}

impl Inner {
    /// Whether the subscription whose gid is `tag` takes what `writer` writes. A pair either
    /// of whose records is not known (yet) is taken and judged again next time.
    pub(super) fn takes(&self, writer: Gid, tag: &[u8]) -> bool {
        if self.pairs.none_refused() {
            return true;
        }
        let Ok(sub) = <[u8; 16]>::try_from(tag).map(Gid) else {
            return true; // not a subscription's tag: not ours to judge
        };
        if let Some(&v) = self.pairs.map.read().get(&(writer, sub)) {
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
        let takes = pair_takes(w, s);
        drop(st);
        self.pairs.map.write().insert((writer, sub), takes);
        takes
    }
}
