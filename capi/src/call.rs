//! The panic boundary of the C API: every `extern "C"` function is one call to [`call`] (the
//! catching is `tracer_boundary::run`, shared with rmw_tracer's entry points; what an outcome
//! becomes is decided here, once).

use tracer_boundary::{run, Outcome};

use crate::error::{self, tracer_result_t, CapiResult};

/// Run `f` for the entry point `name`: `TRACER_OK`, the mapped code of its error (with the
/// thread's error string set), or `TRACER_ERR_PANIC` when it panicked.
#[track_caller]
pub fn call(name: &'static str, f: impl FnOnce() -> CapiResult<()>) -> tracer_result_t {
    let (outcome, at) = run(f);
    match outcome {
        Outcome::Done(()) => tracer_result_t::TRACER_OK,
        Outcome::Failed(e) => error::report(name, at, &e),
        Outcome::Panicked => {
            error::set_last(&format!("{name}: internal panic (a bug in libtracer)"), at);
            tracer_result_t::TRACER_ERR_PANIC
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::CapiError;

    #[test]
    fn outcomes_map_to_codes() {
        assert_eq!(call("t", || Ok(())), tracer_result_t::TRACER_OK);
        assert_eq!(
            call("t", || Err(CapiError::Null("x"))),
            tracer_result_t::TRACER_ERR_NULL_ARGUMENT
        );
        assert_eq!(
            call("t", || panic!("boom")),
            tracer_result_t::TRACER_ERR_PANIC
        );
    }
}
