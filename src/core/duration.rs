//! Durations and instants as the JSON schema writes them.
//!
//! A duration is a number of milliseconds (`250`), a [humantime] string (`"250ms"`, `"1s"`,
//! `"10 minutes"`, `"1h 30m"`, `"1d"`) or an object of whole parts
//! (`{ "minutes": 1, "seconds": 30 }`; keys `days`, `hours`, `minutes`, `seconds`,
//! `milliseconds`, `microseconds`, `nanoseconds`). An instant is milliseconds since the Unix
//! epoch or an RFC 3339 timestamp (`"2026-11-21T17:00:00Z"`). Durations are written back as
//! humantime strings and instants as RFC 3339, both exact to the nanosecond.

use std::fmt;
use std::time::{Duration, UNIX_EPOCH};

use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::error::{Error, Result};

/// A duration as written in JSON, not yet checked. See the [module docs](self).
#[derive(Debug, Clone, PartialEq)]
pub enum DurationSpec {
    /// Milliseconds; must be a whole, non-negative number.
    Millis(f64),
    /// A humantime string.
    Text(String),
    /// Whole parts, summed.
    Parts(DurationParts),
}

/// The object form of a duration.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[allow(missing_docs)]
pub struct DurationParts {
    pub days: u64,
    pub hours: u64,
    pub minutes: u64,
    pub seconds: u64,
    pub milliseconds: u64,
    pub microseconds: u64,
    pub nanoseconds: u64,
}

/// An instant as written in JSON, not yet checked: epoch milliseconds or RFC 3339.
#[derive(Debug, Clone, PartialEq)]
pub enum InstantSpec {
    /// Milliseconds since the Unix epoch; must be a whole number.
    Millis(f64),
    /// An RFC 3339 timestamp.
    Text(String),
}

/// The largest whole number of milliseconds every JSON reader carries exactly: 2^53 − 1, what
/// JavaScript calls `Number.MAX_SAFE_INTEGER`. (Beyond it a number may already have been rounded
/// by the time it is checked, as 2^53 + 1 reads as 2^53.)
const MAX_EXACT_MILLIS: f64 = 9_007_199_254_740_991.0;

impl DurationSpec {
    /// The duration in nanoseconds.
    ///
    /// # Errors
    /// [`Error::InvalidDuration`] for text humantime cannot read, and for negative or
    /// fractional milliseconds.
    pub fn to_nanos(&self) -> Result<i128> {
        match self {
            DurationSpec::Millis(ms) if *ms < 0.0 => {
                Err(invalid(&describe_number(*ms), "a duration cannot be negative".into()))
            }
            DurationSpec::Millis(ms) => whole_millis(*ms).map(|ms| ms as i128 * 1_000_000).map_err(|reason| {
                let hint = if ms.is_finite() && ms.fract() != 0.0 { "; write \"1.5ms\" for fractions" } else { "" };
                invalid(&describe_number(*ms), format!("{reason}{hint}"))
            }),
            DurationSpec::Text(text) => {
                humantime::parse_duration(text).map(|d| d.as_nanos() as i128).map_err(|e| invalid(text, e.to_string()))
            }
            DurationSpec::Parts(p) => Ok([
                (p.days, 86_400_000_000_000u128),
                (p.hours, 3_600_000_000_000),
                (p.minutes, 60_000_000_000),
                (p.seconds, 1_000_000_000),
                (p.milliseconds, 1_000_000),
                (p.microseconds, 1_000),
                (p.nanoseconds, 1),
            ]
            .iter()
            .map(|&(n, unit)| n as u128 * unit) // each < 2^64 × 2^47
            .sum::<u128>() as i128),
        }
    }

    /// The canonical form of `nanos`: a humantime string.
    pub fn from_nanos(nanos: u64) -> Self {
        DurationSpec::Text(humantime::format_duration(Duration::from_nanos(nanos)).to_string())
    }
}

impl InstantSpec {
    /// Nanoseconds since the Unix epoch.
    ///
    /// # Errors
    /// [`Error::InvalidInstant`] for unreadable text, fractional milliseconds, a fraction of a
    /// second finer than a nanosecond, or an instant outside the 64-bit nanosecond range (years
    /// 1677 to 2262). Text is RFC 3339 with `Z` or a
    /// numeric offset, its local date and time from 1970 on (humantime's range): an earlier
    /// year is unreadable text, where milliseconds before the epoch are a number the caller
    /// judges.
    pub fn to_nanos(&self) -> Result<i64> {
        let nanos = match self {
            InstantSpec::Millis(ms) => {
                whole_millis(*ms).map_err(|reason| invalid_instant(&describe_number(*ms), reason.into()))? as i128
                    * 1_000_000
            }
            InstantSpec::Text(text) => rfc3339_nanos(text)?,
        };
        i64::try_from(nanos).map_err(|_| {
            let shown = match self {
                InstantSpec::Millis(ms) => describe_number(*ms),
                InstantSpec::Text(text) => text.clone(),
            };
            invalid_instant(&shown, "outside years 1677 to 2262".into())
        })
    }

    /// The canonical form of `nanos` since the epoch: RFC 3339.
    pub fn from_nanos(nanos: u64) -> Self {
        let time = UNIX_EPOCH + Duration::from_nanos(nanos);
        let text = match nanos {
            n if n % 1_000_000_000 == 0 => humantime::format_rfc3339_seconds(time).to_string(),
            n if n % 1_000_000 == 0 => humantime::format_rfc3339_millis(time).to_string(),
            _ => humantime::format_rfc3339_nanos(time).to_string(),
        };
        InstantSpec::Text(text)
    }
}

/// RFC 3339 text (`2026-11-21T17:00:00.5+01:00`) to nanoseconds since the epoch. The grammar is
/// checked here; humantime, which reads UTC only and is lenient about what follows the seconds
/// (`…00ZZ`, a fraction then any `+…`), then reads the date and time.
fn rfc3339_nanos(text: &str) -> Result<i128> {
    let (local, offset_seconds) = split_offset(text)?;
    let time = humantime::parse_rfc3339(&format!("{}Z", local.to_ascii_uppercase()))
        .map_err(|e| invalid_instant(text, format!("{e} (RFC 3339, its local date from 1970 on)")))?;
    let nanos = match time.duration_since(UNIX_EPOCH) {
        Ok(after) => after.as_nanos() as i128,
        Err(before) => -(before.duration().as_nanos() as i128),
    };
    Ok(nanos - offset_seconds as i128 * 1_000_000_000)
}

/// `text`'s local date and time, in upper case (RFC 3339 allows `t` and `z`), and its offset
/// (`Z`, `+01:00`, `-05:30`) in seconds east of UTC.
fn split_offset(text: &str) -> Result<(&str, i64)> {
    let malformed =
        || invalid_instant(text, "expected RFC 3339: YYYY-MM-DDTHH:MM:SS[.fraction] and Z or ±HH:MM".into());
    let (local, offset) = match text.as_bytes() {
        [.., b'Z' | b'z'] => (&text[..text.len() - 1], 0),
        [.., sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
            let hours = two_digits(*h1, *h2).filter(|h| *h <= 23).ok_or_else(malformed)?;
            let minutes = two_digits(*m1, *m2).filter(|m| *m <= 59).ok_or_else(malformed)?;
            let sign = if *sign == b'+' { 1 } else { -1 };
            (&text[..text.len() - 6], sign * (hours * 3600 + minutes * 60)) // the six are ASCII
        }
        _ => return Err(malformed()),
    };
    if !is_local_date_time(local.as_bytes()) {
        return Err(malformed());
    }
    // humantime reads second 60 as 59 on any minute: an instant a second early, silently.
    if &local[17..19] == "60" {
        return Err(invalid_instant(text, "a leap second (:60) has no instant of its own in Unix time".into()));
    }
    // humantime drops the digits of a fraction past the ninth: a finer instant, cut silently.
    if local.bytes().skip("0000-00-00T00:00:00.".len() + 9).any(|digit| digit != b'0') {
        return Err(invalid_instant(text, "a fraction of a second finer than a nanosecond cannot be exact".into()));
    }
    Ok((local, offset))
}

fn two_digits(tens: u8, ones: u8) -> Option<i64> {
    (tens.is_ascii_digit() && ones.is_ascii_digit()).then(|| ((tens - b'0') * 10 + (ones - b'0')) as i64)
}

/// `YYYY-MM-DDTHH:MM:SS` with an optional `.fraction`: the shape only (humantime checks ranges).
fn is_local_date_time(b: &[u8]) -> bool {
    const SHAPE: &[u8; 19] = b"0000-00-00T00:00:00";
    let fits = |(i, expected): (usize, &u8)| match expected {
        b'0' => b[i].is_ascii_digit(),
        b'T' => b[i].eq_ignore_ascii_case(&b'T'),
        other => b[i] == *other,
    };
    b.len() >= SHAPE.len()
        && SHAPE.iter().enumerate().all(fits)
        && match &b[SHAPE.len()..] {
            [] => true,
            [b'.', digits @ ..] => !digits.is_empty() && digits.iter().all(u8::is_ascii_digit),
            _ => false,
        }
}

/// Whole milliseconds within 2^53 - 1, else why not.
fn whole_millis(ms: f64) -> std::result::Result<i64, &'static str> {
    if !ms.is_finite() || ms.fract() != 0.0 {
        return Err("milliseconds must be a whole number");
    }
    if ms.abs() > MAX_EXACT_MILLIS {
        return Err("milliseconds beyond 2^53 - 1 are not exact");
    }
    Ok(ms as i64)
}

/// A number for an error message, as JavaScript writes it: whole numbers without a decimal
/// point, `NaN`, `Infinity` and `-Infinity` by those names, other numbers as they are.
pub(crate) fn describe_number(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 9.2e18 {
        return (value as i64).to_string();
    }
    match value {
        v if v.is_nan() => "NaN".into(),
        v if v.is_infinite() => if v > 0.0 { "Infinity" } else { "-Infinity" }.into(),
        // JavaScript's exponent form, from 10^21 and below 10^-6: 1e+300, 1.5e-7.
        v if v.abs() >= 1e21 || v.abs() < 1e-6 => {
            let text = format!("{v:e}");
            match text.split_once('e') {
                Some((mantissa, exponent)) if !exponent.starts_with('-') => format!("{mantissa}e+{exponent}"),
                _ => text,
            }
        }
        v => v.to_string(),
    }
}

fn invalid(input: &str, reason: String) -> Error {
    Error::InvalidDuration { input: input.to_owned(), reason }
}

fn invalid_instant(input: &str, reason: String) -> Error {
    Error::InvalidInstant { input: input.to_owned(), reason }
}

// --- serde: numbers, strings and objects in; strings out ---

impl Serialize for DurationSpec {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            DurationSpec::Millis(ms) => serializer.serialize_f64(*ms),
            DurationSpec::Text(text) => serializer.serialize_str(text),
            DurationSpec::Parts(parts) => parts.serialize(serializer),
        }
    }
}

impl Serialize for InstantSpec {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            InstantSpec::Millis(ms) => serializer.serialize_f64(*ms),
            InstantSpec::Text(text) => serializer.serialize_str(text),
        }
    }
}

struct SpecVisitor {
    expecting: &'static str,
    allow_parts: bool,
}

enum Raw {
    Number(f64),
    Text(String),
    Parts(DurationParts),
}

impl<'de> Visitor<'de> for SpecVisitor {
    type Value = Raw;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.expecting)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> std::result::Result<Raw, E> {
        Ok(Raw::Number(v as f64))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> std::result::Result<Raw, E> {
        Ok(Raw::Number(v as f64))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> std::result::Result<Raw, E> {
        Ok(Raw::Number(v))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<Raw, E> {
        Ok(Raw::Text(v.to_owned()))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> std::result::Result<Raw, A::Error> {
        if !self.allow_parts {
            return Err(de::Error::invalid_type(de::Unexpected::Map, &self));
        }
        DurationParts::deserialize(de::value::MapAccessDeserializer::new(map)).map(Raw::Parts)
    }
}

impl<'de> Deserialize<'de> for DurationSpec {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        let visitor = SpecVisitor {
            expecting: "a duration: milliseconds, a string such as \"1s\", or an object such as {\"seconds\": 1}",
            allow_parts: true,
        };
        Ok(match deserializer.deserialize_any(visitor)? {
            Raw::Number(ms) => DurationSpec::Millis(ms),
            Raw::Text(text) => DurationSpec::Text(text),
            Raw::Parts(parts) => DurationSpec::Parts(parts),
        })
    }
}

impl<'de> Deserialize<'de> for InstantSpec {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        let visitor = SpecVisitor {
            expecting: "an instant: milliseconds since the Unix epoch or an RFC 3339 timestamp",
            allow_parts: false,
        };
        Ok(match deserializer.deserialize_any(visitor)? {
            Raw::Number(ms) => InstantSpec::Millis(ms),
            Raw::Text(text) => InstantSpec::Text(text),
            Raw::Parts(_) => return Err(de::Error::custom("an instant cannot be an object")),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{describe_number, DurationSpec, InstantSpec};

    fn instant(text: &str) -> crate::Result<i64> {
        InstantSpec::Text(text.into()).to_nanos()
    }

    #[test]
    fn rfc3339_instants_take_numeric_offsets_and_lower_case() {
        const HOUR: i64 = 3_600_000_000_000;
        let midnight = instant("2026-01-01T00:00:00Z").unwrap();
        assert_eq!(instant("2026-01-01T01:00:00+01:00").unwrap(), midnight);
        assert_eq!(instant("2025-12-31T19:00:00-05:00").unwrap(), midnight);
        assert_eq!(instant("2026-01-01T05:30:00.000+05:30").unwrap(), midnight);
        assert_eq!(instant("2026-01-01T00:00:00.123456789Z").unwrap(), midnight + 123_456_789);
        assert_eq!(instant("2026-01-01T00:00:00.1234567890000Z").unwrap(), midnight + 123_456_789, "zeros are exact");
        assert_eq!(instant("2026-01-01t00:00:00z").unwrap(), midnight);
        assert_eq!(instant("2026-01-01T00:00:00+00:00").unwrap(), midnight);
        assert_eq!(instant("2026-01-01T00:00:00-00:00").unwrap(), midnight);
        // The local time is read from 1970 on; the offset may take the instant before it.
        assert_eq!(instant("1970-01-01T00:30:00+01:00").unwrap(), -HOUR / 2);
        let bad = [
            "2026-01-01T00:00:00+24:00",
            "2026-01-01T00:00:00+01:60",
            "2026-01-01T00:00:00+0100",
            // After a fraction humantime skips a `+…` at the end unread: the offset is checked here.
            "2026-01-01T00:00:00.0+24:00",
            "2026-01-01T00:00:00.0+xx:yy",
            "2026-01-01T00:00:00.5+01:60",
            "2026-01-01T00:00:00.0+0100",
            // A digit beside a non-digit is no number of hours or minutes (`1:` read as 20 once).
            "2026-01-01T00:00:00+1::00",
            "2026-01-01T00:00:00+:1:00",
            "2026-01-01T00:00:00+01:0:",
            "+01:00",
            "é+01:00",
            "ééééééééééé+01:00",
            // Not RFC 3339, though humantime alone would read them.
            "2026-11-21T17:00:00",
            "2026-11-21 17:00:00Z",
            "2026-11-21T17:00:00ZZ",
            "2026-11-21T17:00:00Z+01:00",
            "2026-11-21T17:00:00.Z",
            "2026-11-21T17:00:00+01:00Z",
            "",
            "Z",
            // Finer than a nanosecond: humantime would cut it.
            "2026-01-01T00:00:00.1234567891Z",
            "2026-01-01T00:00:00.0000000001+01:00",
            // Second 60 read as 59 would move an aligned refill grid a second early.
            "2026-01-15T12:34:60Z",
            "2016-12-31T23:59:60Z",
        ];
        for bad in bad {
            assert_eq!(instant(bad).unwrap_err().code(), "INVALID_INSTANT", "{bad}");
        }
    }

    #[test]
    fn an_instant_is_written_in_its_shortest_exact_form() {
        let written = |nanos: u64| match InstantSpec::from_nanos(nanos) {
            InstantSpec::Text(text) => text,
            InstantSpec::Millis(ms) => panic!("written as {ms} ms"),
        };
        let midnight = instant("2026-01-01T00:00:00Z").unwrap() as u64;
        assert_eq!(written(midnight), "2026-01-01T00:00:00Z");
        assert_eq!(written(midnight + 5_000_000_000), "2026-01-01T00:00:05Z");
        assert_eq!(written(midnight + 500_000_000), "2026-01-01T00:00:00.500Z");
        assert_eq!(written(midnight + 1_000_000), "2026-01-01T00:00:00.001Z");
        assert_eq!(written(midnight + 1), "2026-01-01T00:00:00.000000001Z");
        assert_eq!(written(midnight + 500_000), "2026-01-01T00:00:00.000500000Z");
        for nanos in [0, midnight, midnight + 1_000_000, midnight + 123_456_789] {
            assert_eq!(instant(&written(nanos)).unwrap() as u64, nanos, "read back exactly");
        }
    }

    #[test]
    fn only_a_fractional_duration_is_told_to_write_milliseconds_as_text() {
        let message = |spec: DurationSpec| spec.to_nanos().unwrap_err().to_string();
        assert!(message(DurationSpec::Millis(1.5)).contains("write \"1.5ms\" for fractions"));
        assert!(!message(DurationSpec::Millis(f64::NAN)).contains("1.5ms"));
        let instant = InstantSpec::Millis(1.5).to_nanos().unwrap_err();
        assert_eq!(instant.code(), "INVALID_INSTANT");
        assert!(!instant.to_string().contains("1.5ms"), "no instant is written \"1.5ms\": {instant}");
    }

    #[test]
    fn numbers_in_messages_read_as_javascript_writes_them() {
        assert_eq!(describe_number(5.0), "5");
        assert_eq!(describe_number(0.0), "0", "not the exponent form of the smallest numbers");
        assert_eq!(describe_number(-0.0), "0", "JavaScript writes -0 as 0");
        assert_eq!(describe_number(-1.5), "-1.5");
        assert_eq!(describe_number(f64::NAN), "NaN");
        assert_eq!(describe_number(f64::INFINITY), "Infinity");
        assert_eq!(describe_number(f64::NEG_INFINITY), "-Infinity");
        assert_eq!(describe_number(1e300), "1e+300");
        assert_eq!(describe_number(-2.5e21), "-2.5e+21");
        assert_eq!(describe_number(1.5e-7), "1.5e-7");
        assert_eq!(describe_number(0.000001), "0.000001");
    }
}
