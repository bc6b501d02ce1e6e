//! The endpoint registry record (`/.ros/endpoints/<gid hex>`, docs/rmw-mapping.md): the one
//! codec of its text form. rmw_tracer encodes and decodes its registry with it, and
//! `tracer record` reads peers' registries with it, so writer and readers cannot drift apart.
//! No ROS: QoS travels as rmw's enum numbers ([`QosNumbers`]).
//!
//! ```text
//! rmw_tracer.entity.v1
//! kind=publisher            (context | node | publisher | subscription | service | client)
//! gid=<32 hex digits>
//! node_gid=<32 hex digits>  (the node an endpoint belongs to; absent for contexts and nodes)
//! node=<name>
//! namespace=<namespace>
//! enclave=<enclave>         (contexts)
//! topic=<ROS topic or service name>
//! type=<pkg/msg/Type>
//! type_hash=<RIHS01_...>
//! qos=<history,depth,reliability,durability,liveliness>
//! qos_times=<deadline,lifespan,lease>   (nanoseconds each, `inf` = infinite; absent = all infinite)
//! asserted=<ns since the epoch>         (a MANUAL_BY_TOPIC publisher's last rmw_publisher_assert_liveliness)
//! ```
//!
//! A record is rewritten (same gid, same vertex) when `asserted` changes: that is how an
//! assertion without a publication reaches the subscriptions of other processes.
//!
//! Unknown keys are ignored (a newer rmw_tracer may add some); a record without the first line,
//! a known `kind` or a valid `gid` is refused. A retraction is the record with `kind` and `gid`
//! plus `gone=1`, written just before the vertex is removed, so peers learn of it without
//! watching structure. Values never contain a newline: ROS names and type names cannot, and
//! [`Record::encode`] refuses one.

use std::fmt;

use tracer_mcap::ros2::{Durability, History, Liveliness, OfferedQos, QosDuration, Reliability};

const MAGIC: &str = "rmw_tracer.entity.v1";

/// A 16-byte global id (`rmw_gid_t`'s meaningful bytes).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Gid(pub [u8; 16]);

impl Gid {
    /// 32 lowercase hex digits: the segment under `/.ros/endpoints/`.
    pub fn hex(&self) -> String {
        let mut s = String::with_capacity(32);
        for b in self.0 {
            s.push_str(&format!("{b:02x}"));
        }
        s
    }

    pub fn from_hex(s: &str) -> Option<Gid> {
        if s.len() != 32 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        let mut g = [0u8; 16];
        for (i, byte) in g.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).ok()?;
        }
        Some(Gid(g))
    }

    /// The context half (bytes 0..8).
    pub fn context_prefix(&self) -> [u8; 8] {
        let mut p = [0u8; 8];
        p.copy_from_slice(&self.0[..8]);
        p
    }
}

impl fmt::Debug for Gid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Gid({})", self.hex())
    }
}

/// The kinds of entity in the registry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EntityKind {
    Context,
    Node,
    Publisher,
    Subscription,
    Service,
    Client,
}

impl EntityKind {
    pub fn as_str(self) -> &'static str {
        match self {
            EntityKind::Context => "context",
            EntityKind::Node => "node",
            EntityKind::Publisher => "publisher",
            EntityKind::Subscription => "subscription",
            EntityKind::Service => "service",
            EntityKind::Client => "client",
        }
    }

    pub fn parse(s: &str) -> Option<EntityKind> {
        Some(match s {
            "context" => EntityKind::Context,
            "node" => EntityKind::Node,
            "publisher" => EntityKind::Publisher,
            "subscription" => EntityKind::Subscription,
            "service" => EntityKind::Service,
            "client" => EntityKind::Client,
            _ => return None,
        })
    }
}

/// The QoS of the `qos=` and `qos_times=` lines: rmw's enum numbers (`rmw_qos_*_policy_e`,
/// stable since Foxy), the depth, and the deadline, lifespan and liveliness lease in
/// nanoseconds ([`INFINITE_NS`] = infinite). A record of an older rmw_tracer has no
/// `qos_times=` line: its times are infinite, which is what that rmw_tracer resolved them to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QosNumbers {
    pub history: u32,
    pub depth: usize,
    pub reliability: u32,
    pub durability: u32,
    pub liveliness: u32,
    pub deadline_ns: u64,
    pub lifespan_ns: u64,
    pub lease_ns: u64,
}

/// An infinite deadline, lifespan or lease in [`QosNumbers`] (`inf` in the text).
pub const INFINITE_NS: u64 = u64::MAX;

impl QosNumbers {
    /// `history,depth,reliability,durability,liveliness`.
    pub fn encode(&self) -> String {
        format!(
            "{},{},{},{},{}",
            self.history, self.depth, self.reliability, self.durability, self.liveliness
        )
    }

    /// Parse [`QosNumbers::encode`]; `None` unless it is five numbers in range. The times
    /// are infinite until [`QosNumbers::decode_times`] sets them.
    pub fn decode(s: &str) -> Option<QosNumbers> {
        let v: Vec<&str> = s.split(',').collect();
        let [h, d, r, du, l] = v[..] else {
            return None;
        };
        Some(QosNumbers {
            history: h.parse().ok()?,
            depth: d.parse().ok()?,
            reliability: r.parse().ok()?,
            durability: du.parse().ok()?,
            liveliness: l.parse().ok()?,
            deadline_ns: INFINITE_NS,
            lifespan_ns: INFINITE_NS,
            lease_ns: INFINITE_NS,
        })
    }

    /// `deadline,lifespan,lease`; `None` when all three are infinite (the line is left out,
    /// so records read the same by an older reader).
    pub fn encode_times(&self) -> Option<String> {
        let t = [self.deadline_ns, self.lifespan_ns, self.lease_ns];
        if t.iter().all(|&n| n == INFINITE_NS) {
            return None;
        }
        let one = |n: u64| {
            if n == INFINITE_NS {
                "inf".to_owned()
            } else {
                n.to_string()
            }
        };
        Some(format!("{},{},{}", one(t[0]), one(t[1]), one(t[2])))
    }

    /// Set the times from [`QosNumbers::encode_times`]; false (and nothing set) if malformed.
    pub fn decode_times(&mut self, s: &str) -> bool {
        let one = |v: &str| -> Option<u64> {
            match v {
                "inf" => Some(INFINITE_NS),
                _ => v.parse().ok().filter(|&n| n != INFINITE_NS),
            }
        };
        let v: Vec<&str> = s.split(',').collect();
        let [d, l, e] = v[..] else {
            return false;
        };
        let (Some(d), Some(l), Some(e)) = (one(d), one(l), one(e)) else {
            return false;
        };
        self.deadline_ns = d;
        self.lifespan_ns = l;
        self.lease_ns = e;
        true
    }

    /// The offered profile MCAP's `ros2` metadata wants.
    pub fn offered(&self) -> OfferedQos {
        OfferedQos {
            deadline: duration(self.deadline_ns),
            lifespan: duration(self.lifespan_ns),
            liveliness_lease_duration: duration(self.lease_ns),
            ..offered_qos(
                u64::from(self.history),
                self.depth as u64,
                u64::from(self.reliability),
                u64::from(self.durability),
                u64::from(self.liveliness),
            )
        }
    }
}

/// A [`QosNumbers`] time as MCAP's `ros2` duration.
fn duration(ns: u64) -> QosDuration {
    if ns == INFINITE_NS {
        QosDuration::INFINITE
    } else {
        QosDuration {
            sec: ns / 1_000_000_000,
            nsec: ns % 1_000_000_000,
        }
    }
}

/// An offered profile from rmw's enum numbers (`rmw_qos_*_policy_e`, stable since Foxy), with
/// infinite deadline, lifespan and lease ([`QosNumbers::offered`] sets the recorded ones).
pub fn offered_qos(
    history: u64,
    depth: u64,
    reliability: u64,
    durability: u64,
    liveliness: u64,
) -> OfferedQos {
    OfferedQos {
        history: match history {
            0 => History::SystemDefault,
            1 => History::KeepLast,
            2 => History::KeepAll,
            _ => History::Unknown,
        },
        depth,
        reliability: match reliability {
            0 => Reliability::SystemDefault,
            1 => Reliability::Reliable,
            2 => Reliability::BestEffort,
            4 => Reliability::BestAvailable,
            _ => Reliability::Unknown,
        },
        durability: match durability {
            0 => Durability::SystemDefault,
            1 => Durability::TransientLocal,
            2 => Durability::Volatile,
            4 => Durability::BestAvailable,
            _ => Durability::Unknown,
        },
        liveliness: match liveliness {
            0 => Liveliness::SystemDefault,
            1 => Liveliness::Automatic,
            3 => Liveliness::ManualByTopic,
            5 => Liveliness::BestAvailable,
            _ => Liveliness::Unknown,
        },
        ..OfferedQos::default()
    }
}

/// One entity as the registry knows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    pub kind: EntityKind,
    pub gid: Gid,
    pub node_gid: Option<Gid>,
    pub node_name: String,
    pub node_namespace: String,
    pub enclave: String,
    /// ROS topic (or service) name, as the user gave it to rmw.
    pub topic: String,
    pub type_name: String,
    pub type_hash: String,
    pub qos: Option<QosNumbers>,
    /// The last liveliness assertion of a manual-liveliness publisher, ns since the epoch.
    pub asserted_ns: Option<i64>,
}

impl Record {
    pub fn new(kind: EntityKind, gid: Gid) -> Record {
        Record {
            kind,
            gid,
            node_gid: None,
            node_name: String::new(),
            node_namespace: String::new(),
            enclave: String::new(),
            topic: String::new(),
            type_name: String::new(),
            type_hash: String::new(),
            qos: None,
            asserted_ns: None,
        }
    }

    /// The text form; `None` if a value holds a newline.
    pub fn encode(&self) -> Option<String> {
        let mut out = format!(
            "{MAGIC}\nkind={}\ngid={}\n",
            self.kind.as_str(),
            self.gid.hex()
        );
        let mut put = |k: &str, v: &str| -> Option<()> {
            if v.contains('\n') {
                return None;
            }
            if !v.is_empty() {
                out.push_str(k);
                out.push('=');
                out.push_str(v);
                out.push('\n');
            }
            Some(())
        };
        put(
            "node_gid",
            &self.node_gid.map(|g| g.hex()).unwrap_or_default(),
        )?;
        put("node", &self.node_name)?;
        put("namespace", &self.node_namespace)?;
        put("enclave", &self.enclave)?;
        put("topic", &self.topic)?;
        put("type", &self.type_name)?;
        put("type_hash", &self.type_hash)?;
        put("qos", &self.qos.map(|q| q.encode()).unwrap_or_default())?;
        put(
            "qos_times",
            &self.qos.and_then(|q| q.encode_times()).unwrap_or_default(),
        )?;
        put(
            "asserted",
            &self.asserted_ns.map(|n| n.to_string()).unwrap_or_default(),
        )?;
        Some(out)
    }

    /// The retraction of `gid`.
    pub fn encode_gone(kind: EntityKind, gid: Gid) -> String {
        format!(
            "{MAGIC}\nkind={}\ngid={}\ngone=1\n",
            kind.as_str(),
            gid.hex()
        )
    }
}

/// A decoded announcement.
#[derive(Debug, PartialEq, Eq)]
pub enum Announcement {
    Present(Box<Record>),
    Gone(Gid),
}

/// Parse a record; `None` if it is not one.
pub fn decode(bytes: &[u8]) -> Option<Announcement> {
    let text = std::str::from_utf8(bytes).ok()?;
    let mut lines = text.lines();
    if lines.next()? != MAGIC {
        return None;
    }
    let mut kind = None;
    let mut gid = None;
    let mut gone = false;
    let mut r = Record::new(EntityKind::Context, Gid::default());
    let mut times = None;
    for line in lines {
        let Some((k, v)) = line.split_once('=') else {
            continue;
        };
        match k {
            "kind" => kind = EntityKind::parse(v),
            "gid" => gid = Gid::from_hex(v),
            "gone" => gone = v == "1",
            "node_gid" => r.node_gid = Gid::from_hex(v),
            "node" => r.node_name = v.to_owned(),
            "namespace" => r.node_namespace = v.to_owned(),
            "enclave" => r.enclave = v.to_owned(),
            "topic" => r.topic = v.to_owned(),
            "type" => r.type_name = v.to_owned(),
            "type_hash" => r.type_hash = v.to_owned(),
            "qos" => r.qos = QosNumbers::decode(v),
            "qos_times" => times = Some(v),
            "asserted" => r.asserted_ns = v.parse().ok(),
            _ => {}
        }
    }
    // Applied after the loop: the keys may come in any order. A malformed line leaves the
    // times infinite (what an older rmw_tracer offered), like an unknown key.
    if let (Some(q), Some(t)) = (r.qos.as_mut(), times) {
        q.decode_times(t);
    }
    r.kind = kind?;
    r.gid = gid?;
    Some(if gone {
        Announcement::Gone(r.gid)
    } else {
        Announcement::Present(Box::new(r))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gid(last: u8) -> Gid {
        let mut g = [7u8; 16];
        g[15] = last;
        Gid(g)
    }

    /// Every field the encoder writes comes back from the decoder, and a retraction decodes
    /// as one.
    #[test]
    fn round_trip() {
        let mut r = Record::new(EntityKind::Publisher, gid(1));
        r.node_gid = Some(gid(2));
        r.node_name = "talker".into();
        r.node_namespace = "/".into();
        r.enclave = "/".into();
        r.topic = "/chatter".into();
        r.type_name = "std_msgs/msg/String".into();
        r.type_hash = "RIHS01_abc".into();
        r.qos = Some(QosNumbers {
            history: 1,
            depth: 10,
            reliability: 1,
            durability: 2,
            liveliness: 3,
            deadline_ns: 250_000_000,
            lifespan_ns: INFINITE_NS,
            lease_ns: 2_000_000_000,
        });
        r.asserted_ns = Some(1_700_000_000_000_000_000);
        let text = r.encode().unwrap();
        assert!(
            text.contains("\nqos_times=250000000,inf,2000000000\n"),
            "{text}"
        );
        let Some(Announcement::Present(back)) = decode(text.as_bytes()) else {
            panic!("not decoded: {text}");
        };
        assert_eq!(*back, r);
        assert_eq!(
            decode(Record::encode_gone(EntityKind::Publisher, r.gid).as_bytes()),
            Some(Announcement::Gone(r.gid))
        );
        for kind in [
            EntityKind::Context,
            EntityKind::Node,
            EntityKind::Subscription,
            EntityKind::Service,
            EntityKind::Client,
        ] {
            let r = Record::new(kind, gid(3));
            let back = decode(r.encode().unwrap().as_bytes());
            assert_eq!(back, Some(Announcement::Present(Box::new(r))));
        }
    }

    /// What `tracer record` reads: a publisher written by hand, with a key from the future.
    #[test]
    fn decodes_a_publisher() {
        let text = "rmw_tracer.entity.v1\nkind=publisher\ngid=000102030405060708090a0b0c0d0e0f\nnode=talker\ntopic=/chatter\ntype=std_msgs/msg/String\ntype_hash=RIHS01_ab\nqos=1,7,2,1,1\nfuture=x\n";
        let Some(Announcement::Present(r)) = decode(text.as_bytes()) else {
            panic!("not decoded");
        };
        assert_eq!(r.kind, EntityKind::Publisher);
        assert_eq!(r.gid.0[15], 15);
        assert_eq!(r.topic, "/chatter");
        let q = r.qos.unwrap().offered();
        assert_eq!(q.depth, 7);
        assert_eq!(q.history, History::KeepLast);
        assert_eq!(q.reliability, Reliability::BestEffort);
        assert_eq!(q.durability, Durability::TransientLocal);
        assert_eq!(q.liveliness, Liveliness::Automatic);
        assert_eq!(q.deadline, QosDuration::INFINITE);
    }

    /// `qos_times=` sets the deadline, lifespan and lease (before or after `qos=`); a
    /// malformed one leaves them infinite; all-infinite times write no line.
    #[test]
    fn qos_times() {
        let base =
            "rmw_tracer.entity.v1\nkind=subscription\ngid=000102030405060708090a0b0c0d0e0f\n";
        let text = format!("{base}qos_times=1500000000,inf,7\nqos=1,7,2,1,3\n");
        let Some(Announcement::Present(r)) = decode(text.as_bytes()) else {
            panic!("not decoded");
        };
        let q = r.qos.unwrap();
        assert_eq!(
            (q.deadline_ns, q.lifespan_ns, q.lease_ns),
            (1_500_000_000, INFINITE_NS, 7)
        );
        let o = q.offered();
        assert_eq!((o.deadline.sec, o.deadline.nsec), (1, 500_000_000));
        assert_eq!(o.lifespan, QosDuration::INFINITE);
        for bad in [
            "1,2",
            "x,1,2",
            "1,2,3,4",
            "-1,2,3",
            "18446744073709551615,1,1",
        ] {
            let text = format!("{base}qos=1,7,2,1,3\nqos_times={bad}\n");
            let Some(Announcement::Present(r)) = decode(text.as_bytes()) else {
                panic!("not decoded");
            };
            assert_eq!(r.qos.unwrap().deadline_ns, INFINITE_NS, "{bad}");
        }
        let mut r = Record::new(EntityKind::Publisher, gid(4));
        r.qos = QosNumbers::decode("1,7,2,1,1");
        assert!(!r.encode().unwrap().contains("qos_times"));
    }

    #[test]
    fn refuses_garbage() {
        assert!(decode(b"hello").is_none());
        assert!(decode(b"rmw_tracer.entity.v1\nkind=publisher\n").is_none());
        assert!(decode(b"rmw_tracer.entity.v1\ngid=00\n").is_none());
        assert!(decode(
            b"rmw_tracer.entity.v1\nkind=alien\ngid=00000000000000000000000000000000\n"
        )
        .is_none());
        assert!(decode(&[0xff, 0xfe]).is_none());
        let mut r = Record::new(EntityKind::Node, Gid::default());
        r.node_name = "a\nb".into();
        assert!(r.encode().is_none());
        assert!(QosNumbers::decode("1,2,3").is_none());
        assert!(QosNumbers::decode("1,2,3,4,x").is_none());
        assert!(QosNumbers::decode("1,2,3,4,99999999999").is_none());
    }

    #[test]
    fn gid_hex_round_trip() {
        let g = gid(0xab);
        assert_eq!(g.hex().len(), 32);
        assert_eq!(Gid::from_hex(&g.hex()), Some(g));
        assert_eq!(g.context_prefix(), [7u8; 8]);
        assert_eq!(Gid::from_hex("zz"), None);
        assert_eq!(Gid::from_hex(&"g".repeat(32)), None);
    }
}
