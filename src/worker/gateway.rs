//! Gateway mode: requests outside `/v1` are matched against `ROUTES`; an admitted request is
//! forwarded to `ORIGIN` (method, headers, body and query unchanged but for the keyed header's
//! lines joined into one, redirects not followed)
//! and the origin's answer gets the rate-limit headers; a rejected one gets 429
//! `application/problem+json` (`quota-exceeded`, `violated-policies`) with `Retry-After`.

use worker::{web_sys, Env, Fetch, Response};

use super::client;
use super::cors;
use super::errors::{self, ApiError};
use super::headers::{self, Context};
use super::incoming::Incoming;
use super::log::DecisionLine;
use super::protocol::{Command, Mode};
use super::respond;
use super::routes::{self, Method};
use super::settings::Settings;

/// Answers a request outside the service API: the origin's answer, or the gateway's own (with
/// the CORS headers `CORS_ORIGINS` allows).
///
/// # Errors
/// Only if the runtime fails to build a response.
pub async fn handle(req: &Incoming, env: &Env, settings: &Settings, started: f64) -> worker::Result<Response> {
    let own = match admit(req, env, settings, started).await {
        Admission::Forward(headers, keyed) => match forward(req, settings, &headers, keyed).await {
            Ok(response) => return Ok(response),
            Err(error) => respond::counted_problem(&error),
        },
        Admission::Refuse(response) => {
            req.drain().await; // a refused upload is read (within bounds), not reset
            response
        }
    };
    respond::add(own?, &settings.cors_origins.headers(|| req.header("Origin")))
}

/// What the gateway does with a request.
enum Admission<'s> {
    /// Send it to the origin and add these headers to the answer; the header the bucket was keyed
    /// on, if any.
    Forward(Vec<(&'static str, String)>, Option<&'s str>),
    /// Answer it without the origin.
    Refuse(worker::Result<Response>),
}

/// Decides a request by its route; one no route limits (a CORS preflight among them, unless a
/// route lists `OPTIONS`) is forwarded as it is.
async fn admit<'s>(req: &Incoming, env: &Env, settings: &'s Settings, started: f64) -> Admission<'s> {
    let method = req.method();
    let parts = match routes::segments(req.path()) {
        Ok(parts) => parts,
        Err(error) => return Admission::Refuse(respond::counted_problem(&error)),
    };
    let matching = if cors::is_preflight(req, &method) { Method::Preflight } else { Method::Plain(&method) };
    let Some((route, captures)) = routes::find(&settings.routes, matching, &parts) else {
        if settings.routes.is_empty() {
            return Admission::Refuse(respond::problem(&ApiError::not_found(req.path())));
        }
        return Admission::Forward(Vec::new(), None);
    };
    let key = match routes::bucket_key(route, &captures, |name| req.header(name)) {
        Ok(key) => key,
        Err(error) => return Admission::Refuse(respond::counted_problem(&error)),
    };
    let command = Command::Consume { policy: route.policy.clone(), tokens: route.cost, mode: Mode::Try };
    let verdict = client::decide(env, settings, &key, &command).await;
    let mut line = DecisionLine::new(&key, &command, client::js_millis() as f64 - started);
    line.route = Some(&route.pattern);
    let outcome = match &verdict.result {
        Ok(outcome) => outcome,
        Err(error) => {
            line.emit(verdict.fallback, Some(error), verdict.failure.as_deref(), settings.log_decisions);
            return Admission::Refuse(respond::decision_problem(error, verdict.fallback));
        }
    };
    let policy = settings.policies.get(&route.policy);
    let shadow_rejected = !outcome.allowed && policy.is_some_and(|p| p.shadow);
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
        estimate: false,
    };
    let headers = headers::for_outcome(outcome, context);
    if outcome.allowed || shadow_rejected {
        return Admission::Forward(headers, route.key.header());
    }
    let problem = errors::quota_exceeded(outcome);
    Admission::Refuse(respond::problem_with(429, problem.to_string(), &headers))
}

/// Sends `req` to the origin and returns its answer with `extra` headers added.
///
/// # Errors
/// 502 `ORIGIN_UNREACHABLE` when the origin does not answer, `ORIGIN_INVALID_STATUS` when its
/// status is one a response cannot carry; 500 when the runtime fails.
async fn forward(
    req: &Incoming,
    settings: &Settings,
    extra: &[(&str, String)],
    keyed: Option<&str>,
) -> Result<Response, ApiError> {
    let origin = settings.origin.as_deref().unwrap_or_default();
    let target = format!("{origin}{}{}", req.path(), req.query().map(|q| format!("?{q}")).unwrap_or_default());
    let internal = |error: worker::Error| ApiError::internal(error.to_string());
    let upstream = upstream_request(req.raw(), &target, keyed).map_err(internal)?;
    let response = Fetch::Request(upstream.into())
        .send()
        .await
        .map_err(|error| ApiError::new(502, "ORIGIN_UNREACHABLE", format!("the origin did not answer: {error}")))?;
    let status = response.status_code();
    if status == 101 {
        // A WebSocket upgrade: a 101 cannot be rebuilt (the Response constructor refuses it) and
        // carries the socket, so it goes back as the origin sent it, without rate-limit headers.
        return Ok(response);
    }
    if !(200..=599).contains(&status) {
        // The Response constructor refuses these (workers-rs would panic on it).
        let detail = format!("the origin answered status {status}, which HTTP responses cannot carry");
        return Err(ApiError::new(502, "ORIGIN_INVALID_STATUS", detail));
    }
    let headers = respond::mutable_copy(response.headers()).map_err(internal)?;
    for (name, value) in extra {
        let value = match *name {
            "Access-Control-Expose-Headers" => merged_list(headers.get(name).ok().flatten(), value),
            _ => value.clone(),
        };
        headers.set(name, &value).map_err(internal)?;
    }
    let (_, body) = response.into_parts();
    Ok(Response::builder().with_status(status).with_headers(headers).body(body))
}

/// The origin's comma-separated list with ours added, each name once (compared without case).
fn merged_list(origin: Option<String>, ours: &str) -> String {
    let mut names: Vec<&str> = Vec::new();
    for name in origin.as_deref().unwrap_or_default().split(',').chain(ours.split(',')).map(str::trim) {
        if !name.is_empty() && !names.iter().any(|known| known.eq_ignore_ascii_case(name)) {
            names.push(name);
        }
    }
    names.join(", ")
}

/// The same request aimed at `target`: method, headers (less `Host`) and body stream. A GET or
/// HEAD body (which HTTP gives no meaning and fetch refuses to send) is dropped. The `keyed`
/// header goes as the one value the bucket was keyed on: sent twice, it would otherwise reach
/// the origin as two lines, of which many origins read the first, while each new second line
/// named a new bucket.
fn upstream_request(inner: &web_sys::Request, target: &str, keyed: Option<&str>) -> worker::Result<web_sys::Request> {
    let headers = web_sys::Headers::new_with_headers(&inner.headers())?;
    headers.delete("Host")?;
    if let Some(name) = keyed {
        if let Some(value) = headers.get(name)? {
            headers.set(name, &value)?;
        }
    }
    let init = web_sys::RequestInit::new();
    let method = inner.method();
    init.set_method(&method);
    init.set_headers(&headers);
    if let Some(body) = inner.body().filter(|_| method != "GET" && method != "HEAD") {
        init.set_body(&body);
    }
    init.set_redirect(web_sys::RequestRedirect::Manual);
    Ok(web_sys::Request::new_with_str_and_init(target, &init)?)
}

#[cfg(test)]
mod tests {
    use super::merged_list;

    #[test]
    fn exposed_headers_are_listed_once() {
        assert_eq!(merged_list(None, "RateLimit, Retry-After"), "RateLimit, Retry-After");
        assert_eq!(
            merged_list(Some("ratelimit,X-Trace".into()), "RateLimit, Retry-After"),
            "ratelimit, X-Trace, Retry-After"
        );
        assert_eq!(merged_list(Some(" , ".into()), "RateLimit"), "RateLimit");
    }
}
