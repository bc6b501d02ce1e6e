//! A message type's layout, read once from its introspection type support.
//!
//! The walkers (`encode`, `decode`) follow a [`TypePlan`]: a flat list of fields with their
//! element kind, shape and the introspection functions they need, nested types resolved. C
//! (`rosidl_typesupport_introspection_c`, used by rclpy and C programs) and C++
//! (`rosidl_typesupport_introspection_cpp`, used by rclcpp) differ only in how strings and
//! sequences are held in memory, which [`Flavor`] tells the walkers.

use std::ffi::{c_char, c_void, CStr};
use std::sync::Arc;

use ffi::introspection_cpp::{
    rosidl_typesupport_introspection_cpp_MessageMember,
    rosidl_typesupport_introspection_cpp_MessageMembers,
    rosidl_typesupport_introspection_cpp_ServiceMembers,
};
use ffi::{
    rosidl_message_type_support_t, rosidl_service_type_support_t,
    rosidl_typesupport_introspection_c__MessageMember,
    rosidl_typesupport_introspection_c__MessageMembers,
    rosidl_typesupport_introspection_c__ServiceMembers,
};

use super::CdrError;

/// The introspection type support identifiers, NUL-terminated for C.
pub const ID_C: &CStr = c"rosidl_typesupport_introspection_c";
pub const ID_CPP: &CStr = c"rosidl_typesupport_introspection_cpp";

/// Nesting deeper than this is refused (ROS types cannot recurse; this guards broken data).
const MAX_DEPTH: usize = 32;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    /// rosidl_runtime_c layout: `rosidl_runtime_c__String`, `*__Sequence {data, size, capacity}`.
    C,
    /// C++ layout: `std::string`, `std::u16string`, `std::vector`, `std::array`, reached only
    /// through the introspection functions and the shim in `cxx_string.cpp`.
    Cpp,
}

/// What one element of a field is.
#[derive(Clone, Debug)]
pub enum Kind {
    Bool,
    /// A primitive of this many bytes (1, 2, 4, 8), copied as an unsigned integer of that width.
    Prim(usize),
    /// `wchar`: a `char16_t` in memory, a 32-bit unit on the wire (as fastcdr writes wchar_t).
    WChar,
    String,
    WString,
    Message(Arc<TypePlan>),
}

impl Kind {
    /// The fewest bytes one element takes on the wire (for length checks before allocating).
    pub fn min_wire_size(&self) -> usize {
        match self {
            Kind::Bool => 1,
            Kind::Prim(n) => *n,
            Kind::WChar | Kind::String | Kind::WString => 4,
            Kind::Message(t) => t.min_wire_size,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    Single,
    Array(usize),
    Sequence { bound: Option<usize> },
}

pub type SizeFn = unsafe extern "C" fn(*const c_void) -> usize;
pub type GetConstFn = unsafe extern "C" fn(*const c_void, usize) -> *const c_void;
pub type GetFn = unsafe extern "C" fn(*mut c_void, usize) -> *mut c_void;
pub type FetchFn = unsafe extern "C" fn(*const c_void, usize, *mut c_void);
pub type AssignFn = unsafe extern "C" fn(*mut c_void, usize, *const c_void);
pub type ResizeC = unsafe extern "C" fn(*mut c_void, usize) -> bool;
pub type ResizeCpp = unsafe extern "C" fn(*mut c_void, usize);

#[derive(Clone, Copy, Debug)]
pub enum Resize {
    C(ResizeC),
    Cpp(ResizeCpp),
}

#[derive(Clone, Debug)]
pub struct Field {
    pub name: String,
    pub offset: usize,
    pub kind: Kind,
    pub shape: Shape,
    /// `string<=N` / `wstring<=N`: the bound on the characters of each string.
    pub string_bound: Option<usize>,
    pub size_fn: Option<SizeFn>,
    pub get_const_fn: Option<GetConstFn>,
    pub get_fn: Option<GetFn>,
    pub fetch_fn: Option<FetchFn>,
    pub assign_fn: Option<AssignFn>,
    pub resize_fn: Option<Resize>,
}

#[derive(Debug)]
pub struct TypePlan {
    /// `pkg/msg/Type`.
    pub name: String,
    pub flavor: Flavor,
    pub size_of: usize,
    pub fields: Vec<Field>,
    pub min_wire_size: usize,
    /// Largest serialized body, if every string and sequence in the type is bounded. Computed
    /// for body offset 0 (the only place a top-level message starts).
    pub max_body_size: Option<usize>,
    /// `Some(size_of)` when the type is plain: its struct, fixed-size and pointerless, is its
    /// XCDR1 little-endian body byte for byte (padding aside), so it can be loaned
    /// (docs/loans.md).
    pub plain_size: Option<usize>,
}

/// Finds the introspection type support behind any handle (an introspection handle itself, or a
/// typesupport_c / typesupport_cpp dispatcher), C first, then C++.
///
/// # Safety
/// `ts` must be null or point to a valid `rosidl_message_type_support_t`.
pub unsafe fn introspection_handle(
    ts: *const rosidl_message_type_support_t,
) -> Result<(Flavor, *const rosidl_message_type_support_t), CdrError> {
    if ts.is_null() {
        return Err(CdrError::NullTypeSupport);
    }
    // SAFETY: `ts` is valid per the contract; its identifier is a C string of the type support.
    let id = unsafe { cstr_lossy((*ts).typesupport_identifier) };
    for (flavor, wanted) in [(Flavor::C, ID_C), (Flavor::Cpp, ID_CPP)] {
        // SAFETY: valid handle and NUL-terminated identifier; the dispatcher returns null (and
        // sets the rcutils error string) when it has no such type support.
        let h = unsafe { ffi::get_message_typesupport_handle(ts, wanted.as_ptr()) };
        if !h.is_null() {
            return Ok((flavor, h));
        }
        // A failed look-up leaves an error string behind; it is not an error of ours yet.
        // SAFETY: plain call, thread-local state of rcutils.
        unsafe { ffi::rcutils_reset_error() };
    }
    Err(CdrError::NoIntrospection(id))
}

/// The request and response members of a service's introspection type support, C first, then
/// C++ (the service analogue of [`introspection_handle`]).
///
/// # Safety
/// `ts` must be null or point to a valid `rosidl_service_type_support_t`.
pub unsafe fn service_members(
    ts: *const rosidl_service_type_support_t,
) -> Result<(Flavor, *const c_void, *const c_void), CdrError> {
    if ts.is_null() {
        return Err(CdrError::NullTypeSupport);
    }
    // SAFETY: `ts` is valid per the contract.
    let id = unsafe { cstr_lossy((*ts).typesupport_identifier) };
    for (flavor, wanted) in [(Flavor::C, ID_C), (Flavor::Cpp, ID_CPP)] {
        // SAFETY: valid handle and NUL-terminated identifier; null when not offered.
        let h = unsafe { ffi::get_service_typesupport_handle(ts, wanted.as_ptr()) };
        if h.is_null() {
            // SAFETY: plain call, thread-local state of rcutils.
            unsafe { ffi::rcutils_reset_error() };
            continue;
        }
        // SAFETY: `h` is a valid introspection service handle of `flavor`.
        let data = unsafe { (*h).data };
        if data.is_null() {
            return Err(CdrError::BadTypeSupport(
                "service handle without members".into(),
            ));
        }
        let (req, resp) = match flavor {
            Flavor::C => {
                // SAFETY: `data` of a C introspection service handle is its ServiceMembers.
                let m = unsafe {
                    &*(data as *const rosidl_typesupport_introspection_c__ServiceMembers)
                };
                (
                    m.request_members_ as *const c_void,
                    m.response_members_ as *const c_void,
                )
            }
            Flavor::Cpp => {
                // SAFETY: `data` of a C++ introspection service handle is its ServiceMembers.
                let m = unsafe {
                    &*(data as *const rosidl_typesupport_introspection_cpp_ServiceMembers)
                };
                (
                    m.request_members_ as *const c_void,
                    m.response_members_ as *const c_void,
                )
            }
        };
        return Ok((flavor, req, resp));
    }
    Err(CdrError::NoIntrospection(id))
}

/// # Safety
/// `ts` must be an introspection handle of `flavor` (as [`introspection_handle`] returns), whose
/// data lives as long as the process (type support libraries are never unloaded while used).
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

/// `Some(size_of)` when a struct of `fields` (`size_of` bytes) is its own CDR body
/// (docs/loans.md, "Which types are loanable"). Only on a little-endian host: the body is
/// CDR_LE.
pub fn plain_size(fields: &[Field], size_of: usize) -> Option<usize> {
    if cfg!(target_endian = "big") {
        return None;
    }
    let end = plain_end(fields, 0, 0)?;
    (end <= size_of).then_some(size_of)
}

/// Walks `fields` of a struct at address `base` whose CDR starts at body offset `pos`: the body
/// offset where they end, when every element's body offset is its address; None otherwise or
/// for a field that is not a fixed-size primitive, bool or plain message.
fn plain_end(fields: &[Field], base: usize, mut pos: usize) -> Option<usize> {
    for f in fields {
        let n = match f.shape {
            Shape::Single => 1,
            Shape::Array(n) => n,
            Shape::Sequence { .. } => return None,
        };
        let first = base + f.offset;
        match &f.kind {
            Kind::Bool | Kind::Prim(_) => {
                let size = if let Kind::Prim(k) = f.kind { k } else { 1 };
                // Elements of a primitive array are contiguous in both (size = alignment).
                pos += super::wire::padding(pos, size);
                if pos != first {
                    return None;
                }
                pos += n * size;
            }
            Kind::Message(t) => {
                for i in 0..n {
                    pos = plain_end(&t.fields, first + i * t.size_of, pos)?;
                }
            }
            Kind::WChar | Kind::String | Kind::WString => return None,
        }
    }
    Some(pos)
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

/// The walkers rely on these functions; a type support without them is refused up front.
fn check_functions(flavor: Flavor, f: &Field) -> Result<(), &'static str> {
    let cpp_bool_vector = flavor == Flavor::Cpp
        && matches!(f.kind, Kind::Bool)
        && matches!(f.shape, Shape::Sequence { .. });
    match f.shape {
        Shape::Single => Ok(()),
        _ if cpp_bool_vector => {
            // std::vector<bool> has no addressable elements: fetch/assign copy them one by one.
            if f.size_fn.is_none()
                || f.fetch_fn.is_none()
                || f.assign_fn.is_none()
                || f.resize_fn.is_none()
            {
                return Err("bool sequence without size/fetch/assign/resize functions");
            }
            Ok(())
        }
        Shape::Array(_) => {
            if f.get_const_fn.is_none() || f.get_fn.is_none() {
                return Err("array without get functions");
            }
            Ok(())
        }
        Shape::Sequence { .. } => {
            if f.size_fn.is_none()
                || f.get_const_fn.is_none()
                || f.get_fn.is_none()
                || f.resize_fn.is_none()
            {
                return Err("sequence without size/get/resize functions");
            }
            Ok(())
        }
    }
}

fn field_min_size(f: &Field) -> usize {
    match f.shape {
        Shape::Single => f.kind.min_wire_size(),
        Shape::Array(n) => n.saturating_mul(f.kind.min_wire_size()),
        Shape::Sequence { .. } => 4,
    }
}

/// Alignment of an element's first byte on the wire.
fn wire_align(k: &Kind) -> usize {
    match k {
        Kind::Bool => 1,
        Kind::Prim(n) => *n,
        Kind::WChar | Kind::String | Kind::WString => 4,
        Kind::Message(_) => 1,
    }
}

/// End offset of the largest encoding of `fields` starting at body offset `pos`, or None if a
/// string or sequence is unbounded. Every step (align, then add) is monotonic in its start, so
/// the maximal lengths give the maximal end.
pub fn max_size_from(fields: &[Field], mut pos: usize) -> Option<usize> {
    for f in fields {
        let elems = match f.shape {
            Shape::Single => 1,
            Shape::Array(n) => n,
            Shape::Sequence { bound } => {
                pos += super::wire::padding(pos, 4) + 4;
                bound?
            }
        };
        for _ in 0..elems {
            pos = max_elem_end(f, pos)?;
        }
    }
    Some(pos)
}

fn max_elem_end(f: &Field, pos: usize) -> Option<usize> {
    let pos = pos + super::wire::padding(pos, wire_align(&f.kind));
    Some(match &f.kind {
        Kind::Bool => pos + 1,
        Kind::Prim(n) => pos + n,
        Kind::WChar => pos + 4,
        Kind::String => pos + 4 + f.string_bound? + 1,
        Kind::WString => pos + 4 + 4 * f.string_bound?,
        Kind::Message(t) => max_size_from(&t.fields, pos)?,
    })
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

/// # Safety
/// `p` must be null or a NUL-terminated string.
pub unsafe fn cstr_lossy(p: *const c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    // SAFETY: non-null and NUL-terminated per the contract.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}
