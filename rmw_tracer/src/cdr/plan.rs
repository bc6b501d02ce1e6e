//! A message type's layout, read once from its introspection type support.
//!
//! The walkers (`encode`, `decode`) follow a [`TypePlan`]: a flat list of fields with their
//! element kind, shape and the introspection functions they need, nested types resolved. C
//! (`rosidl_typesupport_introspection_c`, used by rclpy and C programs) and C++
//! (`rosidl_typesupport_introspection_cpp`, used by rclcpp) differ only in how strings and
//! sequences are held in memory, which [`Flavor`] tells the walkers.
//!
//! Here: the plan's types and the check of the functions the walkers need. Reading a type
//! support into a plan is split by step: `handle` finds the introspection type support behind
//! a handle, `members` reads its `MessageMembers` into a [`TypePlan`], `sizes` computes the
//! sizes kept in the plan (fewest and most bytes on the wire, plain or not).

mod handle;
mod members;
mod sizes;

use std::ffi::{c_char, c_void, CStr};
use std::sync::Arc;

pub use handle::{introspection_handle, service_members};
pub use members::{build, build_members};
pub use sizes::{max_size_from, plain_size};

/// The introspection type support identifiers, NUL-terminated for C.
pub const ID_C: &CStr = c"rosidl_typesupport_introspection_c";
pub const ID_CPP: &CStr = c"rosidl_typesupport_introspection_cpp";

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

/// The walkers rely on these functions; a type support without them is refused up front.
/// (Kept with [`Field`]: `encode` and `decode` cite it where they take the functions as given.)
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

/// # Safety
/// `p` must be null or a NUL-terminated string.
pub unsafe fn cstr_lossy(p: *const c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    // SAFETY: non-null and NUL-terminated per the contract.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}
