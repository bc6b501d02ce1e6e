#![forbid(unsafe_code)]
//! What the two recorders share (docs/mcap.md, "Recording"): rmw_tracer's in-process
//! recorder (`RMW_TRACER_RECORD`) and the `tracer record` participant write the same fields
//! on every message, read `header.stamp` the same way, and select topics the same way.
//! Nothing here needs ROS. The endpoint registry record's one codec lives here too
//! (`endpoint`): rmw_tracer writes and reads its registry with it, `tracer record` reads it;
//! and where the records are written (`registry`), and the QoS match rules both apply
//! (`qos_match`). And where a graph looks for peers, from the environment variables
//! rmw_tracer and the C API both read (`network`), and how a QoS maps onto the core's delivery
//! (`delivery`), and SROS2's rules on what a process and its peers may do (`security`).

pub mod delivery;
pub mod endpoint;
pub mod fields;
pub mod gid;
pub mod network;
pub mod qos_match;
pub mod record;
pub mod registry;
pub mod resume;
pub mod security;
pub mod select;
pub mod stamp;

pub use endpoint::{
    decode, offered_qos, Announcement, EntityKind, Gid, QosNumbers, Record, INFINITE_NS,
};
pub use fields::{Fields, MessageFields};
pub use select::Selection;
pub use stamp::StampLocator;
