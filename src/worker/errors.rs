//! Errors as HTTP answers: a status and a stable `code`, sent as `application/problem+json`
//! (RFC 9457). Bad input is always a 4xx that changed nothing; 5xx are the service's own faults.

use serde::{Deserialize, Serialize};

use super::headers;
use super::protocol::{round_up, Outcome, MILLISECOND};

/// An error to answer with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// The HTTP status.
    pub status: u16,
    /// Stable machine-readable code: the core's [`Error::code`](crate::Error::code) where one
    /// applies, else a worker code such as `UNKNOWN_POLICY`.
    pub code: String,
    /// What was wrong, for people.
    pub message: String,
}

/// The problem document of an [`ApiError`].
#[derive(Serialize)]
struct Problem<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    title: &'a str,
    status: u16,
    code: &'a str,
    detail: &'a str,
}

impl ApiError {
    /// An error with any status.
    pub fn new(status: u16, code: &str, message: impl Into<String>) -> Self {
        ApiError { status, code: code.to_owned(), message: message.into() }
    }

    /// 400 with `code`.
    pub fn bad_request(code: &str, message: impl Into<String>) -> Self {
        Self::new(400, code, message)
    }

    /// 404 for a path this worker does not serve.
    pub fn not_found(path: &str) -> Self {
        Self::new(404, "NOT_FOUND", format!("no such endpoint: {path}"))
    }

    /// 500 for the operator's configuration (`[vars]`), which callers cannot fix.
    pub fn configuration(message: impl Into<String>) -> Self {
        Self::new(500, "CONFIGURATION_ERROR", message)
    }

    /// 500 for anything else that went wrong on our side.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(500, "INTERNAL_ERROR", message)
    }

    /// 500 `STORAGE_ERROR`: the Durable Object's storage failed (a Rust or a JavaScript error).
    pub fn storage(error: impl Into<worker::Error>) -> Self {
        Self::new(500, "STORAGE_ERROR", format!("storage failed: {}", error.into()))
    }

    /// Whether the error is the caller's (4xx) rather than ours.
    pub fn is_client_error(&self) -> bool {
        (400..500).contains(&self.status)
    }

    /// Reads a problem document back (from a Durable Object's answer); `None` if it is not one.
    pub fn from_problem(status: u16, body: &str) -> Option<Self> {
        #[derive(Deserialize)]
        struct Parts {
            code: String,
            detail: String,
        }
        let parts: Parts = serde_json::from_str(body).ok()?;
        Some(ApiError { status, code: parts.code, message: parts.detail })
    }

    /// The `application/problem+json` body.
    pub fn body(&self) -> String {
        let problem = Problem {
            kind: "about:blank",
            title: reason_phrase(self.status),
            status: self.status,
            code: &self.code,
            detail: &self.message,
        };
        serde_json::to_string(&problem).unwrap_or_default()
    }
}

/// The draft's `quota-exceeded` problem type (draft-ietf-httpapi-ratelimit-headers-10, 5.1).
pub const QUOTA_EXCEEDED: &str = "https://iana.org/assignments/http-problem-types#quota-exceeded";

/// The 429 document for a rejection: `violated-policies` names the bandwidths that refused it
/// (see [`Outcome::violated`]).
pub fn quota_exceeded(outcome: &Outcome, accepted_wait: i64) -> serde_json::Value {
    let violated = outcome.violated(accepted_wait);
    let detail = match (headers::retry_after(outcome), round_up(outcome.wait_nanos, MILLISECOND)) {
        (Some(seconds), _) => format!("retry in {seconds} s"),
        (None, Some(ms)) => format!("granted only in windows whole seconds miss: retry in {ms} ms"),
        (None, None) => "the request can never be granted".to_owned(),
    };
    serde_json::json!({
        "type": QUOTA_EXCEEDED,
        "title": "Request cannot be satisfied as assigned quota has been exceeded",
        "status": 429,
        "code": "QUOTA_EXCEEDED",
        "detail": detail,
        "violated-policies": violated,
    })
}

/// Core errors are bad input: the operation changed nothing.
impl From<crate::Error> for ApiError {
    fn from(error: crate::Error) -> Self {
        ApiError::bad_request(error.code(), error.to_string())
    }
}

/// The standard reason phrase, as the problem's `title`.
pub fn reason_phrase(status: u16) -> &'static str {
    match status {
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        409 => "Conflict",
        413 => "Content Too Large",
        429 => "Too Many Requests",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        _ if status >= 500 => "Internal Server Error",
        _ => "Error",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_quota_exceeded_detail_says_when_to_retry() {
        let outcome = |wait_nanos, no_retry_after| Outcome {
            policy: "p".into(),
            version: 1,
            at_millis: 0,
            allowed: false,
            wait_nanos,
            bandwidths: Vec::new(),
            no_retry_after,
        };
        let detail = |o: &Outcome| quota_exceeded(o, 0)["detail"].as_str().unwrap_or_default().to_owned();
        assert_eq!(detail(&outcome(1_500_000_000, false)), "retry in 2 s");
        assert!(detail(&outcome(1_500_000_000, true)).ends_with("retry in 1500 ms"), "not 'never'");
        assert_eq!(detail(&outcome(crate::INFINITY_DURATION, false)), "the request can never be granted");
    }

    #[test]
    fn core_errors_keep_their_codes() {
        let error = ApiError::from(crate::Error::NonPositiveTokens { tokens: 0 });
        assert_eq!((error.status, error.code.as_str()), (400, "NON_POSITIVE_TOKENS"));
        assert!(error.is_client_error());
    }

    #[test]
    fn body_is_a_problem_document_with_the_code() {
        let body: serde_json::Value =
            serde_json::from_str(&ApiError::bad_request("INVALID_KEY", "too long").body()).unwrap();
        assert_eq!(
            body,
            serde_json::json!({"type": "about:blank", "title": "Bad Request", "status": 400,
                               "code": "INVALID_KEY", "detail": "too long"})
        );
        assert!(!ApiError::internal("x").is_client_error());
        let error = ApiError::new(409, "POLICY_MISMATCH", "other policy");
        assert_eq!(ApiError::from_problem(409, &error.body()), Some(error));
        assert_eq!(ApiError::from_problem(500, "oops"), None);
    }
}
