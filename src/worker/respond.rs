//! Building responses: JSON, problem documents, and decision headers.

use serde::Serialize;
use worker::{Headers, Response};

use super::errors::ApiError;
use super::failure::FailureMode;
use super::headers::EXPOSED;
use super::metrics;

/// A JSON response with `status` and already serialized `body`.
///
/// # Errors
/// Only if the runtime refuses the headers.
pub fn json_text(status: u16, body: String) -> worker::Result<Response> {
    with_type(Response::ok(body)?.with_status(status), "application/json")
}

/// The bare 500 for a response the runtime refused to build (nothing better can be built then).
pub fn runtime_failure(error: &worker::Error) -> Response {
    Response::error(error.to_string(), 500).expect("500 is an error status")
}

/// A JSON response with `status`, `body` and extra `headers`.
///
/// # Errors
/// Only if serialization or the runtime fails.
pub fn json<T: Serialize>(status: u16, body: &T, headers: &[(&str, String)]) -> worker::Result<Response> {
    let text = serde_json::to_string(body).map_err(|e| worker::Error::RustError(e.to_string()))?;
    add(json_text(status, text)?, headers)
}

/// [`problem`] for an error answered outright, counted in the metrics by its code (a decision's
/// error is counted with its log line instead).
///
/// # Errors
/// Only if the runtime refuses the headers.
pub fn counted_problem(error: &ApiError) -> worker::Result<Response> {
    metrics::with(|m| m.error(&error.code));
    problem(error)
}

/// The problem document of `error`, with `WWW-Authenticate` for 401 and `Allow` for 405.
///
/// # Errors
/// Only if the runtime refuses the headers.
pub fn problem(error: &ApiError) -> worker::Result<Response> {
    let extra = match error.status {
        401 => vec![("WWW-Authenticate", "Bearer".to_owned())],
        // api::method_not_allowed writes the methods as "allowed: GET, DELETE".
        405 => vec![("Allow", error.message.trim_start_matches("allowed: ").to_owned())],
        _ => Vec::new(),
    };
    problem_with(error.status, error.body(), &extra)
}

/// A decision's error. One that a failure mode produced (fail-closed) says so in
/// `EdgeBucket-Fallback`, as every fallback does.
///
/// # Errors
/// Only if the runtime refuses the headers.
pub fn decision_problem(error: &ApiError, fallback: Option<FailureMode>) -> worker::Result<Response> {
    let Some(mode) = fallback else { return problem(error) };
    let extra =
        [("EdgeBucket-Fallback", mode.label().to_owned()), ("Access-Control-Expose-Headers", EXPOSED.to_owned())];
    problem_with(error.status, error.body(), &extra)
}

/// A problem document already serialized, with extra `headers`.
///
/// # Errors
/// Only if the runtime refuses the headers.
pub fn problem_with(status: u16, body: String, headers: &[(&str, String)]) -> worker::Result<Response> {
    add(with_type(Response::ok(body)?.with_status(status), "application/problem+json")?, headers)
}

/// Sets `headers` on `response`.
///
/// # Errors
/// Only if the runtime refuses a header.
pub fn add(mut response: Response, headers: &[(&str, String)]) -> worker::Result<Response> {
    for (name, value) in headers {
        response.headers_mut().set(name, value)?;
    }
    Ok(response)
}

fn with_type(mut response: Response, content_type: &str) -> worker::Result<Response> {
    response.headers_mut().set("Content-Type", content_type)?;
    Ok(response)
}

/// Copies `headers` into a new, mutable header map (fetched responses have immutable ones).
///
/// # Errors
/// Only if the runtime fails.
pub fn mutable_copy(headers: &Headers) -> worker::Result<Headers> {
    let copy = Headers::new();
    for (name, value) in headers.entries() {
        copy.append(&name, &value)?;
    }
    Ok(copy)
}
