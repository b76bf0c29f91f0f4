//! The worker's configuration, read from its environment once per isolate: `[vars]` `POLICIES`,
//! `ROUTES`, `ORIGIN`, `API_PREFIX`, `CORS_ORIGINS`, `LOG_DECISIONS`, and the secrets
//! `ADMIN_TOKEN` and `API_KEY`.
//!
//! `POLICIES` and `ROUTES` may be TOML tables in `wrangler.toml` or JSON strings. A table arrives
//! as an object whose numbers went through JavaScript's, read back through `JSON.stringify`, so
//! an integer past 2^53 − 1 may already have been rounded: such a table is refused, naming the
//! JSON string form, which is read exactly.

use std::cell::RefCell;
use std::rc::Rc;

use serde_json::Value;
use worker::{js_sys, wasm_bindgen::JsValue, Env};

use super::api::ApiPrefix;
use super::auth::Secrets;
use super::cors::AllowedOrigins;
use super::errors::ApiError;
use super::policy::Policies;
use super::routes::{self, Route};
use super::site;

/// Everything the worker and its Durable Objects read from the environment.
#[derive(Debug)]
pub struct Settings {
    /// Named policies.
    pub policies: Policies,
    /// Where the service API lives; the gateway has every other path.
    pub api_prefix: ApiPrefix,
    /// Gateway routes; empty when the worker is only a service.
    pub routes: Vec<Route>,
    /// Where the gateway forwards admitted requests, without a trailing slash.
    pub origin: Option<String>,
    /// Origins whose pages may read the gateway's own answers (see [`cors`](super::cors)).
    pub cors_origins: AllowedOrigins,
    /// Admin and service secrets.
    pub secrets: Secrets,
    /// Whether to log every decision (`LOG_DECISIONS`, default true) or only fallbacks and errors.
    pub log_decisions: bool,
}

thread_local! {
    // Bindings are fixed for an isolate's life (a deploy starts new isolates), so one read is
    // enough; errors are kept too, so a bad configuration fails fast on every request.
    static CACHE: RefCell<Option<Result<Rc<Settings>, ApiError>>> = const { RefCell::new(None) };
}

/// The settings, read on first use.
///
/// # Errors
/// 500 `CONFIGURATION_ERROR` saying what is wrong.
pub fn load(env: &Env) -> Result<Rc<Settings>, ApiError> {
    CACHE.with(|cache| cache.borrow_mut().get_or_insert_with(|| read(env).map(Rc::new)).clone())
}

fn read(env: &Env) -> Result<Settings, ApiError> {
    let policies =
        Policies::parse(&table(env, "POLICIES")?.unwrap_or_else(|| "{}".into())).map_err(ApiError::configuration)?;
    // Empty is unset, as for ORIGIN and the secrets.
    let api_prefix = match var(env, "API_PREFIX").filter(|text| !text.trim().is_empty()) {
        Some(text) => ApiPrefix::parse(&text).map_err(ApiError::configuration)?,
        None => ApiPrefix::default(),
    };
    let routes = match table(env, "ROUTES")? {
        Some(json) => routes::parse(&json, &policies, &api_prefix).map_err(ApiError::configuration)?,
        None => Vec::new(),
    };
    // Read only for the gateway: without routes ORIGIN is unused, and a leftover value must not
    // stop the service API.
    let origin = match var(env, "ORIGIN").map(|o| o.trim().to_owned()).filter(|o| !o.is_empty()) {
        Some(origin) if !routes.is_empty() => Some(origin_url(&origin).map_err(ApiError::configuration)?),
        _ => None,
    };
    if !routes.is_empty() && origin.is_none() {
        return Err(ApiError::configuration("ROUTES needs ORIGIN, the URL to forward admitted requests to"));
    }
    let cors_origins = match var(env, "CORS_ORIGINS") {
        Some(text) => AllowedOrigins::parse(&text).map_err(ApiError::configuration)?,
        None => AllowedOrigins::None,
    };
    let secret = |name| secret_value(name, var(env, name)).map_err(ApiError::configuration);
    let secrets = Secrets::new(secret("ADMIN_TOKEN")?.as_deref(), secret("API_KEY")?.as_deref());
    let log_decisions = var(env, "LOG_DECISIONS").is_none_or(|v| v != "false");
    Ok(Settings { policies, api_prefix, routes, origin, cors_origins, secrets, log_decisions })
}

/// The secret `name` as set: spaces, tabs and line ends at its ends dropped, since a header value
/// cannot carry them (HTTP trims them, as `auth::scheme_and_credential` does) and a secret with
/// them could never be presented; `None` when nothing is left, as for an empty `ORIGIN`: an
/// empty secret must never be matched by an empty token.
///
/// # Errors
/// When it holds a comma, which no bearer token does (RFC 6750's `b64token`): two
/// `Authorization` lines arrive joined by one, and the gateway could not tell such a secret among
/// them to keep it from the origin (`auth::Secrets::is_secret`).
fn secret_value(name: &str, value: Option<String>) -> Result<Option<String>, String> {
    let value = value.map(|v| v.trim_matches([' ', '\t', '\r', '\n']).to_owned()).filter(|v| !v.trim().is_empty());
    if value.as_deref().is_some_and(|v| v.contains(',')) {
        return Err(format!(
            "{name} cannot hold a comma: a bearer token has none (RFC 6750), and two Authorization lines arrive joined by one; use letters, digits and -._~+/="
        ));
    }
    Ok(value)
}

/// `ORIGIN` without a trailing slash, once it has the shape of an absolute `http(s)` URL that a
/// request path can follow: caught here, a bad value fails every request with a configuration
/// error instead of spending a token on each before failing to forward it.
fn origin_url(origin: &str) -> Result<String, String> {
    let scheme =
        |name: &str| origin.get(..name.len()).filter(|s| s.eq_ignore_ascii_case(name)).map(|_| &origin[name.len()..]);
    let rest = scheme("https://").or_else(|| scheme("http://"));
    let host = rest.map(|rest| rest.split('/').next().unwrap_or_default());
    if host.is_none_or(str::is_empty) {
        return Err(format!("ORIGIN {origin:?} must be an http or https URL, such as https://api.example.com"));
    }
    if origin.contains(['?', '#']) || origin.contains(char::is_whitespace) {
        return Err(format!(
            "ORIGIN {origin:?} cannot hold a query, fragment or space: request paths are appended to it"
        ));
    }
    if host.is_some_and(|host| host.contains('@')) {
        return Err(format!("ORIGIN {origin:?} cannot hold a user name"));
    }
    match host.and_then(site::host_and_port_error) {
        Some(problem) => Err(format!("ORIGIN {origin:?}: {problem}")),
        None => Ok(origin.trim_end_matches('/').to_owned()),
    }
}

/// A binding as text: strings as they are, objects as JSON; `None` when unset.
fn var(env: &Env, name: &str) -> Option<String> {
    binding(env, name).map(|(text, _)| text)
}

/// A binding that holds JSON (`POLICIES`, `ROUTES`), refused if it came as an object (a TOML
/// table) holding an integer JavaScript cannot represent exactly.
fn table(env: &Env, name: &str) -> Result<Option<String>, ApiError> {
    match binding(env, name) {
        Some((json, true)) => match inexact_integer(&json) {
            Some(number) => Err(ApiError::configuration(format!(
                "{name} holds the integer {number} (as JavaScript read it), past 2^53 - 1: a wrangler.toml \
                 table reaches the worker through JavaScript's numbers, which may have rounded it; give \
                 {name} as a JSON string, which is read exactly"
            ))),
            None => Ok(Some(json)),
        },
        other => Ok(other.map(|(text, _)| text)),
    }
}

/// A binding as text, and whether it was an object (read through `JSON.stringify`); `None` when
/// unset.
fn binding(env: &Env, name: &str) -> Option<(String, bool)> {
    let value = js_sys::Reflect::get(env, &JsValue::from_str(name)).ok()?;
    if value.is_undefined() || value.is_null() {
        return None;
    }
    match value.as_string() {
        Some(text) => Some((text, false)),
        None => js_sys::JSON::stringify(&value).ok().map(|json| (String::from(json), true)),
    }
}

/// The first integer in `json` past JavaScript's safe integers (±(2^53 − 1)), as it is written
/// there; `None` if there is none, or if `json` is not JSON (its reader says so).
fn inexact_integer(json: &str) -> Option<String> {
    const MAX_SAFE: u64 = (1 << 53) - 1;
    fn find(value: &Value) -> Option<String> {
        match value {
            Value::Number(n) => {
                let past = match (n.as_u64(), n.as_i64(), n.as_f64()) {
                    (Some(u), _, _) => u > MAX_SAFE,
                    (_, Some(i), _) => i.unsigned_abs() > MAX_SAFE,
                    (_, _, Some(f)) => f.fract() == 0.0 && f.abs() > MAX_SAFE as f64,
                    _ => false,
                };
                past.then(|| n.to_string())
            }
            Value::Array(items) => items.iter().find_map(find),
            Value::Object(entries) => entries.values().find_map(find),
            _ => None,
        }
    }
    find(&serde_json::from_str(json).ok()?)
}

#[cfg(test)]
mod tests {
    use super::{inexact_integer, origin_url, secret_value};

    #[test]
    fn integers_javascript_may_have_rounded_are_found() {
        let safe = 9_007_199_254_740_991_u64;
        assert_eq!(inexact_integer(&format!(r#"{{"p":{{"bandwidths":[{{"capacity":{safe}}}]}}}}"#)), None);
        assert_eq!(inexact_integer(&format!("[-{safe}, 1.5, 1e3, \"9007199254740993\"]")), None, "strings are text");
        let past = |json: &str| inexact_integer(json);
        assert_eq!(past(r#"{"a":{"b":[1,9007199254740992]}}"#).as_deref(), Some("9007199254740992"));
        assert_eq!(past("[-9007199254740992]").as_deref(), Some("-9007199254740992"));
        assert_eq!(past("[1e+21]").as_deref(), Some("1e+21"), "JSON.stringify's form from 10^21 on");
        assert_eq!(past("[18446744073709551616]").as_deref(), Some("1.8446744073709552e+19"), "past u64");
        assert_eq!(past("{not json"), None, "left to the reader, which says what is wrong");
    }

    #[test]
    fn secrets_lose_the_whitespace_a_header_cannot_carry() {
        let value = |text: &str| secret_value("API_KEY", Some(text.to_owned())).unwrap();
        assert_eq!(value(" root \t\n").as_deref(), Some("root"), "as `Bearer root ` arrives");
        assert_eq!(value("ro ot").as_deref(), Some("ro ot"), "inside, it is the secret's");
        assert_eq!(value("\u{a0}root").as_deref(), Some("\u{a0}root"), "not HTTP's whitespace");
        assert_eq!(value(" \t"), None, "empty is unset");
        assert_eq!(value("\u{a0}"), None);
        assert_eq!(secret_value("API_KEY", None), Ok(None));
    }

    #[test]
    fn a_secret_with_a_comma_is_refused() {
        let error = secret_value("ADMIN_TOKEN", Some("ro,ot".into())).unwrap_err();
        assert!(error.starts_with("ADMIN_TOKEN cannot hold a comma"), "{error}");
        assert!(secret_value("API_KEY", Some(",".into())).is_err());
        assert_eq!(secret_value("API_KEY", Some("a-Z_0.9~+/==".into())), Ok(Some("a-Z_0.9~+/==".into())));
    }

    #[test]
    fn origin_must_be_an_http_url_a_path_can_follow() {
        assert_eq!(origin_url("https://api.example.com/").unwrap(), "https://api.example.com");
        assert_eq!(origin_url("http://127.0.0.1:8080/base").unwrap(), "http://127.0.0.1:8080/base");
        assert_eq!(origin_url("HTTPS://api.example.com").unwrap(), "HTTPS://api.example.com", "schemes ignore case");
        assert_eq!(origin_url("http://[::1]:8080").unwrap(), "http://[::1]:8080");
        assert_eq!(origin_url("https://xn--bcher-kva.example:443/v2").unwrap(), "https://xn--bcher-kva.example:443/v2");
        let bad = [
            "origin.example.com",
            "ftp://x.example",
            "https://x.example/?a=1",
            "https://x.example/#x",
            "http://",
            "http:///p",
            "https://x .example",
            "https://[::1",
            "https://a<b.example",
            "https://x.example:99999",
            "https://x.example:",
            "https://a%zz.example",
            "https://user:pass@x.example",
            "https://bücher.example",
            "https://1.2.3.256",
            "https://api.example.1",
            "http://[1]",
            "http://[::1::2]",
        ];
        for bad in bad {
            assert!(origin_url(bad).is_err(), "{bad}");
        }
    }
}
