//! One structured log line per decision (JSON on `console.log`, which Workers Logs and
//! `wrangler tail` collect), and the counters that go with it.

use serde::Serialize;

use super::errors::ApiError;
use super::failure::FailureMode;
use super::metrics;
use super::protocol::{round_up, Command, Mode, Outcome, MILLISECOND};

/// Everything worth knowing about one decision.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DecisionLine<'a> {
    /// Always `"decision"`, to filter on.
    pub event: &'static str,
    /// The bucket key (API keys appear only hashed); absent when a shadow route could not key
    /// the request.
    #[serde(skip_serializing_if = "str::is_empty")]
    pub key: &'a str,
    /// The policy named by the request.
    pub policy: &'a str,
    /// `try`, `estimate`, `ignore-limits` or `reserve`.
    pub op: &'static str,
    /// Tokens asked for.
    pub tokens: i64,
    /// The verdict; absent when the request failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allowed: Option<bool>,
    /// Tokens left on every bandwidth.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remaining: Option<i64>,
    /// Milliseconds until a rejected request could succeed, or the wait a granted reservation
    /// (or an `ignore-limits` debt) reports, rounded up.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wait_ms: Option<i64>,
    /// Shadow mode admitted what the bucket rejected.
    pub shadow_rejected: bool,
    /// The failure mode that decided instead of the Durable Object.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fallback: Option<&'static str>,
    /// Why the Durable Object could not decide, the error answered, or the one a shadow route
    /// would have answered when it could not key the request.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<&'a str>,
    /// The gateway route, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub route: Option<&'a str>,
    /// Milliseconds from request to decision on the isolate's clock.
    pub latency_ms: f64,
}

impl<'a> DecisionLine<'a> {
    /// The line for `command` on `key`, before the verdict is known.
    pub fn new(key: &'a str, command: &'a Command, latency_ms: f64) -> Self {
        let op = match command {
            Command::Consume { mode: Mode::Try, .. } => "try",
            Command::Consume { mode: Mode::Estimate, .. } => "estimate",
            Command::Consume { mode: Mode::IgnoreLimits, .. } => "ignore-limits",
            _ => "reserve",
        };
        DecisionLine {
            event: "decision",
            key,
            policy: command.policy().unwrap_or_default(),
            op,
            tokens: command.cost(),
            allowed: None,
            remaining: None,
            wait_ms: None,
            shadow_rejected: false,
            fallback: None,
            error: None,
            route: None,
            latency_ms,
        }
    }

    /// Adds the verdict.
    pub fn outcome(mut self, outcome: &Outcome, shadow_rejected: bool) -> Self {
        self.allowed = Some(outcome.allowed || shadow_rejected);
        self.remaining = Some(outcome.remaining());
        let waits = !outcome.allowed || outcome.wait_nanos > 0;
        self.wait_ms = if waits { round_up(outcome.wait_nanos, MILLISECOND) } else { None };
        self.shadow_rejected = shadow_rejected;
        self
    }

    /// Counts the decision and logs it when `verbose`, when something went wrong, or when shadow
    /// mode let a rejection through (what shadow mode is for, so never silenced).
    pub fn emit(
        self,
        fallback: Option<FailureMode>,
        error: Option<&'a ApiError>,
        failure: Option<&'a str>,
        verbose: bool,
    ) {
        let mut line = self;
        line.fallback = fallback.map(FailureMode::label);
        line.error = failure.or(error.map(|e| e.code.as_str()));
        metrics::with(|m| {
            if let Some(mode) = line.fallback {
                m.fallback(line.policy, mode);
            }
            match (line.allowed, error) {
                (_, Some(error)) => m.error(&error.code),
                (Some(allowed), None) => m.decision(line.policy, verdict(&line, allowed), line.latency_ms / 1e3),
                (None, None) => {}
            }
        });
        if verbose || line.shadow_rejected || line.fallback.is_some() || line.error.is_some() {
            worker::console_log!("{}", serde_json::to_string(&line).unwrap_or_default());
        }
    }

    /// Counts and logs a request a shadow route let through unasked, as it could not key it:
    /// a shadow rejection whose `error` is `code`, the refusal it would have had.
    pub fn emit_unkeyed(mut self, code: &'a str, verbose: bool) {
        self.allowed = Some(true);
        self.shadow_rejected = true;
        // As `failure`: logged as the line's `error`, but counted as the decision, not an error.
        self.emit(None, None, Some(code), verbose);
    }
}

/// What an idle alarm did, one line each when decisions are logged:
/// `{"event":"idle-alarm","key":"…","outcome":"deleted"}`, or `"kept"` with `untilMs`, the later
/// deadline it set itself for (the bucket was used since the alarm was set, or owes a retry).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct IdleAlarmLine {
    /// Always `"idle-alarm"`.
    pub event: &'static str,
    /// The bucket key, when the runtime passes the object its name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// `deleted` or `kept`.
    pub outcome: &'static str,
    /// For `kept`: the new deadline, in milliseconds since the epoch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub until_ms: Option<f64>,
}

impl IdleAlarmLine {
    /// Logs the line.
    pub fn emit(&self) {
        worker::console_log!("{}", serde_json::to_string(self).unwrap_or_default());
    }
}

/// The metric's outcome. An estimate admits and rejects nothing, so it is counted apart.
fn verdict(line: &DecisionLine, allowed: bool) -> &'static str {
    match (line.op, allowed, line.shadow_rejected) {
        ("estimate", ..) => "estimate",
        (_, _, true) => "shadow_rejected",
        (_, true, false) => "allowed",
        (_, false, false) => "rejected",
    }
}
