//! What a policy does when its bucket's Durable Object cannot decide (an exception, an
//! unreachable or overloaded object, a storage error): admit, reject, or decide with a bucket kept
//! in this isolate's memory.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::decide::{self, Effect, Held};
use super::errors::ApiError;
use super::policy::Policies;
use super::protocol::Command;

/// A policy's failure mode (`"failure"` in the policy).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FailureMode {
    /// Admit the request (availability first). The default.
    Open,
    /// Reject it with 503 (protection first).
    Closed,
    /// Decide with an in-isolate bucket under the same policy: exact within this isolate, but
    /// each isolate has its own, so the limit is per isolate until the object is back.
    Degrade,
}

impl FailureMode {
    /// The value of the `EdgeBucket-Fallback` header and of the log's `fallback` field.
    pub fn label(self) -> &'static str {
        match self {
            FailureMode::Open => "open",
            FailureMode::Closed => "closed",
            FailureMode::Degrade => "local",
        }
    }
}

/// Most keys the fallback buckets hold per isolate; past it one is forgotten (it comes back new,
/// with its initial tokens: usually more than it had, so this errs towards admitting).
const MAX_LOCAL_KEYS: usize = 10_000;

/// The in-isolate buckets of [`FailureMode::Degrade`], by key.
#[derive(Debug, Default)]
pub struct LocalBuckets {
    buckets: HashMap<String, Held>,
}

impl LocalBuckets {
    /// Decides `command` for `key` locally, exactly as the Durable Object would.
    ///
    /// # Errors
    /// As [`decide::apply`].
    pub fn apply(&mut self, key: &str, command: &Command, policies: &Policies, now: i64) -> Result<Effect, ApiError> {
        let mut held = self.buckets.remove(key);
        let result = decide::apply(&mut held, command, policies, now);
        if let Some(held) = held {
            if self.buckets.len() >= MAX_LOCAL_KEYS {
                let forgotten = self.buckets.keys().next().cloned().unwrap_or_default();
                self.buckets.remove(&forgotten);
            }
            self.buckets.insert(key.to_owned(), held);
        }
        result
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.buckets.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::worker::protocol::Mode;

    #[test]
    fn local_buckets_enforce_the_policy_per_key() {
        let policies = Policies::parse(
            r#"{"p": {"failure": "degrade", "bandwidths": [{"capacity": 2, "refill": {"kind": "greedy", "tokens": 1, "period": "1h"}}]}}"#,
        )
        .unwrap();
        assert_eq!(policies.get("p").unwrap().failure, FailureMode::Degrade);
        let mut local = LocalBuckets::default();
        let consume = Command::Consume { policy: "p".into(), tokens: 1, mode: Mode::Try };
        let verdicts: Vec<bool> =
            (0..3).map(|_| local.apply("a", &consume, &policies, 0).unwrap().outcome.allowed).collect();
        assert_eq!(verdicts, [true, true, false]);
        assert!(local.apply("b", &consume, &policies, 0).unwrap().outcome.allowed);
        assert_eq!(local.len(), 2);
        assert_eq!(FailureMode::Degrade.label(), "local");
    }
}
