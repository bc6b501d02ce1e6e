//! Recording straight from the middleware: `RMW_TRACER_RECORD=out.mcap` (docs/mcap.md,
//! "Recording").
//!
//! A process running on rmw_tracer writes what it publishes and what its subscriptions
//! receive into one MCAP file, from the CDR bytes it already holds: the published `Payload`
//! (the buffer the topic vertex is written with) and the taken `Sample`'s payload are handed
//! to `tracer_mcap::Recorder` by reference count, with no second serialization and no copy.
//! The recorder's bounded queue sits between the publishing thread and the disk, so a publish
//! never waits for the disk; what does not fit is dropped and counted (reported at shutdown on
//! the rmw log and in the file's `tracer.recorder` metadata).
//!
//! - [`session`]: the process-wide recording (configuration from the environment, channels,
//!   finishing at the last context's shutdown and at process exit).
//! - [`tap`]: what a publisher or subscription holds to record its messages.
//! - [`handoff`]: the batch between the data path and the recorder (no wake-up per message).

mod handoff;
mod session;
mod tap;

pub use session::{context_shutdown, context_started};
pub use tap::{publisher_tap, subscription_tap, PubTap, SubTap};

#[cfg(test)]
mod tests;
