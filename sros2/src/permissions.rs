//! The DDS Security permissions document (`permissions.xml`, signed as `permissions.p7s`): one
//! `<grant>` per subject, each a list of allow and deny rules for domains and topics, and a
//! default. How a request is decided (DDS Security 1.1, 9.4.1.3): the rules of the grant are
//! taken in document order, and the first whose domains cover the domain and one of whose
//! criteria for the action (publish or subscribe) names the topic decides, allow or deny; when
//! none does, the grant's `<default>` decides. Topic names are DDS names (`rt/chatter`,
//! `rq/add_two_intsRequest`, `rr/add_two_intsReply`) matched with `fnmatch`.
//!
//! Not applied: a criterion with `<data_tags>` never matches (ROS endpoints carry none); one
//! with `<partitions>` matches only when one of its expressions matches the empty partition
//! (ROS endpoints use no partition); `<relay>` criteria are ignored.

use crate::fnmatch::fnmatch;
use crate::xml;
use crate::Error;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    Publish,
    Subscribe,
}

impl Action {
    pub fn name(self) -> &'static str {
        match self {
            Action::Publish => "publish",
            Action::Subscribe => "subscribe",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Criterion {
    topics: Vec<String>,
    /// Whether the endpoint's partitions (none: the empty partition) are covered.
    default_partition: bool,
}

impl Criterion {
    fn parse(n: roxmltree::Node<'_, '_>) -> Criterion {
        let topics = xml::child(n, "topics")
            .map(|t| xml::children(t, "topic").map(xml::text).collect())
            .unwrap_or_default();
        let default_partition = match xml::child(n, "partitions") {
            Some(p) => xml::children(p, "partition").any(|e| fnmatch(&xml::text(e), "")),
            None => true,
        } && xml::child(n, "data_tags").is_none();
        Criterion {
            topics,
            default_partition,
        }
    }

    fn covers(&self, topic: &str) -> bool {
        self.default_partition && self.topics.iter().any(|t| fnmatch(t, topic))
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Rule {
    allow: bool,
    domains: Vec<(u32, u32)>,
    publish: Vec<Criterion>,
    subscribe: Vec<Criterion>,
}

/// One `<grant>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grant {
    pub name: String,
    /// As written (`CN=/talker_listener/talker`); compare with [`Grant::is_for`].
    pub subject_name: String,
    /// `YYYY-MM-DDTHH:MM:SS`, read as UTC.
    pub not_before: String,
    pub not_after: String,
    rules: Vec<Rule>,
    pub default_allow: bool,
}

/// A permissions document: its grants.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Permissions {
    pub grants: Vec<Grant>,
}

/// A subject name as comparable text: its attributes, keys upper-cased, spaces around `=` and
/// `,` removed, in order most specific first (RFC 4514, as x509-cert prints a certificate's
/// subject). A name written the other way round (`O=x,CN=y`, the order OpenSSL's one-line form
/// uses) compares equal too: see [`Grant::is_for`].
fn attributes(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut escaped = false;
    for c in name.chars() {
        if escaped {
            cur.push(c);
            escaped = false;
        } else if c == '\\' {
            cur.push(c);
            escaped = true;
        } else if c == ',' {
            out.push(std::mem::take(&mut cur));
        } else {
            cur.push(c);
        }
    }
    out.push(cur);
    out.into_iter()
        .filter_map(|a| {
            let (k, v) = a.split_once('=')?;
            Some(format!("{}={}", k.trim().to_ascii_uppercase(), v.trim()))
        })
        .collect()
}

impl Grant {
    /// Whether this grant is for the certificate subject `subject` (RFC 4514 text, as the core
    /// reads it from the certificate): the same attributes in either order.
    pub fn is_for(&self, subject: &str) -> bool {
        let mine = attributes(&self.subject_name);
        let theirs = attributes(subject);
        if mine.is_empty() {
            return false;
        }
        mine == theirs || mine.iter().rev().eq(theirs.iter())
    }

    /// When the grant starts: its `not_before`, the first second [`Grant::valid_at`] accepts
    /// (`None`: a `not_before` that is not such a date).
    pub fn starts(&self) -> Option<std::time::SystemTime> {
        let first = epoch_secs(&self.not_before)?;
        Some(std::time::UNIX_EPOCH + std::time::Duration::from_secs(first))
    }

    /// When the grant runs out: the second after its `not_after`, the last second
    /// [`Grant::valid_at`] accepts (`None`: a `not_after` that is not such a date).
    pub fn ends(&self) -> Option<std::time::SystemTime> {
        let last = epoch_secs(&self.not_after)?;
        Some(std::time::UNIX_EPOCH + std::time::Duration::from_secs(last + 1))
    }

    /// Whether `now` (`YYYY-MM-DDTHH:MM:SS`, UTC) is within the grant's validity.
    pub fn valid_at(&self, now: &str) -> bool {
        let cut = |s: &str| s.chars().take(19).collect::<String>();
        cut(&self.not_before).as_str() <= now && now <= cut(&self.not_after).as_str()
    }

    /// The decision for `action` on the DDS topic `topic` in `domain` (module docs).
    pub fn decide(&self, domain: u32, action: Action, topic: &str) -> bool {
        for r in &self.rules {
            if !r
                .domains
                .iter()
                .any(|(lo, hi)| *lo <= domain && domain <= *hi)
            {
                continue;
            }
            let criteria = match action {
                Action::Publish => &r.publish,
                Action::Subscribe => &r.subscribe,
            };
            if criteria.iter().any(|c| c.covers(topic)) {
                return r.allow;
            }
        }
        self.default_allow
    }

    /// Whether any rule of the grant names `domain` (joining a domain with join access
    /// control needs one).
    pub fn covers_domain(&self, domain: u32) -> bool {
        self.rules.iter().any(|r| {
            r.domains
                .iter()
                .any(|(lo, hi)| *lo <= domain && domain <= *hi)
        })
    }
}

impl Permissions {
    pub fn parse(text: &str) -> Result<Permissions, Error> {
        let doc = xml::parse(text)?;
        let perms = xml::child(doc.root_element(), "permissions")
            .ok_or_else(|| Error::Invalid("no <permissions>".into()))?;
        let mut grants = Vec::new();
        for g in xml::children(perms, "grant") {
            let validity = xml::child(g, "validity");
            let when = |name| {
                validity
                    .and_then(|v| xml::child_text(v, name))
                    .ok_or_else(|| Error::Invalid(format!("grant without <validity><{name}>")))
            };
            let mut rules = Vec::new();
            for r in g.children().filter(|c| c.is_element()) {
                let allow = match r.tag_name().name() {
                    "allow_rule" => true,
                    "deny_rule" => false,
                    _ => continue,
                };
                rules.push(Rule {
                    allow,
                    domains: xml::child(r, "domains")
                        .map(xml::domains)
                        .transpose()?
                        .unwrap_or_default(),
                    publish: xml::children(r, "publish").map(Criterion::parse).collect(),
                    subscribe: xml::children(r, "subscribe")
                        .map(Criterion::parse)
                        .collect(),
                });
            }
            let default_allow = match xml::child_text(g, "default").as_deref() {
                Some("ALLOW") => true,
                Some("DENY") | None => false,
                Some(v) => return Err(Error::Invalid(format!("<default>{v}</default>"))),
            };
            grants.push(Grant {
                name: g.attribute("name").unwrap_or_default().to_owned(),
                subject_name: xml::child_text(g, "subject_name").unwrap_or_default(),
                not_before: when("not_before")?,
                not_after: when("not_after")?,
                rules,
                default_allow,
            });
        }
        Ok(Permissions { grants })
    }

    /// The grant for the certificate subject `subject`.
    pub fn grant_for(&self, subject: &str) -> Option<&Grant> {
        self.grants.iter().find(|g| g.is_for(subject))
    }
}

/// The current time as DDS validity dates are written (`YYYY-MM-DDTHH:MM:SS`, UTC).
pub fn now_utc() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    utc(secs)
}

/// Seconds since the epoch as `YYYY-MM-DDTHH:MM:SS` (days to civil date: Howard Hinnant's
/// algorithm).
pub fn utc(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// The last second [`utc`] prints with a four-digit year: 9999-12-31T23:59:59.
pub const LAST_SECOND: u64 = 253_402_300_799;

/// `YYYY-MM-DDTHH:MM:SS` (UTC; what follows the seconds is ignored, as [`Grant::valid_at`]
/// ignores it) as seconds since the epoch, the inverse of [`utc`] (days from civil date:
/// Howard Hinnant's algorithm); `None` for text that is not such a date, one before 1970, or
/// one that lands past [`LAST_SECOND`] (`9999-12-31T23:59:60`, a leap second, carries into
/// year 10000, which is no such date and no X.509 time either).
pub fn epoch_secs(date: &str) -> Option<u64> {
    let b = date.as_bytes();
    if b.len() < 19
        || b[4] != b'-'
        || b[7] != b'-'
        || b[10] != b'T'
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let s = date.get(r)?;
        if !s.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        s.parse().ok()
    };
    let (y, m, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hh, mm, ss) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) || hh > 23 || mm > 59 || ss > 60 {
        return None;
    }
    let y = y - i64::from(m <= 2);
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    u64::try_from(days * 86_400 + hh * 3600 + mm * 60 + ss)
        .ok()
        .filter(|secs| *secs <= LAST_SECOND)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_read_back_as_the_seconds_they_were_made_from() {
        for secs in [
            0,
            951_782_400,
            1_796_196_300,
            4_102_444_799,
            86_399,
            1_709_164_800,
        ] {
            assert_eq!(epoch_secs(&utc(secs)), Some(secs), "{}", utc(secs));
        }
        assert_eq!(epoch_secs("2099-12-31T23:59:59.000Z"), Some(4_102_444_799));
        for bad in [
            "",
            "2099-12-31",
            "2099-13-01T00:00:00",
            "2099/12/31T00:00:00",
            "+099-12-31T00:00:00",
            "1969-12-31T23:59:59",
            // Found by fuzzing (fuzz/seeds/dates/regress-leap-second-past-9999.txt): it read as
            // the first second of year 10000, which utc prints in five digits and which does
            // not read back.
            "9999-12-31T23:59:60",
        ] {
            assert_eq!(epoch_secs(bad), None, "{bad}");
        }
        // Any text of date characters (and a multi-byte one) reads or is refused, never panics.
        let chars: Vec<char> = "0123456789-T:Z. é".chars().collect();
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let text: String = (0..x % 24)
                .map(|i| chars[((x >> (i % 60)) % chars.len() as u64) as usize])
                .collect();
            if let Some(secs) = epoch_secs(&text) {
                assert_eq!(epoch_secs(&utc(secs)), Some(secs), "{text}");
            }
        }
        // DOC's grant is valid through 2099-12-31T23:59:59: it ends the second after.
        let g = Permissions::parse(DOC).unwrap().grants.remove(0);
        let end = std::time::UNIX_EPOCH + std::time::Duration::from_secs(4_102_444_800);
        assert_eq!(g.ends(), Some(end));
        // ... and starts with its not_before, 2020-01-01T00:00:00.
        let start = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_577_836_800);
        assert_eq!(g.starts(), Some(start));
        assert!(g.valid_at(&utc(1_577_836_800)) && !g.valid_at(&utc(1_577_836_799)));
        assert!(g.valid_at(&utc(4_102_444_799)) && !g.valid_at(&utc(4_102_444_800)));
    }

    const DOC: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<dds>
  <permissions>
    <grant name="/robot/talker">
      <subject_name>CN=/robot/talker</subject_name>
      <validity><not_before>2020-01-01T00:00:00</not_before><not_after>2099-12-31T23:59:59</not_after></validity>
      <deny_rule>
        <domains><id>0</id></domains>
        <publish><topics><topic>rt/secret*</topic></topics></publish>
      </deny_rule>
      <allow_rule>
        <domains><id_range><min>0</min><max>5</max></id_range></domains>
        <publish><topics><topic>rt/*</topic></topics></publish>
        <subscribe><partitions><partition>p</partition></partitions><topics><topic>rt/*</topic></topics></subscribe>
        <subscribe><topics><topic>rt/chatter</topic></topics></subscribe>
      </allow_rule>
      <default>DENY</default>
    </grant>
  </permissions>
</dds>"#;

    #[test]
    fn the_first_matching_rule_decides_then_the_default() {
        let p = Permissions::parse(DOC).unwrap();
        let g = p.grant_for("CN=/robot/talker").unwrap();
        assert!(g.decide(0, Action::Publish, "rt/chatter"));
        assert!(!g.decide(0, Action::Publish, "rt/secret_plans"));
        assert!(g.decide(1, Action::Publish, "rt/secret_plans"));
        assert!(!g.decide(6, Action::Publish, "rt/chatter"));
        assert!(g.decide(0, Action::Subscribe, "rt/chatter"));
        // The rt/* subscribe criterion names a partition ROS never uses.
        assert!(!g.decide(0, Action::Subscribe, "rt/other"));
        assert!(g.covers_domain(5) && !g.covers_domain(6));
        assert!(g.valid_at("2026-12-02T07:00:00"));
        assert!(!g.valid_at("2100-01-01T00:00:00"));
        assert!(p.grant_for("CN=/robot/listener").is_none());
        assert!(g.is_for("CN = /robot/talker"));
    }

    #[test]
    fn subjects_compare_by_attributes_in_either_order() {
        let mut g = Permissions::parse(DOC).unwrap().grants.remove(0);
        g.subject_name = "O=Robots, CN=/a".into();
        assert!(g.is_for("CN=/a,O=Robots"));
        assert!(!g.is_for("CN=/a"));
        g.subject_name = "CN=/a\\,b".into();
        assert!(g.is_for("CN=/a\\,b") && !g.is_for("CN=/a"));
    }

    #[test]
    fn civil_dates() {
        assert_eq!(utc(0), "1970-01-01T00:00:00");
        assert_eq!(utc(951_782_400), "2000-02-29T00:00:00");
        assert_eq!(utc(1_796_196_300), "2026-12-02T07:25:00");
    }
}
