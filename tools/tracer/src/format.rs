//! Shared formatting: times, sizes, field values as JSON, and parsing of time/field bounds.

use base64::Engine;
use serde_json::{json, Value};
use tracer_mcap::{FieldEncoding, FieldValue};

/// Errors of the command line: a message for the user.
pub type CliResult<T = ()> = Result<T, String>;

pub fn err<E: std::fmt::Display>(ctx: &str) -> impl FnOnce(E) -> String + '_ {
    move |e| format!("{ctx}: {e}")
}

pub fn size(n: u64) -> String {
    const U: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut i = 0;
    while v >= 1024.0 && i < U.len() - 1 {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", U[i])
    }
}

/// Days since 1970-01-01 to (year, month, day) in the proleptic Gregorian calendar.
fn civil(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// `2026-12-01 19:57:18.123456789 UTC (1764619038.123456789)`; times before 1990 are taken
/// as not wall-clock (boot time, sim time) and shown as seconds only.
pub fn time(ns: u64) -> String {
    let secs = ns / 1_000_000_000;
    let frac = ns % 1_000_000_000;
    if secs < 631_152_000 {
        return format!("{secs}.{frac:09}");
    }
    let (y, m, d) = civil((secs / 86_400) as i64);
    let s = secs % 86_400;
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}.{frac:09} UTC ({secs}.{frac:09})",
        s / 3600,
        s / 60 % 60,
        s % 60
    )
}

pub fn duration(ns: u64) -> String {
    format!("{:.3}s", ns as f64 / 1e9)
}

/// A time given as integer nanoseconds or as seconds with a decimal point or `s` suffix.
pub fn parse_time(s: &str) -> CliResult<u64> {
    let t = s.trim();
    if let Some(sec) = t
        .strip_suffix('s')
        .or(if t.contains('.') { Some(t) } else { None })
    {
        let (whole, frac) = sec.split_once('.').unwrap_or((sec, ""));
        let w: u64 = whole.parse().map_err(|_| format!("bad time {s:?}"))?;
        if frac.len() > 9 || !frac.chars().all(|c| c.is_ascii_digit()) {
            return Err(format!("bad time {s:?}"));
        }
        let f: u64 = if frac.is_empty() {
            0
        } else {
            format!("{frac:0<9}")
                .parse()
                .map_err(|_| format!("bad time {s:?}"))?
        };
        return w
            .checked_mul(1_000_000_000)
            .and_then(|v| v.checked_add(f))
            .ok_or_else(|| format!("time {s:?} out of range"));
    }
    t.parse()
        .map_err(|_| format!("bad time {s:?}: integer nanoseconds, or seconds like 12.5 or 12s"))
}

/// A field bound in the field's own encoding.
pub fn parse_bound(enc: FieldEncoding, s: &str) -> CliResult<FieldValue> {
    let bad = || format!("bad {} value {s:?}", enc.name());
    Ok(match enc {
        FieldEncoding::Timestamp => FieldValue::Timestamp(parse_time(s)?),
        FieldEncoding::Uint64 => FieldValue::Uint64(s.parse().map_err(|_| bad())?),
        FieldEncoding::Int64 => FieldValue::Int64(s.parse().map_err(|_| bad())?),
        FieldEncoding::Float64 => FieldValue::Float64(s.parse().map_err(|_| bad())?),
        other => {
            return Err(format!(
                "fields of encoding {} cannot be seeked",
                other.name()
            ))
        }
    })
}

fn f16_to_f32(bits: u16) -> f32 {
    let sign = if bits & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = (bits >> 10) & 0x1F;
    let man = (bits & 0x3FF) as f32;
    match exp {
        0 => sign * man * 2f32.powi(-24),
        31 => {
            if man == 0.0 {
                sign * f32::INFINITY
            } else {
                f32::NAN
            }
        }
        e => sign * (1.0 + man / 1024.0) * 2f32.powi(e as i32 - 15),
    }
}

pub fn b64(b: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(b)
}

pub fn field_json(v: &FieldValue) -> Value {
    match v {
        FieldValue::Bool(b) => json!(b),
        FieldValue::Int8(x) => json!(x),
        FieldValue::Int16(x) => json!(x),
        FieldValue::Int32(x) => json!(x),
        FieldValue::Int64(x) => json!(x),
        FieldValue::Uint8(x) => json!(x),
        FieldValue::Uint16(x) => json!(x),
        FieldValue::Uint32(x) => json!(x),
        FieldValue::Uint64(x) | FieldValue::Timestamp(x) => json!(x),
        FieldValue::Float16(x) => json!(f16_to_f32(*x)),
        FieldValue::Float32(x) => json!(x),
        FieldValue::Float64(x) => json!(x),
        FieldValue::String(s) => json!(s),
        FieldValue::Bytes(b) => json!({ "base64": b64(b) }),
        FieldValue::Raw(b) => json!({ "raw_base64": b64(b) }),
    }
}

/// Short text form for `info` bounds.
pub fn raw_bound(enc: Option<FieldEncoding>, v: u64) -> String {
    match enc {
        Some(FieldEncoding::Int64) => (v as i64).to_string(),
        Some(FieldEncoding::Float64) => f64::from_bits(v).to_string(),
        Some(FieldEncoding::Timestamp) => time(v),
        _ => v.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates() {
        assert_eq!(civil(0), (1970, 1, 1));
        assert_eq!(civil(20_454), (2026, 1, 1));
        assert_eq!(
            time(1_767_225_600_000_000_001),
            "2026-01-01 00:00:00.000000001 UTC (1767225600.000000001)"
        );
    }

    #[test]
    fn time_parsing() {
        assert_eq!(parse_time("1500").unwrap(), 1500);
        assert_eq!(parse_time("1.5").unwrap(), 1_500_000_000);
        assert_eq!(parse_time("2s").unwrap(), 2_000_000_000);
        assert_eq!(parse_time("0.000000001s").unwrap(), 1);
        assert!(parse_time("x").is_err());
        assert!(parse_time("1.0000000001").is_err());
    }

    #[test]
    fn half_floats() {
        assert_eq!(f16_to_f32(0x3C00), 1.0);
        assert_eq!(f16_to_f32(0xC000), -2.0);
    }
}
