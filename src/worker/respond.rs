//! The worker's own answers: JSON, problem documents, and decision headers, as plain data.
//!
//! An [`Answer`] is built in Rust and turned into a `Response` by `entry.js` from three values
//! (status, headers as one string, body). Building it through the runtime's `Headers` from
//! Rust crossed the JavaScript boundary twice per header, each crossing a string copy and a typed
//! array view: about 0.5 of the 11.8 KB of JavaScript garbage per decision (docs/worker.md,
//! "Speed"). The one exception is the bucket object's `fetch`, which only refuses and returns
//! a workers-rs `Response`.

use serde::Serialize;

use super::errors::ApiError;
use super::failure::FailureMode;
use super::headers::EXPOSED;
use super::metrics;

/// A response of the worker's own: status, headers (`Content-Type` first) and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// The HTTP status.
    pub status: u16,
    /// Header names and values, in the order they are set.
    pub headers: Vec<(&'static str, String)>,
    /// The body.
    pub body: String,
}

/// Separates names and values in [`Answer::head`]: a header can hold no line break.
const SEPARATOR: char = '\n';

impl Answer {
    /// `body` with `status`, typed `content_type`.
    pub fn new(status: u16, content_type: &'static str, body: String) -> Self {
        Answer { status, headers: vec![("Content-Type", content_type.to_owned())], body }
    }

    /// Adds `headers`, replacing none: the worker never names a header twice.
    #[must_use]
    pub fn with(mut self, headers: impl IntoIterator<Item = (&'static str, String)>) -> Self {
        self.headers.extend(headers);
        self
    }

    /// The headers as one string, `name\nvalue\nname\nvalue…`, for `entry.js` to split: one
    /// string crosses the boundary instead of two per header.
    ///
    /// # Errors
    /// A value holding a line break (never built here, and refused by the runtime's `Headers`
    /// anyway): split on, it would shift every later name and value.
    pub fn head(&self) -> Result<String, ApiError> {
        let mut head = String::with_capacity(self.headers.iter().map(|(n, v)| n.len() + v.len() + 2).sum());
        for (name, value) in &self.headers {
            if value.contains(['\r', '\n']) {
                return Err(ApiError::internal(format!("the {name} header holds a line break")));
            }
            if !head.is_empty() {
                head.push(SEPARATOR);
            }
            head.push_str(name);
            head.push(SEPARATOR);
            head.push_str(value);
        }
        Ok(head)
    }
}

/// A JSON answer with `status` and already serialized `body`.
pub fn json_text(status: u16, body: String) -> Answer {
    Answer::new(status, "application/json", body)
}

/// A JSON answer with `status`, `body` and extra `headers`; a body that cannot be serialized
/// (never one of the worker's own types) is a 500 problem.
pub fn json<T: Serialize>(status: u16, body: &T, headers: Vec<(&'static str, String)>) -> Answer {
    match serde_json::to_string(body) {
        Ok(text) => json_text(status, text).with(headers),
        Err(error) => problem(&ApiError::internal(error.to_string())),
    }
}

/// [`problem`] for an error answered outright, counted in the metrics by its code (a decision's
/// error is counted with its log line instead).
pub fn counted_problem(error: &ApiError) -> Answer {
    counted_challenge(error, BEARER.to_owned())
}

/// [`counted_problem`] with `challenge` as a 401's `WWW-Authenticate`, for a credential that does
/// not go in `Authorization: Bearer` (a gateway route's API key in its own header).
pub fn counted_challenge(error: &ApiError, challenge: String) -> Answer {
    metrics::with(|m| m.error(&error.code));
    challenged_problem(error, challenge)
}

/// How the admin and service endpoints take their tokens: `Authorization: Bearer`.
const BEARER: &str = "Bearer";

/// The problem document of `error`, with `WWW-Authenticate: Bearer` for 401 and `Allow` for 405.
pub fn problem(error: &ApiError) -> Answer {
    challenged_problem(error, BEARER.to_owned())
}

fn challenged_problem(error: &ApiError, challenge: String) -> Answer {
    let extra = match error.status {
        401 => vec![("WWW-Authenticate", challenge)],
        // api::method_not_allowed writes the methods as "allowed: GET, DELETE".
        405 => vec![("Allow", error.message.trim_start_matches("allowed: ").to_owned())],
        _ => Vec::new(),
    };
    problem_with(error.status, error.body(), extra)
}

/// A decision's error. One that a failure mode produced (fail-closed) says so in
/// `EdgeBucket-Fallback`, as every fallback does.
pub fn decision_problem(error: &ApiError, fallback: Option<FailureMode>) -> Answer {
    let Some(mode) = fallback else { return problem(error) };
    let extra =
        [("EdgeBucket-Fallback", mode.label().to_owned()), ("Access-Control-Expose-Headers", EXPOSED.to_owned())];
    problem_with(error.status, error.body(), extra)
}

/// A problem document already serialized, with extra `headers`.
pub fn problem_with(status: u16, body: String, headers: impl IntoIterator<Item = (&'static str, String)>) -> Answer {
    Answer::new(status, "application/problem+json", body).with(headers)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_head_alternates_names_and_values() {
        let answer = json_text(200, "{}".into()).with([("RateLimit", "\"b\";r=1;t=0".to_owned())]);
        assert_eq!(answer.head().unwrap(), "Content-Type\napplication/json\nRateLimit\n\"b\";r=1;t=0");
    }

    #[test]
    fn a_value_with_a_line_break_is_refused_not_split() {
        let answer = json_text(200, "{}".into()).with([("Vary", "Origin\nX-Injected".to_owned())]);
        assert_eq!(answer.head().unwrap_err().code, "INTERNAL_ERROR");
    }

    #[test]
    fn problems_carry_their_status_type_and_extra_headers() {
        let answer = problem(&ApiError::new(405, "METHOD_NOT_ALLOWED", "allowed: GET, DELETE"));
        assert_eq!(answer.status, 405);
        assert_eq!(
            answer.headers,
            [("Content-Type", "application/problem+json".to_owned()), ("Allow", "GET, DELETE".to_owned())]
        );
        let unauthorized = problem(&ApiError::new(401, "UNAUTHORIZED", "no token"));
        assert_eq!(unauthorized.headers[1], ("WWW-Authenticate", "Bearer".to_owned()));
    }
}
