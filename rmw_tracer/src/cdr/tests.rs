//! Tests against the real test_msgs type supports of the venv (loaded with dlopen, as rcl and
//! rclpy load them): type resolution through the C and C++ dispatchers, type info, sizes, and
//! errors on bad arguments. The byte-for-byte oracle against Fast DDS is ros_tests/test_cdr.py.

use ffi::rosidl_message_type_support_t;

use super::exercise::{generated_handle, message_type_support, MessageMemory};
use super::*;

/// The typesupport_c (`lang` = "c") or typesupport_cpp ("cpp") dispatcher of test_msgs/msg/`name`.
fn dispatcher(lang: &str, name: &str) -> *const rosidl_message_type_support_t {
    // SAFETY: a ROS type support library of the venv.
    unsafe { message_type_support(&format!("rosidl_typesupport_{lang}"), "test_msgs", name) }
        .unwrap()
}

fn c_type(name: &str) -> MessageType {
    // SAFETY: a dispatcher handle of a loaded library.
    unsafe { MessageType::from_type_support(dispatcher("c", name)) }.unwrap()
}

#[test]
fn resolves_through_the_c_and_cpp_dispatchers() {
    let c = c_type("MultiNested");
    assert_eq!(c.name(), "test_msgs/msg/MultiNested");
    assert_eq!(c.flavor(), Flavor::C);
    // SAFETY: a dispatcher handle of a loaded library.
    let cpp = unsafe { MessageType::from_type_support(dispatcher("cpp", "MultiNested")) }.unwrap();
    assert_eq!(cpp.name(), "test_msgs/msg/MultiNested");
    assert_eq!(cpp.flavor(), Flavor::Cpp);
}

#[test]
fn service_request_and_response_types() {
    for lang in ["c", "cpp"] {
        // SAFETY: a ROS type support library of the venv and its service handle function.
        let ts = unsafe {
            generated_handle(
                &format!("libtest_msgs__rosidl_typesupport_{lang}.so"),
                &format!(
                    "rosidl_typesupport_{lang}__get_service_type_support_handle__test_msgs__srv__Arrays"
                ),
            )
        }
        .unwrap();
        // SAFETY: a static service handle of a loaded library.
        let (req, resp) = unsafe { MessageType::from_service_type_support(ts.cast()) }.unwrap();
        assert_eq!(req.name(), "test_msgs/srv/Arrays_Request");
        assert_eq!(resp.name(), "test_msgs/srv/Arrays_Response");
        assert_eq!(
            req.flavor(),
            if lang == "c" { Flavor::C } else { Flavor::Cpp }
        );
        assert!(req.introspection_handle().is_null());
    }
}

#[test]
fn type_info_has_name_hash_and_ros2msg_definition() {
    // SAFETY: a dispatcher handle of a loaded library.
    let info = unsafe { type_info(dispatcher("c", "Nested")) }.unwrap();
    assert_eq!(info.type_name, "test_msgs/msg/Nested");
    // The hash test_msgs installs in share/test_msgs/msg/Nested.json (Jazzy, test_msgs 2.0.3).
    assert_eq!(
        info.type_hash.as_deref(),
        Some("RIHS01_f964f9dc322022b7a681ee6933ee5c3c788025b942fedb7f4d7c018ed840cf86")
    );
    let def = info.definition.unwrap();
    let (root, dep) = def
        .split_once(&"=".repeat(80))
        .expect("one dependency delimiter");
    // The root's .msg text (share/test_msgs/msg/Nested.msg), no NUL, then the delimiter line.
    assert_eq!(root, "BasicTypes basic_types_value\n", "{def:?}");
    assert!(
        dep.starts_with("\nMSG: test_msgs/msg/BasicTypes\n"),
        "{def}"
    );
    assert!(dep.ends_with("uint64 uint64_value\n"), "{def}");
    assert!(!def.contains('\0'), "{def:?}");
    assert!(!dep.contains(&"=".repeat(80)));
}

#[test]
fn type_info_keeps_comments_and_lists_every_dependency() {
    // SAFETY: a dispatcher handle of a loaded library.
    let info = unsafe { type_info(dispatcher("c", "Builtins")) }.unwrap();
    let def = info.definition.unwrap();
    assert!(
        def.starts_with("builtin_interfaces/Duration duration_value\n"),
        "{def}"
    );
    assert!(
        def.contains("\nMSG: builtin_interfaces/msg/Duration\n"),
        "{def}"
    );
    assert!(
        def.contains("\nMSG: builtin_interfaces/msg/Time\n"),
        "{def}"
    );
    // Time.msg's own comment lines travel with it.
    assert!(
        def.contains("# This message communicates ROS Time defined here:"),
        "{def}"
    );
    assert_eq!(def.matches(&"=".repeat(80)).count(), 2);
    assert!(def.ends_with('\n') && !def.contains('\0'));
}

#[test]
fn type_info_of_a_type_without_dependencies_has_no_delimiter() {
    // SAFETY: a dispatcher handle of a loaded library.
    let info = unsafe { type_info(dispatcher("cpp", "BasicTypes")) }.unwrap();
    assert_eq!(info.type_name, "test_msgs/msg/BasicTypes");
    let def = info.definition.unwrap();
    assert!(
        def.contains("float64 float64_value") && !def.contains("MSG: "),
        "{def}"
    );
}

#[test]
fn size_pass_agrees_with_the_bytes_and_bounded_types_have_a_maximum() {
    for name in [
        "MultiNested",
        "Strings",
        "WStrings",
        "Arrays",
        "Empty",
        "BoundedPlainSequences",
    ] {
        let t = c_type(name);
        let mut m = MessageMemory::new(&t);
        let mut out = Vec::new();
        // SAFETY: an initialized C message of the type.
        unsafe { t.serialize(m.as_ptr(), &mut out) }.unwrap();
        // SAFETY: as above.
        let size = unsafe { t.serialized_size(m.as_ptr()) }.unwrap();
        assert_eq!(size, out.len(), "{name}");
        // SAFETY: as above; deserializing our own bytes gives the same bytes again.
        unsafe { t.deserialize(&out, m.as_ptr()) }.unwrap();
        let mut again = Vec::new();
        // SAFETY: as above.
        unsafe { t.serialize(m.as_ptr(), &mut again) }.unwrap();
        assert_eq!(again, out, "{name}");
    }
    // All fixed: the maximum is the size (4-byte header + 48 bytes, as Fast DDS writes it).
    assert_eq!(c_type("BasicTypes").max_serialized_size(), Some(52));
    assert_eq!(c_type("Builtins").max_serialized_size(), Some(20));
    assert_eq!(c_type("Empty").max_serialized_size(), Some(5));
    assert!(
        c_type("BoundedPlainSequences")
            .max_serialized_size()
            .unwrap()
            > 52
    );
    assert_eq!(c_type("Strings").max_serialized_size(), None);
    assert_eq!(c_type("UnboundedSequences").max_serialized_size(), None);
}

#[test]
fn bad_arguments_are_errors() {
    // SAFETY: null is allowed and refused.
    let null = unsafe { MessageType::from_type_support(std::ptr::null()) };
    assert!(matches!(null, Err(CdrError::NullTypeSupport)));
    let t = c_type("BasicTypes");
    // SAFETY: null message pointers are refused before any access.
    assert!(unsafe { t.serialize(std::ptr::null(), &mut Vec::new()) }.is_err());
    // SAFETY: as above.
    assert!(unsafe { t.deserialize(&[0, 1, 0, 0], std::ptr::null_mut()) }.is_err());
    // A handle of a non-introspection type support with no dispatcher behind it.
    let bogus = rosidl_message_type_support_t {
        typesupport_identifier: c"not_a_type_support".as_ptr(),
        data: std::ptr::null(),
        func: Some(ffi::get_message_typesupport_handle_function),
        ..Default::default()
    };
    // SAFETY: a valid handle whose handle function only compares identifiers.
    let e = unsafe { MessageType::from_type_support(&bogus) }.unwrap_err();
    assert!(
        matches!(e, CdrError::NoIntrospection(ref id) if id == "not_a_type_support"),
        "{e}"
    );
}

#[test]
fn truncated_input_names_type_and_field() {
    let t = c_type("Nested");
    let mut m = MessageMemory::new(&t);
    let mut out = Vec::new();
    // SAFETY: an initialized C message of the type.
    unsafe { t.serialize(m.as_ptr(), &mut out) }.unwrap();
    // SAFETY: as above.
    let e = unsafe { t.deserialize(&out[..out.len() - 3], m.as_ptr()) }.unwrap_err();
    let text = e.to_string();
    assert!(
        text.starts_with("test_msgs/msg/Nested.basic_types_value.uint64_value: truncated"),
        "{text}"
    );
    assert!(e.is_bad_input());
}

#[test]
fn plain_types_are_the_fixed_size_pointerless_ones_whose_struct_is_their_cdr() {
    for name in ["BasicTypes", "Nested", "Builtins", "Empty"] {
        let t = c_type(name);
        assert_eq!(t.plain_size(), Some(t.size_of()), "{name} is plain");
        // SAFETY: a dispatcher of a loaded library.
        let cpp = unsafe { MessageType::from_type_support(dispatcher("cpp", name)) }.unwrap();
        assert_eq!(
            cpp.plain_size(),
            Some(cpp.size_of()),
            "{name} (C++) is plain"
        );
    }
    for name in [
        "Strings",
        "Arrays",
        "BoundedSequences",
        "UnboundedSequences",
        "WStrings",
    ] {
        assert_eq!(c_type(name).plain_size(), None, "{name} is not plain");
    }
}

#[test]
fn a_plain_structs_bytes_are_its_cdr_body() {
    let t = c_type("BasicTypes");
    let mut m = MessageMemory::new(&t);
    let size = t.size_of();
    {
        // SAFETY: the message's own buffer, at least `size` bytes.
        let raw = unsafe { std::slice::from_raw_parts_mut(m.as_ptr() as *mut u8, size) };
        for (i, b) in raw.iter_mut().enumerate() {
            *b = (i as u8).wrapping_mul(37).wrapping_add(11);
        }
        raw[0] = 1; // bool_value: CDR carries a bool as 0 or 1
        for pad in [3, 22, 23] {
            raw[pad] = 0; // the struct's padding (CDR writes zeros there)
        }
    }
    let mut cdr = Vec::new();
    // SAFETY: an initialized BasicTypes (every bit pattern is a valid value but bool's).
    unsafe { t.serialize(m.as_ptr(), &mut cdr) }.unwrap();
    // SAFETY: as above.
    let raw = unsafe { std::slice::from_raw_parts(m.as_ptr() as *const u8, size) };
    assert_eq!(&cdr[..4], &[0, 1, 0, 0]);
    assert_eq!(&cdr[4..], &raw[..cdr.len() - 4]);
}

#[test]
fn a_nested_struct_with_tail_padding_is_not_plain() {
    fn field(name: &str, offset: usize, kind: plan::Kind) -> plan::Field {
        plan::Field {
            name: name.into(),
            offset,
            kind,
            shape: plan::Shape::Single,
            string_bound: None,
            size_fn: None,
            get_const_fn: None,
            get_fn: None,
            fetch_fn: None,
            assign_fn: None,
            resize_fn: None,
        }
    }
    // struct A { double d; uint8_t b; } (16 bytes); struct { A a; uint8_t c; } puts c at 16,
    // CDR at 9.
    let inner = |fields| {
        std::sync::Arc::new(plan::TypePlan {
            name: "x/msg/A".into(),
            flavor: plan::Flavor::C,
            size_of: 16,
            fields,
            min_wire_size: 9,
            max_body_size: Some(9),
            plain_size: None,
        })
    };
    let a = inner(vec![
        field("d", 0, plan::Kind::Prim(8)),
        field("b", 8, plan::Kind::Prim(1)),
    ]);
    let outer = vec![
        field("a", 0, plan::Kind::Message(a.clone())),
        field("c", 16, plan::Kind::Prim(1)),
    ];
    assert_eq!(plan::plain_size(&outer, 24), None);
    // The same with c a double: CDR aligns it to 16 as well, so that one is plain.
    let outer = vec![
        field("a", 0, plan::Kind::Message(a)),
        field("c", 16, plan::Kind::Prim(8)),
    ];
    assert_eq!(plan::plain_size(&outer, 24), Some(24));
}
