//! CDR -> message in memory, following a [`TypePlan`].
//!
//! Strings and sequences are (re)allocated only through the type support's own functions
//! (`rosidl_runtime_c__String__assignn`, `rosidl_runtime_c__U16String__assignn`, the members'
//! `resize_function`, the C++ shim), so the message's fini function frees them. Every length is
//! checked against the bytes left before anything is allocated.

use std::ffi::c_void;

use super::cxx;
use super::plan::{Field, Flavor, Kind, Resize, Shape, TypePlan};
use super::wire::Reader;
use super::CdrError;

/// Scratch space reused across one deserialization.
#[derive(Default)]
pub struct Scratch {
    units: Vec<u16>,
}

/// # Safety
/// `msg` must point to an initialized message of the type `t` describes, in `t.flavor`'s layout,
/// that nothing else accesses during the call. On error the message is left valid (every field
/// either old or new) so that its fini function still works.
pub unsafe fn message(
    t: &TypePlan,
    msg: *mut c_void,
    r: &mut Reader,
    scratch: &mut Scratch,
) -> Result<(), CdrError> {
    for f in &t.fields {
        // SAFETY: `offset` is the field's offset inside the message `msg` points to.
        let p = unsafe { msg.cast::<u8>().add(f.offset) }.cast::<c_void>();
        // SAFETY: `p` points to the field, of the layout `f` describes.
        unsafe { field(t, f, p, r, scratch) }.map_err(|e| e.in_field(&t.name, &f.name))?;
    }
    Ok(())
}

unsafe fn field(
    t: &TypePlan,
    f: &Field,
    p: *mut c_void,
    r: &mut Reader,
    scratch: &mut Scratch,
) -> Result<(), CdrError> {
    match f.shape {
        // SAFETY: `p` is the element itself.
        Shape::Single => unsafe { element(t.flavor, f, p, r, scratch) },
        // SAFETY: `p` is an array of `n` elements.
        Shape::Array(n) => unsafe { elements(t.flavor, f, p, n, r, scratch) },
        Shape::Sequence { bound } => {
            let n = r.count(f.kind.min_wire_size())?;
            if let Some(bound) = bound {
                if n > bound {
                    return Err(CdrError::BoundExceeded { len: n, bound });
                }
            }
            // SAFETY: `p` is a sequence member; `n` is justified by the bytes left.
            unsafe { resize(t.flavor, f, p, n) }?;
            // SAFETY: the sequence now holds `n` elements.
            unsafe { elements(t.flavor, f, p, n, r, scratch) }
        }
    }
}

/// A C sequence of primitives as rosidl_runtime_c declares every one of them
/// (`rosidl_runtime_c__<type>__Sequence` in `primitives_sequence.h`).
#[repr(C)]
struct CPrimitiveSequence {
    data: *mut c_void,
    size: usize,
    capacity: usize,
}

unsafe fn resize(flavor: Flavor, f: &Field, p: *mut c_void, n: usize) -> Result<(), CdrError> {
    // A C sequence of primitives with room for `n` (a message taken into again and again):
    // keep its memory and set its size. Its resize function frees and callocs, which for a
    // large sequence costs a fresh mapping, its page faults and its zeroing on every take, only
    // to be overwritten. Its elements need no init or fini, and its fini function frees `data`
    // whatever `size` says.
    if flavor == Flavor::C && matches!(f.kind, Kind::Prim(_) | Kind::Bool) {
        // SAFETY: a C sequence member of primitives is a `CPrimitiveSequence` (the type support
        // of every C message uses rosidl_runtime_c's sequence types), and ours alone meanwhile.
        let seq = unsafe { &mut *p.cast::<CPrimitiveSequence>() };
        if n <= seq.capacity && (n == 0 || !seq.data.is_null()) {
            seq.size = n;
            return Ok(());
        }
    }
    // Already that long: keep its memory (a C++ vector, a sequence of messages or strings).
    if let Some(size_fn) = f.size_fn {
        // SAFETY: the member's own size function applied to the member.
        if unsafe { size_fn(p) } == n {
            return Ok(());
        }
    }
    let ok = match f.resize_fn.expect("checked by plan::check_functions") {
        // SAFETY: the member's own resize function (fini + init of the C sequence).
        Resize::C(resize) => unsafe { resize(p, n) },
        // SAFETY: std::vector::resize through the shim, which catches exceptions.
        Resize::Cpp(resize) => unsafe { cxx::rmw_tracer_cxx_call_resize(resize, p, n) },
    };
    if ok {
        Ok(())
    } else {
        Err(CdrError::Alloc {
            what: "sequence",
            len: n,
        })
    }
}

unsafe fn elements(
    flavor: Flavor,
    f: &Field,
    p: *mut c_void,
    n: usize,
    r: &mut Reader,
    scratch: &mut Scratch,
) -> Result<(), CdrError> {
    if n == 0 {
        return Ok(());
    }
    match &f.kind {
        Kind::Bool if flavor == Flavor::Cpp && matches!(f.shape, Shape::Sequence { .. }) => {
            let assign = f.assign_fn.expect("checked by plan::check_functions");
            for i in 0..n {
                let b = r.bool()?;
                // SAFETY: index below the new size; the assign function copies from a bool.
                unsafe { assign(p, i, (&raw const b).cast()) };
            }
            Ok(())
        }
        Kind::Bool => {
            let at = r.offset();
            let src = r.take_run(n, 1)?;
            if let Some(i) = src.iter().position(|&b| b > 1) {
                return Err(CdrError::Malformed {
                    at: at + i,
                    what: format!("bool byte {:#04x} (must be 0 or 1)", src[i]),
                });
            }
            let get = f.get_fn.expect("checked by plan::check_functions");
            // SAFETY: contiguous run of `n` bools (C array / sequence buffer / std::array).
            unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), get(p, 0).cast::<u8>(), n) };
            Ok(())
        }
        Kind::Prim(size) => {
            let src = r.take_run(n, *size)?;
            let get = f.get_fn.expect("checked by plan::check_functions");
            // SAFETY: element 0 starts a contiguous run of `n * size` bytes (C arrays, C sequence
            // buffers, std::array, std::vector of non-bool).
            let dst = unsafe { std::slice::from_raw_parts_mut(get(p, 0).cast::<u8>(), n * size) };
            store_prims(r.is_little_endian(), *size, src, dst);
            Ok(())
        }
        _ => {
            let get = f.get_fn.expect("checked by plan::check_functions");
            for i in 0..n {
                // SAFETY: index below the size: the member's get function gives element `i`.
                let e = unsafe { get(p, i) };
                // SAFETY: `e` points to one element of the field's element type.
                unsafe { element(flavor, f, e, r, scratch) }?;
            }
            Ok(())
        }
    }
}

/// Copies primitives from wire order into memory order.
fn store_prims(wire_le: bool, size: usize, src: &[u8], dst: &mut [u8]) {
    if size == 1 || wire_le == cfg!(target_endian = "little") {
        // Plain `memcpy`, not `copy::bytes`: a large sample of this host was written into its
        // slot with non-temporal stores (`copy::to_shared`), so it is read from memory, where
        // glibc's vector loop measured faster than `rep movsb` (1 MiB: 64 against 94 µs,
        // copy.rs). One read from a socket is in this core's cache, where the two are alike.
        // Only a loan the user filled with ordinary stores reads faster with `rep movsb`.
        dst.copy_from_slice(src);
    } else {
        for (d, s) in dst.chunks_exact_mut(size).zip(src.chunks_exact(size)) {
            d.copy_from_slice(s);
            d.reverse();
        }
    }
}

unsafe fn element(
    flavor: Flavor,
    f: &Field,
    e: *mut c_void,
    r: &mut Reader,
    scratch: &mut Scratch,
) -> Result<(), CdrError> {
    match &f.kind {
        Kind::Bool => {
            let b = r.bool()?;
            // SAFETY: `e` points to a bool.
            unsafe { *e.cast::<u8>() = u8::from(b) };
        }
        Kind::Prim(size) => {
            let src = r.take_run(1, *size)?;
            // SAFETY: `e` points to a primitive of `size` bytes.
            let dst = unsafe { std::slice::from_raw_parts_mut(e.cast::<u8>(), *size) };
            store_prims(r.is_little_endian(), *size, src, dst);
        }
        Kind::WChar => {
            let at = r.offset();
            let u = r.u32()?;
            let c = u16::try_from(u).map_err(|_| CdrError::Malformed {
                at,
                what: format!("wchar {u:#x} does not fit UTF-16"),
            })?;
            // SAFETY: `e` points to a char16_t.
            unsafe { e.cast::<u16>().write_unaligned(c) };
        }
        Kind::String => {
            let s = r.string()?;
            check_bound(f, s.len())?;
            let ok = match flavor {
                // SAFETY: `e` is an initialized rosidl_runtime_c__String; assignn copies `len`
                // bytes and reallocates with the string's allocator.
                Flavor::C => unsafe {
                    ffi::rosidl_runtime_c__String__assignn(e.cast(), s.as_ptr().cast(), s.len())
                },
                // SAFETY: `e` is a std::string; the shim assigns through its API.
                Flavor::Cpp => unsafe {
                    cxx::rmw_tracer_cxx_string_assign(e, s.as_ptr().cast(), s.len())
                },
            };
            if !ok {
                return Err(CdrError::Alloc {
                    what: "string",
                    len: s.len(),
                });
            }
        }
        Kind::WString => {
            r.wstring(&mut scratch.units)?;
            let units = &scratch.units;
            check_bound(f, units.len())?;
            let ok = match flavor {
                // SAFETY: `e` is an initialized rosidl_runtime_c__U16String.
                Flavor::C => unsafe {
                    ffi::rosidl_runtime_c__U16String__assignn(e.cast(), units.as_ptr(), units.len())
                },
                // SAFETY: `e` is a std::u16string; the shim assigns through its API.
                Flavor::Cpp => unsafe {
                    cxx::rmw_tracer_cxx_u16string_assign(e, units.as_ptr(), units.len())
                },
            };
            if !ok {
                return Err(CdrError::Alloc {
                    what: "wstring",
                    len: units.len(),
                });
            }
        }
        // SAFETY: `e` points to an initialized nested message of type `t`.
        Kind::Message(t) => unsafe { message(t, e, r, scratch) }?,
    }
    Ok(())
}

fn check_bound(f: &Field, len: usize) -> Result<(), CdrError> {
    match f.string_bound {
        Some(bound) if len > bound => Err(CdrError::BoundExceeded { len, bound }),
        _ => Ok(()),
    }
}
