//! The object's one alarm, which deletes its bucket once idle for its time to full refill plus
//! the policy's grace and a second ([`idle_keep`](super::decide::idle_keep)), so idle keys cost
//! nothing. Refill is lazy: there are no refill alarms.
//!
//! One alarm per object instance: when it fires early (the bucket was used since), it is set
//! again for the new deadline, so a busy bucket costs one alarm write per idle period. A deadline
//! brought forward (a reset, a replacement) moves it earlier.

use std::cell::Cell;
use std::rc::Rc;

use worker::wasm_bindgen::{JsCast, JsValue};
use worker::{js_sys, State};

use super::errors::ApiError;

/// How far ahead an alarm is set at most: a year, in milliseconds. The runtime refuses alarms
/// after 2189 ("This API doesn't support dates after 2189"), and a bucket that is never deleted
/// (initial tokens above a capacity) or refills over centuries has a later deadline. Its alarm
/// then fires within a year, finds the bucket not yet idle and is set again.
const MAX_AHEAD_MILLIS: f64 = 365.0 * 86_400_000.0;

/// When the alarm is set for, as far as this instance knows.
#[derive(Debug, Default)]
pub struct IdleAlarm {
    /// Epoch milliseconds; `None` when this instance has set none (or it fired, or its write
    /// failed). Shared with the writes in flight, which clear it if they fail.
    at: Rc<Cell<Option<f64>>>,
}

/// An alarm write in flight.
pub struct AlarmWrite {
    /// Settles with the write.
    pub written: js_sys::Promise,
    at: f64,
    set: Rc<Cell<Option<f64>>>,
}

impl AlarmWrite {
    /// Forgets the alarm because its write failed, unless a later write already replaced it; the
    /// next write of the bucket then sets it again.
    pub fn failed(&self) {
        forget(&self.set, self.at);
    }
}

impl IdleAlarm {
    /// Writes the alarm for `deadline` (epoch milliseconds) unless it is already set for that
    /// time or earlier; the write, when one was issued.
    ///
    /// # Errors
    /// `STORAGE_ERROR` when the write cannot be issued.
    pub fn schedule(&self, state: &State, deadline: f64) -> Result<Option<AlarmWrite>, ApiError> {
        if !self.needs_write(deadline) {
            return Ok(None);
        }
        self.write(state, deadline).map(Some)
    }

    /// Whether an alarm for `deadline` must be written: none is set, or one later than it.
    fn needs_write(&self, deadline: f64) -> bool {
        !self.at.get().is_some_and(|at| at <= deadline)
    }

    /// Issues the write for `at` (epoch milliseconds; a year ahead at most) and counts the alarm
    /// as set from now on: decisions meanwhile need not write it again. [`AlarmWrite::failed`]
    /// undoes that.
    ///
    /// # Errors
    /// `STORAGE_ERROR` when the write cannot be issued.
    pub fn write(&self, state: &State, at: f64) -> Result<AlarmWrite, ApiError> {
        let at = alarm_time(at, js_sys::Date::now());
        let storage = state.as_raw().storage().map_err(ApiError::storage)?;
        let when = js_sys::Date::new(&at.into());
        let written = storage.set_alarm(when, JsValue::NULL.unchecked_into()).map_err(ApiError::storage)?;
        self.at.set(Some(at));
        Ok(AlarmWrite { written, at, set: Rc::clone(&self.at) })
    }

    /// Counts no alarm as set: it fired, or storage was cleared.
    pub fn clear(&self) {
        self.at.set(None);
    }
}

/// When to set the alarm for a `deadline` at `now` (epoch milliseconds): a year ahead at most.
fn alarm_time(deadline: f64, now: f64) -> f64 {
    deadline.min(now + MAX_AHEAD_MILLIS)
}

/// Clears `set` if it still holds the alarm at `failed`.
fn forget(set: &Cell<Option<f64>>, failed: f64) {
    if set.get() == Some(failed) {
        set.set(None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_alarm_write_is_forgotten_unless_a_later_one_replaced_it() {
        let set = Cell::new(Some(5_000.0));
        forget(&set, 5_000.0);
        assert_eq!(set.get(), None);
        let moved_earlier = Cell::new(Some(3_000.0));
        forget(&moved_earlier, 5_000.0);
        assert_eq!(moved_earlier.get(), Some(3_000.0));
    }

    #[test]
    fn an_alarm_is_set_a_year_ahead_at_most() {
        let now = 1.8e12; // 2027
        assert_eq!(alarm_time(now + 5_000.0, now), now + 5_000.0);
        let year = 365.0 * 86_400_000.0;
        assert_eq!(alarm_time(8.64e15, now), now + year, "the latest Date, as for a bucket never deleted");
    }

    // Null stands in for the write's promise, which none of these paths touch.
    fn written(alarm: &IdleAlarm, at: f64) -> AlarmWrite {
        alarm.at.set(Some(at));
        AlarmWrite { written: JsValue::NULL.unchecked_into(), at, set: Rc::clone(&alarm.at) }
    }

    #[test]
    fn an_alarm_set_for_the_deadline_or_earlier_is_not_written_again() {
        let alarm = IdleAlarm::default();
        assert!(alarm.needs_write(5_000.0), "none set");
        written(&alarm, 5_000.0);
        assert!(!alarm.needs_write(5_000.0) && !alarm.needs_write(9_000.0));
        assert!(alarm.needs_write(4_999.0), "a deadline brought forward");
    }

    #[test]
    fn a_failed_write_or_a_clear_leaves_no_alarm_counted_as_set() {
        let alarm = IdleAlarm::default();
        written(&alarm, 5_000.0).failed();
        assert_eq!(alarm.at.get(), None);
        let replaced = written(&alarm, 5_000.0);
        written(&alarm, 3_000.0);
        replaced.failed();
        assert_eq!(alarm.at.get(), Some(3_000.0), "the later write's alarm stays");
        alarm.clear();
        assert_eq!(alarm.at.get(), None);
    }
}
