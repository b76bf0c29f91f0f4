//! Durations and instants (src/core/duration.rs): any text, number or object either reads as a
//! value or is a typed error, never a panic; and the canonical forms the schema prints read back
//! as the exact same nanoseconds (for durations up to u64::MAX ns, instants 0 to i64::MAX ns).
#![no_main]

use edgebucket::{DurationParts, DurationSpec, InstantSpec};
use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;

fn run(data: &[u8]) -> Result<()> {
    let mut u = Unstructured::new(data);
    match u.int_in_range(0..=5u8)? {
        0 => {
            let len = u.int_in_range(0..=64usize)?;
            let text = String::from_utf8_lossy(u.bytes(len)?).into_owned();
            if let Ok(n) = DurationSpec::Text(text.clone()).to_nanos() {
                if let Ok(n64) = u64::try_from(n) {
                    let canonical = DurationSpec::from_nanos(n64);
                    assert_eq!(canonical.to_nanos().ok(), Some(n), "{text:?} -> {n} -> {canonical:?}");
                }
            }
            if let Ok(n) = InstantSpec::Text(text.clone()).to_nanos() {
                if let Ok(n64) = u64::try_from(n) {
                    let canonical = InstantSpec::from_nanos(n64);
                    assert_eq!(canonical.to_nanos().ok(), Some(n), "{text:?} -> {n} -> {canonical:?}");
                }
            }
            let _ = serde_json::from_str::<DurationSpec>(&text).map(|d| d.to_nanos());
            let _ = serde_json::from_str::<InstantSpec>(&text).map(|d| d.to_nanos());
        }
        1 => {
            let n: u64 = u.arbitrary()?;
            let spec = DurationSpec::from_nanos(n);
            assert_eq!(spec.to_nanos().ok(), Some(n as i128), "{n} -> {spec:?}");
            let json = serde_json::to_string(&spec).unwrap();
            let back: DurationSpec = serde_json::from_str(&json).unwrap();
            assert_eq!(back.to_nanos().ok(), Some(n as i128));
        }
        2 => {
            let n = u.int_in_range(0..=i64::MAX)?;
            let spec = InstantSpec::from_nanos(n as u64);
            assert_eq!(spec.to_nanos().ok(), Some(n), "{n} -> {spec:?}");
        }
        3 => {
            let ms: f64 = u.arbitrary()?;
            let _ = DurationSpec::Millis(ms).to_nanos().map_err(|e| e.to_string());
            let _ = InstantSpec::Millis(ms).to_nanos().map_err(|e| e.to_string());
        }
        4 => {
            let parts = DurationParts {
                days: u.arbitrary()?,
                hours: u.arbitrary()?,
                minutes: u.arbitrary()?,
                seconds: u.arbitrary()?,
                milliseconds: u.arbitrary()?,
                microseconds: u.arbitrary()?,
                nanoseconds: u.arbitrary()?,
            };
            let _ = DurationSpec::Parts(parts).to_nanos();
        }
        _ => {
            // Near-canonical instants: the RFC 3339 shape with fields drawn near their edges.
            let year = u.int_in_range(1969..=10000u32)?;
            let text = format!(
                "{year:04}-{:02}-{:02}T{:02}:{:02}:{:02}{}{}",
                u.int_in_range(0..=13u32)?,
                u.int_in_range(0..=32u32)?,
                u.int_in_range(0..=25u32)?,
                u.int_in_range(0..=60u32)?,
                u.int_in_range(0..=61u32)?,
                *u.choose(&["", ".5", ".000000001", ".999999999", ".1234567890", "."])?,
                *u.choose(&["Z", "z", "+00:00", "-00:00", "+23:59", "-23:59", "+24:00", "+01:60", ""])?,
            );
            if let Ok(n) = InstantSpec::Text(text.clone()).to_nanos() {
                if let Ok(n64) = u64::try_from(n) {
                    assert_eq!(InstantSpec::from_nanos(n64).to_nanos().ok(), Some(n), "{text}");
                }
            }
        }
    }
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let _ = run(data);
});
