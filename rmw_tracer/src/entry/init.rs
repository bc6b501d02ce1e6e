//! Entry points: init options, init, shutdown, context fini.

use ffi::rmw_ret_t;

use crate::boundary::{clib, cstr, ffi_ret, handle, RmwError, RmwResult};
use crate::context::{Context, InitConfig};
use crate::security::SecurityOptions;
use crate::IDENTIFIER;

/// `rmw_init_options_init`: zero-initialized options get rmw_tracer's defaults and `allocator`.
///
/// # Safety
/// `init_options` is null or points to a live `rmw_init_options_t`.
#[no_mangle]
pub unsafe extern "C" fn rmw_init_options_init(
    init_options: *mut ffi::rmw_init_options_t,
    allocator: ffi::rcutils_allocator_t,
) -> rmw_ret_t {
    ffi_ret("rmw_init_options_init", || {
        // SAFETY: caller guarantee.
        let o = unsafe { handle::out(init_options, "init_options") }?;
        if !clib::allocator_is_valid(&allocator) {
            return Err(RmwError::invalid("allocator is invalid"));
        }
        if !o.implementation_identifier.is_null() {
            return Err(RmwError::invalid("expected zero-initialized init_options"));
        }
        clib::init_options_defaults(o, allocator, IDENTIFIER);
        Ok(())
    })
}

/// `rmw_init_options_copy`: deep copy into zero-initialized `dst` with `src`'s allocator.
///
/// # Safety
/// `src` is null or initialized init options; `dst` is null or a live `rmw_init_options_t`.
#[no_mangle]
pub unsafe extern "C" fn rmw_init_options_copy(
    src: *const ffi::rmw_init_options_t,
    dst: *mut ffi::rmw_init_options_t,
) -> rmw_ret_t {
    ffi_ret("rmw_init_options_copy", || {
        // SAFETY: caller guarantee.
        let s = unsafe { handle::input(src, "src") }?;
        if s.implementation_identifier.is_null() {
            return Err(RmwError::invalid("expected initialized src"));
        }
        // SAFETY: the identifier of initialized options is null or a C string.
        unsafe { handle::check_identifier(s.implementation_identifier, "init options") }?;
        if std::ptr::eq(src, dst) {
            return Err(RmwError::invalid("src and dst are the same init options"));
        }
        // SAFETY: caller guarantee.
        let d = unsafe { handle::out(dst, "dst") }?;
        if !d.implementation_identifier.is_null() {
            return Err(RmwError::invalid("expected zero-initialized dst"));
        }
        if !clib::allocator_is_valid(&s.allocator) {
            return Err(RmwError::invalid("src has an invalid allocator"));
        }
        // SAFETY: `s` is initialized options (checked identifier, caller guarantee).
        unsafe { clib::init_options_copy(s, d) }
    })
}

/// `rmw_init_options_fini`: free what the options own and zero them.
///
/// # Safety
/// `init_options` is null or initialized init options.
#[no_mangle]
pub unsafe extern "C" fn rmw_init_options_fini(
    init_options: *mut ffi::rmw_init_options_t,
) -> rmw_ret_t {
    ffi_ret("rmw_init_options_fini", || {
        // SAFETY: caller guarantee.
        let o = unsafe { handle::out(init_options, "init_options") }?;
        // Zero-initialized (never initialized, or finalized already): a bad argument.
        if o.implementation_identifier.is_null() {
            return Err(RmwError::invalid("expected initialized init_options"));
        }
        // SAFETY: as above.
        unsafe { handle::check_identifier(o.implementation_identifier, "init options") }?;
        // SAFETY: initialized options with our identifier.
        unsafe { clib::init_options_fini(o) }
    })
}

/// `rmw_init`: a libtracer graph (discovery per the options), its registry, and a copy of the
/// options in the context.
///
/// # Safety
/// `options` is null or initialized init options; `context` is null or a live context.
#[no_mangle]
pub unsafe extern "C" fn rmw_init(
    options: *const ffi::rmw_init_options_t,
    context: *mut ffi::rmw_context_t,
) -> rmw_ret_t {
    ffi_ret("rmw_init", || {
        // SAFETY: caller guarantee.
        let o = unsafe { handle::input(options, "options") }?;
        // SAFETY: caller guarantee.
        let c = unsafe { handle::out(context, "context") }?;
        if o.implementation_identifier.is_null() {
            return Err(RmwError::invalid("expected initialized init options"));
        }
        // SAFETY: non-null identifier of initialized options.
        unsafe { handle::check_identifier(o.implementation_identifier, "init options") }?;
        // SAFETY: the enclave of initialized options is null or a C string.
        let enclave = unsafe { cstr::opt(o.enclave, "options->enclave") }?
            .ok_or_else(|| RmwError::invalid("expected a non-null enclave"))?;
        if !c.implementation_identifier.is_null() {
            return Err(RmwError::invalid("expected a zero-initialized context"));
        }
        // The copy first: it can fail without a graph (and its links) to undo.
        let mut copied = clib::zero_init_options();
        // SAFETY: `o` is initialized options with our identifier.
        unsafe { clib::init_options_copy(o, &mut copied) }?;
        // SAFETY: initialized options: `static_peers` holds `static_peers_count` entries.
        let static_peers = unsafe { static_peers(&o.discovery_options) }?;
        // SAFETY: the security root of initialized options is null or a C string.
        let root = unsafe {
            cstr::opt(
                o.security_options.security_root_path,
                "options->security_options.security_root_path",
            )
        }?;
        let security = SecurityOptions {
            enforce: o.security_options.enforce_security == ffi::RMW_SECURITY_ENFORCEMENT_ENFORCE,
            root: root.map(str::to_owned),
        };
        let ctx = match Context::new(&InitConfig {
            domain_id: o.domain_id,
            enclave: enclave.to_owned(),
            discovery_range: o.discovery_options.automatic_discovery_range,
            static_peers,
            security,
        }) {
            Ok(ctx) => ctx,
            Err(e) => {
                // SAFETY: `copied` was filled by init_options_copy just above.
                let _ = unsafe { clib::init_options_fini(&mut copied) };
                return Err(e);
            }
        };
        c.instance_id = o.instance_id;
        c.implementation_identifier = IDENTIFIER.as_ptr();
        c.actual_domain_id = ctx.shared.domain_id;
        c.options = copied;
        // SAFETY: the context was zero-initialized (checked), so its impl is ours to set.
        unsafe { handle::install(c, ctx) };
        crate::record::context_started();
        Ok(())
    })
}

/// The static peers of discovery options, each a NUL-terminated string in its fixed array.
///
/// # Safety
/// `d.static_peers` is null with a zero count, or points to `d.static_peers_count` entries.
unsafe fn static_peers(d: &ffi::rmw_discovery_options_t) -> RmwResult<Vec<String>> {
    if d.static_peers_count == 0 {
        return Ok(Vec::new());
    }
    if d.static_peers.is_null() {
        return Err(RmwError::invalid(
            "discovery_options.static_peers is null with a non-zero count",
        ));
    }
    // SAFETY: caller guarantee: `static_peers_count` initialized entries.
    let entries = unsafe { std::slice::from_raw_parts(d.static_peers, d.static_peers_count) };
    entries
        .iter()
        .map(|e| {
            let bytes: Vec<u8> = e.peer_address.iter().map(|&c| c as u8).collect();
            let end = bytes
                .iter()
                .position(|&b| b == 0)
                .ok_or_else(|| RmwError::invalid("a static peer address is not NUL-terminated"))?;
            String::from_utf8(bytes[..end].to_vec())
                .map_err(|_| RmwError::invalid("a static peer address is not UTF-8"))
        })
        .collect()
}

/// `rmw_shutdown`: no new nodes (other entities, as with Fast DDS, can still be made and
/// used); returns at once, the links close in the background. A second call is a no-op.
///
/// # Safety
/// `context` is null or a live context.
#[no_mangle]
pub unsafe extern "C" fn rmw_shutdown(context: *mut ffi::rmw_context_t) -> rmw_ret_t {
    ffi_ret("rmw_shutdown", || {
        // SAFETY: caller guarantee.
        let ctx = unsafe { handle::get::<Context>(context, "context") }?;
        ctx.shared.shutdown()
    })
}

/// `rmw_context_fini`: after `rmw_shutdown`, free the context and zero it.
///
/// # Safety
/// `context` is null or a live context; no other thread uses it.
#[no_mangle]
pub unsafe extern "C" fn rmw_context_fini(context: *mut ffi::rmw_context_t) -> rmw_ret_t {
    ffi_ret("rmw_context_fini", || {
        // SAFETY: caller guarantee.
        let ctx = unsafe { handle::get::<Context>(context, "context") }?;
        if !ctx.shared.is_shut_down() {
            return Err(RmwError::invalid("context has not been shut down"));
        }
        ctx.shared.finish_teardown();
        // SAFETY: checked above; nothing else holds a reference now.
        let c = unsafe { handle::out(context, "context") }?;
        // SAFETY: `c.options` was filled by init_options_copy in rmw_init.
        unsafe { clib::init_options_fini(&mut c.options) }?;
        // SAFETY: `impl` was set by `install` in rmw_init.
        drop(unsafe { handle::uninstall::<Context>(c) });
        *c = clib::zero_context();
        Ok(())
    })
}
