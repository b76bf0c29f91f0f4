//! Any JSON configuration that validates is safe for every operation at any time: a bucket
//! created from it at any `now`, then up to 24 operations (see `common`), and the configuration
//! prints to JSON that reads back the same. Two ways in: raw text, and JSON assembled from
//! fields drawn near their edges (every duration and instant form, numbers past i64 and 2^53,
//! fractions, humantime units, RFC 3339 with offsets).
#![no_main]

#[path = "common/mod.rs"]
mod common;

use common::*;
use edgebucket::{BucketConfiguration, ConfigurationSpec, TokenBucket};
use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Number, Value};

const UNITS: &[&str] = &[
    "ns", "nsec", "us", "usec", "ms", "msec", "s", "sec", "second", "seconds", "m", "min", "minutes", "h", "hr",
    "hours", "d", "day", "days", "w", "week", "weeks", "M", "month", "months", "y", "year", "years", "",
];

fn number(u: &mut Unstructured) -> Result<Value> {
    Ok(match u.int_in_range(0..=7u8)? {
        0 => json!(pick(u, &[0, 1, -1, 1000, i64::MAX, i64::MIN, 9_007_199_254_740_991, 9_007_199_254_740_992])?),
        1 => json!(u.arbitrary::<u64>()?),
        2 => Number::from_f64(*u.choose(&[0.5, 1e300, -0.0, 1.5, 9.3e18, 1e19, 9_007_199_254_740_993.0])?)
            .map(Value::Number)
            .unwrap_or(Value::Null),
        3 => Number::from_f64(u.arbitrary::<f64>()?).map(Value::Number).unwrap_or(json!(1)),
        _ => json!(u.int_in_range(1..=1_000_000_000i64)?),
    })
}

fn duration_text(u: &mut Unstructured) -> Result<String> {
    let parts = u.int_in_range(1..=3usize)?;
    let mut text = String::new();
    for i in 0..parts {
        if i > 0 {
            text.push(' ');
        }
        let n: u64 = match u.int_in_range(0..=4u8)? {
            0 => *u.choose(&[0, 1, 292, 584, 9_223_372_036, 9_223_372_036_854_775_807, u64::MAX])?,
            1 => u.arbitrary()?,
            _ => u.int_in_range(0..=1000)?,
        };
        text.push_str(&n.to_string());
        text.push_str(u.choose(UNITS)?);
    }
    Ok(text)
}

fn duration(u: &mut Unstructured) -> Result<Value> {
    Ok(match u.int_in_range(0..=3u8)? {
        0 => number(u)?,
        1 => json!(duration_text(u)?),
        2 => {
            let mut map = serde_json::Map::new();
            for key in ["days", "hours", "minutes", "seconds", "milliseconds", "microseconds", "nanoseconds"] {
                if u.ratio(1u8, 3)? {
                    let n: u64 = *u.choose(&[0, 1, 59, u64::MAX, u64::MAX / 2, 106_751])?;
                    map.insert(key.into(), json!(n));
                }
            }
            Value::Object(map)
        }
        _ => {
            let len = u.int_in_range(0..=12usize)?;
            json!(String::from_utf8_lossy(u.bytes(len)?).into_owned())
        }
    })
}

fn instant(u: &mut Unstructured) -> Result<Value> {
    Ok(match u.int_in_range(0..=2u8)? {
        0 => number(u)?,
        _ => {
            let year = *u.choose(&[1970, 1971, 2026, 2262, 2263, 9999, 1969, 0])?;
            let month = u.int_in_range(0..=13u32)?;
            let day = u.int_in_range(0..=32u32)?;
            let (h, m, s) = (u.int_in_range(0..=24u32)?, u.int_in_range(0..=60u32)?, u.int_in_range(0..=61u32)?);
            let fraction = match u.int_in_range(0..=3u8)? {
                0 => String::new(),
                1 => format!(".{}", u.int_in_range(0..=999_999_999u32)?),
                2 => ".1234567890000".into(),
                _ => format!(".{:09}", u.int_in_range(0..=999_999_999u32)?),
            };
            let offset = match u.int_in_range(0..=3u8)? {
                0 => "Z".to_owned(),
                1 => "z".to_owned(),
                _ => format!(
                    "{}{:02}:{:02}",
                    u.choose(&["+", "-"])?,
                    u.int_in_range(0..=24u32)?,
                    u.int_in_range(0..=60u32)?
                ),
            };
            json!(format!("{year:04}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}{fraction}{offset}"))
        }
    })
}

fn bandwidth(u: &mut Unstructured) -> Result<Value> {
    let kind = *u.choose(&["greedy", "intervally", "intervallyAligned", "intervallyAligned"])?;
    let mut refill = json!({ "kind": kind, "period": duration(u)? });
    refill["tokens"] = if u.ratio(3u8, 4)? { json!(pick(u, &[1, 10, 1_000_000_000, i64::MAX])?) } else { number(u)? };
    if kind == "intervallyAligned" || u.ratio(1u8, 10)? {
        refill["firstRefillTime"] = instant(u)?;
        if u.arbitrary()? {
            refill["adaptiveInitialTokens"] = json!(u.arbitrary::<bool>()?);
        }
    }
    let capacity = if u.ratio(3u8, 4)? {
        json!(pick(u, &[1, 10, 1_000_000_000, i64::MAX / 2, i64::MAX])?)
    } else {
        number(u)?
    };
    let mut b = json!({ "capacity": capacity, "refill": refill });
    if u.ratio(1u8, 3)? {
        b["initialTokens"] = json!(pick(u, &[0, 1, i64::MAX, -1])?);
    }
    if u.ratio(1u8, 2)? {
        b["id"] = json!(*u.choose(&["a", "b", "c"])?);
    }
    Ok(b)
}

fn run(data: &[u8]) -> Result<()> {
    let mut u = Unstructured::new(data);
    let text = if u.ratio(1u8, 4)? {
        let len = u.int_in_range(0..=400usize)?;
        String::from_utf8_lossy(u.bytes(len)?).into_owned()
    } else {
        let n = u.int_in_range(1..=3usize)?;
        let bandwidths = (0..n).map(|_| bandwidth(&mut u)).collect::<Result<Vec<_>>>()?;
        json!({ "bandwidths": bandwidths }).to_string()
    };
    let Ok(spec) = serde_json::from_str::<ConfigurationSpec>(&text) else { return Ok(()) };
    let configuration = match BucketConfiguration::try_from(spec) {
        Ok(c) => c,
        Err(e) => {
            let _ = (e.code(), e.to_string());
            return Ok(());
        }
    };
    let printed = serde_json::to_string(&configuration).expect("configurations print");
    let back: BucketConfiguration = serde_json::from_str(&printed).expect("printed configurations read back");
    assert_eq!(back, configuration, "{text} printed as {printed}");
    let mut anchors = vec![];
    for b in configuration.bandwidths() {
        if let edgebucket::RefillKind::IntervallyAligned { first_refill_nanos, .. } = b.refill().kind() {
            anchors.push(first_refill_nanos);
            anchors.push(first_refill_nanos.saturating_sub(b.refill().period_nanos()));
        }
    }
    let created = pick_time(&mut u, &anchors)?;
    anchors.push(created);
    let bucket = TokenBucket::new(configuration, created);
    run_operations(&mut u, bucket, &mut anchors)
}

fuzz_target!(|data: &[u8]| {
    let _ = run(data);
});
