//! The results of probing operations: what happened and how long to wait.

/// The result of [`TokenBucket::try_consume_and_return_remaining`](crate::TokenBucket::try_consume_and_return_remaining).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ConsumptionProbe {
    /// Whether the tokens were consumed.
    pub consumed: bool,
    /// Tokens left after the operation, never negative (0 when the bucket is in debt).
    pub remaining_tokens: i64,
    /// 0 when consumed; otherwise nanoseconds until the request could succeed, or
    /// [`INFINITY_DURATION`](crate::INFINITY_DURATION) when it never can (more tokens than the
    /// capacity of a bandwidth that does not hold them already).
    pub nanos_to_wait_for_refill: i64,
    /// Nanoseconds until every bandwidth is full again.
    pub nanos_to_wait_for_reset: i64,
}

/// The result of [`TokenBucket::estimate_ability_to_consume`](crate::TokenBucket::estimate_ability_to_consume).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EstimationProbe {
    /// Whether the tokens could be consumed now.
    pub can_be_consumed: bool,
    /// Tokens available now, never negative (as Bucket4j: not reduced by the estimated tokens).
    pub remaining_tokens: i64,
    /// 0 when they can be consumed; otherwise nanoseconds until they could, or
    /// [`INFINITY_DURATION`](crate::INFINITY_DURATION) when never (more tokens than the capacity of
    /// a bandwidth that does not hold them already).
    pub nanos_to_wait_for_refill: i64,
}
