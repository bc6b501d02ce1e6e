//! What an entity announces at `/.ros/endpoints/<gid hex>`: a small, versioned text record.
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
//! ```
//!
//! Unknown keys are ignored (a newer rmw_tracer may add some); a record without the first line,
//! `kind` or `gid` is refused. A retraction is the record with `kind` and `gid` plus `gone=1`,
//! written just before the vertex is removed, so peers learn of it without watching structure.
//! Values never contain a newline: ROS names and type names cannot, and [`Record::encode`]
//! refuses one.

use crate::gid::Gid;
use crate::qos::Qos;

const MAGIC: &str = "rmw_tracer.entity.v1";

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
    fn as_str(self) -> &'static str {
        match self {
            EntityKind::Context => "context",
            EntityKind::Node => "node",
            EntityKind::Publisher => "publisher",
            EntityKind::Subscription => "subscription",
            EntityKind::Service => "service",
            EntityKind::Client => "client",
        }
    }

    fn parse(s: &str) -> Option<EntityKind> {
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

/// One entity as the registry knows it.
#[derive(Clone, Debug)]
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
    pub qos: Option<Qos>,
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
#[derive(Debug)]
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
            "qos" => r.qos = Qos::decode(v),
            _ => {}
        }
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
    use crate::gid::GidSource;

    #[test]
    fn round_trip() {
        let src = GidSource::new();
        let mut r = Record::new(EntityKind::Publisher, src.next());
        r.node_gid = Some(src.next());
        r.node_name = "talker".into();
        r.node_namespace = "/".into();
        r.topic = "/chatter".into();
        r.type_name = "std_msgs/msg/String".into();
        r.type_hash = "RIHS01_abc".into();
        r.qos = Some(Qos::system_default());
        let text = r.encode().unwrap();
        let Some(Announcement::Present(back)) = decode(text.as_bytes()) else {
            panic!("not decoded: {text}");
        };
        assert_eq!(back.kind, EntityKind::Publisher);
        assert_eq!(back.gid, r.gid);
        assert_eq!(back.node_gid, r.node_gid);
        assert_eq!(back.topic, "/chatter");
        assert_eq!(back.type_name, "std_msgs/msg/String");
        assert_eq!(back.qos.unwrap().encode(), r.qos.unwrap().encode());
        assert!(matches!(
            decode(Record::encode_gone(EntityKind::Publisher, r.gid).as_bytes()),
            Some(Announcement::Gone(g)) if g == r.gid
        ));
    }

    #[test]
    fn refuses_garbage() {
        assert!(decode(b"hello").is_none());
        assert!(decode(b"rmw_tracer.entity.v1\nkind=publisher\n").is_none());
        assert!(decode(
            b"rmw_tracer.entity.v1\nkind=alien\ngid=00000000000000000000000000000000\n"
        )
        .is_none());
        assert!(decode(&[0xff, 0xfe]).is_none());
        let mut r = Record::new(EntityKind::Node, Gid::default());
        r.node_name = "a\nb".into();
        assert!(r.encode().is_none());
    }
}
