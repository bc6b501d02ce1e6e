//! Where and how a process writes its endpoint records (docs/rmw-mapping.md): one value vertex
//! `/.ros/endpoints/<gid hex>` per entity holding its [`crate::Record`]'s text. Peers subscribe
//! `/net/<p>/.ros/endpoints` (transient local) and so learn every record. rmw_tracer's registry
//! and `tracer serve`'s publishers write theirs with these, so the two cannot drift apart.

use libtracer_core::{Graph, Meta, Payload};

use crate::endpoint::{EntityKind, Gid, Record};

/// Where entity records live.
pub const ENDPOINTS: &str = "/.ros/endpoints";

/// The vertex of entity `gid`'s record.
pub fn record_path(gid: Gid) -> String {
    format!("{ENDPOINTS}/{}", gid.hex())
}

/// Makes the record's vertex and writes its text (already encoded by [`Record::encode`]).
pub fn announce(graph: &Graph, gid: Gid, text: String) -> Result<(), String> {
    let path = record_path(gid);
    let v = graph
        .create_value(&path)
        .map_err(|e| format!("cannot create {path}: {e}"))?;
    v.write(Payload::from(text.into_bytes()), Meta::default())
        .map_err(|e| format!("cannot write {path}: {e}"))
}

/// Writes the retraction, then removes the vertex. Written before the removal so that peers'
/// sinks see it (a removed vertex delivers nothing more).
pub fn retract(graph: &Graph, kind: EntityKind, gid: Gid) {
    let path = record_path(gid);
    let gone = Record::encode_gone(kind, gid);
    let _ = graph.write(&path, Payload::from(gone.into_bytes()), Meta::default());
    let _ = graph.remove(&path);
}
