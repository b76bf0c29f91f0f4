//! The JSON service API under `/v1` (or `[vars] API_PREFIX`, see [`ApiPrefix`]): which endpoint a
//! request is, and what its body means.
//!
//! | endpoint | role | body |
//! |---|---|---|
//! | `POST /v1/buckets/{key}/consume` | service | `{"policy", "tokens"?: 1, "mode"?: "try" \| "estimate" \| "ignore-limits"}` |
//! | `POST /v1/buckets/{key}/reserve` | service | `{"policy", "tokens"?: 1, "maxWait": "2s"}` |
//! | `GET /v1/buckets/{key}` | admin | |
//! | `PUT /v1/buckets/{key}/configuration` | admin | `{"policy", "strategy"?: "AS_IS" \| …}` |
//! | `POST /v1/buckets/{key}/reset` | admin | |
//! | `DELETE /v1/buckets/{key}` | admin | |
//! | `GET /v1/policies` | admin | |
//! | `GET /v1/metrics` | admin | |

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::auth::Role;
use super::errors::ApiError;
use super::keys;
use super::protocol::{round_up, BandwidthView, Command, Mode, Outcome, MILLISECOND};
use crate::{DurationSpec, TokensInheritanceStrategy};

/// Where the service API lives: `[vars] API_PREFIX`, `/v1` by default. Every other path belongs
/// to the gateway, so an origin with paths of its own under `/v1` needs the API moved, for
/// example to `/edgebucket/v1`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiPrefix(String);

impl Default for ApiPrefix {
    fn default() -> ApiPrefix {
        ApiPrefix("/v1".into())
    }
}

impl ApiPrefix {
    /// A prefix such as `/v1` or `/edgebucket/v1`: segments of URL-safe characters (letters,
    /// digits, `-`, `.`, `_`, `~`), no `.` or `..` segment, no trailing `/`. Requests are told
    /// apart by their path as sent, so a prefix that percent-encoding or dot segments could
    /// spell another way is refused.
    ///
    /// # Errors
    /// A message saying what a prefix looks like.
    pub fn parse(text: &str) -> Result<ApiPrefix, String> {
        let safe = |segment: &str| {
            !matches!(segment, "" | "." | "..")
                && segment.bytes().all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b))
        };
        match text.strip_prefix('/') {
            Some(rest) if rest.split('/').all(safe) => Ok(ApiPrefix(text.to_owned())),
            _ => Err(format!(
                "API_PREFIX {text:?} must be a path such as /v1 or /edgebucket/v1: segments of letters, \
                 digits, '-', '.', '_' or '~', without a trailing /"
            )),
        }
    }

    /// The prefix as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Its segments, without the slashes.
    pub fn segments(&self) -> impl Iterator<Item = &str> {
        self.0[1..].split('/')
    }

    /// Whether decoded path segments (see [`read_path`](super::routes::read_path)) start with
    /// the prefix's: a path the gateway must not take, however it was spelled.
    pub fn heads(&self, parts: &[String]) -> bool {
        let mut parts = parts.iter();
        self.segments().all(|segment| parts.next().is_some_and(|part| part == segment))
    }

    /// What follows the prefix in `path` (empty, or starting with `/`); `None` when `path` is
    /// not under it.
    fn rest<'p>(&self, path: &'p str) -> Option<&'p str> {
        path.strip_prefix(self.0.as_str()).filter(|rest| rest.is_empty() || rest.starts_with('/'))
    }
}

/// Largest request body, in bytes.
pub const MAX_BODY_BYTES: usize = 16 * 1024;

/// A service API endpoint, with the bucket key where it has one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// `POST /v1/buckets/{key}/consume`
    Consume(String),
    /// `POST /v1/buckets/{key}/reserve`
    Reserve(String),
    /// `GET /v1/buckets/{key}`
    Inspect(String),
    /// `PUT /v1/buckets/{key}/configuration`
    Replace(String),
    /// `POST /v1/buckets/{key}/reset`
    Reset(String),
    /// `DELETE /v1/buckets/{key}`
    Delete(String),
    /// `GET /v1/policies`
    Policies,
    /// `GET /v1/metrics`
    Metrics,
}

impl Endpoint {
    /// Who may call it.
    pub fn role(&self) -> Role {
        match self {
            Endpoint::Consume(_) | Endpoint::Reserve(_) => Role::Service,
            _ => Role::Admin,
        }
    }
}

/// The endpoint for `method` and `path`, `None` when the path is not under `prefix`.
///
/// # Errors
/// 404 `NOT_FOUND`, 405 `METHOD_NOT_ALLOWED` (the message lists the allowed methods),
/// 400 `INVALID_KEY`.
pub fn endpoint(method: &str, path: &str, prefix: &ApiPrefix) -> Result<Option<Endpoint>, ApiError> {
    let Some(rest) = prefix.rest(path) else {
        return Ok(None);
    };
    let parts: Vec<&str> = rest.split('/').skip(1).collect();
    // HEAD is GET without the body (RFC 9110 §9.3.2), which the runtime leaves out.
    let (allowed, make): (&[&str], fn(String) -> Endpoint) = match parts.as_slice() {
        ["policies"] => (&["GET", "HEAD"], |_| Endpoint::Policies),
        ["metrics"] => (&["GET", "HEAD"], |_| Endpoint::Metrics),
        ["buckets", _] => match method {
            "DELETE" => (&["GET", "HEAD", "DELETE"], Endpoint::Delete),
            _ => (&["GET", "HEAD", "DELETE"], Endpoint::Inspect),
        },
        ["buckets", _, "consume"] => (&["POST"], Endpoint::Consume),
        ["buckets", _, "reserve"] => (&["POST"], Endpoint::Reserve),
        ["buckets", _, "configuration"] => (&["PUT"], Endpoint::Replace),
        ["buckets", _, "reset"] => (&["POST"], Endpoint::Reset),
        _ => return Err(ApiError::not_found(path)),
    };
    if !allowed.contains(&method) {
        return Err(method_not_allowed(allowed));
    }
    let key = match parts.get(1) {
        Some(segment) if parts[0] == "buckets" => keys::check(&keys::decode(segment)?)?,
        _ => String::new(),
    };
    let endpoint = make(key);
    if let Endpoint::Consume(key) | Endpoint::Reserve(key) = &endpoint {
        if key.starts_with(keys::GATEWAY_PREFIX) {
            let message = format!(
                "keys starting with {:?} are the gateway's buckets; only admins address them",
                keys::GATEWAY_PREFIX
            );
            return Err(ApiError::bad_request("INVALID_KEY", message));
        }
    }
    Ok(Some(endpoint))
}

/// 405 whose message lists the allowed methods (the `Allow` header repeats them).
pub fn method_not_allowed(allowed: &[&str]) -> ApiError {
    ApiError::new(405, "METHOD_NOT_ALLOWED", format!("allowed: {}", allowed.join(", ")))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ConsumeBody {
    policy: String,
    /// Absent is 1; `null` is not a number of tokens (an error, like any other non-number).
    #[serde(default = "one_token")]
    tokens: Value,
    #[serde(default)]
    mode: Mode,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ReserveBody {
    policy: String,
    /// Absent is 1; `null` is not a number of tokens (an error, like any other non-number).
    #[serde(default = "one_token")]
    tokens: Value,
    max_wait: DurationSpec,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ReplaceBody {
    policy: String,
    strategy: Option<TokensInheritanceStrategy>,
}

/// The command an endpoint's body asks for. Bodies of endpoints without one are ignored.
///
/// # Errors
/// 400: `INVALID_JSON`, `INVALID_REQUEST` (shape), `INVALID_TOKENS` (not a whole number in the
/// 64-bit range), the core's `NON_POSITIVE_TOKENS`, `NON_POSITIVE_MAX_WAIT`, `INVALID_DURATION`.
pub fn command(endpoint: &Endpoint, body: &[u8]) -> Result<Command, ApiError> {
    Ok(match endpoint {
        Endpoint::Consume(_) => {
            let b: ConsumeBody = parse(body)?;
            Command::Consume { policy: b.policy, tokens: tokens(b.tokens)?, mode: b.mode }
        }
        Endpoint::Reserve(_) => {
            let b: ReserveBody = parse(body)?;
            Command::Reserve { policy: b.policy, tokens: tokens(b.tokens)?, max_wait_nanos: max_wait(&b.max_wait)? }
        }
        Endpoint::Replace(_) => {
            let b: ReplaceBody = parse(body)?;
            Command::Replace { policy: b.policy, strategy: b.strategy }
        }
        Endpoint::Inspect(_) => Command::Inspect,
        Endpoint::Reset(_) => Command::Reset,
        Endpoint::Delete(_) => Command::Delete,
        Endpoint::Policies | Endpoint::Metrics => return Err(ApiError::internal("not a bucket endpoint")),
    })
}

fn parse<T: DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    // One parse for a good body. (A struct also reads from a JSON array, hence the `{`.)
    if body.trim_ascii_start().starts_with(b"{") {
        if let Ok(parsed) = serde_json::from_slice(body) {
            return Ok(parsed);
        }
    }
    // Which error: read as any JSON first, so that a body that is not JSON says so.
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request("INVALID_JSON", format!("the body is not JSON: {e}")))?;
    if !value.is_object() {
        return Err(ApiError::bad_request("INVALID_JSON", "the body must be a JSON object"));
    }
    // Read again from the text, not from `value`: a `Value` keeps the last of a repeated member,
    // which a filter in front reading the first would see otherwise; the struct refuses it.
    serde_json::from_slice(body).map_err(|e| ApiError::bad_request("INVALID_REQUEST", e.to_string()))
}

fn one_token() -> Value {
    Value::from(1)
}

fn tokens(value: Value) -> Result<i64, ApiError> {
    match value.as_i64() {
        Some(tokens) if tokens <= 0 => Err(crate::Error::NonPositiveTokens { tokens }.into()),
        Some(tokens) => Ok(tokens),
        None => Err(ApiError::bad_request(
            "INVALID_TOKENS",
            format!("tokens must be a whole number from 1 to {}, got {value}", i64::MAX),
        )),
    }
}

fn max_wait(spec: &DurationSpec) -> Result<i64, ApiError> {
    let nanos = spec.to_nanos()?;
    if nanos <= 0 {
        return Err(crate::Error::NonPositiveMaxWait { nanos: 0 }.into());
    }
    i64::try_from(nanos).map_err(|_| {
        ApiError::bad_request("INVALID_DURATION", format!("maxWait is at most {} ns (about 292 years)", i64::MAX))
    })
}

/// A decision as the API answers it. Nanoseconds become milliseconds rounded up (never early),
/// `null` for never.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DecisionBody<'a> {
    /// Consumed, could be consumed, or reserved.
    pub allowed: bool,
    /// The bucket key.
    pub key: &'a str,
    /// The bucket's policy and version.
    pub policy: &'a str,
    /// The policy version.
    pub version: u64,
    /// Tokens available on every bandwidth now, never negative.
    pub remaining: i64,
    /// When not allowed, until it could be; when reserved, how long to wait first.
    pub wait_ms: Option<i64>,
    /// The decision time on the deciding clock, epoch milliseconds.
    pub at: i64,
    /// Each bandwidth after the decision.
    pub bandwidths: Vec<BandwidthBody<'a>>,
    /// `local` when the in-isolate fallback decided, `open` when failing open, `closed` when a
    /// shadow policy failing closed let its refusal through.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fallback: Option<&'static str>,
    /// True when shadow mode admitted a request the bucket rejected.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub shadow_rejected: bool,
}

/// One bandwidth in a [`DecisionBody`].
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BandwidthBody<'a> {
    /// Its header item name.
    pub name: &'a str,
    /// Capacity.
    pub capacity: i64,
    /// Seconds to refill from empty.
    pub window_seconds: i64,
    /// Whole tokens available (negative in debt).
    pub available: i64,
    /// Until it holds the request's tokens again.
    pub wait_ms: Option<i64>,
    /// Until it is full.
    pub full_ms: Option<i64>,
}

impl<'a> DecisionBody<'a> {
    /// The body for `outcome` on `key`.
    pub fn new(key: &'a str, outcome: &'a Outcome) -> Self {
        DecisionBody {
            allowed: outcome.allowed,
            key,
            policy: &outcome.policy,
            version: outcome.version,
            remaining: outcome.remaining(),
            wait_ms: millis_up(outcome.wait_nanos),
            at: outcome.at_millis,
            bandwidths: outcome.bandwidths.iter().map(BandwidthBody::new).collect(),
            fallback: None,
            shadow_rejected: false,
        }
    }
}

impl<'a> BandwidthBody<'a> {
    fn new(b: &'a BandwidthView) -> Self {
        BandwidthBody {
            name: &b.name,
            capacity: b.capacity,
            window_seconds: b.window_seconds,
            available: b.available,
            wait_ms: millis_up(b.wait_nanos),
            full_ms: millis_up(b.full_nanos),
        }
    }
}

fn millis_up(nanos: i64) -> Option<i64> {
    round_up(nanos, MILLISECOND)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::INFINITY_DURATION;

    fn endpoint(method: &str, path: &str) -> Result<Option<Endpoint>, ApiError> {
        super::endpoint(method, path, &ApiPrefix::default())
    }

    #[test]
    fn endpoints_and_roles() {
        let e = |m, p| endpoint(m, p).unwrap().unwrap();
        assert_eq!(e("POST", "/v1/buckets/user%2F1/consume"), Endpoint::Consume("user/1".into()));
        assert_eq!(e("POST", "/v1/buckets/u/reserve"), Endpoint::Reserve("u".into()));
        assert_eq!(e("GET", "/v1/buckets/u"), Endpoint::Inspect("u".into()));
        assert_eq!(e("DELETE", "/v1/buckets/u"), Endpoint::Delete("u".into()));
        assert_eq!(e("PUT", "/v1/buckets/u/configuration"), Endpoint::Replace("u".into()));
        assert_eq!(e("POST", "/v1/buckets/u/reset"), Endpoint::Reset("u".into()));
        assert_eq!(e("GET", "/v1/metrics"), Endpoint::Metrics);
        assert_eq!(e("HEAD", "/v1/metrics"), Endpoint::Metrics);
        assert_eq!(e("HEAD", "/v1/buckets/u"), Endpoint::Inspect("u".into()));
        assert_eq!(e("GET", "/v1/policies").role(), Role::Admin);
        assert_eq!(e("POST", "/v1/buckets/u/consume").role(), Role::Service);
        assert_eq!(endpoint("GET", "/v1x/buckets"), Ok(None));
        assert_eq!(endpoint("GET", "/elsewhere"), Ok(None));
    }

    #[test]
    fn the_api_can_move() {
        let moved = ApiPrefix::parse("/edgebucket/v1").unwrap();
        let at = |path| super::endpoint("POST", path, &moved);
        assert_eq!(at("/edgebucket/v1/buckets/u/consume"), Ok(Some(Endpoint::Consume("u".into()))));
        assert_eq!(at("/v1/buckets/u/consume"), Ok(None), "the origin's /v1 is the gateway's");
        assert_eq!(at("/edgebucket/v1x/buckets/u/consume"), Ok(None));
        assert_eq!(moved.segments().collect::<Vec<_>>(), ["edgebucket", "v1"]);
        let parts = |path: &str| path.split('/').map(str::to_owned).collect::<Vec<_>>();
        assert!(moved.heads(&parts("edgebucket/v1")) && moved.heads(&parts("edgebucket/v1/buckets")));
        assert!(!moved.heads(&parts("edgebucket")) && !moved.heads(&parts("edgebucket/v2/x")));
        for good in ["/v2", "/rate-limit/v1", "/_eb/v1.0", "/~x"] {
            assert_eq!(ApiPrefix::parse(good).map(|p| p.as_str().to_owned()), Ok(good.to_owned()));
        }
        let bad = ["", "/", "v1", "/v1/", "//v1", "/a//v1", "/./v1", "/a/..", "/v%31", "/v 1", "/ä", "/v1?x", "/a\\b"];
        for bad in bad {
            assert!(ApiPrefix::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn endpoint_errors() {
        fn err(method: &str, path: &str) -> ApiError {
            endpoint(method, path).unwrap_err()
        }
        assert_eq!(err("GET", "/v1/buckets/u/consume").code, "METHOD_NOT_ALLOWED");
        assert_eq!(err("GET", "/v1/buckets/u/consume").message, "allowed: POST");
        assert_eq!(err("PATCH", "/v1/buckets/u").status, 405);
        assert_eq!(err("GET", "/v1/nothing").status, 404);
        assert_eq!(err("GET", "/v1").status, 404);
        assert_eq!(err("POST", "/v1/buckets//consume").code, "INVALID_KEY");
        assert_eq!(err("POST", &format!("/v1/buckets/{}/consume", "k".repeat(257))).code, "INVALID_KEY");
        // Service calls cannot reach the gateway's buckets; admin calls can.
        assert_eq!(err("POST", "/v1/buckets/gateway%3Aapi%3Aip%3A1.2.3.4/consume").code, "INVALID_KEY");
        assert_eq!(err("POST", "/v1/buckets/gateway:api:ip:1.2.3.4/reserve").code, "INVALID_KEY");
        assert!(endpoint("GET", "/v1/buckets/gateway:api:ip:1.2.3.4").is_ok());
        assert!(endpoint("POST", "/v1/buckets/gateway:api:ip:1.2.3.4/reset").is_ok());
    }

    #[test]
    fn consume_bodies() {
        let consume = Endpoint::Consume("k".into());
        let c = |body: &str| command(&consume, body.as_bytes());
        assert_eq!(
            c(r#"{"policy":"p"}"#).unwrap(),
            Command::Consume { policy: "p".into(), tokens: 1, mode: Mode::Try }
        );
        assert_eq!(
            c(r#"{"policy":"p","tokens":3,"mode":"estimate"}"#).unwrap(),
            Command::Consume { policy: "p".into(), tokens: 3, mode: Mode::Estimate }
        );
        let code = |body: &str| c(body).unwrap_err().code;
        assert_eq!(code("{"), "INVALID_JSON");
        assert_eq!(code("[1]"), "INVALID_JSON");
        assert_eq!(code(r#"{"tokens":1}"#), "INVALID_REQUEST");
        assert_eq!(code(r#"{"policy":"p","extra":1}"#), "INVALID_REQUEST");
        assert_eq!(code(r#"{"policy":"p","tokens":null}"#), "INVALID_TOKENS");
        assert_eq!(code(r#"{"policy":"p","mode":"maybe"}"#), "INVALID_REQUEST");
        assert_eq!(code(r#"{"policy":"api","policy":"login"}"#), "INVALID_REQUEST", "a repeated member is refused");
        assert_eq!(code(r#"{"policy":"p","tokens":1,"tokens":2}"#), "INVALID_REQUEST");
        assert_eq!(code(r#"{"policy":"p","tokens":0}"#), "NON_POSITIVE_TOKENS");
        assert_eq!(code(r#"{"policy":"p","tokens":-3}"#), "NON_POSITIVE_TOKENS");
        assert_eq!(code(r#"{"policy":"p","tokens":1.5}"#), "INVALID_TOKENS");
        assert_eq!(code(r#"{"policy":"p","tokens":1e30}"#), "INVALID_TOKENS");
        assert_eq!(code(r#"{"policy":"p","tokens":9223372036854775808}"#), "INVALID_TOKENS");
        assert_eq!(code(r#"{"policy":"p","tokens":"1"}"#), "INVALID_TOKENS");
    }

    #[test]
    fn reserve_and_replace_bodies() {
        let reserve = Endpoint::Reserve("k".into());
        let r = |body: &str| command(&reserve, body.as_bytes());
        assert_eq!(
            r(r#"{"policy":"p","maxWait":"2s"}"#).unwrap(),
            Command::Reserve { policy: "p".into(), tokens: 1, max_wait_nanos: 2_000_000_000 }
        );
        assert_eq!(r(r#"{"policy":"p","maxWait":0}"#).unwrap_err().code, "NON_POSITIVE_MAX_WAIT");
        assert_eq!(r(r#"{"policy":"p","maxWait":"soon"}"#).unwrap_err().code, "INVALID_DURATION");
        assert_eq!(r(r#"{"policy":"p","maxWait":"300 years"}"#).unwrap_err().code, "INVALID_DURATION");
        assert_eq!(r(r#"{"policy":"p"}"#).unwrap_err().code, "INVALID_REQUEST");
        let replace = Endpoint::Replace("k".into());
        assert_eq!(
            command(&replace, br#"{"policy":"p","strategy":"RESET"}"#).unwrap(),
            Command::Replace { policy: "p".into(), strategy: Some(TokensInheritanceStrategy::Reset) }
        );
        assert_eq!(command(&replace, br#"{"policy":"p","strategy":"ALL"}"#).unwrap_err().code, "INVALID_REQUEST");
        assert_eq!(command(&Endpoint::Reset("k".into()), b"ignored").unwrap(), Command::Reset);
    }

    #[test]
    fn decision_bodies_round_waits_up() {
        let outcome = Outcome {
            policy: "p".into(),
            version: 2,
            at_millis: 7,
            allowed: false,
            wait_nanos: 1_000_001,
            bandwidths: vec![BandwidthView {
                name: "b".into(),
                capacity: 5,
                window_seconds: 1,
                available: -1,
                wait_nanos: INFINITY_DURATION,
                full_nanos: 0,
            }],
            no_retry_after: false,
        };
        let json = serde_json::to_value(DecisionBody::new("k", &outcome)).unwrap();
        assert_eq!(json["waitMs"], 2);
        assert_eq!(json["remaining"], 0);
        assert_eq!(json["bandwidths"][0]["waitMs"], Value::Null);
        assert_eq!(json["bandwidths"][0]["available"], -1);
        assert!(json.get("fallback").is_none() && json.get("shadowRejected").is_none());
    }
}
