//! What a subscription's ring admits: every rule that decides whether a sample is the
//! subscription's at all, applied as the sample arrives (the core's stream admission filter,
//! `Graph::set_stream_filter`), so that a refused sample takes no ring slot, evicts nothing,
//! counts as neither received nor lost, and wakes no wait set and no callback.
//!
//! In order: a writer the registry did not match with us (type, QoS: `registry::Verdicts`);
//! with `ignore_local_publications`, this context's own writers; a replay of what a reliable
//! subscription already had (`tracer_recording::resume`); and the content filter. What the edge itself
//! decides comes before all of them: a subscription's edges are exact (docs/libtracer.md), so
//! no write to a nested topic ever reaches the ring.
//!
//! Runs on the delivering thread under the ring's lock: it reads, never blocks, never calls the
//! graph. Lifespan stays at take, where the age of a sample is known.

use std::sync::Arc;

use libtracer_core::Sample;

use crate::content_filter;
use crate::gid::Gid;
use crate::log::log;
use crate::registry::SubscriptionLink;

/// A subscription's admission rules. Shared by the ring's filter and the subscription.
pub struct Admission {
    /// The registry's verdicts, the resume state and the topic's names.
    pub link: Arc<SubscriptionLink>,
    /// `Some(prefix)` with `ignore_local_publications`: this context's gid prefix.
    pub ignore_local: Option<[u8; 8]>,
    pub filter: content_filter::Slot,
}

impl Admission {
    pub fn admit(&self, s: &Sample) -> bool {
        if !self.link.verdicts.takes(&s.meta.writer) {
            return false;
        }
        if let Some(me) = &self.ignore_local {
            if s.origin.is_none() && Gid(s.meta.writer).context_prefix() == *me {
                return false;
            }
        }
        if let Some(r) = &self.link.resume {
            if !r.admit(s) {
                return false;
            }
        }
        self.passes_filter(s)
    }

    /// Whether `s` passes the content filter (true when there is none). Bytes that are not a
    /// message of our type are refused with the warning a take gives them.
    pub fn passes_filter(&self, s: &Sample) -> bool {
        let Some(f) = self.filter.get() else {
            return true;
        };
        match f.passes(s.payload.as_ref()) {
            Ok(pass) => pass,
            Err(e) => {
                self.dropped_invalid(s, &e);
                false
            }
        }
    }

    /// The warning for a sample whose bytes are not a message of our type (it is dropped).
    pub fn dropped_invalid(&self, s: &Sample, e: &dyn std::fmt::Display) {
        log!(
            RMW_LOG_SEVERITY_WARN,
            "{}: dropped a sample from writer {:?} that is not a valid {}: {e}",
            self.link.topic,
            Gid(s.meta.writer),
            self.link.type_name
        );
    }
}
