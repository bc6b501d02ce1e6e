//! A type's identity for `:schema` and MCAP: `pkg/msg/Type`, the RIHS01 type hash and the
//! `ros2msg` definition (the .msg text of the type and of every type it uses), all read from the
//! Jazzy `rosidl_message_type_support_t`.

use ffi::{rosidl_message_type_support_t, rosidl_runtime_c__String};

use super::{CdrError, MessageType};

/// Encoding name of [`TypeInfo::definition`] in an MCAP Schema record (as `ros2 bag` writes it).
pub const ROS2MSG: &str = "ros2msg";

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TypeInfo {
    /// `pkg/msg/Type`.
    pub type_name: String,
    /// `RIHS01_<64 hex digits>`, or None when the type support has no hash (pre-Jazzy code).
    pub type_hash: Option<String>,
    /// The `ros2msg` complete definition: the type's .msg text, then for each dependency a line
    /// of 80 `=`, a line `MSG: pkg/msg/Dep` and its text. None when the type support carries no
    /// sources (or only "implicit"/"idl" ones without .msg text).
    pub definition: Option<String>,
}

impl TypeInfo {
    /// The vertex `:schema` of a topic of this type (encoding `ros2msg`; a missing hash or
    /// definition is the empty string).
    pub fn to_schema(&self) -> libtracer_core::Schema {
        libtracer_core::Schema {
            type_name: self.type_name.clone(),
            encoding: ROS2MSG.to_string(),
            type_hash: self.type_hash.clone().unwrap_or_default(),
            definition: self.definition.clone().unwrap_or_default(),
            layout: String::new(),
        }
    }
}

/// Reads the type's name, hash and definition.
///
/// # Safety
/// `ts` must be null or a valid type support handle whose library stays loaded during the call.
pub unsafe fn type_info(ts: *const rosidl_message_type_support_t) -> Result<TypeInfo, CdrError> {
    // SAFETY: forwarded contract.
    let mt = unsafe { MessageType::from_type_support(ts) }?;
    // The caller's handle and the introspection one both carry the Jazzy functions; prefer the
    // caller's (a dispatcher answers for every type support of the type).
    let handles = [ts, mt.introspection_handle()];
    // SAFETY: both handles are valid per the contract.
    let type_hash = handles.iter().find_map(|&h| unsafe { hash_of(h) });
    // SAFETY: as above.
    let definition = handles
        .iter()
        .find_map(|&h| unsafe { definition_of(h, mt.name()) });
    Ok(TypeInfo {
        type_name: mt.name().to_string(),
        type_hash,
        definition,
    })
}

unsafe fn hash_of(ts: *const rosidl_message_type_support_t) -> Option<String> {
    // SAFETY: valid handle per the caller.
    let f = unsafe { (*ts).get_type_hash_func }?;
    // SAFETY: the generated function returns a pointer to a static hash (or null).
    let h = unsafe { f(ts) };
    if h.is_null() {
        return None;
    }
    // SAFETY: non-null pointer to a rosidl_type_hash_t.
    let h = unsafe { &*h };
    if h.version == 0 {
        return None; // ROSIDL_TYPE_HASH_VERSION_UNSET
    }
    Some(format_hash(h.version, &h.value))
}

/// `RIHS<vv>_<hex>`, the form `rosidl_stringify_type_hash` produces.
pub fn format_hash(version: u8, value: &[u8]) -> String {
    let mut s = format!("RIHS{version:02}_");
    for b in value {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

/// One entry of `get_type_description_sources_func`'s sequence.
pub struct Source {
    pub type_name: String,
    pub encoding: String,
    pub text: String,
}

unsafe fn definition_of(ts: *const rosidl_message_type_support_t, root: &str) -> Option<String> {
    // SAFETY: valid handle per the caller.
    let f = unsafe { (*ts).get_type_description_sources_func }?;
    // SAFETY: the generated function returns a static sequence (or null).
    let seq = unsafe { f(ts) };
    // SAFETY: null or the generated static sequence.
    let sources = unsafe { sources_of(seq) }?;
    ros2msg(root, &sources)
}

/// The `ros2srv` definition of a service type (`pkg/srv/Type`): its `.srv` text, then every
/// message type it uses as in `ros2msg` (`ros2msg::split_service` takes it apart again).
///
/// # Safety
/// `ts` must be a valid service type support handle whose library stays loaded during the call.
pub unsafe fn service_definition(
    ts: *const ffi::rosidl_service_type_support_t,
    root: &str,
) -> Option<String> {
    // SAFETY: valid handle per the caller.
    let f = unsafe { (*ts).get_type_description_sources_func }?;
    // SAFETY: the generated function returns a static sequence (or null).
    let seq = unsafe { f(ts) };
    // SAFETY: null or the generated static sequence.
    let sources = unsafe { sources_of(seq) }?;
    complete_definition(root, "srv", &sources)
}

/// The entries of a generated `TypeSource__Sequence`; None for null or empty.
///
/// # Safety
/// `seq` is null or points to a sequence of initialized TypeSource structs.
unsafe fn sources_of(
    seq: *const ffi::rosidl_runtime_c__type_description__TypeSource__Sequence,
) -> Option<Vec<Source>> {
    if seq.is_null() {
        return None;
    }
    // SAFETY: non-null pointer to a TypeSource__Sequence.
    let seq = unsafe { &*seq };
    if seq.size == 0 || seq.data.is_null() {
        return None;
    }
    // SAFETY: `data` holds `size` initialized TypeSource structs.
    let items = unsafe { std::slice::from_raw_parts(seq.data, seq.size) };
    Some(
        items
            .iter()
            .map(|s| Source {
                // SAFETY: the strings of a generated TypeSource are initialized.
                type_name: unsafe { rstring(&s.type_name) },
                // SAFETY: as above.
                encoding: unsafe { rstring(&s.encoding) },
                // SAFETY: as above.
                text: unsafe { rstring(&s.raw_file_contents) },
            })
            .collect(),
    )
}

/// Joins sources into the `ros2msg` complete definition, the root type first. None if the root
/// has no .msg text. Each text ends with a newline, as the .msg file does (the generated
/// sources drop the file's final newline).
pub fn ros2msg(root: &str, sources: &[Source]) -> Option<String> {
    complete_definition(root, "msg", sources)
}

/// The root's text (a source of `root_encoding`: `msg`, or `srv` for a service), then each
/// `.msg` dependency after a line of 80 `=` and `MSG: pkg/msg/Dep`.
fn complete_definition(root: &str, root_encoding: &str, sources: &[Source]) -> Option<String> {
    let is_msg = |s: &Source| s.encoding == "msg";
    let push_text = |out: &mut String, text: &str| {
        out.push_str(text);
        if !text.is_empty() && !text.ends_with('\n') {
            out.push('\n');
        }
    };
    let root_src = sources
        .iter()
        .find(|s| s.type_name == root && s.encoding == root_encoding)?;
    let mut out = String::new();
    push_text(&mut out, &root_src.text);
    for dep in sources.iter().filter(|s| s.type_name != root && is_msg(s)) {
        out.push_str(&"=".repeat(80));
        out.push_str("\nMSG: ");
        out.push_str(&dep.type_name);
        out.push('\n');
        push_text(&mut out, &dep.text);
    }
    Some(out)
}

/// A rosidl_runtime_c__String as text: up to its NUL terminator. The generated type sources
/// of Jazzy's rosidl_generator_c count the terminating NUL in `size` for ASCII text, but for a
/// .msg with non-ASCII text (test_msgs/WStrings' defaults) `size` is shorter than the literal
/// (the generator counts before escaping), which would cut the definition off mid-field. A
/// rosidl_runtime_c__String's `data` is NUL-terminated by its invariant (`__init`, `__assign`
/// and the generated literals all terminate it), so the NUL is the true end.
unsafe fn rstring(s: &rosidl_runtime_c__String) -> String {
    if s.data.is_null() {
        return String::new();
    }
    // SAFETY: non-null `data` of a rosidl_runtime_c__String is a NUL-terminated C string.
    let text = unsafe { std::ffi::CStr::from_ptr(s.data) };
    String::from_utf8_lossy(text.to_bytes()).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn src(n: &str, e: &str, t: &str) -> Source {
        Source {
            type_name: n.into(),
            encoding: e.into(),
            text: t.into(),
        }
    }

    #[test]
    fn ros2msg_puts_the_root_first_and_delimits_each_dependency() {
        let sources = [
            src("my_msgs/msg/Example", "msg", "my_msgs/Basic b\n"),
            src("my_msgs/msg/Basic", "msg", "float32 f"),
            src("my_msgs/msg/Other", "msg", "int8 i\n"),
        ];
        let d = ros2msg("my_msgs/msg/Example", &sources).unwrap();
        let bar = "=".repeat(80);
        assert_eq!(
            d,
            format!(
                "my_msgs/Basic b\n{bar}\nMSG: my_msgs/msg/Basic\nfloat32 f\n{bar}\nMSG: my_msgs/msg/Other\nint8 i\n"
            )
        );
    }

    #[test]
    fn a_service_definition_is_its_srv_text_then_its_messages() {
        let sources = [
            src("a/srv/S", "srv", "int32 x\n---\nDep d"),
            src("a/srv/S_Request", "implicit", ""),
            src("a/msg/Dep", "msg", "bool b"),
        ];
        let bar = "=".repeat(80);
        assert_eq!(
            complete_definition("a/srv/S", "srv", &sources).unwrap(),
            format!("int32 x\n---\nDep d\n{bar}\nMSG: a/msg/Dep\nbool b\n")
        );
        assert_eq!(complete_definition("a/srv/S", "msg", &sources), None);
    }

    #[test]
    fn ros2msg_needs_msg_text_of_the_root() {
        assert_eq!(
            ros2msg("a/srv/S_Request", &[src("a/srv/S_Request", "implicit", "")]),
            None
        );
        assert_eq!(ros2msg("a/msg/X", &[]), None);
    }

    #[test]
    fn schema_carries_the_ros2msg_encoding() {
        let info = TypeInfo {
            type_name: "a/msg/B".into(),
            type_hash: Some("RIHS01_00".into()),
            definition: None,
        };
        let s = info.to_schema();
        assert_eq!(
            (s.type_name.as_str(), s.encoding.as_str()),
            ("a/msg/B", "ros2msg")
        );
        assert_eq!(
            (s.type_hash.as_str(), s.definition.as_str()),
            ("RIHS01_00", "")
        );
    }

    #[test]
    fn hash_is_rihs01_hex() {
        let h = format_hash(1, &[0xab; 32]);
        assert_eq!(h.len(), 7 + 64);
        assert!(h.starts_with("RIHS01_abab"));
    }
}
