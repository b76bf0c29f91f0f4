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
        match SystemTime::now().duration_since(UNIX_EPOCH) {
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
}
