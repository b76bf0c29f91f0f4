//! Time across the boundary, and durations through the core's parser.
//!
//! JS reads its clock and passes the time as one `f64` per call, in the unit of the bucket's
//! [`Clock`]: exact for integer milliseconds (`Date.now()`, the default) and for integer
//! nanoseconds up to 2^53 (a manual clock); fractional milliseconds (the nanosecond-precision
//! clock passes `performance.now()`, small and precise, added to an origin) are rounded to the
//! nearest nanosecond; nanoseconds beyond 2^53 come as a BigInt through the exchange area.

use wasm_bindgen::prelude::*;

use super::errors::{serde_message, shown, BindingError};
use super::exchange;
use crate::{DurationSpec, Error};

const NANOS_PER_MILLI: i64 = 1_000_000;

/// How a bucket's `f64` times become nanoseconds: `origin + value × unit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Clock {
    nanos_per_unit: i64,
    origin_nanos: i64,
    /// The largest |value| whose product with the unit fits in `i64`. A range check instead of
    /// `checked_mul`, which wasm32 lowers to a 128-bit multiply call on every operation.
    max_units: i64,
}

impl Clock {
    /// Milliseconds (`unit_is_millis`) or nanoseconds, after `origin_millis` (a time in
    /// milliseconds, possibly fractional: `performance.timeOrigin`).
    pub fn new(unit_is_millis: bool, origin_millis: f64) -> Result<Self, BindingError> {
        let origin_nanos = Clock::with_unit(NANOS_PER_MILLI, 0).nanos(origin_millis)?;
        Ok(Clock::with_unit(if unit_is_millis { NANOS_PER_MILLI } else { 1 }, origin_nanos))
    }

    fn with_unit(nanos_per_unit: i64, origin_nanos: i64) -> Self {
        Clock { nanos_per_unit, origin_nanos, max_units: i64::MAX / nanos_per_unit }
    }

    /// `value` in nanoseconds; see the module docs.
    #[inline]
    pub fn nanos(&self, value: f64) -> Result<i64, BindingError> {
        // Every operation reads the time: a whole number of units in range is decided here,
        // inlined; the rest (BigInts, fractions, errors) out of line.
        if value.fract() == 0.0 && value.abs() <= exchange::MAX_SAFE {
            let units = value as i64;
            if units.abs() <= self.max_units {
                if let Some(nanos) = (units * self.nanos_per_unit).checked_add(self.origin_nanos) {
                    return Ok(nanos);
                }
            }
        }
        self.nanos_in_general(value)
    }

    /// [`nanos`](Self::nanos) for every value: the cases above, BigInts, fractions, errors.
    #[cold]
    #[inline(never)]
    fn nanos_in_general(&self, value: f64) -> Result<i64, BindingError> {
        let units = if value.fract() == 0.0 && value.abs() <= exchange::MAX_SAFE { Some(value as i64) } else { None };
        let nanos = match units {
            Some(units) if units.abs() <= self.max_units => Some(units * self.nanos_per_unit),
            Some(_) => None,
            // Only a time meter's reading (nanoseconds, through `integerArg`, which keeps the
            // flag true to it) can be a BigInt. A NaN from a built-in clock is an error, whatever
            // flag another bucket's meter left set.
            None if value.is_nan() && self.nanos_per_unit == 1 => exchange::given_time(),
            None if self.nanos_per_unit == NANOS_PER_MILLI && value.is_finite() => fractional_millis(value),
            None => None,
        };
        nanos.and_then(|n| n.checked_add(self.origin_nanos)).ok_or_else(|| {
            let expected = if self.nanos_per_unit == NANOS_PER_MILLI {
                "milliseconds"
            } else {
                "whole nanoseconds up to 2^53 - 1 (a BigInt beyond)"
            };
            let gave = crate::core::duration::describe_number(value);
            BindingError::InvalidArgument(format!("the clock gave {gave}: expected {expected}"))
        })
    }
}

/// Fractional milliseconds to the nearest nanosecond, without the f64 rounding of `ms × 10^6`.
fn fractional_millis(value: f64) -> Option<i64> {
    let whole = value.floor();
    if whole.abs() > 9.2e12 {
        return None; // beyond year 2262 in nanoseconds
    }
    let fraction = ((value - whole) * NANOS_PER_MILLI as f64).round() as i64;
    (whole as i64 * NANOS_PER_MILLI).checked_add(fraction) // |whole| ≤ 9.2e12: the product fits
}

/// A duration in the configuration schema's forms (milliseconds, `"250ms"`, `{ seconds: 1 }`),
/// read by the core's parser, as nanoseconds.
pub fn duration_nanos(value: JsValue) -> Result<i64, BindingError> {
    let shown = || shown(&value);
    let spec: DurationSpec = serde_wasm_bindgen::from_value(value.clone())
        .map_err(|e| Error::InvalidDuration { input: shown(), reason: serde_message(e) })?;
    let nanos = spec.to_nanos()?;
    i64::try_from(nanos)
        .map_err(|_| Error::InvalidDuration { input: shown(), reason: "longer than 2^63 ns (292 years)".into() }.into())
}

/// [`duration_nanos`] for JS: leaves the nanoseconds in slot 0 of the exchange.
#[wasm_bindgen(js_name = durationNanos)]
pub fn duration_nanos_js(value: JsValue) -> Result<(), JsValue> {
    exchange::put_nanos(0, duration_nanos(value)?);
    Ok(())
}
