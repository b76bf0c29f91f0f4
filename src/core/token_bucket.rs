//! The pure, time-explicit bucket: configuration plus state, every operation told the time.

use std::time::Duration;

use super::bandwidth::Bandwidth;
use super::configuration::BucketConfiguration;
use super::diagnostics::{BandwidthDiagnostics, Diagnostics, VerboseResult};
use super::error::{Error, Result};
use super::probe::{ConsumptionProbe, EstimationProbe};
use super::replacement::{replace, TokensInheritanceStrategy};
use super::state::{scaled, widening_mul, BandwidthState, INFINITY_DURATION};

/// A token bucket with Bucket4j's semantics, exact integer arithmetic, and no clock of its own.
///
/// Every operation takes `now`: nanoseconds on any clock the caller keeps consistent (use the
/// Unix epoch when the configuration has aligned refills). A clock that goes back is tolerated:
/// nothing is refilled until it passes the last refill again. For a bucket that reads a clock
/// itself, see [`Bucket`](crate::Bucket).
///
/// With several bandwidths, the available tokens are the minimum over bandwidths, each
/// consumption debits every bandwidth, and a wait is the longest over bandwidths.
///
/// Arguments are checked first: an operation that returns an error has changed nothing.
///
/// ```
/// use std::time::Duration;
/// use edgebucket::{Bandwidth, BucketConfiguration, TokenBucket};
///
/// const MS: i64 = 1_000_000;
/// let config = BucketConfiguration::builder()
///     .add_limit(Bandwidth::builder().capacity(10).refill_greedy(10, Duration::from_secs(1)).build()?)
///     .build()?;
/// let mut bucket = TokenBucket::new(config, 0);
/// assert!(bucket.try_consume(10, 0)?);
/// assert!(!bucket.try_consume(1, 99 * MS)?); // a token every 100 ms
/// assert!(bucket.try_consume(1, 100 * MS)?);
///
/// let probe = bucket.try_consume_and_return_remaining(2, 150 * MS)?;
/// assert!(!probe.consumed);
/// assert_eq!(probe.nanos_to_wait_for_refill, 150 * MS); // 0.5 token earned, 1.5 missing
/// # Ok::<(), edgebucket::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenBucket {
    configuration: BucketConfiguration,
    states: Vec<BandwidthState>,
}

impl TokenBucket {
    /// A bucket created at `now`, each bandwidth holding its initial tokens.
    pub fn new(configuration: BucketConfiguration, now: i64) -> Self {
        let states = configuration.bandwidths().iter().map(|b| BandwidthState::initial(b, now)).collect();
        TokenBucket { configuration, states }
    }

    /// Reassembles a bucket from parts the codec has checked.
    pub(crate) fn from_parts(configuration: BucketConfiguration, states: Vec<BandwidthState>) -> Self {
        debug_assert_eq!(configuration.bandwidths().len(), states.len());
        TokenBucket { configuration, states }
    }

    /// The configuration in force.
    pub fn configuration(&self) -> &BucketConfiguration {
        &self.configuration
    }

    pub(crate) fn states(&self) -> &[BandwidthState] {
        &self.states
    }

    /// Consumes `tokens` if every bandwidth has them; returns whether it did.
    ///
    /// # Errors
    /// [`Error::NonPositiveTokens`] when `tokens < 1`.
    #[inline]
    pub fn try_consume(&mut self, tokens: i64, now: i64) -> Result<bool> {
        try_consume(self.configuration.bandwidths(), &mut self.states, tokens, now)
    }

    /// Consumes `tokens` if possible and reports what remains and how long to wait.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use edgebucket::{Bandwidth, BucketConfiguration, TokenBucket};
    /// # const MS: i64 = 1_000_000;
    /// # let limit = Bandwidth::builder().capacity(10).refill_greedy(10, Duration::from_secs(1)).build()?;
    /// # let mut bucket = TokenBucket::new(BucketConfiguration::builder().add_limit(limit).build()?, 0);
    /// // 10 tokens, 10 per second
    /// let probe = bucket.try_consume_and_return_remaining(8, 0)?;
    /// assert!(probe.consumed);
    /// assert_eq!((probe.remaining_tokens, probe.nanos_to_wait_for_reset), (2, 800 * MS));
    /// let probe = bucket.try_consume_and_return_remaining(5, 0)?;
    /// assert!(!probe.consumed);
    /// assert_eq!(probe.nanos_to_wait_for_refill, 300 * MS);
    /// # Ok::<(), edgebucket::Error>(())
    /// ```
    ///
    /// When rejected, `nanos_to_wait_for_refill` is [`INFINITY_DURATION`] if `tokens` exceeds
    /// the capacity of a bandwidth that does not hold them already (refill stops at capacity).
    ///
    /// # Errors
    /// [`Error::NonPositiveTokens`] when `tokens < 1`.
    pub fn try_consume_and_return_remaining(&mut self, tokens: i64, now: i64) -> Result<ConsumptionProbe> {
        try_consume_and_return_remaining(self.configuration.bandwidths(), &mut self.states, tokens, now)
    }

    /// Whether `tokens` could be consumed now and, if not, how long until they could. Changes nothing.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use edgebucket::{Bandwidth, BucketConfiguration, TokenBucket};
    /// # const MS: i64 = 1_000_000;
    /// # let limit = Bandwidth::builder().capacity(10).refill_greedy(10, Duration::from_secs(1)).build()?;
    /// # let mut bucket = TokenBucket::new(BucketConfiguration::builder().add_limit(limit).build()?, 0);
    /// // 10 tokens, 10 per second
    /// bucket.try_consume(9, 0)?;
    /// let estimate = bucket.estimate_ability_to_consume(3, 0)?;
    /// assert!(!estimate.can_be_consumed);
    /// assert_eq!((estimate.remaining_tokens, estimate.nanos_to_wait_for_refill), (1, 200 * MS));
    /// assert_eq!(bucket.get_available_tokens(0), 1); // nothing consumed
    /// # Ok::<(), edgebucket::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::NonPositiveTokens`] when `tokens < 1`.
    pub fn estimate_ability_to_consume(&self, tokens: i64, now: i64) -> Result<EstimationProbe> {
        estimate_ability_to_consume(self.configuration.bandwidths(), &self.states, tokens, now)
    }

    /// Consumes every available token; returns how many (0 if none, or if the bucket is in debt).
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use edgebucket::{Bandwidth, BucketConfiguration, TokenBucket};
    /// # const MS: i64 = 1_000_000;
    /// # let limit = Bandwidth::builder().capacity(10).refill_greedy(10, Duration::from_secs(1)).build()?;
    /// # let mut bucket = TokenBucket::new(BucketConfiguration::builder().add_limit(limit).build()?, 0);
    /// // 10 tokens, 10 per second
    /// assert_eq!(bucket.try_consume_as_much_as_possible_up_to(4, 0)?, 4);
    /// assert_eq!(bucket.try_consume_as_much_as_possible(0), 6);
    /// assert_eq!(bucket.try_consume_as_much_as_possible(0), 0);
    /// # Ok::<(), edgebucket::Error>(())
    /// ```
    pub fn try_consume_as_much_as_possible(&mut self, now: i64) -> i64 {
        consume_up_to(self.configuration.bandwidths(), &mut self.states, i64::MAX, now)
    }

    /// Consumes the available tokens, but at most `limit`; returns how many.
    ///
    /// # Errors
    /// [`Error::NonPositiveLimit`] when `limit < 1`.
    pub fn try_consume_as_much_as_possible_up_to(&mut self, limit: i64, now: i64) -> Result<i64> {
        if limit <= 0 {
            return Err(Error::NonPositiveLimit { limit });
        }
        Ok(consume_up_to(self.configuration.bandwidths(), &mut self.states, limit, now))
    }

    /// Returns `tokens` to every bandwidth: `min(capacity, available + tokens)`, exactly
    /// Bucket4j's formula, so a bandwidth above capacity (after a forced addition) is lowered to
    /// capacity. Use [`TokenBucket::force_add_tokens`] to exceed capacity.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use edgebucket::{Bandwidth, BucketConfiguration, TokenBucket};
    /// # const MS: i64 = 1_000_000;
    /// # let limit = Bandwidth::builder().capacity(10).refill_greedy(10, Duration::from_secs(1)).build()?;
    /// # let mut bucket = TokenBucket::new(BucketConfiguration::builder().add_limit(limit).build()?, 0);
    /// // 10 tokens, 10 per second
    /// bucket.try_consume(6, 0)?;
    /// bucket.add_tokens(100, 0)?; // capped
    /// assert_eq!(bucket.get_available_tokens(0), 10);
    /// bucket.force_add_tokens(5, 0)?; // not capped
    /// assert_eq!(bucket.get_available_tokens(0), 15);
    /// # Ok::<(), edgebucket::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::NonPositiveTokens`] when `tokens < 1`.
    pub fn add_tokens(&mut self, tokens: i64, now: i64) -> Result<()> {
        check_tokens(tokens)?;
        self.refill(now);
        for (bandwidth, state) in self.configuration.bandwidths().iter().zip(&mut self.states) {
            state.level = (state.level + scaled(tokens, bandwidth)).min(bandwidth.scaled_capacity());
        }
        Ok(())
    }

    /// Adds `tokens` to every bandwidth, beyond capacity if need be.
    ///
    /// # Errors
    /// [`Error::NonPositiveTokens`] when `tokens < 1`; [`Error::TokensOverflow`] when a
    /// bandwidth would hold more than `i64::MAX` tokens.
    pub fn force_add_tokens(&mut self, tokens: i64, now: i64) -> Result<()> {
        check_tokens(tokens)?;
        self.shift(tokens, now)
    }

    /// Gives back `tokens` that a reservation took and will not use (it was cancelled before its
    /// wait ended), while later reservations holding `still_owed` tokens keep waiting. Each
    /// bandwidth gets the tokens back up to its capacity less `still_owed`, and never loses any.
    ///
    /// The waiting reservations' tokens count as spent: they are used when their wait ends. So a
    /// bandwidth that refilled over their debt meanwhile (a faster bandwidth, or `add_tokens`,
    /// `reset`) keeps what it has, instead of the debt being taken a second time, and one still
    /// in debt gets the tokens back without room for a burst beyond capacity once the waiting
    /// reservations are served. Bucket4j's reservations cannot be cancelled.
    ///
    /// ```
    /// use std::time::Duration;
    /// use edgebucket::{Bandwidth, BucketConfiguration, TokenBucket};
    ///
    /// let limit = Bandwidth::builder().capacity(10).refill_greedy(10, Duration::from_secs(1)).build()?;
    /// let mut bucket = TokenBucket::new(BucketConfiguration::builder().add_limit(limit).build()?, 0);
    /// bucket.reserve(20, i64::MAX, 0)?; // 10 in debt: the first reservation
    /// bucket.reserve(5, i64::MAX, 0)?; // 15 in debt: the second, behind it
    /// bucket.return_reserved(20, 5, 0)?; // the first is cancelled
    /// assert_eq!(bucket.get_available_tokens(0), 5); // as if only the second had been made
    ///
    /// bucket.reserve(20, i64::MAX, 0)?;
    /// bucket.reserve(5, i64::MAX, 0)?;
    /// bucket.add_tokens(100, 0)?; // full again: both debts are paid
    /// bucket.return_reserved(20, 5, 0)?;
    /// assert_eq!(bucket.get_available_tokens(0), 10); // nothing lost, nothing beyond capacity
    /// # Ok::<(), edgebucket::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::NonPositiveTokens`] when `tokens < 1`.
    pub fn return_reserved(&mut self, tokens: i64, still_owed: u64, now: i64) -> Result<()> {
        check_tokens(tokens)?;
        self.refill(now);
        for (bandwidth, state) in self.configuration.bandwidths().iter().zip(&mut self.states) {
            let owed = widening_mul(still_owed, bandwidth.refill.period_nanos as u64) as i128; // < 2^127
            let room = bandwidth.scaled_capacity() - owed;
            // At most the capacity, so within the i64 range of tokens.
            state.level = state.level.max((state.level + scaled(tokens, bandwidth)).min(room));
        }
        Ok(())
    }

    /// Consumes `tokens` whatever the limits (available tokens may go negative) and returns the
    /// rate-limit violation: nanoseconds until the debt would be repaid, 0 if there was none.
    ///
    /// ```
    /// use std::time::Duration;
    /// use edgebucket::{Bandwidth, BucketConfiguration, TokenBucket};
    ///
    /// const MS: i64 = 1_000_000;
    /// let limit = Bandwidth::builder().capacity(10).refill_greedy(10, Duration::from_secs(1)).initial_tokens(2).build()?;
    /// let mut bucket = TokenBucket::new(BucketConfiguration::builder().add_limit(limit).build()?, 0);
    /// // 2 tokens, last refill 100 ms ago (one more token earned): 6 leaves -3.
    /// assert_eq!(bucket.consume_ignoring_rate_limits(6, 100 * MS)?, 300 * MS);
    /// assert_eq!(bucket.get_available_tokens(100 * MS), -3);
    /// assert!(!bucket.try_consume(1, 499 * MS)?);
    /// assert!(bucket.try_consume(1, 500 * MS)?);
    /// # Ok::<(), edgebucket::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::NonPositiveTokens`] when `tokens < 1`; [`Error::ReservationOverflow`] when the
    /// violation is not representable ([`INFINITY_DURATION`] or more); [`Error::TokensOverflow`]
    /// when the debt would leave the 64-bit range.
    pub fn consume_ignoring_rate_limits(&mut self, tokens: i64, now: i64) -> Result<i64> {
        check_tokens(tokens)?;
        let wait = self.nanos_until(tokens, now);
        if wait == INFINITY_DURATION {
            return Err(Error::ReservationOverflow { tokens });
        }
        self.shift(-tokens, now)?;
        Ok(wait)
    }

    /// Reserves `tokens` if the deficit closes within `max_wait_nanos`, and returns the wait:
    /// `Some(0)` when they were available, `Some(nanos)` when they are reserved (consumed now,
    /// available tokens possibly negative, the caller to proceed after `nanos`), `None` when the
    /// wait would exceed `max_wait_nanos` (nothing changes). The primitive behind blocking and
    /// scheduled waits; reservations are served in order, since each later one waits for the
    /// debt of the earlier ones. Capacity is not a bound: a reservation beyond it is a debt.
    ///
    /// ```
    /// use std::time::Duration;
    /// use edgebucket::{Bandwidth, BucketConfiguration, TokenBucket};
    ///
    /// const MS: i64 = 1_000_000;
    /// let limit = Bandwidth::builder().capacity(1).refill_greedy(10, Duration::from_secs(1)).build()?;
    /// let mut bucket = TokenBucket::new(BucketConfiguration::builder().add_limit(limit).build()?, 0);
    /// assert_eq!(bucket.reserve(1, 1, 0)?, Some(0));
    /// assert_eq!(bucket.reserve(5, 500 * MS, 0)?, Some(500 * MS));
    /// assert_eq!(bucket.reserve(1, 500 * MS, 0)?, None); // would need 600 ms
    /// # Ok::<(), edgebucket::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::NonPositiveTokens`], [`Error::NonPositiveMaxWait`]; [`Error::TokensOverflow`]
    /// when the debt would leave the 64-bit range.
    pub fn reserve(&mut self, tokens: i64, max_wait_nanos: i64, now: i64) -> Result<Option<i64>> {
        check_tokens(tokens)?;
        if max_wait_nanos <= 0 {
            return Err(Error::NonPositiveMaxWait { nanos: max_wait_nanos });
        }
        let wait = self.nanos_until(tokens, now);
        if wait == INFINITY_DURATION || wait > max_wait_nanos {
            return Ok(None);
        }
        self.shift(-tokens, now)?;
        Ok(Some(wait))
    }

    /// Nanoseconds until each bandwidth holds `tokens`, in configuration order: 0 for one that
    /// holds them now, [`INFINITY_DURATION`] when the wait is not representable. Capacity is not
    /// considered (as in [`TokenBucket::reserve`]). Changes nothing.
    ///
    /// A probe's wait is the longest of these; hosts that report each limit on its own (the
    /// worker's per-bandwidth `RateLimit` header items) need them one by one.
    ///
    /// ```
    /// use std::time::Duration;
    /// use edgebucket::{Bandwidth, BucketConfiguration, TokenBucket};
    ///
    /// const MS: i64 = 1_000_000;
    /// let burst = Bandwidth::builder().capacity(10).refill_greedy(10, Duration::from_secs(1)).build()?;
    /// let hourly = Bandwidth::builder().capacity(100).refill_intervally(100, Duration::from_secs(3600)).id("hourly").build()?;
    /// let mut bucket = TokenBucket::new(BucketConfiguration::builder().add_limit(burst).add_limit(hourly).build()?, 0);
    /// bucket.try_consume(10, 0)?;
    /// assert_eq!(bucket.nanos_until_per_bandwidth(2, 0)?, [200 * MS, 0]);
    /// # Ok::<(), edgebucket::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::NonPositiveTokens`] when `tokens < 1`.
    pub fn nanos_until_per_bandwidth(&self, tokens: i64, now: i64) -> Result<Vec<i64>> {
        check_tokens(tokens)?;
        let bandwidths = self.configuration.bandwidths();
        Ok(bandwidths.iter().zip(&self.states).map(|(b, s)| s.refilled(b, now).nanos_until(b, tokens, now)).collect())
    }

    /// Whole tokens available now: the minimum over bandwidths, negative when in debt.
    pub fn get_available_tokens(&self, now: i64) -> i64 {
        available(self.configuration.bandwidths(), &self.states, now)
    }

    /// Fills every bandwidth to capacity.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use edgebucket::{Bandwidth, BucketConfiguration, TokenBucket};
    /// # const MS: i64 = 1_000_000;
    /// # let limit = Bandwidth::builder().capacity(10).refill_greedy(10, Duration::from_secs(1)).build()?;
    /// # let mut bucket = TokenBucket::new(BucketConfiguration::builder().add_limit(limit).build()?, 0);
    /// // 10 tokens, 10 per second
    /// bucket.consume_ignoring_rate_limits(25, 0)?;
    /// assert_eq!(bucket.get_available_tokens(0), -15);
    /// bucket.reset(0);
    /// assert_eq!(bucket.get_available_tokens(0), 10);
    /// # Ok::<(), edgebucket::Error>(())
    /// ```
    pub fn reset(&mut self, now: i64) {
        self.refill(now);
        for (bandwidth, state) in self.configuration.bandwidths().iter().zip(&mut self.states) {
            state.level = bandwidth.scaled_capacity();
        }
    }

    /// Replaces the configuration, carrying tokens over by `strategy` (see
    /// [`TokensInheritanceStrategy`]). Bucket4j's examples:
    ///
    /// ```
    /// use std::time::Duration;
    /// use edgebucket::{Bandwidth, BucketConfiguration, TokenBucket, TokensInheritanceStrategy as S};
    ///
    /// let config = |capacity| -> Result<BucketConfiguration, edgebucket::Error> {
    ///     let b = Bandwidth::builder().capacity(capacity).refill_greedy(10, Duration::from_secs(60)).build()?;
    ///     BucketConfiguration::builder().add_limit(b).build()
    /// };
    /// for (strategy, expected) in [(S::Proportionally, 80), (S::AsIs, 40), (S::Additive, 140)] {
    ///     let mut bucket = TokenBucket::new(config(100)?, 0);
    ///     bucket.try_consume(60, 0)?;
    ///     bucket.replace_configuration(config(200)?, strategy, 0)?;
    ///     assert_eq!(bucket.get_available_tokens(0), expected);
    /// }
    /// # Ok::<(), edgebucket::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::TokensOverflow`] when proportional scaling of a debt leaves the 64-bit range.
    pub fn replace_configuration(
        &mut self,
        configuration: BucketConfiguration,
        strategy: TokensInheritanceStrategy,
        now: i64,
    ) -> Result<()> {
        // Inherit from refilled copies: on error the bucket must stay exactly as it was.
        let bandwidths = self.configuration.bandwidths();
        let refilled: Vec<_> = bandwidths.iter().zip(&self.states).map(|(b, s)| s.refilled(b, now)).collect();
        let states = replace(bandwidths, &refilled, configuration.bandwidths(), strategy, now)?;
        self.configuration = configuration;
        self.states = states;
        Ok(())
    }

    /// Available tokens and time to full refill, per bandwidth and overall.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use edgebucket::{Bandwidth, BucketConfiguration, TokenBucket};
    /// # const MS: i64 = 1_000_000;
    /// # let limit = Bandwidth::builder().capacity(10).refill_greedy(10, Duration::from_secs(1)).build()?;
    /// # let mut bucket = TokenBucket::new(BucketConfiguration::builder().add_limit(limit).build()?, 0);
    /// // 10 tokens, 10 per second
    /// bucket.try_consume(4, 0)?;
    /// let d = bucket.diagnostics(250 * MS); // 2.5 tokens refilled since
    /// assert_eq!((d.available_tokens, d.nanos_to_full_refill), (8, 150 * MS));
    /// assert_eq!(d.bandwidths[0].capacity, 10);
    /// # Ok::<(), edgebucket::Error>(())
    /// ```
    pub fn diagnostics(&self, now: i64) -> Diagnostics {
        let bandwidths: Vec<_> = self
            .configuration
            .bandwidths()
            .iter()
            .zip(&self.states)
            .map(|(bandwidth, state)| {
                let state = state.refilled(bandwidth, now);
                BandwidthDiagnostics {
                    id: bandwidth.id.clone(),
                    capacity: bandwidth.capacity,
                    available_tokens: state.tokens(bandwidth),
                    nanos_to_full_refill: state.nanos_until(bandwidth, bandwidth.capacity, now),
                }
            })
            .collect();
        Diagnostics {
            available_tokens: bandwidths.iter().map(|b| b.available_tokens).min().unwrap_or(0),
            nanos_to_full_refill: bandwidths.iter().map(|b| b.nanos_to_full_refill).max().unwrap_or(0),
            bandwidths,
        }
    }

    /// Runs `operation` and returns its result with the configuration and diagnostics right
    /// after it, at `now` (Bucket4j's verbose API).
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use edgebucket::{Bandwidth, BucketConfiguration, TokenBucket};
    /// # let b = Bandwidth::builder().capacity(5).refill_greedy(5, Duration::from_secs(5)).build()?;
    /// # let mut bucket = TokenBucket::new(BucketConfiguration::builder().add_limit(b).build()?, 0);
    /// let result = bucket.verbose(0, |b| b.try_consume(2, 0))?;
    /// assert!(result.value);
    /// assert_eq!(result.diagnostics.available_tokens, 3);
    /// assert_eq!(result.diagnostics.nanos_to_full_refill, 2_000_000_000);
    /// # Ok::<(), edgebucket::Error>(())
    /// ```
    pub fn verbose<T>(&mut self, now: i64, operation: impl FnOnce(&mut Self) -> Result<T>) -> Result<VerboseResult<T>> {
        let value = operation(self)?;
        Ok(VerboseResult { value, configuration: self.configuration.clone(), diagnostics: self.diagnostics(now) })
    }

    /// Nanoseconds until every bandwidth is full again (0 if it is): how long an idle bucket
    /// must be kept before it is indistinguishable from a fresh one with initial tokens at
    /// capacity. Bucket4j's `basedOnTimeForRefillingBucketUpToMax` expiry adds a grace to it.
    pub fn nanos_to_full_refill(&self, now: i64) -> i64 {
        nanos_to_full_refill(self.configuration.bandwidths(), &self.states, now)
    }

    /// Time-to-live for storing an idle bucket, in nanoseconds: [`TokenBucket::nanos_to_full_refill`]
    /// plus `keep_after_refill`, at least 1 and at most [`INFINITY_DURATION`] (Bucket4j's
    /// `ExpirationAfterWriteStrategy.basedOnTimeForRefillingBucketUpToMax`).
    ///
    /// Unlike Bucket4j, a bucket whose initial tokens exceed a capacity, once it holds fewer
    /// than them, never expires ([`INFINITY_DURATION`]): refill stops at capacity, so a fresh
    /// bucket in its place would hand out the initial burst again after every idle period.
    ///
    /// ```
    /// use std::time::Duration;
    /// use edgebucket::{Bandwidth, BucketConfiguration, TokenBucket, INFINITY_DURATION};
    ///
    /// let burst_first = Bandwidth::builder().capacity(10).refill_greedy(10, Duration::from_secs(1)).initial_tokens(100);
    /// let mut bucket = TokenBucket::new(BucketConfiguration::new(vec![burst_first.build()?])?, 0);
    /// assert_eq!(bucket.idle_expiry_nanos(Duration::ZERO, 0), 1); // unused: a fresh one is the same
    /// bucket.try_consume(95, 0)?;
    /// assert_eq!(bucket.idle_expiry_nanos(Duration::ZERO, 0), INFINITY_DURATION);
    /// # Ok::<(), edgebucket::Error>(())
    /// ```
    pub fn idle_expiry_nanos(&self, keep_after_refill: Duration, now: i64) -> i64 {
        let keep = i64::try_from(keep_after_refill.as_nanos()).unwrap_or(INFINITY_DURATION);
        self.nanos_until_forgettable(now).saturating_add(keep).max(1)
    }

    /// Nanoseconds from `now` until forgetting this bucket, replacing it by a fresh one, would
    /// admit nothing more: every bandwidth is full and holds at least its initial tokens (0: it
    /// does now). [`TokenBucket::nanos_to_full_refill`], except [`INFINITY_DURATION`] when
    /// refill cannot get there: initial tokens above capacity, once partly spent. Expiry in
    /// [`crate::BucketStore`] and [`TokenBucket::idle_expiry_nanos`] wait for it.
    pub fn nanos_until_forgettable(&self, now: i64) -> i64 {
        max_wait(self.configuration.bandwidths(), &self.states, now, |b, s| s.nanos_until_forgettable(b, now))
    }

    /// Credits refills due by `now` in place. Unobservable: every operation refills first (the
    /// worker refills a copy to tell whether a command changed more than that).
    pub(crate) fn refill(&mut self, now: i64) {
        refill(self.configuration.bandwidths(), &mut self.states, now);
    }

    /// Nanoseconds until `tokens` are available on every bandwidth, capacity not considered.
    fn nanos_until(&self, tokens: i64, now: i64) -> i64 {
        max_wait(self.configuration.bandwidths(), &self.states, now, |b, s| s.nanos_until(b, tokens, now))
    }

    /// Refills, then adds `delta` tokens (negative: debits, possibly into debt) to every
    /// bandwidth, or fails leaving everything as it was if a count would leave the `i64` range.
    fn shift(&mut self, delta: i64, now: i64) -> Result<()> {
        let bandwidths = self.configuration.bandwidths();
        let fits = |(b, s): (&Bandwidth, &BandwidthState)| s.refilled(b, now).tokens(b).checked_add(delta).is_some();
        if !bandwidths.iter().zip(&self.states).all(fits) {
            return Err(Error::TokensOverflow);
        }
        refill(bandwidths, &mut self.states, now);
        for (bandwidth, state) in bandwidths.iter().zip(&mut self.states) {
            // delta is never i64::MIN (tokens are positive), so its magnitude is an i64.
            match delta {
                d if d >= 0 => state.level += scaled(d, bandwidth),
                d => state.level -= scaled(-d, bandwidth),
            }
        }
        Ok(())
    }
}

// Operations over a configuration's bandwidths and their states, shared with keyed storage.

#[inline]
pub(crate) fn check_tokens(tokens: i64) -> Result<()> {
    if tokens <= 0 {
        return Err(Error::NonPositiveTokens { tokens });
    }
    Ok(())
}

#[inline]
pub(crate) fn refill(bandwidths: &[Bandwidth], states: &mut [BandwidthState], now: i64) {
    for (bandwidth, state) in bandwidths.iter().zip(states.iter_mut()) {
        *state = state.refilled(bandwidth, now);
    }
}

#[inline]
pub(crate) fn try_consume(
    bandwidths: &[Bandwidth],
    states: &mut [BandwidthState],
    tokens: i64,
    now: i64,
) -> Result<bool> {
    check_tokens(tokens)?;
    // Most buckets have one bandwidth: skip the loop machinery (a third of the decision cost).
    if let ([bandwidth], [state]) = (bandwidths, &mut *states) {
        *state = state.refilled(bandwidth, now);
        let enough = state.has(bandwidth, tokens);
        if enough {
            state.debit(bandwidth, tokens);
        }
        return Ok(enough);
    }
    Ok(try_consume_from_each(bandwidths, states, tokens, now))
}

/// [`try_consume`] over several bandwidths: all or nothing. Out of line, so that the
/// single-bandwidth path stays small enough to inline.
#[inline(never)]
fn try_consume_from_each(bandwidths: &[Bandwidth], states: &mut [BandwidthState], tokens: i64, now: i64) -> bool {
    let mut enough = true;
    for (bandwidth, state) in bandwidths.iter().zip(states.iter_mut()) {
        *state = state.refilled(bandwidth, now);
        enough &= state.has(bandwidth, tokens);
    }
    if enough {
        for (bandwidth, state) in bandwidths.iter().zip(states.iter_mut()) {
            state.debit(bandwidth, tokens);
        }
    }
    enough
}

pub(crate) fn try_consume_and_return_remaining(
    bandwidths: &[Bandwidth],
    states: &mut [BandwidthState],
    tokens: i64,
    now: i64,
) -> Result<ConsumptionProbe> {
    let consumed = try_consume(bandwidths, states, tokens, now)?;
    let remaining_tokens = available(bandwidths, states, now).max(0);
    let nanos_to_wait_for_reset = nanos_to_full_refill(bandwidths, states, now);
    let nanos_to_wait_for_refill = if consumed { 0 } else { wait_within_capacity(bandwidths, states, tokens, now) };
    Ok(ConsumptionProbe { consumed, remaining_tokens, nanos_to_wait_for_refill, nanos_to_wait_for_reset })
}

pub(crate) fn estimate_ability_to_consume(
    bandwidths: &[Bandwidth],
    states: &[BandwidthState],
    tokens: i64,
    now: i64,
) -> Result<EstimationProbe> {
    check_tokens(tokens)?;
    let available = available(bandwidths, states, now);
    let can_be_consumed = tokens <= available;
    let nanos_to_wait_for_refill =
        if can_be_consumed { 0 } else { wait_within_capacity(bandwidths, states, tokens, now) };
    Ok(EstimationProbe { can_be_consumed, remaining_tokens: available.max(0), nanos_to_wait_for_refill })
}

fn consume_up_to(bandwidths: &[Bandwidth], states: &mut [BandwidthState], limit: i64, now: i64) -> i64 {
    refill(bandwidths, states, now);
    let tokens = available(bandwidths, states, now).min(limit);
    if tokens <= 0 {
        return 0;
    }
    for (bandwidth, state) in bandwidths.iter().zip(states.iter_mut()) {
        state.debit(bandwidth, tokens);
    }
    tokens
}

pub(crate) fn available(bandwidths: &[Bandwidth], states: &[BandwidthState], now: i64) -> i64 {
    bandwidths.iter().zip(states).map(|(b, s)| s.refilled(b, now).tokens(b)).min().unwrap_or(0)
}

pub(crate) fn nanos_to_full_refill(bandwidths: &[Bandwidth], states: &[BandwidthState], now: i64) -> i64 {
    max_wait(bandwidths, states, now, |b, s| s.nanos_until(b, b.capacity, now))
}

/// The wait for `tokens`, or [`INFINITY_DURATION`] when a bandwidth that lacks them can never
/// hold them: more than its capacity, where refill stops. (One that holds them already, above its
/// capacity from initial or force-added tokens, keeps them until they are spent.)
fn wait_within_capacity(bandwidths: &[Bandwidth], states: &[BandwidthState], tokens: i64, now: i64) -> i64 {
    max_wait(bandwidths, states, now, |b, s| {
        if tokens > b.capacity && s.tokens(b) < tokens {
            INFINITY_DURATION
        } else {
            s.nanos_until(b, tokens, now)
        }
    })
}

/// The longest of `wait` over bandwidths, each refilled to `now` first.
fn max_wait(
    bandwidths: &[Bandwidth],
    states: &[BandwidthState],
    now: i64,
    wait: impl Fn(&Bandwidth, &BandwidthState) -> i64,
) -> i64 {
    bandwidths.iter().zip(states).map(|(b, s)| wait(b, &s.refilled(b, now))).max().unwrap_or(0)
}
