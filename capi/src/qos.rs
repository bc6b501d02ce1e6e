//! QoS as the C API takes it, mapped as rmw_tracer maps rmw's (`rmw_tracer/src/qos.rs`):
//! reliability, durability, history and depth, with rmw's enum numbers (so the registry record
//! reads the same to every ROS tool), the delivery policy of a subscription's edges and the
//! bounds of the rings.

use libtracer_core::{DeliveryPolicy, StreamOptions};
use tracer_recording::delivery::QosShape;
use tracer_recording::{QosNumbers, INFINITE_NS};

use crate::error::{CapiError, CapiResult};

/// The system default of a policy (reliable, volatile, keep last 10: rmw's default profile).
pub const TRACER_QOS_DEFAULT: u32 = 0;
pub const TRACER_RELIABILITY_RELIABLE: u32 = 1;
pub const TRACER_RELIABILITY_BEST_EFFORT: u32 = 2;
pub const TRACER_DURABILITY_TRANSIENT_LOCAL: u32 = 1;
pub const TRACER_DURABILITY_VOLATILE: u32 = 2;
pub const TRACER_HISTORY_KEEP_LAST: u32 = 1;
pub const TRACER_HISTORY_KEEP_ALL: u32 = 2;

/// The QoS of a publisher or subscription. Zero-initialised (`{0}`) is rmw's default profile:
/// reliable, volatile, keep last 10. Values are rmw's (`TRACER_RELIABILITY_*`, ...).
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct tracer_qos_t {
    /// `TRACER_RELIABILITY_RELIABLE` (default) or `TRACER_RELIABILITY_BEST_EFFORT`.
    pub reliability: u32,
    /// `TRACER_DURABILITY_VOLATILE` (default) or `TRACER_DURABILITY_TRANSIENT_LOCAL`.
    pub durability: u32,
    /// `TRACER_HISTORY_KEEP_LAST` (default) or `TRACER_HISTORY_KEEP_ALL`.
    pub history: u32,
    /// Depth of KEEP_LAST (0: the default, 10); ignored with KEEP_ALL.
    pub depth: usize,
}

/// A checked QoS with its defaults resolved.
#[derive(Clone, Copy, Debug)]
pub struct Qos {
    pub reliable: bool,
    pub transient_local: bool,
    pub keep_all: bool,
    pub depth: usize,
}

impl Qos {
    pub fn resolve(q: &tracer_qos_t) -> CapiResult<Qos> {
        let bad = |what: &str, x: u32| {
            CapiError::invalid(format!("qos.{what} = {x} is not one of 0, 1, 2"))
        };
        let reliable = match q.reliability {
            TRACER_QOS_DEFAULT | TRACER_RELIABILITY_RELIABLE => true,
            TRACER_RELIABILITY_BEST_EFFORT => false,
            x => return Err(bad("reliability", x)),
        };
        let transient_local = match q.durability {
            TRACER_QOS_DEFAULT | TRACER_DURABILITY_VOLATILE => false,
            TRACER_DURABILITY_TRANSIENT_LOCAL => true,
            x => return Err(bad("durability", x)),
        };
        let keep_all = match q.history {
            TRACER_QOS_DEFAULT | TRACER_HISTORY_KEEP_LAST => false,
            TRACER_HISTORY_KEEP_ALL => true,
            x => return Err(bad("history", x)),
        };
        Ok(Qos {
            reliable,
            transient_local,
            keep_all,
            depth: if q.depth == 0 { 10 } else { q.depth },
        })
    }

    /// What the registry record's `qos=` line carries (rmw's numbers).
    pub fn numbers(&self) -> QosNumbers {
        QosNumbers {
            history: if self.keep_all { 2 } else { 1 },
            depth: if self.keep_all { 0 } else { self.depth },
            reliability: if self.reliable { 1 } else { 2 },
            durability: if self.transient_local { 1 } else { 2 },
            liveliness: 1, // AUTOMATIC
            deadline_ns: INFINITE_NS,
            lifespan_ns: INFINITE_NS,
            lease_ns: INFINITE_NS,
        }
    }

    /// What of the profile the core's delivery depends on: rmw_tracer's own mapping
    /// (`tracer_recording::delivery`), so a C subscription holds a publisher back and bounds its
    /// ring as an rclpy one does.
    pub fn shape(&self) -> QosShape {
        QosShape {
            reliable: self.reliable,
            transient_local: self.transient_local,
            keep_all: self.keep_all,
            depth: self.depth,
        }
    }

    /// A subscription's edges: reliability and durability carried, `exact` for a topic (a
    /// ROS subscription hears its topic only), subtree for a namespace; paced for RELIABLE +
    /// KEEP_ALL.
    pub fn delivery(&self, exact: bool) -> DeliveryPolicy {
        self.shape().delivery(exact)
    }

    /// The bounds of a subscription's ring.
    pub fn subscription_ring(&self) -> StreamOptions {
        self.shape().subscription_ring()
    }

    /// The bounds of a publisher's topic stream.
    pub fn topic_ring(&self) -> StreamOptions {
        self.shape().topic_ring()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_is_the_default_profile() {
        let q = Qos::resolve(&tracer_qos_t::default()).unwrap();
        assert!(q.reliable && !q.transient_local && !q.keep_all && q.depth == 10);
        let n = q.numbers();
        assert_eq!(
            (n.reliability, n.durability, n.history, n.depth),
            (1, 2, 1, 10)
        );
        let bad = tracer_qos_t {
            reliability: 7,
            ..Default::default()
        };
        assert!(Qos::resolve(&bad).is_err());
        let tl = tracer_qos_t {
            durability: TRACER_DURABILITY_TRANSIENT_LOCAL,
            reliability: TRACER_RELIABILITY_BEST_EFFORT,
            ..Default::default()
        };
        let q = Qos::resolve(&tl).unwrap();
        assert!(q.transient_local && !q.reliable);
    }
}
