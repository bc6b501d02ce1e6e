//! The graph as the endpoint registries say it is: nodes, publishers, subscriptions, services
//! and clients of every process of the host (rmw_tracer's and native ones), with their topics,
//! types and QoS.

use std::ffi::{c_char, CString};
use std::sync::Arc;

use tracer_recording::{EntityKind, Record};

use crate::call::call;
use crate::error::{tracer_result_t, CapiError, CapiResult};
use crate::handle::{out, Table};
use crate::qos::tracer_qos_t;

use super::context::{tracer_context_t, CONTEXTS};

pub const TRACER_ENTITY_NODE: u32 = 1;
pub const TRACER_ENTITY_PUBLISHER: u32 = 2;
pub const TRACER_ENTITY_SUBSCRIPTION: u32 = 3;
pub const TRACER_ENTITY_SERVICE: u32 = 4;
pub const TRACER_ENTITY_CLIENT: u32 = 5;

/// A snapshot of the graph. Opaque.
#[allow(non_camel_case_types)]
pub struct tracer_graph_t {
    _private: [u8; 0],
}

/// One entity of a snapshot. The strings belong to the snapshot (valid until
/// `tracer_graph_destroy`).
#[allow(non_camel_case_types)]
#[repr(C)]
pub struct tracer_entity_t {
    /// `TRACER_ENTITY_*`.
    pub kind: u32,
    pub node_name: *const c_char,
    pub node_namespace: *const c_char,
    /// The topic or service ("" for a node).
    pub topic: *const c_char,
    /// `pkg/msg/Type` ("" for a node).
    pub type_name: *const c_char,
    /// `RIHS01_...` or "".
    pub type_hash: *const c_char,
    /// The QoS the endpoint offers or requests (zero for a node).
    pub qos: tracer_qos_t,
    pub gid: [u8; 16],
    /// True for an entity of this context.
    pub local: bool,
}

struct Entity {
    kind: u32,
    strings: [CString; 5],
    qos: tracer_qos_t,
    gid: [u8; 16],
    local: bool,
}

/// A snapshot: its entities, with their strings.
pub struct Snapshot(Vec<Entity>);

pub static GRAPHS: Table<Snapshot> = Table::new("graph", 6);

fn text(s: &str) -> CString {
    CString::new(s.replace('\0', "")).unwrap_or_default()
}

fn entity(local: bool, r: &Record) -> Option<Entity> {
    let kind = match r.kind {
        EntityKind::Context => return None,
        EntityKind::Node => TRACER_ENTITY_NODE,
        EntityKind::Publisher => TRACER_ENTITY_PUBLISHER,
        EntityKind::Subscription => TRACER_ENTITY_SUBSCRIPTION,
        EntityKind::Service => TRACER_ENTITY_SERVICE,
        EntityKind::Client => TRACER_ENTITY_CLIENT,
    };
    let qos = r.qos.map_or_else(tracer_qos_t::default, |n| tracer_qos_t {
        reliability: n.reliability,
        durability: n.durability,
        history: n.history,
        depth: n.depth,
    });
    Some(Entity {
        kind,
        strings: [
            text(&r.node_name),
            text(&r.node_namespace),
            text(&r.topic),
            text(&r.type_name),
            text(&r.type_hash),
        ],
        qos,
        gid: r.gid.0,
        local,
    })
}

/// Take a snapshot of the graph as this context's watch knows it now (every peer's records,
/// and this context's own). The caller owns the new handle (`tracer_graph_destroy`).
///
/// Thread-safe.
///
/// # Safety
/// `out_graph` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tracer_graph_create(
    context: *mut tracer_context_t,
    out_graph: *mut *mut tracer_graph_t,
) -> tracer_result_t {
    call("tracer_graph_create", || {
        let o = out(out_graph, "out_graph")?;
        let ctx = CONTEXTS.get(context)?;
        let mut v: Vec<Entity> = ctx
            .watch
            .records()
            .iter()
            .filter_map(|(peer, r)| entity(peer.is_none(), r))
            .collect();
        // The context's node itself (its record lives only in its own registry vertex).
        let mut node = Record::new(EntityKind::Node, ctx.node_gid);
        node.node_name = ctx.node_name.clone();
        node.node_namespace = ctx.node_namespace.clone();
        v.extend(entity(true, &node));
        o.set(GRAPHS.insert(Arc::new(Snapshot(v))));
        Ok(())
    })
}

/// `*out_count`: the entities of a snapshot.
///
/// Thread-safe.
///
/// # Safety
/// `out_count` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tracer_graph_count(
    graph: *const tracer_graph_t,
    out_count: *mut usize,
) -> tracer_result_t {
    call("tracer_graph_count", || {
        let o = out(out_count, "out_count")?;
        o.set(GRAPHS.get(graph)?.0.len());
        Ok(())
    })
}

fn get(g: &Snapshot, index: usize) -> CapiResult<tracer_entity_t> {
    let e = g.0.get(index).ok_or_else(|| {
        CapiError::invalid(format!("index {index} is past the {} entities", g.0.len()))
    })?;
    Ok(tracer_entity_t {
        kind: e.kind,
        node_name: e.strings[0].as_ptr(),
        node_namespace: e.strings[1].as_ptr(),
        topic: e.strings[2].as_ptr(),
        type_name: e.strings[3].as_ptr(),
        type_hash: e.strings[4].as_ptr(),
        qos: e.qos,
        gid: e.gid,
        local: e.local,
    })
}

/// `*out_entity`: entity `index` of a snapshot (0 <= index < count); its strings belong to the
/// snapshot.
///
/// Thread-safe.
///
/// # Safety
/// `out_entity` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tracer_graph_get(
    graph: *const tracer_graph_t,
    index: usize,
    out_entity: *mut tracer_entity_t,
) -> tracer_result_t {
    call("tracer_graph_get", || {
        let o = out(out_entity, "out_entity")?;
        let g = GRAPHS.get(graph)?;
        o.set(get(&g, index)?);
        Ok(())
    })
}

/// Destroy a snapshot (its strings go with it). The handle is dead after the call.
///
/// Thread-safe. `graph` may be any value: NULL and dead handles are refused.
#[no_mangle]
pub extern "C" fn tracer_graph_destroy(graph: *mut tracer_graph_t) -> tracer_result_t {
    call("tracer_graph_destroy", || GRAPHS.remove(graph).map(drop))
}
