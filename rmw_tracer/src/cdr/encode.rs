//! Message in memory -> CDR, following a [`TypePlan`]. One walker for both the bytes and the
//! size pass: it is generic over the [`Sink`].

use std::ffi::c_void;

use ffi::{rosidl_runtime_c__String, rosidl_runtime_c__U16String};

use super::cxx;
use super::plan::{Field, Flavor, Kind, Shape, TypePlan};
use super::wire::Sink;
use super::CdrError;

/// # Safety
/// `msg` must point to an initialized message of the type `t` describes, in `t.flavor`'s layout,
/// not mutated during the call.
pub unsafe fn message<S: Sink>(
    t: &TypePlan,
    msg: *const c_void,
    s: &mut S,
) -> Result<(), CdrError> {
    for f in &t.fields {
        // SAFETY: `offset` is the field's offset inside the message `msg` points to.
        let p = unsafe { msg.cast::<u8>().add(f.offset) }.cast::<c_void>();
        // SAFETY: `p` points to the field, of the layout `f` describes.
        unsafe { field(t, f, p, s) }.map_err(|e| e.in_field(&t.name, &f.name))?;
    }
    Ok(())
}

unsafe fn field<S: Sink>(
    t: &TypePlan,
    f: &Field,
    p: *const c_void,
    s: &mut S,
) -> Result<(), CdrError> {
    match f.shape {
        // SAFETY: `p` is the element itself.
        Shape::Single => unsafe { element(t.flavor, f, p, s) },
        // SAFETY: `p` is an array of `n` elements.
        Shape::Array(n) => unsafe { elements(t.flavor, f, p, n, s) },
        Shape::Sequence { bound } => {
            let size_fn = f.size_fn.expect("checked by plan::check_functions");
            // SAFETY: the member's size function applied to the member.
            let n = unsafe { size_fn(p) };
            if let Some(bound) = bound {
                if n > bound {
                    return Err(CdrError::BoundExceeded { len: n, bound });
                }
            }
            s.len_prefix(n, "sequence")?;
            // SAFETY: `p` is a sequence of `n` elements.
            unsafe { elements(t.flavor, f, p, n, s) }
        }
    }
}

unsafe fn elements<S: Sink>(
    flavor: Flavor,
    f: &Field,
    p: *const c_void,
    n: usize,
    s: &mut S,
) -> Result<(), CdrError> {
    if n == 0 {
        return Ok(());
    }
    match &f.kind {
        Kind::Bool if flavor == Flavor::Cpp && matches!(f.shape, Shape::Sequence { .. }) => {
            let fetch = f.fetch_fn.expect("checked by plan::check_functions");
            for i in 0..n {
                let mut b = false;
                // SAFETY: index below the size; `b` is a bool the fetch function copies into.
                unsafe { fetch(p, i, (&raw mut b).cast()) };
                s.u8(u8::from(b));
            }
            Ok(())
        }
        Kind::Bool | Kind::Prim(_) => {
            let size = match f.kind {
                Kind::Prim(size) => size,
                _ => 1,
            };
            let get = f.get_const_fn.expect("checked by plan::check_functions");
            // SAFETY: arrays and (non-bool-vector) sequences are contiguous (C arrays, C sequence
            // buffers, std::array, std::vector); element 0 starts the run of `n * size` bytes.
            let data = unsafe { std::slice::from_raw_parts(get(p, 0).cast::<u8>(), n * size) };
            prims(&f.kind, size, data, s);
            Ok(())
        }
        _ => {
            let get = f.get_const_fn.expect("checked by plan::check_functions");
            for i in 0..n {
                // SAFETY: index below the size: the member's get function gives element `i`.
                let e = unsafe { get(p, i) };
                // SAFETY: `e` points to one element of the field's element type.
                unsafe { element(flavor, f, e, s) }?;
            }
            Ok(())
        }
    }
}

/// A run of primitives, already in memory byte order.
fn prims<S: Sink>(kind: &Kind, size: usize, data: &[u8], s: &mut S) {
    if matches!(kind, Kind::Bool) {
        if data.iter().all(|&b| b <= 1) {
            s.put(data);
        } else {
            for &b in data {
                s.u8(u8::from(b != 0));
            }
        }
        return;
    }
    s.align(size);
    if cfg!(target_endian = "little") || size == 1 {
        s.put(data);
    } else {
        for chunk in data.chunks_exact(size) {
            let mut c = chunk.to_vec();
            c.reverse();
            s.put(&c);
        }
    }
}

unsafe fn element<S: Sink>(
    flavor: Flavor,
    f: &Field,
    e: *const c_void,
    s: &mut S,
) -> Result<(), CdrError> {
    match &f.kind {
        Kind::Bool => {
            // SAFETY: `e` points to a bool (one byte).
            let b = unsafe { *e.cast::<u8>() };
            s.u8(u8::from(b != 0));
        }
        Kind::Prim(size) => {
            // SAFETY: `e` points to a primitive of `size` bytes.
            let data = unsafe { std::slice::from_raw_parts(e.cast::<u8>(), *size) };
            prims(&f.kind, *size, data, s);
        }
        Kind::WChar => {
            // SAFETY: `e` points to a char16_t.
            let c = unsafe { e.cast::<u16>().read_unaligned() };
            s.u32(u32::from(c));
        }
        Kind::String => {
            // SAFETY: `e` points to a string of the flavor's layout.
            let bytes = unsafe { string_bytes(flavor, e) }?;
            check_bound(f, bytes.len())?;
            s.string(bytes, "string")?;
        }
        Kind::WString => {
            // SAFETY: `e` points to a u16 string of the flavor's layout.
            let units = unsafe { wstring_units(flavor, e) }?;
            check_bound(f, units.len())?;
            s.wstring(units, "wstring")?;
        }
        // SAFETY: `e` points to a nested message of type `t`.
        Kind::Message(t) => unsafe { message(t, e, s) }?,
    }
    Ok(())
}

fn check_bound(f: &Field, len: usize) -> Result<(), CdrError> {
    match f.string_bound {
        Some(bound) if len > bound => Err(CdrError::BoundExceeded { len, bound }),
        _ => Ok(()),
    }
}

/// # Safety
/// `e` must point to a `rosidl_runtime_c__String` (C) or `std::string` (C++); the slice lives as
/// long as the message is not mutated.
unsafe fn string_bytes<'a>(flavor: Flavor, e: *const c_void) -> Result<&'a [u8], CdrError> {
    let (data, len) = match flavor {
        Flavor::C => {
            // SAFETY: per the contract.
            let st = unsafe { &*e.cast::<rosidl_runtime_c__String>() };
            (st.data.cast_const().cast::<u8>(), st.size)
        }
        Flavor::Cpp => {
            let mut len = 0;
            // SAFETY: per the contract; the shim reads it through std::string's API.
            let data = unsafe { cxx::rmw_tracer_cxx_string_view(e, &mut len) };
            (data.cast::<u8>(), len)
        }
    };
    if len == 0 {
        return Ok(&[]);
    }
    if data.is_null() {
        return Err(CdrError::BadMessage(
            "string with a size but no data (not initialized?)",
        ));
    }
    // SAFETY: `data` holds `len` bytes (rosidl_runtime_c__String.size / std::string::size()).
    Ok(unsafe { std::slice::from_raw_parts(data, len) })
}

/// # Safety
/// As [`string_bytes`], for `rosidl_runtime_c__U16String` / `std::u16string`.
unsafe fn wstring_units<'a>(flavor: Flavor, e: *const c_void) -> Result<&'a [u16], CdrError> {
    let (data, len) = match flavor {
        Flavor::C => {
            // SAFETY: per the contract.
            let st = unsafe { &*e.cast::<rosidl_runtime_c__U16String>() };
            (st.data.cast_const(), st.size)
        }
        Flavor::Cpp => {
            let mut len = 0;
            // SAFETY: per the contract; the shim reads it through std::u16string's API.
            let data = unsafe { cxx::rmw_tracer_cxx_u16string_view(e, &mut len) };
            (data, len)
        }
    };
    if len == 0 {
        return Ok(&[]);
    }
    if data.is_null() {
        return Err(CdrError::BadMessage(
            "wstring with a size but no data (not initialized?)",
        ));
    }
    // SAFETY: `data` holds `len` aligned code units.
    Ok(unsafe { std::slice::from_raw_parts(data, len) })
}
