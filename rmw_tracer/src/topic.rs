//! What publishers and subscriptions share: the resolved message type, the topic vertex and
//! its `:schema`, the QoS.

use crate::boundary::RmwResult;
use crate::cdr::{MessageType, TypeInfo};
use crate::context::Shared;
use crate::log::log;

/// A topic as one endpoint sees it.
pub struct TopicType {
    pub ty: MessageType,
    pub type_name: String,
    pub type_hash: String,
    pub definition: String,
}

impl TopicType {
    pub fn new(ty: MessageType, info: Option<TypeInfo>) -> TopicType {
        let (type_hash, definition) = match info {
            Some(info) => (
                info.type_hash.unwrap_or_default(),
                info.definition.unwrap_or_default(),
            ),
            None => {
                log!(
                    RMW_LOG_SEVERITY_DEBUG,
                    "no type description for {}",
                    ty.name()
                );
                (String::new(), String::new())
            }
        };
        TopicType {
            type_name: ty.name().to_owned(),
            ty,
            type_hash,
            definition,
        }
    }

    /// Put the type into the topic vertex's `:schema` unless one is there already (the first
    /// endpoint of a topic names it; tools read it, nothing on the data path does).
    pub fn set_schema(&self, ctx: &Shared, path: &str) -> RmwResult<()> {
        if ctx.graph.schema(path).is_some() {
            return Ok(());
        }
        ctx.graph.set_schema(
            path,
            libtracer_core::Schema {
                type_name: self.type_name.clone(),
                encoding: "cdr".to_owned(),
                type_hash: self.type_hash.clone(),
                definition: self.definition.clone(),
                layout: self
                    .ty
                    .plain_size()
                    .map_or_else(String::new, |n| format!("plain {n}")),
            },
        )?;
        Ok(())
    }
}

/// Nanoseconds since the Unix epoch (the source timestamp of a publication).
pub fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}
