//! The convenience bucket: a [`TokenBucket`] that reads its own clock.

use std::time::Duration;

use super::bandwidth::Bandwidth;
use super::configuration::{BucketConfiguration, ConfigurationBuilder};
use super::diagnostics::{Diagnostics, VerboseResult};
use super::error::Result;
use super::probe::{ConsumptionProbe, EstimationProbe};
use super::replacement::TokensInheritanceStrategy;
use super::time_meter::TimeMeter;
use super::token_bucket::TokenBucket;

/// A token bucket with a clock: Bucket4j's `Bucket`. Each operation reads the [`TimeMeter`] once
/// and delegates to the time-explicit [`TokenBucket`], whose documentation has the details.
///
/// ```
/// use std::time::Duration;
/// use edgebucket::{Bandwidth, Bucket};
///
/// let mut bucket = Bucket::builder()
///     .add_limit(Bandwidth::builder().capacity(50).refill_greedy(10, Duration::from_secs(1)).id("burst").build()?)
///     .add_limit(Bandwidth::builder().capacity(1000).refill_intervally(1000, Duration::from_secs(3600)).build()?)
///     .build()?;
/// assert!(bucket.try_consume(1)?);
/// assert!(bucket.get_available_tokens() >= 48);
/// # Ok::<(), edgebucket::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Bucket<M: TimeMeter> {
    inner: TokenBucket,
    meter: M,
}

#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
impl Bucket<super::time_meter::MillisecondClock> {
    /// Starts building a bucket on the millisecond wall clock.
    pub fn builder() -> BucketBuilder<super::time_meter::MillisecondClock> {
        BucketBuilder::with_time_meter(super::time_meter::MillisecondClock)
    }
}

impl<M: TimeMeter> Bucket<M> {
    /// A bucket with `configuration`, created now on `meter`.
    pub fn new(configuration: BucketConfiguration, meter: M) -> Self {
        let now = meter.current_time_nanos();
        Bucket { inner: TokenBucket::new(configuration, now), meter }
    }

    /// The time-explicit bucket inside, for operations at a chosen time or for encoding.
    pub fn as_token_bucket(&self) -> &TokenBucket {
        &self.inner
    }

    /// Splits into the time-explicit bucket and the meter.
    pub fn into_parts(self) -> (TokenBucket, M) {
        (self.inner, self.meter)
    }

    fn now(&self) -> i64 {
        self.meter.current_time_nanos()
    }

    /// See [`TokenBucket::try_consume`].
    pub fn try_consume(&mut self, tokens: i64) -> Result<bool> {
        let now = self.now();
        self.inner.try_consume(tokens, now)
    }

    /// See [`TokenBucket::try_consume_and_return_remaining`].
    pub fn try_consume_and_return_remaining(&mut self, tokens: i64) -> Result<ConsumptionProbe> {
        let now = self.now();
        self.inner.try_consume_and_return_remaining(tokens, now)
    }

    /// See [`TokenBucket::estimate_ability_to_consume`].
    pub fn estimate_ability_to_consume(&self, tokens: i64) -> Result<EstimationProbe> {
        self.inner.estimate_ability_to_consume(tokens, self.now())
    }

    /// See [`TokenBucket::try_consume_as_much_as_possible`].
    pub fn try_consume_as_much_as_possible(&mut self) -> i64 {
        let now = self.now();
        self.inner.try_consume_as_much_as_possible(now)
    }

    /// See [`TokenBucket::try_consume_as_much_as_possible_up_to`].
    pub fn try_consume_as_much_as_possible_up_to(&mut self, limit: i64) -> Result<i64> {
        let now = self.now();
        self.inner.try_consume_as_much_as_possible_up_to(limit, now)
    }

    /// See [`TokenBucket::add_tokens`].
    pub fn add_tokens(&mut self, tokens: i64) -> Result<()> {
        let now = self.now();
        self.inner.add_tokens(tokens, now)
    }

    /// See [`TokenBucket::force_add_tokens`].
    pub fn force_add_tokens(&mut self, tokens: i64) -> Result<()> {
        let now = self.now();
        self.inner.force_add_tokens(tokens, now)
    }

    /// See [`TokenBucket::return_reserved`].
    pub fn return_reserved(&mut self, tokens: i64, still_owed: u64) -> Result<()> {
        let now = self.now();
        self.inner.return_reserved(tokens, still_owed, now)
    }

    /// See [`TokenBucket::consume_ignoring_rate_limits`].
    pub fn consume_ignoring_rate_limits(&mut self, tokens: i64) -> Result<i64> {
        let now = self.now();
        self.inner.consume_ignoring_rate_limits(tokens, now)
    }

    /// See [`TokenBucket::reserve`].
    pub fn reserve(&mut self, tokens: i64, max_wait: Duration) -> Result<Option<Duration>> {
        let now = self.now();
        let max_wait_nanos = i64::try_from(max_wait.as_nanos()).unwrap_or(i64::MAX);
        let wait = self.inner.reserve(tokens, max_wait_nanos, now)?;
        Ok(wait.map(|nanos| Duration::from_nanos(nanos as u64)))
    }

    /// See [`TokenBucket::get_available_tokens`].
    pub fn get_available_tokens(&self) -> i64 {
        self.inner.get_available_tokens(self.now())
    }

    /// See [`TokenBucket::reset`].
    pub fn reset(&mut self) {
        let now = self.now();
        self.inner.reset(now)
    }

    /// See [`TokenBucket::replace_configuration`].
    pub fn replace_configuration(
        &mut self,
        configuration: BucketConfiguration,
        strategy: TokensInheritanceStrategy,
    ) -> Result<()> {
        let now = self.now();
        self.inner.replace_configuration(configuration, strategy, now)
    }

    /// See [`TokenBucket::diagnostics`].
    pub fn diagnostics(&self) -> Diagnostics {
        self.inner.diagnostics(self.now())
    }

    /// Runs `operation` on the bucket at one reading of the clock, passed to it, and takes the
    /// configuration and diagnostics at that same instant (Bucket4j's `VerboseResult` is a
    /// snapshot of the interaction). See [`TokenBucket::verbose`].
    ///
    /// ```
    /// use edgebucket::{Bandwidth, Bucket, BucketConfiguration, TimeMeter};
    /// # use std::time::Duration;
    ///
    /// struct Fixed;
    /// impl TimeMeter for Fixed {
    ///     fn current_time_nanos(&self) -> i64 { 0 }
    /// }
    /// let limit = Bandwidth::builder().capacity(5).refill_greedy(5, Duration::from_secs(1)).build()?;
    /// let mut bucket = Bucket::new(BucketConfiguration::new(vec![limit])?, Fixed);
    /// let result = bucket.verbose(|b, now| b.try_consume(2, now))?;
    /// assert!(result.value);
    /// assert_eq!(result.diagnostics.available_tokens, 3);
    /// # Ok::<(), edgebucket::Error>(())
    /// ```
    pub fn verbose<T>(
        &mut self,
        operation: impl FnOnce(&mut TokenBucket, i64) -> Result<T>,
    ) -> Result<VerboseResult<T>> {
        let now = self.now();
        self.inner.verbose(now, |bucket| operation(bucket, now))
    }
}

/// Fluent builder for [`Bucket`]: limits, then optionally the clock.
#[derive(Debug, Clone)]
pub struct BucketBuilder<M: TimeMeter> {
    configuration: ConfigurationBuilder,
    meter: M,
}

impl<M: TimeMeter> BucketBuilder<M> {
    /// A builder whose bucket will read `meter` (Bucket4j's `withCustomTimePrecision`).
    pub fn with_time_meter(meter: M) -> Self {
        BucketBuilder { configuration: BucketConfiguration::builder(), meter }
    }

    /// Adds a bandwidth.
    pub fn add_limit(mut self, bandwidth: Bandwidth) -> Self {
        self.configuration = self.configuration.add_limit(bandwidth);
        self
    }

    /// Switches to the nanosecond clock.
    #[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
    pub fn with_nanosecond_precision(self) -> BucketBuilder<super::time_meter::NanosecondClock> {
        self.with_custom_time_meter(super::time_meter::NanosecondClock::new())
    }

    /// Switches to `meter`.
    pub fn with_custom_time_meter<N: TimeMeter>(self, meter: N) -> BucketBuilder<N> {
        BucketBuilder { configuration: self.configuration, meter }
    }

    /// Validates the configuration and creates the bucket now.
    pub fn build(self) -> Result<Bucket<M>> {
        Ok(Bucket::new(self.configuration.build()?, self.meter))
    }
}
