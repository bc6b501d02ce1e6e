//! Process exit hooks (`atexit`): the recording (`tracer_recording::record`) finishes its file
//! when a program exits without shutting its contexts down (rmw_tracer's or the C API's).

// The one call into libc, with its SAFETY comment below.
#![allow(unsafe_code)]

use std::sync::Mutex;

static HOOKS: Mutex<Vec<fn()>> = Mutex::new(Vec::new());

extern "C" fn run_hooks() {
    let hooks = match HOOKS.lock() {
        Ok(mut h) => std::mem::take(&mut *h),
        Err(_) => return,
    };
    for h in hooks {
        // A panic must not unwind into libc's exit path.
        let _ = std::panic::catch_unwind(h);
    }
}

/// Run `f` at process exit (once per registration; hooks run in registration order).
pub fn register(f: fn()) {
    let Ok(mut h) = HOOKS.lock() else {
        return;
    };
    if h.is_empty() {
        // SAFETY: `run_hooks` is a plain `extern "C" fn()` that lives as long as the library;
        // the library is never unloaded while the process runs (rmw implementations and
        // libtracer are loaded for the process's lifetime), so libc may call it at exit.
        if unsafe { libc::atexit(run_hooks) } != 0 {
            return;
        }
    }
    h.push(f);
}
