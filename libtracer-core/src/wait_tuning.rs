//! How a blocked wait behaves, read once per process from the environment: the same for
//! rmw_tracer's `rmw_wait` and the C API's waits, so one variable means one thing everywhere.
//!
//! - `RMW_TRACER_WAIT_SPIN_US` (microseconds, default 20, `0` never): how long a wait may spin
//!   before it sleeps. Never on a single CPU, where the spinner would only keep the writer it
//!   waits for off the processor.
//! - `RMW_TRACER_WAIT_LEADS` (`1`, the default, or `0`): whether a wait that sleeps leads the
//!   links' loop (`Waiter::wait_leading`, docs/network.md section 4a, "The waiting thread
//!   reads") or sleeps on its futex while the loop thread hands it what comes.

use std::sync::OnceLock;
use std::time::Duration;

/// The default of `RMW_TRACER_WAIT_SPIN_US`.
pub const DEFAULT_SPIN_US: u64 = 20;

/// The waits' settings for this process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaitTuning {
    /// How long a wait may spin before it sleeps (zero: never).
    pub spin: Duration,
    /// Whether a sleeping wait leads the links' loop.
    pub leads: bool,
}

impl WaitTuning {
    /// This process's settings, read from the environment on the first call; `warn` is told,
    /// on that call only, of each value it did not understand and what it uses instead.
    pub fn get(warn: impl Fn(&str)) -> WaitTuning {
        static TUNING: OnceLock<WaitTuning> = OnceLock::new();
        *TUNING.get_or_init(|| {
            let single_cpu = std::thread::available_parallelism().map_or(true, |n| n.get() < 2);
            WaitTuning::parse(
                std::env::var("RMW_TRACER_WAIT_SPIN_US").ok().as_deref(),
                std::env::var("RMW_TRACER_WAIT_LEADS").ok().as_deref(),
                single_cpu,
                &warn,
            )
        })
    }

    fn parse(
        spin: Option<&str>,
        leads: Option<&str>,
        single_cpu: bool,
        warn: &dyn Fn(&str),
    ) -> WaitTuning {
        let spin_us = match spin {
            None => DEFAULT_SPIN_US,
            Some(v) => v.trim().parse::<u64>().unwrap_or_else(|_| {
                warn(&format!(
                    "RMW_TRACER_WAIT_SPIN_US={v} is not a number of microseconds; using {DEFAULT_SPIN_US}"
                ));
                DEFAULT_SPIN_US
            }),
        };
        let leads = match leads.map(str::trim) {
            None | Some("1") => true,
            Some("0") => false,
            Some(v) => {
                warn(&format!(
                    "RMW_TRACER_WAIT_LEADS={v} is neither 0 nor 1; using 1"
                ));
                true
            }
        };
        WaitTuning {
            spin: if single_cpu {
                Duration::ZERO
            } else {
                Duration::from_micros(spin_us)
            },
            leads,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    fn parse(
        spin: Option<&str>,
        leads: Option<&str>,
        single_cpu: bool,
    ) -> (WaitTuning, Vec<String>) {
        let warned = RefCell::new(Vec::new());
        let t = WaitTuning::parse(spin, leads, single_cpu, &|m| {
            warned.borrow_mut().push(m.to_string())
        });
        (t, warned.into_inner())
    }

    #[test]
    fn defaults_spin_20_us_and_lead() {
        let (t, warned) = parse(None, None, false);
        assert_eq!(
            t,
            WaitTuning {
                spin: Duration::from_micros(20),
                leads: true
            }
        );
        assert!(warned.is_empty());
    }

    #[test]
    fn values_are_taken_and_one_cpu_never_spins() {
        assert_eq!(
            parse(Some(" 50 "), Some("0"), false).0,
            WaitTuning {
                spin: Duration::from_micros(50),
                leads: false
            }
        );
        assert_eq!(parse(Some("50"), Some("1"), true).0.spin, Duration::ZERO);
    }

    #[test]
    fn a_value_not_understood_warns_and_keeps_the_default() {
        let (t, warned) = parse(Some("fast"), Some("yes"), false);
        assert_eq!(
            t,
            WaitTuning {
                spin: Duration::from_micros(20),
                leads: true
            }
        );
        assert_eq!(warned.len(), 2, "{warned:?}");
        assert!(
            warned[0].contains("RMW_TRACER_WAIT_SPIN_US=fast")
                && warned[1].contains("RMW_TRACER_WAIT_LEADS=yes")
        );
    }
}
