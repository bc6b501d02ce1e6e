//! Message payloads decoded with their schema text alone (the `tracer-ros2msg` crate), for
//! `cat` (a channel's MCAP schema) and `echo` (a topic vertex's `:schema`).

use ros2msg::{Schema, Value, ROS2MSG};

/// Why a channel's messages cannot be decoded: said once per channel.
pub fn parse_schema(
    type_name: &str,
    schema_encoding: &str,
    message_encoding: &str,
    text: &[u8],
) -> Result<Schema, String> {
    if message_encoding != "cdr" {
        return Err(format!(
            "message encoding {message_encoding:?} is not cdr: payload printed raw"
        ));
    }
    if schema_encoding != ROS2MSG {
        return Err(format!(
            "schema encoding {schema_encoding:?} of {type_name} is not {ROS2MSG}: payload printed raw"
        ));
    }
    let text = std::str::from_utf8(text).map_err(|e| {
        format!("schema text of {type_name} is not UTF-8 ({e}): payload printed raw")
    })?;
    Schema::parse(type_name, text)
        .map_err(|e| format!("schema of {type_name}: {e}: payload printed raw"))
}

/// A payload decoded, or why not (the field path and byte offset).
pub fn decode(schema: &Schema, payload: &[u8]) -> Result<Value, String> {
    ros2msg::decode(schema, payload).map_err(|e| e.to_string())
}
