//! QoS compatibility: the DDS request/offer rules rmw_tracer applies between a publisher and a
//! subscription (`docs/rmw-mapping.md`, QoS), and `rmw_qos_profile_check_compatible`.
//!
//! Two questions with one set of rules:
//!
//! - [`incompatible`]: do two *resolved* endpoint profiles match? This decides whether a
//!   subscription takes a publisher's samples, whether they count as matched, and raises the
//!   `*_INCOMPATIBLE_QOS` events. The rules are DDS's, written once in
//!   `tracer_recording::qos_match` (ROS-free, so `tracer graph` marks the same pairs): the
//!   offer must be at least what is requested for reliability, durability, deadline,
//!   liveliness kind and lease.
//! - [`check`]: what rmw documents for two *requested* profiles, which may hold SYSTEM_DEFAULT,
//!   UNKNOWN and unspecified times: ERROR for a pair that cannot communicate; otherwise
//!   WARNING where a system-default or unknown policy leaves the outcome open; OK. The verdicts
//!   are those of the DDS implementations (rmw_dds_common, which Fast DDS answers with), so a
//!   tool such as `ros2 doctor` says the same under either; `docs/rmw-mapping.md` has the table.

use crate::qos::Qos;

/// The policy that keeps `offered` from meeting `requested`, as rmw's policy kind: the rules
/// are `tracer_recording::qos_match`'s (shared with `tracer graph`), applied to the profiles'
/// registry numbers. When several fail, the one Fast DDS reports as "last".
pub fn incompatible(offered: &Qos, requested: &Qos) -> Option<ffi::rmw_qos_policy_kind_t> {
    use tracer_recording::qos_match::{self, Policy};
    Some(
        match qos_match::incompatible(&offered.numbers(), &requested.numbers())? {
            Policy::Reliability => ffi::RMW_QOS_POLICY_RELIABILITY,
            Policy::Durability => ffi::RMW_QOS_POLICY_DURABILITY,
            Policy::Deadline => ffi::RMW_QOS_POLICY_DEADLINE,
            Policy::Liveliness => ffi::RMW_QOS_POLICY_LIVELINESS,
        },
    )
}

/// rmw's spelling of a policy kind, for logs (`rmw_qos_policy_kind_to_str`'s names).
pub fn policy_name(kind: ffi::rmw_qos_policy_kind_t) -> &'static str {
    match kind {
        ffi::RMW_QOS_POLICY_RELIABILITY => "RELIABILITY",
        ffi::RMW_QOS_POLICY_DURABILITY => "DURABILITY",
        ffi::RMW_QOS_POLICY_DEADLINE => "DEADLINE",
        ffi::RMW_QOS_POLICY_LIVELINESS => "LIVELINESS",
        _ => "INVALID",
    }
}

/// A requested time that is rmw's "unspecified" default (`RMW_QOS_DEADLINE_DEFAULT`,
/// `RMW_QOS_LIVELINESS_LEASE_DURATION_DEFAULT`: zero).
fn unspecified(t: &ffi::rmw_time_t) -> bool {
    t.sec == 0 && t.nsec == 0
}

/// Whether `a` is shorter than `b`, comparing the two fields as rmw_time_t values.
fn shorter(a: &ffi::rmw_time_t, b: &ffi::rmw_time_t) -> bool {
    (a.sec, a.nsec) < (b.sec, b.nsec)
}

fn reliability_name(r: ffi::rmw_qos_reliability_policy_t) -> &'static str {
    match r {
        ffi::RMW_QOS_POLICY_RELIABILITY_SYSTEM_DEFAULT => "system_default",
        ffi::RMW_QOS_POLICY_RELIABILITY_RELIABLE => "reliable",
        ffi::RMW_QOS_POLICY_RELIABILITY_BEST_EFFORT => "best_effort",
        ffi::RMW_QOS_POLICY_RELIABILITY_BEST_AVAILABLE => "best_available",
        _ => "unknown",
    }
}

fn durability_name(d: ffi::rmw_qos_durability_policy_t) -> &'static str {
    match d {
        ffi::RMW_QOS_POLICY_DURABILITY_SYSTEM_DEFAULT => "system_default",
        ffi::RMW_QOS_POLICY_DURABILITY_TRANSIENT_LOCAL => "transient_local",
        ffi::RMW_QOS_POLICY_DURABILITY_VOLATILE => "volatile",
        ffi::RMW_QOS_POLICY_DURABILITY_BEST_AVAILABLE => "best_available",
        _ => "unknown",
    }
}

fn liveliness_name(l: ffi::rmw_qos_liveliness_policy_t) -> &'static str {
    match l {
        ffi::RMW_QOS_POLICY_LIVELINESS_SYSTEM_DEFAULT => "system_default",
        ffi::RMW_QOS_POLICY_LIVELINESS_AUTOMATIC => "automatic",
        ffi::RMW_QOS_POLICY_LIVELINESS_MANUAL_BY_TOPIC => "manual_by_topic",
        ffi::RMW_QOS_POLICY_LIVELINESS_BEST_AVAILABLE => "best_available",
        _ => "unknown",
    }
}

/// The verdict on two requested profiles and its reasons (each `ERROR: ...;` or
/// `WARNING: ...;`, errors first), as rmw documents `rmw_qos_profile_check_compatible`.
pub fn check(
    publisher: &ffi::rmw_qos_profile_t,
    subscription: &ffi::rmw_qos_profile_t,
) -> (ffi::rmw_qos_compatibility_type_t, Vec<String>) {
    let (p, s) = (publisher, subscription);
    let mut errors = Vec::new();
    let mut error = |why: &str| errors.push(format!("ERROR: {why};"));
    if p.reliability == ffi::RMW_QOS_POLICY_RELIABILITY_BEST_EFFORT
        && s.reliability == ffi::RMW_QOS_POLICY_RELIABILITY_RELIABLE
    {
        error("Best effort publisher and reliable subscription");
    }
    if p.durability == ffi::RMW_QOS_POLICY_DURABILITY_VOLATILE
        && s.durability == ffi::RMW_QOS_POLICY_DURABILITY_TRANSIENT_LOCAL
    {
        error("Volatile publisher and transient local subscription");
    }
    match (unspecified(&p.deadline), unspecified(&s.deadline)) {
        (true, false) => error("Subscription has a deadline, but publisher does not"),
        (false, false) if shorter(&s.deadline, &p.deadline) => {
            error("Subscription deadline is less than publisher deadline")
        }
        _ => {}
    }
    if p.liveliness == ffi::RMW_QOS_POLICY_LIVELINESS_AUTOMATIC
        && s.liveliness == ffi::RMW_QOS_POLICY_LIVELINESS_MANUAL_BY_TOPIC
    {
        error("Publisher's liveliness is automatic and subscription's is manual by topic");
    }
    let (pl, sl) = (&p.liveliness_lease_duration, &s.liveliness_lease_duration);
    match (unspecified(pl), unspecified(sl)) {
        (true, false) => {
            error("Subscription has a liveliness lease duration, but publisher does not")
        }
        (false, false) if shorter(sl, pl) => {
            error("Subscription liveliness lease duration is less than publisher")
        }
        _ => {}
    }
    if !errors.is_empty() {
        return (ffi::RMW_QOS_COMPATIBILITY_ERROR, errors);
    }

    // No error: a system-default or unknown policy may still decide it.
    let mut warnings = Vec::new();
    let mut warn = |why: String| warnings.push(format!("WARNING: {why};"));
    let open_r = |r| {
        r == ffi::RMW_QOS_POLICY_RELIABILITY_SYSTEM_DEFAULT
            || r == ffi::RMW_QOS_POLICY_RELIABILITY_UNKNOWN
    };
    let (pr, sr) = (p.reliability, s.reliability);
    if open_r(pr) && open_r(sr) {
        warn(format!(
            "Publisher reliability is {} and subscription reliability is {}",
            reliability_name(pr),
            reliability_name(sr)
        ));
    } else if open_r(pr) && sr == ffi::RMW_QOS_POLICY_RELIABILITY_RELIABLE {
        warn(format!(
            "Reliable subscription, but publisher is {}",
            reliability_name(pr)
        ));
    } else if pr == ffi::RMW_QOS_POLICY_RELIABILITY_BEST_EFFORT && open_r(sr) {
        warn(format!(
            "Best effort publisher, but subscription is {}",
            reliability_name(sr)
        ));
    }
    let open_d = |d| {
        d == ffi::RMW_QOS_POLICY_DURABILITY_SYSTEM_DEFAULT
            || d == ffi::RMW_QOS_POLICY_DURABILITY_UNKNOWN
    };
    let (pd, sd) = (p.durability, s.durability);
    if open_d(pd) && open_d(sd) {
        warn(format!(
            "Publisher durability is {} and subscription durability is {}",
            durability_name(pd),
            durability_name(sd)
        ));
    } else if open_d(pd) && sd == ffi::RMW_QOS_POLICY_DURABILITY_TRANSIENT_LOCAL {
        warn(format!(
            "Transient local subscription, but publisher is {}",
            durability_name(pd)
        ));
    } else if pd == ffi::RMW_QOS_POLICY_DURABILITY_VOLATILE && open_d(sd) {
        warn(format!(
            "Volatile publisher, but subscription is {}",
            durability_name(sd)
        ));
    }
    let open_l = |l| {
        l == ffi::RMW_QOS_POLICY_LIVELINESS_SYSTEM_DEFAULT
            || l == ffi::RMW_QOS_POLICY_LIVELINESS_UNKNOWN
    };
    let (pv, sv) = (p.liveliness, s.liveliness);
    if open_l(pv) && open_l(sv) {
        warn(format!(
            "Publisher liveliness is {} and subscription liveliness is {}",
            liveliness_name(pv),
            liveliness_name(sv)
        ));
    } else if open_l(pv) && sv == ffi::RMW_QOS_POLICY_LIVELINESS_MANUAL_BY_TOPIC {
        warn(format!(
            "Subscription's liveliness is manual by topic, but publisher's is {}",
            liveliness_name(pv)
        ));
    } else if pv == ffi::RMW_QOS_POLICY_LIVELINESS_AUTOMATIC && open_l(sv) {
        warn(format!(
            "Publisher's liveliness is automatic, but subscription's is {}",
            liveliness_name(sv)
        ));
    }
    if warnings.is_empty() {
        (ffi::RMW_QOS_COMPATIBILITY_OK, warnings)
    } else {
        (ffi::RMW_QOS_COMPATIBILITY_WARNING, warnings)
    }
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
    use crate::qos::End;

    /// A fully specified profile: reliable, volatile, automatic, no times.
    fn full() -> ffi::rmw_qos_profile_t {
        let mut p = Qos::system_default().profile;
        p.deadline = ffi::rmw_time_t { sec: 0, nsec: 0 };
        p.lifespan = ffi::rmw_time_t { sec: 0, nsec: 0 };
        p.liveliness_lease_duration = ffi::rmw_time_t { sec: 0, nsec: 0 };
        p
    }

    fn resolved(p: &ffi::rmw_qos_profile_t, end: End) -> Qos {
        Qos::resolve(p, end).unwrap()
    }

    #[test]
    fn fully_specified_profile_is_ok_with_itself() {
        assert_eq!(
            check(&full(), &full()),
            (ffi::RMW_QOS_COMPATIBILITY_OK, vec![])
        );
    }

    #[test]
    fn errors_come_with_their_reasons() {
        let mut p = full();
        p.reliability = ffi::RMW_QOS_POLICY_RELIABILITY_BEST_EFFORT;
        let mut s = full();
        s.durability = ffi::RMW_QOS_POLICY_DURABILITY_TRANSIENT_LOCAL;
        let (v, why) = check(&p, &s);
        assert_eq!(v, ffi::RMW_QOS_COMPATIBILITY_ERROR);
        assert_eq!(
            why,
            vec![
                "ERROR: Best effort publisher and reliable subscription;".to_owned(),
                "ERROR: Volatile publisher and transient local subscription;".to_owned()
            ]
        );
        let mut s = full();
        s.deadline = ffi::rmw_time_t { sec: 1, nsec: 0 };
        assert_eq!(check(&full(), &s).0, ffi::RMW_QOS_COMPATIBILITY_ERROR);
        let mut p = full();
        p.deadline = ffi::rmw_time_t { sec: 2, nsec: 0 };
        assert_eq!(check(&p, &s).0, ffi::RMW_QOS_COMPATIBILITY_ERROR);
        p.deadline = ffi::rmw_time_t { sec: 1, nsec: 0 };
        assert_eq!(check(&p, &s).0, ffi::RMW_QOS_COMPATIBILITY_OK);
    }

    #[test]
    fn system_default_publisher_and_reliable_subscription_warn() {
        let mut p = full();
        p.reliability = ffi::RMW_QOS_POLICY_RELIABILITY_SYSTEM_DEFAULT;
        let (v, why) = check(&p, &full());
        assert_eq!(v, ffi::RMW_QOS_COMPATIBILITY_WARNING);
        assert_eq!(
            why,
            vec!["WARNING: Reliable subscription, but publisher is system_default;".to_owned()]
        );
        let mut s = full();
        s.reliability = ffi::RMW_QOS_POLICY_RELIABILITY_BEST_EFFORT;
        assert_eq!(check(&p, &s).0, ffi::RMW_QOS_COMPATIBILITY_OK);
    }

    #[test]
    fn resolved_profiles_match_by_the_dds_rules() {
        let be = {
            let mut p = full();
            p.reliability = ffi::RMW_QOS_POLICY_RELIABILITY_BEST_EFFORT;
            p
        };
        let pub_be = resolved(&be, End::Publisher);
        let sub_rel = resolved(&full(), End::Subscription);
        assert_eq!(
            incompatible(&pub_be, &sub_rel),
            Some(ffi::RMW_QOS_POLICY_RELIABILITY)
        );
        assert_eq!(
            incompatible(
                &resolved(&full(), End::Publisher),
                &resolved(&be, End::Subscription)
            ),
            None
        );
        let mut tl = full();
        tl.durability = ffi::RMW_QOS_POLICY_DURABILITY_TRANSIENT_LOCAL;
        let sub_tl = resolved(&tl, End::Subscription);
        assert_eq!(
            incompatible(&resolved(&full(), End::Publisher), &sub_tl),
            Some(ffi::RMW_QOS_POLICY_DURABILITY)
        );
        // Both reliability and durability: reliability is reported.
        let mut be_tl = tl;
        be_tl.reliability = ffi::RMW_QOS_POLICY_RELIABILITY_RELIABLE;
        assert_eq!(
            incompatible(&pub_be, &resolved(&be_tl, End::Subscription)),
            Some(ffi::RMW_QOS_POLICY_RELIABILITY)
        );
        let mut dl = full();
        dl.deadline = ffi::rmw_time_t { sec: 1, nsec: 0 };
        let sub_dl = resolved(&dl, End::Subscription);
        assert_eq!(
            incompatible(&resolved(&full(), End::Publisher), &sub_dl),
            Some(ffi::RMW_QOS_POLICY_DEADLINE)
        );
        assert_eq!(incompatible(&resolved(&dl, End::Publisher), &sub_dl), None);
        let mut manual = full();
        manual.liveliness = ffi::RMW_QOS_POLICY_LIVELINESS_MANUAL_BY_TOPIC;
        assert_eq!(
            incompatible(
                &resolved(&full(), End::Publisher),
                &resolved(&manual, End::Subscription)
            ),
            Some(ffi::RMW_QOS_POLICY_LIVELINESS)
        );
        assert_eq!(
            incompatible(
                &resolved(&manual, End::Publisher),
                &resolved(&full(), End::Subscription)
            ),
            None
        );
        let mut lease = full();
        lease.liveliness_lease_duration = ffi::rmw_time_t { sec: 1, nsec: 0 };
        assert_eq!(
            incompatible(
                &resolved(&full(), End::Publisher),
                &resolved(&lease, End::Subscription)
            ),
            Some(ffi::RMW_QOS_POLICY_LIVELINESS)
        );
    }

    #[test]
    fn reason_is_truncated_and_terminated() {
        let mut buf = [0xffu8; 8];
        write_reason(&mut buf, &["WARNING: abcdefgh;".to_owned()]);
        assert_eq!(&buf, b"WARNING\0");
        let mut empty: [u8; 0] = [];
        write_reason(&mut empty, &["x".to_owned()]);
        let mut buf = [0xffu8; 4];
        write_reason(&mut buf, &[]);
        assert_eq!(buf[0], 0);
    }
}
