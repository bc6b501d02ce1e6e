#![forbid(unsafe_code)]
//! Any ROS 2 message decoded from its `ros2msg` definition text alone, without the message
//! packages: [`Schema::parse`] reads the concatenated definition (`====` / `MSG: pkg/Type`
//! sections, as rmw_tracer's recorder, the `:schema` of a topic vertex and rosbag2 write
//! it), [`decode`] turns XCDR1 bytes into a [`Value`], which prints as JSON or YAML-like text,
//! and [`encode`] turns that JSON back into CDR (one parser for both). A service's `ros2srv`
//! definition splits into its request's and its response's ([`split_service`]).
//!
//! ```
//! let schema = ros2msg::Schema::parse("std_msgs/msg/String", "string data\n").unwrap();
//! let v = ros2msg::decode(&schema, &[0, 1, 0, 0, 3, 0, 0, 0, b'h', b'i', 0]).unwrap();
//! assert_eq!(v.to_json().to_string(), r#"{"data":"hi"}"#);
//! ```
//!
//! Used by `tracer cat`, `tracer echo` and `tracer serve` (tools/tracer); docs/cli.md.

pub mod decode;
pub mod encode;
pub mod exercise;
pub mod schema;
pub mod service;
pub mod value;

pub use decode::{decode, DecodeError};
pub use encode::{encode, EncodeError};
pub use exercise::{exercise_cdr, exercise_schema};
pub use schema::{Schema, SchemaError};
pub use service::split_service;
pub use value::Value;

/// The schema encoding this crate reads (the MCAP `ros2` profile's name for it).
pub const ROS2MSG: &str = "ros2msg";
/// A service's definition: the `.srv` text, then its dependencies as in `ros2msg`.
pub const ROS2SRV: &str = "ros2srv";
