//! The bindings link against the libraries of their distribution (Jazzy or Kilted) and carry
//! the header values through.
//! Run with the ROS libraries on the loader path (tools/test does; `eval "$(tools/ros-env)"`).

use std::ffi::CStr;
use std::mem::{offset_of, size_of};

#[test]
fn aggregate_macros_come_from_the_c_compiler_not_the_comma_operator() {
    // bindgen alone would read `{9223372036LL, 854775807LL}` as 854775807.
    let inf = ffi::rmw_duration_infinite();
    assert_eq!((inf.sec, inf.nsec), (9_223_372_036, 854_775_807));
    let unspecified = ffi::rmw_qos_deadline_default();
    assert_eq!((unspecified.sec, unspecified.nsec), (0, 0));
}

#[test]
fn static_qos_profiles_are_readable() {
    let default = ffi::rmw_qos_profile_default();
    assert_eq!(default.history, ffi::RMW_QOS_POLICY_HISTORY_KEEP_LAST);
    assert_eq!(default.depth, 10);
    assert_eq!(
        default.reliability,
        ffi::RMW_QOS_POLICY_RELIABILITY_RELIABLE
    );
    assert_eq!(default.durability, ffi::RMW_QOS_POLICY_DURABILITY_VOLATILE);
    let sensor = ffi::rmw_qos_profile_sensor_data();
    assert_eq!(
        sensor.reliability,
        ffi::RMW_QOS_POLICY_RELIABILITY_BEST_EFFORT
    );
    assert_eq!(sensor.depth, 5);
}

#[test]
fn macro_constants_have_the_types_rmw_uses() {
    let ret: ffi::rmw_ret_t = ffi::RMW_RET_INCORRECT_RMW_IMPLEMENTATION;
    assert_eq!(ret, 12);
    let domain: usize = ffi::RMW_DEFAULT_DOMAIN_ID;
    assert_eq!(domain, usize::MAX);
    let seq: u64 = ffi::RMW_MESSAGE_INFO_SEQUENCE_NUMBER_UNSUPPORTED;
    assert_eq!(seq, u64::MAX);
    let gid = [0u8; ffi::RMW_GID_STORAGE_SIZE];
    assert_eq!(gid.len(), 16);
}

#[test]
fn librmw_is_linked_and_validates_names() {
    let check = |name: &CStr| {
        let mut result: std::os::raw::c_int = -1;
        let mut index: usize = 0;
        // SAFETY: a valid NUL-terminated string and two valid out-pointers.
        let ret =
            unsafe { ffi::rmw_validate_full_topic_name(name.as_ptr(), &mut result, &mut index) };
        assert_eq!(ret, ffi::RMW_RET_OK);
        result
    };
    assert_eq!(check(c"/chatter"), ffi::RMW_TOPIC_VALID);
    assert_eq!(check(c"chatter"), ffi::RMW_TOPIC_INVALID_NOT_ABSOLUTE);
    assert_eq!(
        check(c"/bad name"),
        ffi::RMW_TOPIC_INVALID_CONTAINS_UNALLOWED_CHARACTERS
    );
}

#[test]
fn introspection_identifiers_resolve_in_c_and_cpp() {
    // SAFETY: both are NUL-terminated string constants defined by the type support libraries.
    let (c, cpp) = unsafe {
        (
            CStr::from_ptr(ffi::rosidl_typesupport_introspection_c__identifier),
            CStr::from_ptr(
                ffi::introspection_cpp::rosidl_typesupport_introspection_cpp_typesupport_identifier,
            ),
        )
    };
    assert_eq!(c.to_str().unwrap(), "rosidl_typesupport_introspection_c");
    assert_eq!(
        cpp.to_str().unwrap(),
        "rosidl_typesupport_introspection_cpp"
    );
}

#[test]
fn cpp_introspection_structs_share_the_c_layout() {
    use ffi::introspection_cpp::{
        rosidl_typesupport_introspection_cpp_MessageMember as CppMember,
        rosidl_typesupport_introspection_cpp_MessageMembers as CppMembers,
    };
    use ffi::{
        rosidl_typesupport_introspection_c__MessageMember as CMember,
        rosidl_typesupport_introspection_c__MessageMembers as CMembers,
    };
    assert_eq!(size_of::<CppMember>(), size_of::<CMember>());
    assert_eq!(size_of::<CppMembers>(), size_of::<CMembers>());
    macro_rules! same_offsets {
        ($a:ty, $b:ty, $($f:ident),+) => { $( assert_eq!(offset_of!($a, $f), offset_of!($b, $f), stringify!($f)); )+ };
    }
    same_offsets!(
        CppMember,
        CMember,
        name_,
        type_id_,
        string_upper_bound_,
        members_,
        is_key_,
        is_array_,
        array_size_,
        is_upper_bound_,
        offset_,
        default_value_,
        size_function,
        get_const_function,
        get_function,
        fetch_function,
        assign_function,
        resize_function
    );
    same_offsets!(
        CppMembers,
        CMembers,
        message_namespace_,
        message_name_,
        member_count_,
        size_of_,
        has_any_key_member_,
        members_,
        init_function,
        fini_function
    );
    assert_eq!(
        ffi::introspection_cpp::rosidl_typesupport_introspection_cpp_ROS_TYPE_MESSAGE as u32,
        ffi::rosidl_typesupport_introspection_c__ROS_TYPE_MESSAGE
    );
}

#[test]
fn event_types_are_the_distributions_own_values() {
    // Kilted moved RMW_EVENT_INVALID to the front (0, so that a zero-initialized rmw_event_t is
    // invalid) and shifted every event type by one; Jazzy has it last. rmw_tracer names event
    // types (rmw_tracer/src/event/mod.rs `classify`), never their values, so one source serves
    // both.
    let (first, invalid) = match ffi::ROS_DISTRO {
        "jazzy" => (0, 11),
        "kilted" => (1, 0),
        other => panic!("bindings for an unknown distribution {other}"),
    };
    assert_eq!(ffi::RMW_EVENT_LIVELINESS_CHANGED, first);
    assert_eq!(ffi::RMW_EVENT_INVALID, invalid);
    // SAFETY: returns a struct by value.
    let zero = unsafe { ffi::rmw_get_zero_initialized_event() };
    assert_eq!(zero.event_type, ffi::RMW_EVENT_INVALID);
}
