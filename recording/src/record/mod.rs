//! Recording straight from the middleware: `RMW_TRACER_RECORD=out.mcap` (docs/mcap.md,
//! "Recording"), for rmw_tracer's nodes and the C API's contexts alike.
//!
//! A process writes what it publishes and what its subscriptions receive into one MCAP file,
//! from the CDR bytes it already holds: the published `Payload` (the buffer the topic vertex
//! is written with) and the taken `Sample`'s payload are handed to `tracer_mcap::Recorder` by
//! reference count, with no second serialization and no copy. The recorder's bounded queue
//! sits between the publishing thread and the disk, so a publish never waits for the disk;
//! what does not fit is dropped and counted (reported at shutdown on the library's log and in
//! the file's `tracer.recorder` metadata).
//!
//! - [`session`]: the process-wide recording (configuration from the environment, channels,
//!   finishing at the last context's shutdown and at process exit).
//! - [`tap`]: what a publisher or subscription holds to record its messages.
//! - [`handoff`]: the channel between the data path and the recorder (no wake-up per message).

mod handoff;
mod session;
mod tap;

pub use session::{context_shutdown, context_started};
pub use tap::{publisher_tap, publishers_qos, subscription_tap, PubTap, SubTap, TapSource};

/// Whether this process records (a context opened the file and it is not finished).
pub fn recording() -> bool {
    session::session().is_some()
}

/// How bad a line of the recording's log is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    Info,
    Warn,
    Error,
}

/// What the recording needs of the library it runs in: its log, and its process-exit hook
/// (`tracer_boundary::atexit::register`), given by the first context.
pub struct Host {
    pub log: fn(Level, &str),
    pub at_exit: fn(fn()),
}

#[cfg(test)]
mod tests;
