//! One limit of a bucket: a capacity and the refill that fills it.

use std::time::Duration;

use super::error::{Error, Result};

/// How a bandwidth regenerates tokens.
///
/// The three styles of Bucket4j: greedy (tokens trickle in as soon as possible, "10 per second" is
/// one every 100 ms), intervally (all refill tokens at once when a whole period has passed) and
/// intervally aligned (intervally, with period boundaries fixed by a first refill time, such as the
/// top of the hour).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RefillKind {
    /// Tokens are added continuously, at `tokens / period`.
    Greedy,
    /// `tokens` are added at once each time a whole period has elapsed since the last refill.
    Intervally,
    /// As [`RefillKind::Intervally`], but periods start at `first_refill_nanos` (nanoseconds since
    /// the Unix epoch) plus a whole number of periods.
    IntervallyAligned {
        /// Time of the first refill, in nanoseconds since the Unix epoch.
        first_refill_nanos: i64,
        /// When the bucket is created before the first refill, start with only the tokens the
        /// rest of the current period would have earned (plus `capacity - tokens`, if positive),
        /// instead of the full initial tokens. See [`BandwidthBuilder::refill_intervally_aligned`].
        adaptive_initial_tokens: bool,
    },
}

/// The refill of a bandwidth: `tokens` every `period_nanos`, in the style given by `kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Refill {
    pub(crate) tokens: i64,
    pub(crate) period_nanos: i64,
    pub(crate) kind: RefillKind,
}

impl Refill {
    /// Tokens added per period.
    pub fn tokens(&self) -> i64 {
        self.tokens
    }

    /// The period in nanoseconds.
    pub fn period_nanos(&self) -> i64 {
        self.period_nanos
    }

    /// The refill style.
    pub fn kind(&self) -> RefillKind {
        self.kind
    }

    /// True for the intervally styles, whose tokens arrive only at whole periods.
    #[inline]
    pub fn is_intervally(&self) -> bool {
        !matches!(self.kind, RefillKind::Greedy)
    }
}

/// A validated limit: capacity, refill, initial tokens and an optional id.
///
/// Build one with [`Bandwidth::builder`]:
///
/// ```
/// use std::time::Duration;
/// use edgebucket::{Bandwidth, RefillKind};
///
/// let burst = Bandwidth::builder()
///     .capacity(50)
///     .refill_greedy(10, Duration::from_secs(1))
///     .initial_tokens(5)
///     .id("burst")
///     .build()?;
/// assert_eq!(burst.capacity(), 50);
/// assert_eq!(burst.refill().kind(), RefillKind::Greedy);
/// assert_eq!(burst.initial_tokens(), 5);
/// assert_eq!(burst.id(), Some("burst"));
/// # Ok::<(), edgebucket::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Bandwidth {
    pub(crate) capacity: i64,
    pub(crate) refill: Refill,
    pub(crate) initial_tokens: Option<i64>,
    pub(crate) id: Option<String>,
    /// `capacity × period`, the full level (see [`state`](super::state)): computed once, as on
    /// wasm a product past 64 bits is a library call, and every refill compares with it.
    pub(crate) scaled_capacity: i128,
}

impl Bandwidth {
    /// Starts building a bandwidth.
    pub fn builder() -> BandwidthBuilder {
        BandwidthBuilder::default()
    }

    /// The most tokens the bandwidth holds (forced additions and initial tokens may exceed it).
    pub fn capacity(&self) -> i64 {
        self.capacity
    }

    /// How the bandwidth refills.
    pub fn refill(&self) -> Refill {
        self.refill
    }

    /// Tokens a new bucket starts with: the explicit value, or the capacity by default.
    ///
    /// With adaptive initial tokens the actual start depends on the creation time; see
    /// [`BandwidthBuilder::refill_intervally_aligned`].
    pub fn initial_tokens(&self) -> i64 {
        self.initial_tokens.unwrap_or(self.capacity)
    }

    /// True when the initial tokens were given explicitly rather than defaulted to capacity.
    pub fn has_explicit_initial_tokens(&self) -> bool {
        self.initial_tokens.is_some()
    }

    /// The id that ties this bandwidth to one of a replaced configuration.
    pub fn id(&self) -> Option<&str> {
        self.id.as_deref()
    }

    /// Capacity in the bucket's internal unit (tokens × period nanoseconds).
    #[inline]
    pub(crate) fn scaled_capacity(&self) -> i128 {
        self.scaled_capacity
    }
}

/// Fluent builder for [`Bandwidth`]; every rule is checked by [`BandwidthBuilder::build`].
#[derive(Debug, Clone, Default)]
pub struct BandwidthBuilder {
    capacity: Option<i64>,
    refill: Option<(RefillKind, i64, i128)>,
    initial_tokens: Option<i64>,
    id: Option<String>,
}

impl BandwidthBuilder {
    /// The most tokens the bandwidth holds. Must be positive.
    pub fn capacity(mut self, tokens: i64) -> Self {
        self.capacity = Some(tokens);
        self
    }

    /// Refill `tokens` per `period`, as soon as possible: 10 per second adds one every 100 ms.
    pub fn refill_greedy(self, tokens: i64, period: Duration) -> Self {
        self.refill_nanos(RefillKind::Greedy, tokens, period.as_nanos() as i128)
    }

    /// Refill all `tokens` at once whenever a whole `period` has passed since the last refill.
    pub fn refill_intervally(self, tokens: i64, period: Duration) -> Self {
        self.refill_nanos(RefillKind::Intervally, tokens, period.as_nanos() as i128)
    }

    /// Refill all `tokens` at once at `first_refill_nanos` (nanoseconds since the Unix epoch) and
    /// every `period` after it, so periods align with, say, the start of each hour.
    ///
    /// With `adaptive_initial_tokens`, a bucket created before the first refill starts with
    /// `min(capacity, max(0, capacity - tokens) + tokens × time_to_first_refill / period)` tokens
    /// (rounded down), so that a bucket created late in a period cannot spend a whole period's
    /// tokens just before the refill that brings the next ones. Adaptive initial tokens cannot be
    /// combined with [`BandwidthBuilder::initial_tokens`].
    ///
    /// ```
    /// use std::time::Duration;
    /// use edgebucket::TokenBucket;
    /// # use edgebucket::{Bandwidth, BucketConfiguration};
    ///
    /// const MIN: i64 = 60_000_000_000;
    /// let hourly = Bandwidth::builder()
    ///     .capacity(400)
    ///     .refill_intervally_aligned(400, Duration::from_secs(3600), 60 * MIN, true)
    ///     .build()?;
    /// // Created at 0:20, 40 minutes before the first refill at 1:00: 400 × 40/60 tokens.
    /// let bucket = TokenBucket::new(BucketConfiguration::builder().add_limit(hourly).build()?, 20 * MIN);
    /// assert_eq!(bucket.get_available_tokens(20 * MIN), 266);
    /// # Ok::<(), edgebucket::Error>(())
    /// ```
    pub fn refill_intervally_aligned(
        self,
        tokens: i64,
        period: Duration,
        first_refill_nanos: i64,
        adaptive_initial_tokens: bool,
    ) -> Self {
        let kind = RefillKind::IntervallyAligned { first_refill_nanos, adaptive_initial_tokens };
        self.refill_nanos(kind, tokens, period.as_nanos() as i128)
    }

    /// Sets the refill with the period in nanoseconds; the other `refill_*` methods call this.
    pub fn refill_nanos(mut self, kind: RefillKind, tokens: i64, period_nanos: i128) -> Self {
        self.refill = Some((kind, tokens, period_nanos));
        self
    }

    /// Tokens a new bucket starts with (default: capacity). May exceed capacity; must not be negative.
    pub fn initial_tokens(mut self, tokens: i64) -> Self {
        self.initial_tokens = Some(tokens);
        self
    }

    /// Names the bandwidth, so configuration replacement can find its successor.
    pub fn id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }

    /// Checks every rule and returns the bandwidth, or the first rule broken.
    pub fn build(self) -> Result<Bandwidth> {
        let capacity = self.capacity.ok_or(Error::MissingCapacity)?;
        if capacity <= 0 {
            return Err(Error::NonPositiveCapacity { capacity });
        }
        let (kind, tokens, period) = self.refill.ok_or(Error::MissingRefill)?;
        let refill = validate_refill(kind, tokens, period)?;
        if let Some(initial) = self.initial_tokens {
            if initial < 0 {
                return Err(Error::NegativeInitialTokens { tokens: initial });
            }
            if let RefillKind::IntervallyAligned { adaptive_initial_tokens: true, .. } = kind {
                return Err(Error::AdaptiveInitialTokensWithExplicitInitialTokens);
            }
        }
        let scaled_capacity = capacity as i128 * refill.period_nanos as i128;
        Ok(Bandwidth { capacity, refill, initial_tokens: self.initial_tokens, id: self.id, scaled_capacity })
    }
}

fn validate_refill(kind: RefillKind, tokens: i64, period_nanos: i128) -> Result<Refill> {
    if let RefillKind::IntervallyAligned { first_refill_nanos, .. } = kind {
        if first_refill_nanos < 0 {
            return Err(Error::FirstRefillBeforeEpoch { nanos: first_refill_nanos });
        }
    }
    if tokens <= 0 {
        return Err(Error::NonPositiveRefillTokens { tokens });
    }
    if period_nanos <= 0 {
        return Err(Error::NonPositiveRefillPeriod { period_nanos });
    }
    let period_nanos = i64::try_from(period_nanos).map_err(|_| Error::RefillPeriodTooLong { period_nanos })?;
    if tokens > period_nanos {
        return Err(Error::TooHighRefillRate { tokens, period_nanos });
    }
    Ok(Refill { tokens, period_nanos, kind })
}
