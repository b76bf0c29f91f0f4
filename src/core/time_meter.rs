//! Clocks for [`Bucket`](crate::Bucket): the only place the core reads time.

/// A source of the current time in nanoseconds (Bucket4j's `TimeMeter`).
///
/// Aligned refills count from the Unix epoch, so a meter used with them must be epoch-based,
/// as both built-in meters are. Any `Fn() -> i64` is a meter, which makes a manual clock for
/// tests a one-liner:
///
/// ```
/// use std::cell::Cell;
/// use edgebucket::TimeMeter;
///
/// let now = Cell::new(5);
/// let meter = || now.get();
/// assert_eq!(meter.current_time_nanos(), 5);
/// ```
pub trait TimeMeter {
    /// The current time in nanoseconds.
    fn current_time_nanos(&self) -> i64;
}

impl<F: Fn() -> i64> TimeMeter for F {
    fn current_time_nanos(&self) -> i64 {
        self()
    }
}

#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
pub use system::{MillisecondClock, NanosecondClock};

// wasm32-unknown-unknown has no system clock; hosts there pass their own meter.
#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
mod system {
    use std::time::{Instant, SystemTime, UNIX_EPOCH};

    use super::TimeMeter;

    fn epoch_nanos() -> i128 {
        nanos_since_epoch(SystemTime::now())
    }

    fn nanos_since_epoch(time: SystemTime) -> i128 {
        match time.duration_since(UNIX_EPOCH) {
            Ok(after) => after.as_nanos() as i128,
            Err(before) => -(before.duration().as_nanos() as i128),
        }
    }

    /// Wall-clock time with millisecond precision (the default, as in Bucket4j). It truncates to
    /// the millisecond, so a sleep on a reported wait should be rounded up to a whole millisecond:
    /// slept exactly, a wait of 333.3 ms can read as 333 ms and the retry be refused.
    #[derive(Debug, Clone, Copy, Default)]
    pub struct MillisecondClock;

    impl TimeMeter for MillisecondClock {
        fn current_time_nanos(&self) -> i64 {
            (epoch_nanos().div_euclid(1_000_000) * 1_000_000) as i64
        }
    }

    /// Nanosecond precision: the wall clock read once at creation, advanced by the monotonic
    /// clock, so it never goes back and stays epoch-based.
    #[derive(Debug, Clone, Copy)]
    pub struct NanosecondClock {
        origin_nanos: i64,
        origin: Instant,
    }

    impl NanosecondClock {
        /// Anchors a new clock at the current wall-clock time.
        pub fn new() -> Self {
            NanosecondClock { origin_nanos: epoch_nanos() as i64, origin: Instant::now() }
        }
    }

    impl Default for NanosecondClock {
        fn default() -> Self {
            Self::new()
        }
    }

    impl TimeMeter for NanosecondClock {
        fn current_time_nanos(&self) -> i64 {
            let elapsed = i64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(i64::MAX);
            self.origin_nanos.saturating_add(elapsed)
        }
    }

    #[cfg(test)]
    mod tests {
        use std::time::{Duration, SystemTime, UNIX_EPOCH};

        use super::{nanos_since_epoch, MillisecondClock, NanosecondClock, TimeMeter};

        const MS: i64 = 1_000_000;

        fn wall_nanos() -> i64 {
            SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos() as i64
        }

        #[test]
        fn a_wall_clock_before_the_epoch_reads_negative() {
            let nanos = Duration::from_nanos(1_500);
            assert_eq!(nanos_since_epoch(UNIX_EPOCH - nanos), -1_500);
            assert_eq!(nanos_since_epoch(UNIX_EPOCH + nanos), 1_500);
        }

        #[test]
        fn the_millisecond_clock_reads_the_wall_clock_truncated_to_the_millisecond() {
            let before = wall_nanos();
            let read = MillisecondClock.current_time_nanos();
            let after = wall_nanos();
            assert_eq!(read % MS, 0, "{read}");
            assert!(before - MS < read && read <= after, "{before} {read} {after}");
        }

        #[test]
        fn the_nanosecond_clock_starts_at_the_wall_clock_and_moves_with_the_monotonic_one() {
            let before = wall_nanos();
            let clock = NanosecondClock::new();
            let first = clock.current_time_nanos();
            let after = wall_nanos();
            // The monotonic clock may run a little apart from the wall clock.
            assert!(before <= first && first <= after + MS, "{before} {first} {after}");
            std::thread::sleep(Duration::from_millis(2));
            assert!(clock.current_time_nanos() >= first + 2 * MS);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::TimeMeter;

    #[test]
    fn a_closure_is_a_meter() {
        let meter = || 1_795_280_000_000_000_007;
        assert_eq!(meter.current_time_nanos(), 1_795_280_000_000_000_007);
    }
}
