//! Guard conditions: a libtracer [`Signal`] behind `rmw_guard_condition_t`.
//!
//! A trigger raises the signal; `rmw_wait` reports a raised guard condition once and clears it,
//! as rmw prescribes (a trigger is consumed by the wait that sees it).

use libtracer_core::{Readiness, Signal};

pub struct GuardCondition {
    signal: Signal,
}

impl GuardCondition {
    pub fn new() -> GuardCondition {
        GuardCondition {
            signal: Signal::new(),
        }
    }

    /// A guard condition raised by someone else (the registry, for graph guard conditions).
    pub fn with_signal(signal: Signal) -> GuardCondition {
        GuardCondition { signal }
    }

    pub fn trigger(&self) {
        self.signal.raise();
    }

    pub fn readiness(&self) -> Readiness {
        self.signal.readiness()
    }

    /// Whether it was triggered since the last wait that saw it; consumes the trigger.
    pub fn take_triggered(&self) -> bool {
        let raised = self.signal.is_raised();
        if raised {
            self.signal.clear();
        }
        raised
    }

    pub fn is_triggered(&self) -> bool {
        self.signal.is_raised()
    }
}

impl Default for GuardCondition {
    fn default() -> Self {
        GuardCondition::new()
    }
}
