//! The output structures of the graph queries, filled through librmw's and rcutils' own helpers
//! with the caller's allocator: string arrays, `rmw_names_and_types_t` and
//! `rmw_topic_endpoint_info_array_t`. On any failure what was allocated is freed again and the
//! output is left zero-initialized, as rmw documents.

use std::ffi::CString;

use super::clib::{allocator_is_valid, reset_error};
use super::error::{RmwError, RmwResult};

/// One endpoint of `rmw_get_publishers_info_by_topic` / `_subscriptions_info_by_topic`.
pub struct EndpointInfo {
    pub node_name: String,
    pub node_namespace: String,
    pub topic_type: String,
    /// `(version, value)` of the RIHS type hash; `None` leaves it unset.
    pub type_hash: Option<(u8, [u8; 32])>,
    pub endpoint_type: ffi::rmw_endpoint_type_t,
    pub gid: [u8; 16],
    pub qos: ffi::rmw_qos_profile_t,
}

fn cstring(s: &str) -> RmwResult<CString> {
    CString::new(s).map_err(|_| RmwError::failed(format!("`{s}` contains a NUL byte")))
}

/// Fail unless `a` is zero-initialized (`rmw_check_zero_rmw_string_array`).
pub fn check_zero_string_array(a: &mut ffi::rcutils_string_array_t, arg: &str) -> RmwResult<()> {
    // SAFETY: `a` is a live string array; the check only reads it.
    if unsafe { ffi::rmw_check_zero_rmw_string_array(a) } != ffi::RMW_RET_OK {
        reset_error();
        return Err(RmwError::invalid(format!(
            "{arg} is not a zero-initialized string array"
        )));
    }
    Ok(())
}

/// Fill zero-initialized `a` with copies of `items` made with `allocator`.
pub fn fill_string_array(
    a: &mut ffi::rcutils_string_array_t,
    items: &[String],
    allocator: &ffi::rcutils_allocator_t,
) -> RmwResult<()> {
    let owned: Vec<CString> = items.iter().map(|s| cstring(s)).collect::<RmwResult<_>>()?;
    // SAFETY: `a` is zero-initialized (checked by the caller) and `allocator` valid.
    if unsafe { ffi::rcutils_string_array_init(a, owned.len(), allocator) } != ffi::RCUTILS_RET_OK {
        reset_error();
        return Err(RmwError::BadAlloc("allocating a string array"));
    }
    for (i, s) in owned.iter().enumerate() {
        // SAFETY: `s` is a C string; the copy comes from `allocator`.
        let p = unsafe { ffi::rcutils_strdup(s.as_ptr(), *allocator) };
        if p.is_null() {
            // SAFETY: `a` was initialized above; fini frees the copies made so far.
            unsafe { ffi::rcutils_string_array_fini(a) };
            reset_error();
            return Err(RmwError::BadAlloc("copying a name"));
        }
        // SAFETY: `init` made `data` an array of `owned.len()` null pointers.
        unsafe { *a.data.add(i) = p };
    }
    Ok(())
}

/// Fill zero-initialized `out` with `entries` (name, its types), in the given order.
pub fn fill_names_and_types(
    out: &mut ffi::rmw_names_and_types_t,
    entries: &[(String, Vec<String>)],
    allocator: &mut ffi::rcutils_allocator_t,
) -> RmwResult<()> {
    if !allocator_is_valid(allocator) {
        return Err(RmwError::invalid("allocator is invalid"));
    }
    // SAFETY: `out` is a live struct; the check only reads it.
    if unsafe { ffi::rmw_names_and_types_check_zero(out) } != ffi::RMW_RET_OK {
        reset_error();
        return Err(RmwError::invalid("names_and_types is not zero-initialized"));
    }
    if entries.is_empty() {
        return Ok(());
    }
    // SAFETY: zero-initialized `out`, valid allocator.
    if unsafe { ffi::rmw_names_and_types_init(out, entries.len(), allocator) } != ffi::RMW_RET_OK {
        reset_error();
        return Err(RmwError::BadAlloc("allocating names and types"));
    }
    let filled = (|| -> RmwResult<()> {
        for (i, (name, types)) in entries.iter().enumerate() {
            let c = cstring(name)?;
            // SAFETY: `c` is a C string; the copy comes from the caller's allocator.
            let p = unsafe { ffi::rcutils_strdup(c.as_ptr(), *allocator) };
            if p.is_null() {
                return Err(RmwError::BadAlloc("copying a name"));
            }
            // SAFETY: `init` sized `names` to `entries.len()` null pointers.
            unsafe { *out.names.data.add(i) = p };
            // SAFETY: `init` made `types` an array of `entries.len()` zero string arrays.
            let t = unsafe { &mut *out.types.add(i) };
            fill_string_array(t, types, allocator)?;
        }
        Ok(())
    })();
    if let Err(e) = filled {
        // SAFETY: `out` was initialized above; fini frees whatever was filled.
        unsafe { ffi::rmw_names_and_types_fini(out) };
        reset_error();
        return Err(e);
    }
    Ok(())
}

/// Fill zero-initialized `out` with `infos`.
pub fn fill_endpoint_infos(
    out: &mut ffi::rmw_topic_endpoint_info_array_t,
    infos: &[EndpointInfo],
    allocator: &mut ffi::rcutils_allocator_t,
) -> RmwResult<()> {
    if !allocator_is_valid(allocator) {
        return Err(RmwError::invalid("allocator is invalid"));
    }
    // SAFETY: `out` is a live struct; the check only reads it.
    if unsafe { ffi::rmw_topic_endpoint_info_array_check_zero(out) } != ffi::RMW_RET_OK {
        reset_error();
        return Err(RmwError::invalid(
            "the endpoint info array is not zero-initialized",
        ));
    }
    if infos.is_empty() {
        return Ok(());
    }
    // SAFETY: zero-initialized `out`, valid allocator.
    if unsafe { ffi::rmw_topic_endpoint_info_array_init_with_size(out, infos.len(), allocator) }
        != ffi::RMW_RET_OK
    {
        reset_error();
        return Err(RmwError::BadAlloc("allocating the endpoint info array"));
    }
    let filled = (|| -> RmwResult<()> {
        for (i, info) in infos.iter().enumerate() {
            // SAFETY: `init_with_size` allocated `infos.len()` zeroed entries.
            let e = unsafe { &mut *out.info_array.add(i) };
            let node = cstring(&info.node_name)?;
            let ns = cstring(&info.node_namespace)?;
            let ty = cstring(&info.topic_type)?;
            // SAFETY: live entry, C strings, valid allocator: each setter copies its input.
            let rets = unsafe {
                [
                    ffi::rmw_topic_endpoint_info_set_node_name(e, node.as_ptr(), allocator),
                    ffi::rmw_topic_endpoint_info_set_node_namespace(e, ns.as_ptr(), allocator),
                    ffi::rmw_topic_endpoint_info_set_topic_type(e, ty.as_ptr(), allocator),
                    ffi::rmw_topic_endpoint_info_set_endpoint_type(e, info.endpoint_type),
                    ffi::rmw_topic_endpoint_info_set_gid(e, info.gid.as_ptr(), info.gid.len()),
                    ffi::rmw_topic_endpoint_info_set_qos_profile(e, &info.qos),
                ]
            };
            if rets.iter().any(|r| *r != ffi::RMW_RET_OK) {
                return Err(RmwError::BadAlloc("filling an endpoint info"));
            }
            if let Some((version, value)) = info.type_hash {
                let h = ffi::rosidl_type_hash_t { version, value };
                // SAFETY: live entry and hash; the setter copies it.
                if unsafe { ffi::rmw_topic_endpoint_info_set_topic_type_hash(e, &h) }
                    != ffi::RMW_RET_OK
                {
                    return Err(RmwError::failed("could not set the type hash"));
                }
            }
        }
        Ok(())
    })();
    if let Err(e) = filled {
        // SAFETY: `out` was initialized above with this allocator; fini frees every entry.
        unsafe { ffi::rmw_topic_endpoint_info_array_fini(out, allocator) };
        reset_error();
        return Err(e);
    }
    Ok(())
}

/// The default allocator (the node-name queries take none from the caller).
pub fn default_allocator() -> ffi::rcutils_allocator_t {
    // SAFETY: returns a struct by value.
    unsafe { ffi::rcutils_get_default_allocator() }
}
