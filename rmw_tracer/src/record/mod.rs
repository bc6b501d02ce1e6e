//! Recording straight from the middleware: `RMW_TRACER_RECORD=out.mcap` (docs/mcap.md,
//! "Recording"). The recording itself is `tracer_recording::record`, shared with the C API;
//! here it gets the rmw log, the exit hook, and what a publisher or subscription of rmw_tracer
//! knows of its type and of the other publishers (the registry).

use std::sync::Arc;

use tracer_mcap::ros2::OfferedQos;
use tracer_recording::record::{self, Host, Level, TapSource};
pub use tracer_recording::record::{PubTap, SubTap};

use crate::context::Shared;
use crate::gid::Gid;
use crate::qos::Qos;
use crate::topic::TopicType;

fn log(level: Level, text: &str) {
    match level {
        Level::Info => crate::log::log!(RMW_LOG_SEVERITY_INFO, "{text}"),
        Level::Warn => crate::log::log!(RMW_LOG_SEVERITY_WARN, "{text}"),
        Level::Error => crate::log::log!(RMW_LOG_SEVERITY_ERROR, "{text}"),
    }
}

static HOST: Host = Host {
    log,
    at_exit: tracer_boundary::atexit::register,
};

/// `rmw_init`: opens the file on the first call when `RMW_TRACER_RECORD` is set.
pub fn context_started() {
    record::context_started(&HOST);
}

/// `rmw_shutdown`: the last live context finishes the file.
pub fn context_shutdown() {
    record::context_shutdown();
}

/// The tap of a new publisher, when this process records `topic`.
pub fn publisher_tap(
    topic: &str,
    path: &str,
    ty: &TopicType,
    qos: &Qos,
    gid: Gid,
) -> Option<PubTap> {
    let offered = qos.numbers().offered();
    record::publisher_tap(topic, path, &ty.type_name, &ty.definition, offered, gid.0)
}

/// What a subscription's tap asks: the type's definition (from its type support) and the
/// registry's publishers of the topic.
struct Source {
    ctx: Arc<Shared>,
    topic: String,
    type_name: String,
    definition: String,
}

impl TapSource for Source {
    fn definition(&self, _origin: Option<&str>) -> String {
        self.definition.clone()
    }

    fn publishers_qos(&self) -> Vec<OfferedQos> {
        let records = self.ctx.registry.snapshot();
        record::publishers_qos(records.iter().map(|(_, r)| r), &self.topic, &self.type_name)
    }
}

/// The tap of a new subscription, when this process records `topic`.
pub fn subscription_tap(
    ctx: &Arc<Shared>,
    topic: &str,
    path: &str,
    ty: &TopicType,
) -> Option<SubTap> {
    let source = Source {
        ctx: ctx.clone(),
        topic: topic.to_owned(),
        type_name: ty.type_name.clone(),
        definition: ty.definition.clone(),
    };
    record::subscription_tap(topic, path, &ty.type_name, Box::new(source))
}

#[cfg(test)]
mod tests;
