//! A snapshot of a bucket for logs, headers and debugging (Bucket4j's verbose diagnostics).

use super::configuration::BucketConfiguration;

/// The state of one bandwidth at the time of the snapshot.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BandwidthDiagnostics {
    /// The bandwidth's id, if it has one.
    pub id: Option<String>,
    /// Its capacity.
    pub capacity: i64,
    /// Whole tokens available, after refill; negative when in debt.
    pub available_tokens: i64,
    /// Nanoseconds until this bandwidth is full (0 if it is).
    pub nanos_to_full_refill: i64,
}

/// A bucket's state after refill at the snapshot time.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Diagnostics {
    /// The tokens a request can have: the minimum over bandwidths; negative when in debt.
    pub available_tokens: i64,
    /// Nanoseconds until every bandwidth is full: the maximum over bandwidths.
    pub nanos_to_full_refill: i64,
    /// One entry per bandwidth, in configuration order.
    pub bandwidths: Vec<BandwidthDiagnostics>,
}

/// An operation's result together with the configuration and diagnostics right after it
/// (Bucket4j's `VerboseResult`). See [`TokenBucket::verbose`](crate::TokenBucket::verbose).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct VerboseResult<T> {
    /// What the operation returned.
    pub value: T,
    /// The configuration in force after the operation.
    pub configuration: BucketConfiguration,
    /// The bucket's state after the operation.
    pub diagnostics: Diagnostics,
}
