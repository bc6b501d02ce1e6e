//! Reading rmw_tracer's endpoint registry records (`/.ros/endpoints/<gid hex>`) without ROS.
//!
//! The format is rmw_tracer's (`rmw_tracer/src/registry/record.rs` writes it and documents
//! it): a first line `rmw_tracer.entity.v1`, then `key=value` lines. This reader takes what a
//! recorder needs (kind, gid, topic, type, type hash, QoS, `gone`) and ignores the rest, as
//! that format asks of readers. rmw_tracer's own tests decode its encoder's output with this
//! reader, so the two cannot drift apart unnoticed.

use tracer_mcap::ros2::{Durability, History, Liveliness, OfferedQos, Reliability};

const MAGIC: &str = "rmw_tracer.entity.v1";

/// One announcement, as much of it as a recorder uses.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EndpointRecord {
    /// `context`, `node`, `publisher`, `subscription`, `service`, `client`.
    pub kind: String,
    pub gid: [u8; 16],
    pub gone: bool,
    pub topic: String,
    pub type_name: String,
    pub type_hash: String,
    /// The offered QoS (publishers), from the `qos=` line.
    pub qos: Option<OfferedQos>,
}

impl EndpointRecord {
    /// `None` when the bytes are not a record (no magic line, no kind, no valid gid).
    pub fn decode(bytes: &[u8]) -> Option<EndpointRecord> {
        let text = std::str::from_utf8(bytes).ok()?;
        let mut lines = text.lines();
        if lines.next()? != MAGIC {
            return None;
        }
        let mut r = EndpointRecord::default();
        let mut gid = None;
        for line in lines {
            let Some((k, v)) = line.split_once('=') else {
                continue;
            };
            match k {
                "kind" => r.kind = v.to_owned(),
                "gid" => gid = gid_from_hex(v),
                "gone" => r.gone = v == "1",
                "topic" => r.topic = v.to_owned(),
                "type" => r.type_name = v.to_owned(),
                "type_hash" => r.type_hash = v.to_owned(),
                "qos" => r.qos = qos_from_line(v),
                _ => {}
            }
        }
        if r.kind.is_empty() {
            return None;
        }
        r.gid = gid?;
        Some(r)
    }

    pub fn is_publisher(&self) -> bool {
        self.kind == "publisher"
    }
}

fn gid_from_hex(s: &str) -> Option<[u8; 16]> {
    if s.len() != 32 || !s.is_ascii() {
        return None;
    }
    let mut g = [0u8; 16];
    for (i, b) in g.iter_mut().enumerate() {
        *b = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(g)
}

/// `history,depth,reliability,durability,liveliness` as rmw enum numbers.
fn qos_from_line(s: &str) -> Option<OfferedQos> {
    let v: Vec<u64> = s
        .split(',')
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()?;
    let [h, d, r, du, l] = v[..] else {
        return None;
    };
    Some(offered_qos(h, d, r, du, l))
}

/// An offered profile from rmw's enum numbers (`rmw_qos_*_policy_e`, stable since Foxy).
/// Deadline, lifespan and lease are infinite: that is what rmw_tracer resolves them to.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_a_publisher() {
        let text = "rmw_tracer.entity.v1\nkind=publisher\ngid=000102030405060708090a0b0c0d0e0f\nnode=talker\ntopic=/chatter\ntype=std_msgs/msg/String\ntype_hash=RIHS01_ab\nqos=1,7,2,1,1\nfuture=x\n";
        let r = EndpointRecord::decode(text.as_bytes()).unwrap();
        assert!(r.is_publisher() && !r.gone);
        assert_eq!(r.gid[15], 15);
        assert_eq!(r.topic, "/chatter");
        let q = r.qos.unwrap();
        assert_eq!(q.depth, 7);
        assert_eq!(q.reliability, Reliability::BestEffort);
        assert_eq!(q.durability, Durability::TransientLocal);
    }

    #[test]
    fn refuses_non_records() {
        assert!(EndpointRecord::decode(b"hello").is_none());
        assert!(EndpointRecord::decode(b"rmw_tracer.entity.v1\nkind=publisher\n").is_none());
        assert!(EndpointRecord::decode(b"rmw_tracer.entity.v1\ngid=00\n").is_none());
        assert!(EndpointRecord::decode(&[0xff]).is_none());
        let gone =
            "rmw_tracer.entity.v1\nkind=publisher\ngid=000102030405060708090a0b0c0d0e0f\ngone=1\n";
        assert!(EndpointRecord::decode(gone.as_bytes()).unwrap().gone);
    }
}
