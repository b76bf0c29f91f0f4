//! Gateway mode: requests outside the API prefix (`/v1`) are matched against `ROUTES`; an
//! admitted request is forwarded to `ORIGIN` (method, headers, body and query unchanged but for
//! the keyed header's lines joined into one and `X-Forwarded-Host`/`-Proto` set; redirects not
//! followed) and the origin's answer gets the rate-limit headers, a `Location` on the origin
//! pointed back at the gateway; a rejected one gets 429 `application/problem+json`
//! (`quota-exceeded`, `violated-policies`) with `Retry-After`.

use worker::web_sys;

use super::client::{self, Reply, Verdict};
use super::cors;
use super::errors::{self, ApiError};
use super::headers;
use super::incoming::{split_site, Incoming};
use super::log::DecisionLine;
use super::protocol::{Command, Mode};
use super::respond::{self, Answer};
use super::routes::{self, Method, PathReading};
use super::settings::Settings;

/// What the gateway needs next for a request.
#[derive(Debug)]
pub enum Step {
    /// The bucket's answer to this consume.
    Ask(Pending),
    /// The origin's answer to this request, to which the headers are added.
    Forward(web_sys::Request, Vec<(&'static str, String)>),
    /// Nothing: this is the gateway's own answer (with the CORS headers `CORS_ORIGINS` allows).
    Answer(Answer),
}

/// A routed request waiting for its bucket's answer.
#[derive(Debug)]
pub struct Pending {
    /// The route's pattern, for the log.
    pattern: String,
    /// The header the bucket is keyed on, if any.
    keyed: Option<String>,
    /// The bucket key.
    pub key: String,
    /// The consume the route asks for.
    pub command: Command,
}

/// The first step for a request outside the service API: one no route limits (a CORS preflight
/// among them, unless a route lists `OPTIONS`) is forwarded as it is.
pub fn start(req: &Incoming, settings: &Settings, started: f64) -> Step {
    let method = req.method();
    let matching = if cors::is_preflight(req, &method) { Method::Preflight } else { Method::Plain(&method) };
    let parts = match routes::read_path(req.path()) {
        PathReading::Clear(parts) => parts,
        PathReading::Unclear { known, error } if routes::could_match(&settings.routes, matching, &known) => {
            return own(req, settings, respond::counted_problem(&error))
        }
        PathReading::Unclear { .. } => return unlimited(req, settings), // no route could limit it
    };
    let Some((route, captures)) = routes::find(&settings.routes, matching, &parts) else {
        return unlimited(req, settings);
    };
    let key = match routes::bucket_key(route, &captures, |name| req.header(name)) {
        Ok(key) => key,
        Err(error) => return own(req, settings, respond::counted_problem(&error)),
    };
    let command = Command::Consume { policy: route.policy.clone(), tokens: route.cost, mode: Mode::Try };
    let pending =
        Pending { pattern: route.pattern.clone(), keyed: route.key.header().map(str::to_owned), key, command };
    match client::refusal(settings, &pending.command) {
        None => Step::Ask(pending),
        Some(error) => {
            let verdict = Verdict { result: Err(error), fallback: None, failure: None };
            admit(req, settings, &pending, verdict, started)
        }
    }
}

/// A request no route limits: forwarded as it is, or 404 when the gateway is off (no routes).
fn unlimited(req: &Incoming, settings: &Settings) -> Step {
    if settings.routes.is_empty() {
        return own(req, settings, respond::problem(&ApiError::not_found(req.path())));
    }
    forward(req, settings, Vec::new(), None)
}

/// The step once the bucket replied: forward an admitted request, refuse a rejected one.
///
/// The bucket refusing the route's own consume (a 4xx: a policy changed without a version bump,
/// so the bucket's smaller capacity cannot take the route's cost, or a deployment still rolling
/// out) is a failure to decide, as a 5xx is, and the policy's failure mode answers: passed on,
/// the 400 would tell the end user their request was bad.
pub fn with_reply(req: &Incoming, settings: &Settings, pending: &Pending, reply: Reply, started: f64) -> Step {
    let reply = match reply {
        Ok((status, body)) if (400..500).contains(&status) => {
            Err(format!("the bucket refused the route's consume ({status}): {body}"))
        }
        other => other,
    };
    let verdict = client::verdict(settings, &pending.key, &pending.command, reply);
    admit(req, settings, pending, verdict, started)
}

fn admit(req: &Incoming, settings: &Settings, pending: &Pending, verdict: Verdict, started: f64) -> Step {
    let mut line = DecisionLine::new(&pending.key, &pending.command, client::js_millis() as f64 - started);
    line.route = Some(&pending.pattern);
    let (outcome, context) = match verdict.logged(line, &pending.command, settings) {
        Ok(logged) => logged,
        Err(error) => return own(req, settings, respond::decision_problem(error, verdict.fallback)),
    };
    let headers = headers::for_outcome(outcome, context);
    if outcome.allowed || context.shadow_rejected {
        return forward(req, settings, headers, pending.keyed.as_deref());
    }
    let problem = errors::quota_exceeded(outcome);
    own(req, settings, respond::problem_with(429, problem.to_string(), headers))
}

/// The gateway's own answer, with the CORS headers for the request's `Origin`.
fn own(req: &Incoming, settings: &Settings, answer: Answer) -> Step {
    Step::Answer(with_cors(req, settings, answer))
}

fn with_cors(req: &Incoming, settings: &Settings, answer: Answer) -> Answer {
    answer.with(settings.cors_origins.headers(|| req.header("Origin")))
}

/// `req` aimed at the origin, the bucket's `headers` to add to the answer.
fn forward(req: &Incoming, settings: &Settings, headers: Vec<(&'static str, String)>, keyed: Option<&str>) -> Step {
    let origin = settings.origin.as_deref().unwrap_or_default();
    let target = format!("{origin}{}{}", req.path(), req.query().map(|q| format!("?{q}")).unwrap_or_default());
    match upstream_request(req, &target, keyed) {
        Ok(upstream) => Step::Forward(upstream, headers),
        Err(error) => own(req, settings, respond::counted_problem(&ApiError::internal(error.to_string()))),
    }
}

/// 502 `ORIGIN_UNREACHABLE`: the origin did not answer.
pub fn unreachable(req: &Incoming, settings: &Settings, error: &str) -> Answer {
    let error = ApiError::new(502, "ORIGIN_UNREACHABLE", format!("the origin did not answer: {error}"));
    with_cors(req, settings, respond::counted_problem(&error))
}

/// The origin's `response` with the bucket's `extra` headers; a status a response cannot carry
/// is 502 `ORIGIN_INVALID_STATUS`.
pub fn with_response(
    req: &Incoming,
    settings: &Settings,
    response: web_sys::Response,
    extra: &[(&str, String)],
) -> Result<web_sys::Response, Answer> {
    let origin = settings.origin.as_deref().unwrap_or_default();
    decorated(response, extra, |location| public_location(location, origin, req.site()))
        .map_err(|error| with_cors(req, settings, respond::counted_problem(&error)))
}

/// The origin's answer with `extra` headers added and its `Location` passed through `relocate`.
///
/// # Errors
/// 502 `ORIGIN_INVALID_STATUS` when its status is one a response cannot carry; 500 when the
/// runtime fails.
fn decorated(
    response: web_sys::Response,
    extra: &[(&str, String)],
    relocate: impl Fn(&str) -> Option<String>,
) -> Result<web_sys::Response, ApiError> {
    let status = response.status();
    if status == 101 {
        // A WebSocket upgrade: a 101 cannot be rebuilt (the Response constructor refuses it) and
        // carries the socket, so it goes back as the origin sent it, without rate-limit headers.
        return Ok(response);
    }
    if !(200..=599).contains(&status) {
        // The Response constructor refuses these.
        let detail = format!("the origin answered status {status}, which HTTP responses cannot carry");
        return Err(ApiError::new(502, "ORIGIN_INVALID_STATUS", detail));
    }
    let internal = |error: worker::Error| ApiError::internal(error.to_string());
    let headers = mutable_copy(&worker::Headers(response.headers())).map_err(internal)?;
    if let Some(location) = headers.get("Location").ok().flatten().and_then(|l| relocate(&l)) {
        headers.set("Location", &location).map_err(internal)?;
    }
    for (name, value) in extra {
        let value = match *name {
            "Access-Control-Expose-Headers" => merged_list(headers.get(name).ok().flatten(), value),
            _ => value.clone(),
        };
        headers.set(name, &value).map_err(internal)?;
    }
    let response = worker::Response::from(response).with_headers(headers);
    Ok(response.into())
}

/// Copies `headers` into a new, mutable header map (fetched responses have immutable ones).
fn mutable_copy(headers: &worker::Headers) -> worker::Result<worker::Headers> {
    let copy = worker::Headers::new();
    for (name, value) in headers.entries() {
        copy.append(&name, &value)?;
    }
    Ok(copy)
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

/// `location` as the client should see it: a URL on the origin (`ORIGIN`, then a path, query or
/// nothing) becomes the same URL on the gateway's own `site`, as a reverse proxy's redirect
/// rewriting does (nginx's `proxy_redirect default`). Anything else (a relative URL, another
/// host) is `None`: it stays as the origin sent it. Scheme and host compare without case, the
/// origin's base path exactly.
fn public_location(location: &str, origin: &str, site: &str) -> Option<String> {
    let (origin_site, base) = split_site(origin);
    let (location_site, rest) = split_site(location);
    if location_site.is_empty() || !location_site.eq_ignore_ascii_case(origin_site) {
        return None;
    }
    let tail = rest.strip_prefix(base)?;
    match tail.chars().next() {
        None => Some(format!("{site}/")),
        Some('/') => Some(format!("{site}{tail}")),
        Some('?' | '#') => Some(format!("{site}/{tail}")),
        Some(_) => None, // `/base2` is not under `/base`
    }
}

/// The same request aimed at `target`: method, headers (less `Host`) and body stream.
/// - `X-Forwarded-Host` and `X-Forwarded-Proto` say where the client sent it, replacing any the
///   client sent (which an origin building links from them must not trust).
/// - A GET or HEAD body (which HTTP gives no meaning and fetch refuses to send) is dropped.
/// - The `keyed` header goes as the one value the bucket was keyed on: sent twice, it would
///   otherwise reach the origin as two lines, of which many origins read the first, while each
///   new second line named a new bucket.
fn upstream_request(req: &Incoming, target: &str, keyed: Option<&str>) -> worker::Result<web_sys::Request> {
    let inner = req.raw();
    let headers = web_sys::Headers::new_with_headers(&inner.headers())?;
    headers.delete("Host")?;
    if let Some((scheme, host)) = req.site().split_once("://") {
        headers.set("X-Forwarded-Host", host)?;
        headers.set("X-Forwarded-Proto", scheme)?;
    }
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
    use super::{merged_list, public_location};

    #[test]
    fn redirects_to_the_origin_point_back_at_the_gateway() {
        let at = |location, origin| public_location(location, origin, "https://gw.example");
        let origin = "http://10.0.0.5:8080";
        assert_eq!(
            at("http://10.0.0.5:8080/login?next=%2F", origin).as_deref(),
            Some("https://gw.example/login?next=%2F")
        );
        assert_eq!(at("HTTP://10.0.0.5:8080", origin).as_deref(), Some("https://gw.example/"));
        assert_eq!(at("http://10.0.0.5:8080?x#y", origin).as_deref(), Some("https://gw.example/?x#y"));
        for elsewhere in ["/login", "login", "https://10.0.0.5:8080/", "http://10.0.0.5/", "https://idp.example/auth"] {
            assert_eq!(at(elsewhere, origin), None, "{elsewhere}");
        }
        let based = "https://api.example/base";
        assert_eq!(at("https://api.example/base/x", based).as_deref(), Some("https://gw.example/x"));
        assert_eq!(at("https://api.example/base", based).as_deref(), Some("https://gw.example/"));
        assert_eq!(at("https://api.example/base2/x", based), None);
        assert_eq!(at("https://api.example/other", based), None);
        assert_eq!(at("https://api.example/Base/x", based), None, "paths compare exactly");
    }

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
