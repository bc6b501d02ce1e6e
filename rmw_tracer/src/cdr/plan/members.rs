//! Building a [`TypePlan`] from a type's introspection `MessageMembers`: each member read
//! through its flavor's binding, its type id and shape mapped to a [`Field`], nested message
//! types built the same way.

use std::ffi::{c_char, c_void};
use std::sync::Arc;

use ffi::introspection_cpp::{
    rosidl_typesupport_introspection_cpp_MessageMember,
    rosidl_typesupport_introspection_cpp_MessageMembers,
};
use ffi::{
    rosidl_message_type_support_t, rosidl_typesupport_introspection_c__MessageMember,
    rosidl_typesupport_introspection_c__MessageMembers,
};

use super::sizes::field_min_size;
use super::{
    check_functions, cstr_lossy, max_size_from, plain_size, AssignFn, FetchFn, Field, Flavor,
    GetConstFn, GetFn, Kind, Resize, Shape, SizeFn, TypePlan, ID_C, ID_CPP,
};
use crate::cdr::CdrError;

/// Nesting deeper than this is refused (ROS types cannot recurse; this guards broken data).
const MAX_DEPTH: usize = 32;

/// # Safety
/// `ts` must be an introspection handle of `flavor` (as
/// [`introspection_handle`](super::introspection_handle) returns), whose data lives as long as
/// the process (type support libraries are never unloaded while used).
pub unsafe fn build(
    flavor: Flavor,
    ts: *const rosidl_message_type_support_t,
) -> Result<Arc<TypePlan>, CdrError> {
    // SAFETY: forwarded contract.
    unsafe { build_at(flavor, ts, 0) }
}

unsafe fn build_at(
    flavor: Flavor,
    ts: *const rosidl_message_type_support_t,
    depth: usize,
) -> Result<Arc<TypePlan>, CdrError> {
    if depth > MAX_DEPTH {
        return Err(CdrError::BadTypeSupport(
            "message types nested too deeply".into(),
        ));
    }
    // SAFETY: `ts` is a valid introspection handle per the contract.
    let data = unsafe { (*ts).data };
    // SAFETY: `data` of an introspection handle of `flavor` is its MessageMembers.
    unsafe { build_members(flavor, data, depth) }
}

/// # Safety
/// `data` must be null or point to the static `MessageMembers` of `flavor` of a loaded library.
pub unsafe fn build_members(
    flavor: Flavor,
    data: *const c_void,
    depth: usize,
) -> Result<Arc<TypePlan>, CdrError> {
    if data.is_null() {
        return Err(CdrError::BadTypeSupport(
            "introspection type support without members".into(),
        ));
    }
    // The C and C++ MessageMembers/MessageMember structs share one layout (bindgen checks both
    // against the headers); only the function-pointer types of resize/init differ, so each is
    // read through its own binding.
    let (ns, name, count, size_of, members) = match flavor {
        Flavor::C => {
            // SAFETY: `data` of a C introspection handle is its MessageMembers.
            let m =
                unsafe { &*(data as *const rosidl_typesupport_introspection_c__MessageMembers) };
            (
                m.message_namespace_,
                m.message_name_,
                m.member_count_,
                m.size_of_,
                m.members_ as *const c_void,
            )
        }
        Flavor::Cpp => {
            // SAFETY: `data` of a C++ introspection handle is its MessageMembers.
            let m =
                unsafe { &*(data as *const rosidl_typesupport_introspection_cpp_MessageMembers) };
            (
                m.message_namespace_,
                m.message_name_,
                m.member_count_,
                m.size_of_,
                m.members_ as *const c_void,
            )
        }
    };
    // SAFETY: both are NUL-terminated static strings of the generated type support (or null).
    let type_name = unsafe { type_name(ns, name) };
    if count > 0 && members.is_null() {
        return Err(CdrError::BadTypeSupport(format!(
            "{type_name}: member array is null"
        )));
    }
    let mut fields = Vec::with_capacity(count as usize);
    for i in 0..count as usize {
        // SAFETY: `members` points to `count` MessageMember structs of the flavor's type.
        let f = unsafe { read_member(flavor, members, i) };
        // SAFETY: the member's strings and nested handle are those of the generated code.
        let field = unsafe { field_of(flavor, &f, &type_name, depth) }?;
        fields.push(field);
    }
    let min_wire_size = fields.iter().map(field_min_size).sum::<usize>().max(1);
    let max_body_size = max_size_from(&fields, 0);
    let plain_size = plain_size(&fields, size_of);
    Ok(Arc::new(TypePlan {
        name: type_name,
        flavor,
        size_of,
        fields,
        min_wire_size,
        max_body_size,
        plain_size,
    }))
}

/// The flavor-independent view of one MessageMember.
struct RawMember {
    name: *const c_char,
    type_id: u8,
    string_upper_bound: usize,
    members: *const rosidl_message_type_support_t,
    is_array: bool,
    array_size: usize,
    is_upper_bound: bool,
    offset: u32,
    size_fn: Option<SizeFn>,
    get_const_fn: Option<GetConstFn>,
    get_fn: Option<GetFn>,
    fetch_fn: Option<FetchFn>,
    assign_fn: Option<AssignFn>,
    resize_fn: Option<Resize>,
}

unsafe fn read_member(flavor: Flavor, members: *const c_void, i: usize) -> RawMember {
    macro_rules! raw {
        ($m:expr, $resize:expr) => {
            RawMember {
                name: $m.name_,
                type_id: $m.type_id_,
                string_upper_bound: $m.string_upper_bound_,
                members: $m.members_,
                is_array: $m.is_array_,
                array_size: $m.array_size_,
                is_upper_bound: $m.is_upper_bound_,
                offset: $m.offset_,
                size_fn: $m.size_function,
                get_const_fn: $m.get_const_function,
                get_fn: $m.get_function,
                fetch_fn: $m.fetch_function,
                assign_fn: $m.assign_function,
                resize_fn: $m.resize_function.map($resize),
            }
        };
    }
    match flavor {
        Flavor::C => {
            // SAFETY: caller guarantees `members` holds more than `i` C MessageMembers.
            let m = unsafe {
                &*(members as *const rosidl_typesupport_introspection_c__MessageMember).add(i)
            };
            raw!(m, Resize::C)
        }
        Flavor::Cpp => {
            // SAFETY: caller guarantees `members` holds more than `i` C++ MessageMembers.
            let m = unsafe {
                &*(members as *const rosidl_typesupport_introspection_cpp_MessageMember).add(i)
            };
            raw!(m, Resize::Cpp)
        }
    }
}

// The field type ids are the same numbers in C and C++ (field_types.h / field_types.hpp).
const T_FLOAT: u8 = 1;
const T_DOUBLE: u8 = 2;
const T_LONG_DOUBLE: u8 = 3;
const T_CHAR: u8 = 4;
const T_WCHAR: u8 = 5;
const T_BOOLEAN: u8 = 6;
const T_OCTET: u8 = 7;
const T_UINT8: u8 = 8;
const T_INT8: u8 = 9;
const T_UINT16: u8 = 10;
const T_INT16: u8 = 11;
const T_UINT32: u8 = 12;
const T_INT32: u8 = 13;
const T_UINT64: u8 = 14;
const T_INT64: u8 = 15;
const T_STRING: u8 = 16;
const T_WSTRING: u8 = 17;
const T_MESSAGE: u8 = 18;

const _: () = {
    assert!(ffi::rosidl_typesupport_introspection_c__ROS_TYPE_MESSAGE as u8 == T_MESSAGE);
    assert!(ffi::rosidl_typesupport_introspection_c__ROS_TYPE_LONG_DOUBLE as u8 == T_LONG_DOUBLE);
    assert!(
        ffi::introspection_cpp::rosidl_typesupport_introspection_cpp_ROS_TYPE_MESSAGE == T_MESSAGE
    );
    assert!(
        ffi::introspection_cpp::rosidl_typesupport_introspection_cpp_ROS_TYPE_WSTRING == T_WSTRING
    );
};

unsafe fn field_of(
    flavor: Flavor,
    m: &RawMember,
    owner: &str,
    depth: usize,
) -> Result<Field, CdrError> {
    // SAFETY: the member name is a static C string of the generated code (or null).
    let name = unsafe { cstr_lossy(m.name) };
    let unsupported = |what: &str| CdrError::UnsupportedField {
        ty: owner.to_string(),
        field: name.clone(),
        what: what.to_string(),
    };
    let kind = match m.type_id {
        T_BOOLEAN => Kind::Bool,
        T_CHAR | T_OCTET | T_UINT8 | T_INT8 => Kind::Prim(1),
        T_UINT16 | T_INT16 => Kind::Prim(2),
        T_FLOAT | T_UINT32 | T_INT32 => Kind::Prim(4),
        T_DOUBLE | T_UINT64 | T_INT64 => Kind::Prim(8),
        T_WCHAR => Kind::WChar,
        T_STRING => Kind::String,
        T_WSTRING => Kind::WString,
        T_LONG_DOUBLE => {
            return Err(unsupported(
                "long double (its size differs between platforms and DDS implementations)",
            ))
        }
        T_MESSAGE => {
            if m.members.is_null() {
                return Err(unsupported("nested message without type support"));
            }
            // The nested handle normally is the introspection handle of the same flavor; look it
            // up through the handle function in case it is a dispatcher.
            let wanted = match flavor {
                Flavor::C => ID_C,
                Flavor::Cpp => ID_CPP,
            };
            // SAFETY: a valid handle of the generated code and a NUL-terminated identifier.
            let h = unsafe { ffi::get_message_typesupport_handle(m.members, wanted.as_ptr()) };
            if h.is_null() {
                // SAFETY: plain call, thread-local state of rcutils.
                unsafe { ffi::rcutils_reset_error() };
                return Err(unsupported("nested message type support of another flavor"));
            }
            // SAFETY: `h` is an introspection handle of `flavor` from a loaded library.
            Kind::Message(unsafe { build_at(flavor, h, depth + 1) }?)
        }
        other => return Err(unsupported(&format!("field type id {other}"))),
    };
    let shape = if !m.is_array {
        Shape::Single
    } else if m.is_upper_bound {
        Shape::Sequence {
            bound: Some(m.array_size),
        }
    } else if m.array_size == 0 {
        Shape::Sequence { bound: None }
    } else {
        Shape::Array(m.array_size)
    };
    let string_bound = (matches!(kind, Kind::String | Kind::WString) && m.string_upper_bound > 0)
        .then_some(m.string_upper_bound);
    let field = Field {
        name: name.clone(),
        offset: m.offset as usize,
        kind,
        shape,
        string_bound,
        size_fn: m.size_fn,
        get_const_fn: m.get_const_fn,
        get_fn: m.get_fn,
        fetch_fn: m.fetch_fn,
        assign_fn: m.assign_fn,
        resize_fn: m.resize_fn,
    };
    check_functions(flavor, &field).map_err(unsupported)?;
    Ok(field)
}

/// `pkg/msg/Type` from the introspection namespace (`pkg__msg` in C, `pkg::msg` in C++) and name.
unsafe fn type_name(ns: *const c_char, name: *const c_char) -> String {
    // SAFETY: forwarded: NUL-terminated or null.
    let (ns, name) = unsafe { (cstr_lossy(ns), cstr_lossy(name)) };
    let ns = ns.replace("::", "/").replace("__", "/");
    if ns.is_empty() {
        name
    } else {
        format!("{ns}/{name}")
    }
}
