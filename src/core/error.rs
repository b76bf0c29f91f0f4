//! The one error type of the core.
//!
//! Every variant has a stable, machine-readable [`Error::code`] (the JavaScript package exposes the
//! same string as `EdgeBucketError.code`, the worker as the `code` of its JSON error bodies) and a
//! message that says what was wrong. An operation that returns an error has changed nothing.

/// What went wrong. Match on the variant, or on [`Error::code`] across language boundaries.
///
/// ```
/// use edgebucket::{Bandwidth, Error};
///
/// let err = Bandwidth::builder().capacity(0).refill_greedy(1, std::time::Duration::from_secs(1)).build().unwrap_err();
/// assert_eq!(err, Error::NonPositiveCapacity { capacity: 0 });
/// assert_eq!(err.code(), "NON_POSITIVE_CAPACITY");
/// assert_eq!(err.to_string(), "capacity must be positive, got 0");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    // --- configuration ---
    /// A bandwidth was built without a capacity.
    #[error("a bandwidth needs a capacity")]
    MissingCapacity,
    /// A bandwidth was built without a refill.
    #[error("a bandwidth needs a refill (greedy, intervally or intervally aligned)")]
    MissingRefill,
    /// Capacity must be at least 1.
    #[error("capacity must be positive, got {capacity}")]
    NonPositiveCapacity {
        /// The rejected capacity.
        capacity: i64,
    },
    /// Refill tokens must be at least 1.
    #[error("refill tokens must be positive, got {tokens}")]
    NonPositiveRefillTokens {
        /// The rejected token count.
        tokens: i64,
    },
    /// The refill period must be at least 1 ns.
    #[error("refill period must be positive, got {period_nanos} ns")]
    NonPositiveRefillPeriod {
        /// The rejected period in nanoseconds.
        period_nanos: i128,
    },
    /// The refill period does not fit in 64-bit nanoseconds (about 292 years).
    #[error("refill period of {period_nanos} ns is longer than the maximum of {} ns", i64::MAX)]
    RefillPeriodTooLong {
        /// The rejected period in nanoseconds.
        period_nanos: i128,
    },
    /// More than one token per nanosecond.
    #[error("{tokens} tokens per {period_nanos} ns is too high a refill rate: at most 1 token per nanosecond")]
    TooHighRefillRate {
        /// Refill tokens.
        tokens: i64,
        /// Refill period in nanoseconds.
        period_nanos: i64,
    },
    /// Initial tokens must not be negative.
    #[error("initial tokens must not be negative, got {tokens}")]
    NegativeInitialTokens {
        /// The rejected initial token count.
        tokens: i64,
    },
    /// An aligned refill's first refill time lies before the Unix epoch.
    #[error("time of first refill must not be before the Unix epoch, got {nanos} ns")]
    FirstRefillBeforeEpoch {
        /// The rejected time, in nanoseconds since the Unix epoch.
        nanos: i64,
    },
    /// Adaptive initial tokens compute the initial tokens, so explicit ones make no sense.
    #[error("adaptive initial tokens cannot be combined with explicitly specified initial tokens")]
    AdaptiveInitialTokensWithExplicitInitialTokens,
    /// Two bandwidths of one configuration share an id.
    #[error("bandwidths {first} and {second} have the same id \"{id}\"")]
    DuplicateBandwidthId {
        /// The shared id.
        id: String,
        /// Index of the first bandwidth with it.
        first: usize,
        /// Index of the second bandwidth with it.
        second: usize,
    },
    /// A configuration needs at least one bandwidth.
    #[error("a configuration needs at least one bandwidth")]
    EmptyConfiguration,
    /// A configuration in the JSON schema is malformed in a way the builders cannot express,
    /// such as a `firstRefillTime` on a greedy refill.
    #[error("invalid configuration: {reason}")]
    InvalidConfiguration {
        /// What was wrong.
        reason: String,
    },
    /// A duration in the JSON schema could not be read.
    #[error("invalid duration \"{input}\": {reason}")]
    InvalidDuration {
        /// The text or value that was given.
        input: String,
        /// Why it was rejected.
        reason: String,
    },
    /// An instant (`firstRefillTime`) in the JSON schema could not be read.
    #[error("invalid instant \"{input}\": {reason}")]
    InvalidInstant {
        /// The text or value that was given.
        input: String,
        /// Why it was rejected.
        reason: String,
    },

    // --- operations ---
    /// Tokens to consume, add or estimate must be at least 1.
    #[error("tokens must be positive, got {tokens}")]
    NonPositiveTokens {
        /// The rejected token count.
        tokens: i64,
    },
    /// A maximum wait must be at least 1 ns.
    #[error("maximum wait must be positive, got {nanos} ns")]
    NonPositiveMaxWait {
        /// The rejected wait in nanoseconds.
        nanos: i64,
    },
    /// The limit of `try_consume_as_much_as_possible_up_to` must be at least 1.
    #[error("limit must be positive, got {limit}")]
    NonPositiveLimit {
        /// The rejected limit.
        limit: i64,
    },
    /// The wait this operation implies cannot be represented: it is 292 years or more. (Tokens
    /// beyond a bandwidth's capacity are not an error: probes report an infinite wait, and a
    /// reservation or overdraft beyond capacity is a debt repaid by refill.)
    #[error("{tokens} tokens cannot be reserved: the wait would be unbounded or exceed {} ns", i64::MAX)]
    ReservationOverflow {
        /// The tokens that were asked for.
        tokens: i64,
    },
    /// The operation would take a bandwidth's token count outside the 64-bit range.
    #[error("the operation would take a bandwidth's token count outside the 64-bit range")]
    TokensOverflow,
    /// A [`BucketStore`](crate::BucketStore) key is longer than it accepts.
    #[error("a key of {len} bytes is longer than the maximum of {max} bytes")]
    KeyTooLong {
        /// The key's length in bytes.
        len: usize,
        /// The longest key accepted.
        max: usize,
    },
    /// A [`BucketStore`](crate::BucketStore)'s keys fill its `max_key_bytes`, removed keys'
    /// bytes included until they are worth reclaiming: a new key is refused, existing keys
    /// carry on.
    #[error(
        "the store's keys fill its key space of {max_bytes} bytes; remove keys, lower max_keys or raise max_key_bytes"
    )]
    KeySpaceFull {
        /// The key bytes a store can hold.
        max_bytes: u64,
    },

    // --- codec ---
    /// The bytes were written by a newer (or unknown) format version.
    #[error("unsupported encoding format version {version} (this build reads version {supported})")]
    UnsupportedFormatVersion {
        /// The version found in the bytes.
        version: u8,
        /// The version this build reads and writes.
        supported: u8,
    },
    /// The bytes are not a valid encoding: wrong magic, truncated, corrupt or inconsistent.
    #[error("invalid encoding: {reason}")]
    InvalidEncoding {
        /// What was wrong.
        reason: String,
    },
}

impl Error {
    /// The stable code of this error, in `SCREAMING_SNAKE_CASE`.
    ///
    /// Codes never change meaning between releases; new codes may be added.
    pub fn code(&self) -> &'static str {
        match self {
            Error::MissingCapacity => "MISSING_CAPACITY",
            Error::MissingRefill => "MISSING_REFILL",
            Error::NonPositiveCapacity { .. } => "NON_POSITIVE_CAPACITY",
            Error::NonPositiveRefillTokens { .. } => "NON_POSITIVE_REFILL_TOKENS",
            Error::NonPositiveRefillPeriod { .. } => "NON_POSITIVE_REFILL_PERIOD",
            Error::RefillPeriodTooLong { .. } => "REFILL_PERIOD_TOO_LONG",
            Error::TooHighRefillRate { .. } => "TOO_HIGH_REFILL_RATE",
            Error::NegativeInitialTokens { .. } => "NEGATIVE_INITIAL_TOKENS",
            Error::FirstRefillBeforeEpoch { .. } => "FIRST_REFILL_BEFORE_EPOCH",
            Error::AdaptiveInitialTokensWithExplicitInitialTokens => {
                "ADAPTIVE_INITIAL_TOKENS_WITH_EXPLICIT_INITIAL_TOKENS"
            }
            Error::DuplicateBandwidthId { .. } => "DUPLICATE_BANDWIDTH_ID",
            Error::EmptyConfiguration => "EMPTY_CONFIGURATION",
            Error::InvalidConfiguration { .. } => "INVALID_CONFIGURATION",
            Error::InvalidDuration { .. } => "INVALID_DURATION",
            Error::InvalidInstant { .. } => "INVALID_INSTANT",
            Error::NonPositiveTokens { .. } => "NON_POSITIVE_TOKENS",
            Error::NonPositiveMaxWait { .. } => "NON_POSITIVE_MAX_WAIT",
            Error::NonPositiveLimit { .. } => "NON_POSITIVE_LIMIT",
            Error::ReservationOverflow { .. } => "RESERVATION_OVERFLOW",
            Error::TokensOverflow => "TOKENS_OVERFLOW",
            Error::KeyTooLong { .. } => "KEY_TOO_LONG",
            Error::KeySpaceFull { .. } => "KEY_SPACE_FULL",
            Error::UnsupportedFormatVersion { .. } => "UNSUPPORTED_FORMAT_VERSION",
            Error::InvalidEncoding { .. } => "INVALID_ENCODING",
        }
    }
}

/// `Result` with the core's [`Error`].
pub type Result<T, E = Error> = core::result::Result<T, E>;
