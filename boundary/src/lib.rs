//! The panic boundary the workspace's C APIs share (README.md).
//!
//! An `extern "C"` entry point is one call into a safe Rust function through [`run`]; the API
//! turns the [`Outcome`] into its own code (an `rmw_ret_t`, a `tracer_result_t`, a null pointer)
//! with its own error map: the catching is here once, the mapping in each API once. Also the
//! process-exit hook both register (`atexit`), the one place here that calls C.

#![deny(unsafe_code)]

pub mod atexit;

use std::panic::{catch_unwind, AssertUnwindSafe, Location};

/// What became of one call.
#[derive(Debug)]
pub enum Outcome<T, E> {
    /// `f` returned `Ok`.
    Done(T),
    /// `f` returned `Err`.
    Failed(E),
    /// `f` panicked; the panic stopped here and unwinds no further (into C).
    Panicked,
}

/// Call `f`, catching any panic; `.1` is the caller's location (with `#[track_caller]` on the
/// way up: the entry point's), for the error string.
#[track_caller]
pub fn run<T, E>(f: impl FnOnce() -> Result<T, E>) -> (Outcome<T, E>, &'static Location<'static>) {
    let at = Location::caller();
    let outcome = match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(v)) => Outcome::Done(v),
        Ok(Err(e)) => Outcome::Failed(e),
        Err(_) => Outcome::Panicked,
    };
    (outcome, at)
}

/// For entry points with no error channel (a `bool`, a `void`): `f`'s value, or `fallback`
/// when it panicked.
#[track_caller]
pub fn run_or<T>(fallback: T, f: impl FnOnce() -> T) -> (T, bool, &'static Location<'static>) {
    let at = Location::caller();
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(v) => (v, false, at),
        Err(_) => (fallback, true, at),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes() {
        assert!(matches!(run::<u8, ()>(|| Ok(3)).0, Outcome::Done(3)));
        assert!(matches!(
            run::<u8, &str>(|| Err("no")).0,
            Outcome::Failed("no")
        ));
        assert!(matches!(
            run::<u8, ()>(|| panic!("boom")).0,
            Outcome::Panicked
        ));
        assert!(!run_or(false, || panic!("boom")).0);
        assert!(run_or(false, || true).0);
    }

    #[test]
    fn the_location_is_the_callers() {
        let (_, at) = run::<(), ()>(|| Ok(()));
        assert_eq!(at.file(), file!());
    }
}
