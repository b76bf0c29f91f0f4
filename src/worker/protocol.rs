//! What the front worker asks a bucket's Durable Object and what the object answers, as JSON.
//!
//! Exact 64-bit values (tokens, nanoseconds) travel as JSON integers between the two Rust sides;
//! the public API converts them for JavaScript callers.

use serde::{Deserialize, Serialize};

use crate::TokensInheritanceStrategy;

/// How a consume request treats the limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Consume if every bandwidth has the tokens (`try_consume`).
    #[default]
    Try,
    /// Only say whether it would succeed; changes nothing.
    Estimate,
    /// Consume whatever the limits, possibly into debt (`consume_ignoring_rate_limits`).
    IgnoreLimits,
}

/// One operation on one bucket.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "camelCase", rename_all_fields = "camelCase", deny_unknown_fields)]
pub enum Command {
    /// Consume `tokens` under `policy`, creating the bucket if need be.
    Consume {
        /// The policy's name.
        policy: String,
        /// At least 1.
        tokens: i64,
        /// How the limits apply.
        mode: Mode,
    },
    /// Reserve `tokens` if they will be there within `max_wait_nanos`.
    Reserve {
        /// The policy's name.
        policy: String,
        /// At least 1.
        tokens: i64,
        /// At least 1.
        max_wait_nanos: i64,
    },
    /// Report the state (diagnostics); changes nothing.
    Inspect,
    /// Put the bucket under `policy`, carrying tokens over by `strategy` (the policy's own when
    /// absent).
    Replace {
        /// The new policy's name.
        policy: String,
        /// Overrides the policy's strategy.
        strategy: Option<TokensInheritanceStrategy>,
    },
    /// Fill every bandwidth.
    Reset,
    /// Forget the bucket.
    Delete,
}

impl Command {
    /// The tokens the answer's waits are computed for: the request's, or 1.
    pub fn cost(&self) -> i64 {
        match self {
            Command::Consume { tokens, .. } | Command::Reserve { tokens, .. } => *tokens,
            _ => 1,
        }
    }

    /// The longest wait a decision takes as granted: a reservation's `max_wait_nanos`, else 0.
    pub fn accepted_wait(&self) -> i64 {
        match self {
            Command::Reserve { max_wait_nanos, .. } => *max_wait_nanos,
            _ => 0,
        }
    }

    /// A decision (consume or reserve): answered with rate-limit headers and logged.
    pub fn is_decision(&self) -> bool {
        matches!(self, Command::Consume { .. } | Command::Reserve { .. })
    }

    /// An estimate: a consume that only says whether it would be allowed.
    pub fn is_estimate(&self) -> bool {
        matches!(self, Command::Consume { mode: Mode::Estimate, .. })
    }

    /// The policy the command names, if it names one.
    pub fn policy(&self) -> Option<&str> {
        match self {
            Command::Consume { policy, .. } | Command::Reserve { policy, .. } | Command::Replace { policy, .. } => {
                Some(policy)
            }
            _ => None,
        }
    }
}

/// What a decision found: the verdict and the bucket right after it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Outcome {
    /// The bucket's policy.
    pub policy: String,
    /// The policy version its configuration comes from.
    pub version: u64,
    /// The time of the decision on the deciding clock, epoch milliseconds.
    pub at_millis: i64,
    /// Consumed (try, ignore-limits), could be consumed (estimate) or reserved (reserve);
    /// always true for the administrative operations.
    pub allowed: bool,
    /// When not allowed: nanoseconds until the request could succeed. When reserved: how long
    /// to wait before proceeding. [`INFINITY_DURATION`](crate::INFINITY_DURATION) for never.
    pub wait_nanos: i64,
    /// Every bandwidth after the operation, in configuration order.
    pub bandwidths: Vec<BandwidthView>,
    /// A refused reservation that a whole-second `Retry-After` would send back at a moment it
    /// is refused again (beyond an interval bandwidth's capacity it is granted only in a window
    /// before each refill, which whole seconds may miss): the answer has none, and the wait is
    /// in milliseconds only.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_retry_after: bool,
}

/// One bandwidth after an operation, as the headers and the API report it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BandwidthView {
    /// Its `RateLimit` item name: the bandwidth id, else the policy name (one bandwidth) or
    /// `policy-N` (N from 1).
    pub name: String,
    /// Capacity.
    pub capacity: i64,
    /// Seconds to refill from empty to capacity, at least 1: the `w` of `RateLimit-Policy`.
    pub window_seconds: i64,
    /// Whole tokens available; negative in debt.
    pub available: i64,
    /// Nanoseconds until it holds the request's tokens again (0 if it does).
    pub wait_nanos: i64,
    /// Nanoseconds until it is full.
    pub full_nanos: i64,
}

impl Outcome {
    /// Tokens available on every bandwidth (the minimum), never below 0.
    pub fn remaining(&self) -> i64 {
        self.bandwidths.iter().map(|b| b.available).min().unwrap_or(0).max(0)
    }

    /// Names of the bandwidths that refused the request: those that will not hold its tokens
    /// within `accepted_wait` ([`Command::accepted_wait`]; 0 for a consume).
    pub fn violated(&self, accepted_wait: i64) -> Vec<&str> {
        self.bandwidths.iter().filter(|b| b.wait_nanos > accepted_wait).map(|b| b.name.as_str()).collect()
    }
}

/// Nanoseconds per millisecond and per second, for [`round_up`].
pub const MILLISECOND: i64 = 1_000_000;
/// See [`MILLISECOND`].
pub const SECOND: i64 = 1_000_000_000;

/// A wait of `nanos` in whole `unit`s, rounded up so it is never early; `None` for
/// [`INFINITY_DURATION`](crate::INFINITY_DURATION) (never).
pub fn round_up(nanos: i64, unit: i64) -> Option<i64> {
    (nanos != crate::INFINITY_DURATION).then(|| (nanos.max(0) as u64).div_ceil(unit as u64) as i64)
}

/// The answer to [`Command::Delete`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Deleted {
    /// Whether there was a bucket to delete.
    pub deleted: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_round_trip_as_tagged_json() {
        let command = Command::Reserve { policy: "api".into(), tokens: 3, max_wait_nanos: i64::MAX };
        let json = serde_json::to_string(&command).unwrap();
        assert_eq!(json, format!(r#"{{"op":"reserve","policy":"api","tokens":3,"maxWaitNanos":{}}}"#, i64::MAX));
        assert_eq!(serde_json::from_str::<Command>(&json).unwrap(), command);
        let consume: Command =
            serde_json::from_str(r#"{"op":"consume","policy":"p","tokens":1,"mode":"ignore-limits"}"#).unwrap();
        assert_eq!(consume, Command::Consume { policy: "p".into(), tokens: 1, mode: Mode::IgnoreLimits });
        assert_eq!((consume.cost(), consume.policy()), (1, Some("p")));
        assert_eq!((Command::Inspect.cost(), Command::Inspect.policy()), (1, None));
    }

    #[test]
    fn waits_round_up() {
        assert_eq!(round_up(0, SECOND), Some(0));
        assert_eq!(round_up(1, SECOND), Some(1));
        assert_eq!(round_up(SECOND, SECOND), Some(1));
        assert_eq!(round_up(SECOND + 1, MILLISECOND), Some(1001));
        assert_eq!(round_up(crate::INFINITY_DURATION, SECOND), None);
    }
}
