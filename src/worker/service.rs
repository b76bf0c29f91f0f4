//! Serving the `/v1` API: authorize, read the body, decide, answer with the decision and its
//! headers. Rejections are 429 with the draft's `quota-exceeded` problem document extended with
//! the decision; estimates are always 200.

use super::api::{self, DecisionBody, Endpoint, MAX_BODY_BYTES};
use super::client::{self, Reply, Verdict};
use super::errors::{self, ApiError};
use super::headers::{self, Context};
use super::incoming::Incoming;
use super::keys;
use super::log::DecisionLine;
use super::metrics;
use super::protocol::{Command, Deleted, Outcome};
use super::respond::{self, Answer};
use super::settings::Settings;

/// What serving an endpoint needs next.
#[derive(Debug)]
pub enum Step {
    /// The request body, at most [`MAX_BODY_BYTES`].
    Body,
    /// The bucket's answer to this command.
    Ask(Command),
    /// Nothing: this is the answer.
    Answer(Answer),
}

/// The first step of `endpoint`: authorize, then read the body, ask the bucket, or answer.
/// `started` is the request's arrival (epoch ms), for the latency metric.
pub fn start(endpoint: &Endpoint, req: &Incoming, settings: &Settings, started: f64) -> Step {
    let step = settings.secrets.check(endpoint.role(), req.header("Authorization").as_deref()).and_then(|()| {
        match endpoint {
            Endpoint::Policies => Ok(Step::Answer(policies(settings))),
            Endpoint::Metrics => Ok(Step::Answer(metrics_text())),
            Endpoint::Consume(_) | Endpoint::Reserve(_) | Endpoint::Replace(_) => {
                if req.declared_length().is_some_and(|n| n > MAX_BODY_BYTES as u64) {
                    return Err(too_large()); // refused before reading any of it
                }
                Ok(Step::Body)
            }
            Endpoint::Inspect(_) | Endpoint::Reset(_) | Endpoint::Delete(_) => {
                ask(endpoint, api::command(endpoint, b"")?, settings, started)
            }
        }
    });
    step.unwrap_or_else(|error| Step::Answer(respond::counted_problem(&error)))
}

/// The step once the body was read: `None` when it passed [`MAX_BODY_BYTES`], `Err` when it
/// could not be read.
pub fn with_body(
    endpoint: &Endpoint,
    body: Result<Option<Vec<u8>>, String>,
    settings: &Settings,
    started: f64,
) -> Step {
    let step = body
        .map_err(|e| ApiError::bad_request("INVALID_BODY", e))
        // Checked here too, whatever read it: the limit is this module's promise.
        .and_then(|body| body.filter(|body| body.len() <= MAX_BODY_BYTES).ok_or_else(too_large))
        .and_then(|body| api::command(endpoint, &body))
        .and_then(|command| ask(endpoint, command, settings, started));
    step.unwrap_or_else(|error| Step::Answer(respond::counted_problem(&error)))
}

/// Asks the bucket about `command`, unless no bucket could take it (an unknown policy, tokens
/// beyond every capacity). A consume or reserve refused so is answered and logged as a decision.
fn ask(endpoint: &Endpoint, command: Command, settings: &Settings, started: f64) -> Result<Step, ApiError> {
    if let Command::Replace { policy, .. } = &command {
        check_gateway_policy(key_of(endpoint), policy)?;
    }
    match client::refusal(settings, &command) {
        None => Ok(Step::Ask(command)),
        Some(error) if command.is_decision() => {
            let verdict = Verdict { result: Err(error), fallback: None, failure: None };
            Ok(Step::Answer(decision(verdict, settings, key_of(endpoint), &command, started)))
        }
        Some(error) => Err(error),
    }
}

/// The answer once the bucket replied to `command`.
pub fn with_reply(endpoint: &Endpoint, command: &Command, reply: Reply, settings: &Settings, started: f64) -> Answer {
    let key = key_of(endpoint);
    match command {
        Command::Delete => deleted(reply).unwrap_or_else(|error| respond::counted_problem(&error)),
        _ if command.is_decision() => {
            decision(client::verdict(settings, key, command, reply), settings, key, command, started)
        }
        _ => match client::verdict(settings, key, command, reply).result {
            Ok(outcome) => respond::json(200, &DecisionBody::new(key, &outcome), Vec::new()),
            Err(error) => respond::counted_problem(&error),
        },
    }
}

/// Consume or reserve: log, count, answer with headers. Errors are answered here too, so that
/// each request is logged once with its verdict or error.
fn decision(verdict: Verdict, settings: &Settings, key: &str, command: &Command, started: f64) -> Answer {
    let line = DecisionLine::new(key, command, client::js_millis() as f64 - started);
    match verdict.logged(line, command, settings) {
        Ok((outcome, context)) => answer(key, outcome, command, &verdict, context),
        Err(error) => respond::decision_problem(error, verdict.fallback),
    }
}

fn answer(key: &str, outcome: &Outcome, command: &Command, verdict: &Verdict, context: Context) -> Answer {
    let headers = headers::for_outcome(outcome, context);
    let mut body = DecisionBody::new(key, outcome);
    body.fallback = verdict.fallback.map(|f| f.label());
    body.shadow_rejected = context.shadow_rejected;
    body.allowed = outcome.allowed || context.shadow_rejected;
    if context.shadow_rejected {
        body.wait_ms = Some(0); // nothing was reserved and the caller may go: no wait to obey
    }
    if body.allowed || command.is_estimate() {
        return respond::json(200, &body, headers);
    }
    let mut problem = errors::quota_exceeded(outcome, command.accepted_wait());
    if let (Some(problem), Ok(serde_json::Value::Object(decision))) =
        (problem.as_object_mut(), serde_json::to_value(&body))
    {
        problem.extend(decision);
    }
    respond::problem_with(429, problem.to_string(), headers)
}

fn deleted(reply: Reply) -> Result<Answer, ApiError> {
    let unavailable =
        |e: String| ApiError::new(503, "RATE_LIMITER_UNAVAILABLE", format!("the bucket could not be deleted: {e}"));
    let (status, body) = reply.map_err(unavailable)?;
    if status != 200 {
        return Err(unavailable(body));
    }
    let deleted: Deleted = serde_json::from_str(&body).map_err(|e| unavailable(e.to_string()))?;
    Ok(respond::json(200, &deleted, Vec::new()))
}

fn policies(settings: &Settings) -> Answer {
    let list: serde_json::Map<String, serde_json::Value> = settings
        .policies
        .iter()
        .map(|p| {
            let entry = serde_json::json!({
                "version": p.version, "strategy": p.strategy, "failure": p.failure, "shadow": p.shadow,
                "timeoutMs": p.timeout.map(|t| t.as_millis() as u64), "idleGraceMs": p.idle_grace.as_millis() as u64, "legacyHeaders": p.legacy_headers,
                "bandwidths": crate::ConfigurationSpec::from(&p.configuration).bandwidths,
            });
            (p.name.clone(), entry)
        })
        .collect();
    respond::json(200, &list, Vec::new())
}

fn metrics_text() -> Answer {
    Answer::new(200, "text/plain; version=0.0.4; charset=utf-8", metrics::with(|m| m.render()))
}

/// 413: the body passed [`MAX_BODY_BYTES`], by `Content-Length` before anything was read, or
/// by counting the bytes as they arrived (a chunked body declares no length), so an oversized
/// body is never held in memory whole.
fn too_large() -> ApiError {
    ApiError::new(413, "BODY_TOO_LARGE", format!("the body is limited to {MAX_BODY_BYTES} bytes"))
}

/// The bucket key of an endpoint that has one.
pub fn key_of(endpoint: &Endpoint) -> &str {
    match endpoint {
        Endpoint::Consume(key)
        | Endpoint::Reserve(key)
        | Endpoint::Inspect(key)
        | Endpoint::Replace(key)
        | Endpoint::Reset(key)
        | Endpoint::Delete(key) => key,
        Endpoint::Policies | Endpoint::Metrics => "",
    }
}

/// A gateway bucket stays under the policy its key names: its route sends every request under
/// that policy, so moving the bucket would refuse them all (409 `POLICY_MISMATCH`) until it
/// expired.
///
/// # Errors
/// 409 `GATEWAY_POLICY_FIXED` when `key` is a gateway bucket of another policy than `policy`.
fn check_gateway_policy(key: &str, policy: &str) -> Result<(), ApiError> {
    match keys::gateway_policy(key) {
        Some(own) if own != policy => Err(ApiError::new(
            409,
            "GATEWAY_POLICY_FIXED",
            format!(
                "this gateway bucket belongs to its route's policy {own:?}; replace it under {own:?} \
                 (a strategy such as RESET still applies), or change the route"
            ),
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::{with_body, Step, MAX_BODY_BYTES};
    use crate::worker::{api::Endpoint, policy::Policies, settings::Settings};

    fn settings() -> Settings {
        let policies = r#"{"p":{"bandwidths":[{"capacity":5,"refill":{"kind":"greedy","tokens":5,"period":"1s"}}]}}"#;
        Settings {
            policies: Policies::parse(policies).unwrap(),
            api_prefix: Default::default(),
            routes: Vec::new(),
            origin: None,
            cors_origins: Default::default(),
            secrets: Default::default(),
            log_decisions: false,
        }
    }

    #[test]
    fn a_body_past_the_limit_is_refused_however_it_was_read() {
        let endpoint = Endpoint::Consume("k".into());
        let body = |pad: usize| Ok(Some(format!(r#"{{"policy":"p"{}}}"#, " ".repeat(pad)).into_bytes()));
        let at_the_limit = MAX_BODY_BYTES - r#"{"policy":"p"}"#.len();
        assert!(matches!(with_body(&endpoint, body(at_the_limit), &settings(), 0.0), Step::Ask(_)));
        match with_body(&endpoint, body(at_the_limit + 1), &settings(), 0.0) {
            Step::Answer(answer) => assert_eq!((answer.status, answer.body.contains("BODY_TOO_LARGE")), (413, true)),
            other => panic!("{other:?}"),
        }
    }
}
