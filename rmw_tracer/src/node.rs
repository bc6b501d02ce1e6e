//! Nodes: a name, a namespace, a registry record and the graph guard condition.

use std::ffi::CString;
use std::sync::Arc;

use libtracer_core::Signal;

use crate::boundary::clib;
use crate::boundary::cstr;
use crate::boundary::handle::Owned;
use crate::boundary::RmwResult;
use crate::context::Shared;
use crate::gid::Gid;
use crate::guard::GuardCondition;
use crate::qos::Qos;
use crate::registry::{EntityKind, Entry, Record};

pub struct Node {
    pub ctx: Arc<Shared>,
    pub name: CString,
    pub namespace: CString,
    pub gid: Gid,
    /// Raised by the registry whenever an entity appears or goes, here or on a peer.
    graph_guard: Owned<GuardCondition>,
    listener: u64,
    _entry: Entry,
}

impl Node {
    /// Validate the names (as rmw documents: `rmw_validate_node_name`, `rmw_validate_namespace`)
    /// and announce the node. `context` is the C context the graph guard condition points back to.
    pub fn new(
        ctx: Arc<Shared>,
        context: *mut ffi::rmw_context_t,
        name: &str,
        namespace: &str,
    ) -> RmwResult<Node> {
        ctx.check_live()?;
        clib::validate_node_name(name)?;
        clib::validate_namespace(namespace)?;
        let gid = ctx.gids.next();
        let mut rec = Record::new(EntityKind::Node, gid);
        rec.node_name = name.to_owned();
        rec.node_namespace = namespace.to_owned();
        rec.enclave = ctx.enclave.clone();
        let signal = Signal::new();
        let graph_guard = Owned::new(GuardCondition::with_signal(signal.clone()), |_, data| {
            ffi::rmw_guard_condition_t {
                implementation_identifier: crate::IDENTIFIER.as_ptr(),
                data,
                context,
            }
        });
        let entry = ctx.registry.announce(rec)?;
        let listener = ctx.registry.add_listener(signal);
        Ok(Node {
            name: cstr::owned(name, "name")?,
            namespace: cstr::owned(namespace, "namespace")?,
            ctx,
            gid,
            graph_guard,
            listener,
            _entry: entry,
        })
    }

    pub fn graph_guard_condition(&self) -> *const ffi::rmw_guard_condition_t {
        self.graph_guard.as_ptr()
    }

    pub fn name(&self) -> &str {
        self.name.to_str().unwrap_or_default()
    }

    pub fn namespace(&self) -> &str {
        self.namespace.to_str().unwrap_or_default()
    }

    /// The registry record of an endpoint (publisher, subscription, service, client) of this
    /// node on `topic` (a topic or service name as the user gave it).
    pub fn endpoint_record(
        &self,
        kind: EntityKind,
        gid: Gid,
        topic: &str,
        type_name: &str,
        type_hash: &str,
        qos: Qos,
    ) -> Record {
        let mut rec = Record::new(kind, gid);
        rec.node_gid = Some(self.gid);
        rec.node_name = self.name().to_owned();
        rec.node_namespace = self.namespace().to_owned();
        rec.topic = topic.to_owned();
        rec.type_name = type_name.to_owned();
        rec.type_hash = type_hash.to_owned();
        rec.qos = Some(qos.numbers());
        rec
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.ctx.registry.remove_listener(self.listener);
    }
}
