//! `rmw_qos_profile_check_compatible` for rmw_tracer: whether a publisher and a subscription
//! with these profiles communicate, and what the subscription asks for that it will not get.
//!
//! rmw documents the outcome as "compatible if they can communicate". rmw_tracer wires every
//! subscription to every publisher of its topic and type whatever their profiles (reliability
//! and durability are the subscription's own edge policy; `docs/rmw-mapping.md`, QoS), so no
//! pair of profiles is an ERROR. A WARNING names what is requested and not delivered:
//!
//! - a policy that is UNKNOWN on either side (rmw: compatibility cannot be determined);
//! - a transient-local subscription of a volatile publisher (the publisher offers no history);
//! - a deadline, a liveliness lease or MANUAL_BY_TOPIC liveliness on the subscription
//!   (rmw_tracer offers none of them and reports them as infinite / automatic).
//!
//! System-default policies are not a warning: rmw_tracer resolves them to concrete values.

/// The verdict and its reasons, in rmw's `WARNING: ...;` form.
pub fn check(
    publisher: &ffi::rmw_qos_profile_t,
    subscription: &ffi::rmw_qos_profile_t,
) -> (ffi::rmw_qos_compatibility_type_t, Vec<String>) {
    let mut why = Vec::new();
    let mut warn = |s: &str| why.push(format!("WARNING: {s};"));
    if publisher.reliability == ffi::RMW_QOS_POLICY_RELIABILITY_UNKNOWN {
        warn("Publisher reliability is unknown");
    }
    if subscription.reliability == ffi::RMW_QOS_POLICY_RELIABILITY_UNKNOWN {
        warn("Subscription reliability is unknown");
    }
    if publisher.durability == ffi::RMW_QOS_POLICY_DURABILITY_UNKNOWN {
        warn("Publisher durability is unknown");
    }
    if subscription.durability == ffi::RMW_QOS_POLICY_DURABILITY_UNKNOWN {
        warn("Subscription durability is unknown");
    }
    if publisher.liveliness == ffi::RMW_QOS_POLICY_LIVELINESS_UNKNOWN {
        warn("Publisher liveliness is unknown");
    }
    if subscription.liveliness == ffi::RMW_QOS_POLICY_LIVELINESS_UNKNOWN {
        warn("Subscription liveliness is unknown");
    }
    if publisher.durability == ffi::RMW_QOS_POLICY_DURABILITY_VOLATILE
        && subscription.durability == ffi::RMW_QOS_POLICY_DURABILITY_TRANSIENT_LOCAL
    {
        warn(
            "Volatile publisher and transient local subscription: the publisher offers no history",
        );
    }
    if is_set(&subscription.deadline) {
        warn("Subscription has a deadline, which rmw_tracer does not offer");
    }
    if is_set(&subscription.liveliness_lease_duration) {
        warn("Subscription has a liveliness lease duration, which rmw_tracer does not offer");
    }
    if subscription.liveliness == ffi::RMW_QOS_POLICY_LIVELINESS_MANUAL_BY_TOPIC {
        warn("Subscription's liveliness is manual by topic, which rmw_tracer does not offer");
    }
    let verdict = if why.is_empty() {
        ffi::RMW_QOS_COMPATIBILITY_OK
    } else {
        ffi::RMW_QOS_COMPATIBILITY_WARNING
    };
    (verdict, why)
}

/// A duration other than "unspecified" (0) and "infinite".
fn is_set(t: &ffi::rmw_time_t) -> bool {
    let unspecified = t.sec == 0 && t.nsec == 0;
    let infinite = t.sec >= 9_223_372_036 && (t.sec > 9_223_372_036 || t.nsec >= 854_775_807);
    !unspecified && !infinite
}

/// Write `reasons` into `buf` as a C string, truncated to fit (always NUL-terminated when
/// `buf` is not empty), as rmw documents for a short buffer.
pub fn write_reason(buf: &mut [u8], reasons: &[String]) {
    if buf.is_empty() {
        return;
    }
    let text = reasons.concat();
    let n = text.len().min(buf.len() - 1);
    buf[..n].copy_from_slice(&text.as_bytes()[..n]);
    buf[n] = 0;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qos::Qos;

    fn default() -> ffi::rmw_qos_profile_t {
        Qos::system_default().profile
    }

    // Ruling (rmw_qos_profile_check_compatible: compatible = can communicate): every pair that
    // rmw_tracer wires is OK or a WARNING, never an ERROR.
    #[test]
    fn best_effort_publisher_and_reliable_subscription_communicate() {
        let mut p = default();
        p.reliability = ffi::RMW_QOS_POLICY_RELIABILITY_BEST_EFFORT;
        let s = default();
        assert_eq!(check(&p, &s), (ffi::RMW_QOS_COMPATIBILITY_OK, vec![]));
        let mut sys = default();
        sys.reliability = ffi::RMW_QOS_POLICY_RELIABILITY_SYSTEM_DEFAULT;
        sys.durability = ffi::RMW_QOS_POLICY_DURABILITY_SYSTEM_DEFAULT;
        assert_eq!(check(&sys, &sys).0, ffi::RMW_QOS_COMPATIBILITY_OK);
    }

    #[test]
    fn warnings_name_what_is_not_delivered() {
        let p = default();
        let mut s = default();
        s.durability = ffi::RMW_QOS_POLICY_DURABILITY_TRANSIENT_LOCAL;
        s.deadline = ffi::rmw_time_t { sec: 1, nsec: 0 };
        let (v, why) = check(&p, &s);
        assert_eq!(v, ffi::RMW_QOS_COMPATIBILITY_WARNING);
        assert_eq!(why.len(), 2, "{why:?}");
        assert!(why[0].starts_with("WARNING: Volatile publisher"));
        let mut u = default();
        u.reliability = ffi::RMW_QOS_POLICY_RELIABILITY_UNKNOWN;
        assert_eq!(check(&u, &default()).0, ffi::RMW_QOS_COMPATIBILITY_WARNING);
    }

    #[test]
    fn reason_is_truncated_and_terminated() {
        let mut buf = [0xffu8; 8];
        write_reason(&mut buf, &["WARNING: abcdefgh;".to_owned()]);
        assert_eq!(&buf, b"WARNING\0");
        let mut empty: [u8; 0] = [];
        write_reason(&mut empty, &["x".to_owned()]);
    }
}
