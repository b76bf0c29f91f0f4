//! Gateway mode: requests outside the API prefix (`/v1`) are matched against `ROUTES`; an
//! admitted request is forwarded to `ORIGIN` and the origin's answer gets the rate-limit headers
//! (what changes on the way, either way: [`forwarding`]); a rejected one gets 429
//! `application/problem+json` (`quota-exceeded`, `violated-policies`) with `Retry-After`.

use worker::web_sys;

use super::client::{self, Reply, Verdict};
use super::cors;
use super::errors::{self, ApiError};
use super::forwarding;
use super::headers;
use super::incoming::{split_site, Incoming};
use super::log::DecisionLine;
use super::protocol::{Command, Mode};
use super::respond::{self, Answer};
use super::routes::{self, Method, PathReading, Route};
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
    let reading = routes::read_path(req.path());
    let (PathReading::Clear(read) | PathReading::Unclear { known: read, .. }) = &reading;
    // Any reading: the plain one, or one of an origin that splits, merges or strips more.
    let api_path = |parts: &Vec<String>| settings.api_prefix.heads(parts);
    let other_readings = || !routes::one_reading(req.path()) && routes::split_readings(req.path()).iter().any(api_path);
    if api_path(read) || other_readings() {
        let message = format!(
            "this path reads as the service API's ({}) spelled another way; call the API with its plain path",
            settings.api_prefix.as_str()
        );
        return invalid_path(req, settings, message);
    }
    if climbs_out_of_base(req.path(), settings) {
        let message = "this path climbs above the root under some reading (an encoded '/' or '\\', or '..;'), \
                       which would take it out of ORIGIN's base path";
        return invalid_path(req, settings, message.into());
    }
    let parts = match reading {
        PathReading::Clear(parts) => parts,
        PathReading::Unclear { known, error } => return unclear(req, settings, matching, &known, &error, started),
    };
    let Some((route, captures)) = routes::find(&settings.routes, matching, &parts) else {
        return unlimited(req, settings);
    };
    let key = match routes::bucket_key(route, &captures, |name| req.header(name)) {
        Ok(key) => key,
        Err(error) if shadow(settings, route) => return shadow_unkeyed(req, settings, route, &error, started),
        Err(error) => return own(req, settings, respond::counted_challenge(&error, route.key.challenge())),
    };
    let command = consume(route);
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

/// The route's consume.
fn consume(route: &Route) -> Command {
    Command::Consume { policy: route.policy.clone(), tokens: route.cost, mode: Mode::Try }
}

/// Whether `route`'s policy is in shadow mode.
fn shadow(settings: &Settings, route: &Route) -> bool {
    settings.policies.get(&route.policy).is_some_and(|p| p.shadow)
}

/// A path whose reading origins disagree on (see [`routes::read_path`]): refused with `error`
/// where a route could match some reading, as any one reading would let it escape that route's
/// limit. Only shadow routes could: they limit nothing, so it goes on as a refusal shadow mode
/// let through. No route could: it is unlimited anyway.
fn unclear(
    req: &Incoming,
    settings: &Settings,
    matching: Method,
    known: &[String],
    error: &ApiError,
    started: f64,
) -> Step {
    let mut candidates = settings.routes.iter().filter(|route| routes::could_match(route, matching, known));
    let Some(first) = candidates.next() else {
        return unlimited(req, settings);
    };
    if shadow(settings, first) && candidates.all(|route| shadow(settings, route)) {
        return shadow_unkeyed(req, settings, first, error, started);
    }
    own(req, settings, respond::counted_problem(error))
}

/// A request a shadow route cannot key (no key, an unusable one, or a path it cannot read):
/// shadow mode is for trying a policy without affecting traffic, so instead of `error` it goes to
/// the origin as a request no route limits does, marked `EdgeBucket-Shadow: rejected`, and is
/// logged and counted as a shadow rejection with the code it would have had.
fn shadow_unkeyed(req: &Incoming, settings: &Settings, route: &Route, error: &ApiError, started: f64) -> Step {
    let command = consume(route);
    let mut line = DecisionLine::new("", &command, client::js_millis() as f64 - started);
    line.route = Some(&route.pattern);
    line.emit_unkeyed(&error.code, settings.log_decisions);
    forward(req, settings, headers::shadow_unkeyed(), None)
}

/// A request no route limits: forwarded as it is, or 404 when the gateway is off (no routes).
fn unlimited(req: &Incoming, settings: &Settings) -> Step {
    if settings.routes.is_empty() {
        return own(req, settings, respond::counted_problem(&ApiError::not_found(req.path())));
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
    let problem = errors::quota_exceeded(outcome, pending.command.accepted_wait());
    own(req, settings, respond::problem_with(429, problem.to_string(), headers))
}

/// The gateway's own answer, with the CORS headers for the request's `Origin`.
fn own(req: &Incoming, settings: &Settings, answer: Answer) -> Step {
    Step::Answer(with_cors(req, settings, answer))
}

fn with_cors(req: &Incoming, settings: &Settings, answer: Answer) -> Answer {
    answer.with(settings.cors_origins.headers(|| req.header("Origin")))
}

/// 400 `INVALID_PATH`, for a path the gateway refuses under any route.
fn invalid_path(req: &Incoming, settings: &Settings, message: String) -> Step {
    own(req, settings, respond::counted_problem(&ApiError::bad_request("INVALID_PATH", message)))
}

/// Whether `path`, appended to `ORIGIN`'s base path, could reach outside it at an origin that
/// reads more into it than the URL standard does (see [`routes::climbs_above_root`]). The runtime
/// resolves plain dot segments before the worker sees the path, so only such readings climb.
fn climbs_out_of_base(path: &str, settings: &Settings) -> bool {
    let base = settings.origin.as_deref().map_or("", |origin| split_site(origin).1);
    !base.is_empty() && !routes::one_reading(path) && routes::climbs_above_root(path)
}

/// `req` aimed at the origin, the bucket's `headers` to add to the answer.
fn forward(req: &Incoming, settings: &Settings, headers: Vec<(&'static str, String)>, keyed: Option<&str>) -> Step {
    let origin = settings.origin.as_deref().unwrap_or_default();
    let target = format!("{origin}{}{}", req.path(), req.query().map(|q| format!("?{q}")).unwrap_or_default());
    match forwarding::upstream_request(req, &target, keyed, &settings.secrets) {
        Ok(upstream) => Step::Forward(upstream, headers),
        Err(error) => own(req, settings, respond::counted_problem(&ApiError::internal(error.to_string()))),
    }
}

/// 502 `ORIGIN_UNREACHABLE`: the origin did not answer. The bucket's `extra` headers go with it:
/// the request was decided, and its token spent.
pub fn unreachable(req: &Incoming, settings: &Settings, error: &str, extra: &[(&'static str, String)]) -> Answer {
    let error = ApiError::new(502, "ORIGIN_UNREACHABLE", format!("the origin did not answer: {error}"));
    origin_problem(req, settings, &error, extra)
}

/// The gateway's answer when the origin failed a forwarded request: `error`, with the bucket's
/// `extra` headers (none when no route decided it).
fn origin_problem(req: &Incoming, settings: &Settings, error: &ApiError, extra: &[(&'static str, String)]) -> Answer {
    with_cors(req, settings, respond::counted_problem(error).with(extra.iter().cloned()))
}

/// The origin's `response` with the bucket's `extra` headers; a status a response cannot carry
/// is 502 `ORIGIN_INVALID_STATUS`, with them too.
pub fn with_response(
    req: &Incoming,
    settings: &Settings,
    response: web_sys::Response,
    extra: &[(&'static str, String)],
) -> Result<web_sys::Response, Answer> {
    let origin = settings.origin.as_deref().unwrap_or_default();
    forwarding::decorated(response, extra, |location| forwarding::public_location(location, origin, req.site()))
        .map_err(|error| origin_problem(req, settings, &error, extra))
}
