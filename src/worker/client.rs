//! The front worker's side of a bucket: what the key's Durable Object answered to a command
//! (`entry.js` makes the call), and the policy's failure mode when the object cannot decide.

use std::cell::RefCell;

use super::decide;
use super::errors::ApiError;
use super::failure::{FailureMode, LocalBuckets};
use super::headers::Context;
use super::log::DecisionLine;
use super::protocol::{Command, Outcome};
use super::settings::Settings;

thread_local! {
    static LOCAL: RefCell<LocalBuckets> = RefCell::new(LocalBuckets::default());
}

/// A decision, and who took it.
#[derive(Debug)]
pub struct Verdict {
    /// The outcome, or the error to answer.
    pub result: Result<Outcome, ApiError>,
    /// Set when the policy's failure mode decided instead of the object.
    pub fallback: Option<FailureMode>,
    /// Why the object could not decide.
    pub failure: Option<String>,
}

impl Verdict {
    /// Logs the verdict on `command` as `line` (and counts it); returns the outcome with what its
    /// headers need, or the error to answer. A rejection under a shadow policy is let through
    /// here, for the service API and the gateway alike.
    pub fn logged<'a>(
        &'a self,
        line: DecisionLine<'a>,
        command: &Command,
        settings: &Settings,
    ) -> Result<(&'a Outcome, Context), &'a ApiError> {
        let failure = self.failure.as_deref();
        let outcome = match &self.result {
            Ok(outcome) => outcome,
            Err(error) => {
                line.emit(self.fallback, Some(error), failure, settings.log_decisions);
                return Err(error);
            }
        };
        let policy = command.policy().and_then(|name| settings.policies.get(name));
        let shadow_rejected = !outcome.allowed && policy.is_some_and(|p| p.shadow) && !command.is_estimate();
        line.outcome(outcome, shadow_rejected).emit(self.fallback, None, failure, settings.log_decisions);
        let context = Context {
            legacy: policy.is_some_and(|p| p.legacy_headers),
            fallback: self.fallback,
            shadow_rejected,
            estimate: command.is_estimate(),
        };
        Ok((outcome, context))
    }
}

/// The object's answer to a command, as `entry.js` received it over RPC (`decide`): its status
/// and body, or why the call failed.
pub type Reply = Result<(u16, String), String>;

/// Why no bucket could take `command` (an unknown policy, tokens beyond every capacity), if so:
/// it is answered without asking the object.
pub fn refusal(settings: &Settings, command: &Command) -> Option<ApiError> {
    decide::check(command, &settings.policies).err()
}

/// The verdict on `command` for `key` from the object's `reply`, or the policy's failure mode
/// when the object could not decide.
pub fn verdict(settings: &Settings, key: &str, command: &Command, reply: Reply) -> Verdict {
    match reply {
        Ok((200, body)) => Verdict { result: parse_outcome(&body), fallback: None, failure: None },
        Ok((status, body)) if (400..500).contains(&status) => {
            let error = ApiError::from_problem(status, &body).unwrap_or_else(|| ApiError::internal(body));
            Verdict { result: Err(error), fallback: None, failure: None }
        }
        Ok((status, body)) => fall_back(settings, key, command, format!("the bucket answered {status}: {body}")),
        Err(error) => fall_back(settings, key, command, error),
    }
}

fn parse_outcome(body: &str) -> Result<Outcome, ApiError> {
    serde_json::from_str(body).map_err(|e| ApiError::internal(format!("unreadable answer from the bucket: {e}")))
}

/// The policy's failure mode. Only consume and reserve have one; administrative commands fail.
fn fall_back(settings: &Settings, key: &str, command: &Command, failure: String) -> Verdict {
    let unavailable = ApiError::new(503, "RATE_LIMITER_UNAVAILABLE", "the bucket could not decide; try again shortly");
    let policy = match command {
        Command::Consume { .. } | Command::Reserve { .. } => command.policy().and_then(|p| settings.policies.get(p)),
        _ => None,
    };
    let Some(policy) = policy else {
        // An administrative call: its caller holds the admin token and needs the cause
        // (`STORAGE_CORRUPT`, `STORAGE_ERROR`, …), not only that there was one.
        let detail = format!("the bucket could not answer: {failure}");
        let unavailable = ApiError::new(503, "RATE_LIMITER_UNAVAILABLE", detail);
        return Verdict { result: Err(unavailable), fallback: None, failure: Some(failure) };
    };
    let now = now_nanos();
    let result = match policy.failure {
        FailureMode::Open => Ok(decide::describe(policy, now)),
        // Shadow mode never rejects, a failure included: the rejection is logged and let through.
        FailureMode::Closed if policy.shadow && !command.is_estimate() => {
            Ok(Outcome { allowed: false, ..decide::describe(policy, now) })
        }
        FailureMode::Closed => Err(unavailable),
        FailureMode::Degrade => {
            LOCAL.with(|local| local.borrow_mut().apply(key, command, &settings.policies, now)).map(|e| e.outcome)
        }
    };
    Verdict { result, fallback: Some(policy.failure), failure: Some(failure) }
}

/// The isolate's clock (`Date.now()`) in nanoseconds.
pub fn now_nanos() -> i64 {
    js_millis() * 1_000_000
}

/// `Date.now()`: whole milliseconds since the epoch.
pub fn js_millis() -> i64 {
    worker::js_sys::Date::now() as i64
}
