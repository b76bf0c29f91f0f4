//! Serving the `/v1` API: authorize, read the body, decide, answer with the decision and its
//! headers. Rejections are 429 with the draft's `quota-exceeded` problem document extended with
//! the decision; estimates are always 200.

use worker::{Env, Response};

use super::api::{self, DecisionBody, Endpoint, MAX_BODY_BYTES};
use super::client::{self, Verdict};
use super::errors::{self, ApiError};
use super::headers::{self, Context};
use super::incoming::Incoming;
use super::keys;
use super::log::DecisionLine;
use super::metrics;
use super::protocol::{Command, Deleted, Outcome};
use super::respond;
use super::settings::Settings;

/// Answers `endpoint`; `started` is the request's arrival (epoch ms) for the latency metric.
///
/// # Errors
/// Only if the runtime fails to build a response.
pub async fn handle(
    endpoint: Endpoint,
    req: &Incoming,
    env: &Env,
    settings: &Settings,
    started: f64,
) -> worker::Result<Response> {
    match serve(&endpoint, req, env, settings, started).await {
        Ok(response) => Ok(response),
        Err(error) => {
            req.drain().await; // a refusal before the body was read (auth, bad path)
            respond::counted_problem(&error)
        }
    }
}

async fn serve(
    endpoint: &Endpoint,
    req: &Incoming,
    env: &Env,
    settings: &Settings,
    started: f64,
) -> Result<Response, ApiError> {
    settings.secrets.check(endpoint.role(), req.header("Authorization").as_deref())?;
    let (key, command) = match endpoint {
        Endpoint::Policies => return policies(settings).map_err(runtime),
        Endpoint::Metrics => return metrics_text().map_err(runtime),
        Endpoint::Consume(key) | Endpoint::Reserve(key) | Endpoint::Replace(key) => {
            (key, api::command(endpoint, &read_body(req).await?)?)
        }
        Endpoint::Inspect(key) | Endpoint::Reset(key) | Endpoint::Delete(key) => (key, api::command(endpoint, b"")?),
    };
    if let Command::Replace { policy, .. } = &command {
        check_gateway_policy(key, policy)?;
    }
    match command {
        Command::Delete => delete(env, key).await,
        Command::Consume { .. } | Command::Reserve { .. } => Ok(decision(env, settings, key, &command, started).await),
        _ => {
            let outcome = client::decide(env, settings, key, &command).await.result?;
            respond::json(200, &DecisionBody::new(key, &outcome), &[]).map_err(runtime)
        }
    }
}

/// Consume or reserve: decide, log, count, answer with headers. Errors are answered here too,
/// so that each request is logged once with its verdict or error.
async fn decision(env: &Env, settings: &Settings, key: &str, command: &Command, started: f64) -> Response {
    let verdict = client::decide(env, settings, key, command).await;
    let line = DecisionLine::new(key, command, client::js_millis() as f64 - started);
    let policy = command.policy().and_then(|name| settings.policies.get(name));
    let response = match &verdict.result {
        Ok(outcome) => {
            let shadow_rejected = !outcome.allowed && policy.is_some_and(|p| p.shadow) && !command.is_estimate();
            line.outcome(outcome, shadow_rejected).emit(
                verdict.fallback,
                None,
                verdict.failure.as_deref(),
                settings.log_decisions,
            );
            let context = Context {
                legacy: policy.is_some_and(|p| p.legacy_headers),
                fallback: verdict.fallback,
                shadow_rejected,
                estimate: command.is_estimate(),
            };
            answer(key, outcome, command, &verdict, context)
        }
        Err(error) => {
            line.emit(verdict.fallback, Some(error), verdict.failure.as_deref(), settings.log_decisions);
            respond::decision_problem(error, verdict.fallback)
        }
    };
    response.unwrap_or_else(|e| Response::error(e.to_string(), 500).expect("500 is an error status"))
}

fn answer(
    key: &str,
    outcome: &Outcome,
    command: &Command,
    verdict: &Verdict,
    context: Context,
) -> worker::Result<Response> {
    let headers = headers::for_outcome(outcome, context);
    let mut body = DecisionBody::new(key, outcome);
    body.fallback = verdict.fallback.map(|f| f.label());
    body.shadow_rejected = context.shadow_rejected;
    body.allowed = outcome.allowed || context.shadow_rejected;
    if context.shadow_rejected {
        body.wait_ms = Some(0); // nothing was reserved and the caller may go: no wait to obey
    }
    if body.allowed || command.is_estimate() {
        return respond::json(200, &body, &headers);
    }
    let mut problem = errors::quota_exceeded(outcome);
    if let (Some(problem), serde_json::Value::Object(decision)) =
        (problem.as_object_mut(), serde_json::to_value(&body)?)
    {
        problem.extend(decision);
    }
    respond::problem_with(429, problem.to_string(), &headers)
}

async fn delete(env: &Env, key: &str) -> Result<Response, ApiError> {
    let unavailable =
        |e: String| ApiError::new(503, "RATE_LIMITER_UNAVAILABLE", format!("the bucket could not be deleted: {e}"));
    let (status, body) = client::send(env, key, &Command::Delete).await.map_err(|e| unavailable(e.to_string()))?;
    if status != 200 {
        return Err(unavailable(body));
    }
    let deleted: Deleted = serde_json::from_str(&body).map_err(|e| unavailable(e.to_string()))?;
    respond::json(200, &deleted, &[]).map_err(runtime)
}

fn policies(settings: &Settings) -> worker::Result<Response> {
    let list: serde_json::Map<String, serde_json::Value> = settings
        .policies
        .iter()
        .map(|p| {
            let entry = serde_json::json!({
                "version": p.version, "strategy": p.strategy, "failure": p.failure, "shadow": p.shadow,
                "idleGraceMs": p.idle_grace.as_millis() as u64, "legacyHeaders": p.legacy_headers,
                "bandwidths": crate::ConfigurationSpec::from(&p.configuration).bandwidths,
            });
            (p.name.clone(), entry)
        })
        .collect();
    respond::json(200, &list, &[])
}

fn metrics_text() -> worker::Result<Response> {
    let mut response = Response::ok(metrics::with(|m| m.render()))?;
    response.headers_mut().set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")?;
    Ok(response)
}

/// The body, refused above [`MAX_BODY_BYTES`]: by `Content-Length` before reading anything, and
/// by counting chunks as they arrive (a chunked body declares no length), so an oversized body is
/// never held in memory whole.
async fn read_body(req: &Incoming) -> Result<Vec<u8>, ApiError> {
    let too_large = || ApiError::new(413, "BODY_TOO_LARGE", format!("the body is limited to {MAX_BODY_BYTES} bytes"));
    if req.declared_length().is_some_and(|n| n > MAX_BODY_BYTES as u64) {
        return Err(too_large());
    }
    let body = req.bytes_up_to(MAX_BODY_BYTES).await;
    body.map_err(|e| ApiError::bad_request("INVALID_BODY", e.to_string()))?.ok_or_else(too_large)
}

fn runtime(error: worker::Error) -> ApiError {
    ApiError::internal(error.to_string())
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
