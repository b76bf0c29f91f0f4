//! CORS at the gateway. The origin answers CORS for what it serves; two things are the gateway's:
//!
//! - **Preflights are not decided.** A browser sends `OPTIONS` with `Access-Control-Request-Method`
//!   before many cross-origin requests. Matched by a route without `methods`, it would spend a
//!   token (halving a browser's limit) and, once the bucket is empty, fail, so the page would see
//!   a network error instead of the 429 and its `Retry-After`. A preflight is decided only by a
//!   route that lists `OPTIONS` in its `methods`; otherwise it goes to the origin as is.
//! - **The gateway's own answers** (429, fail-closed 503, 4xx about the key, 502) carry
//!   `Access-Control-Allow-Origin` for the origins in `[vars] CORS_ORIGINS`, so a page can read
//!   them: a JSON list of origins (`["https://app.example.com"]`, answered with that origin,
//!   `Access-Control-Allow-Credentials: true` and `Vary: Origin`), or `"*"` (any origin, without
//!   credentials, as the Fetch standard requires). Unset or empty, they carry none (the default).

use super::incoming::Incoming;
use super::site;

/// Which origins may read the gateway's own answers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum AllowedOrigins {
    /// None (`CORS_ORIGINS` unset).
    #[default]
    None,
    /// Any origin, without credentials (`"*"`).
    Any,
    /// These origins (`scheme://host[:port]`, lower case), with credentials.
    Listed(Vec<String>),
}

impl AllowedOrigins {
    /// Reads `CORS_ORIGINS`: `"*"` (or `["*"]`), or a JSON list of origins; empty is unset.
    ///
    /// # Errors
    /// A message saying what is wrong, for the configuration error.
    pub fn parse(text: &str) -> Result<Self, String> {
        match text.trim() {
            "" => return Ok(AllowedOrigins::None),
            "*" => return Ok(AllowedOrigins::Any),
            _ => {}
        }
        let list: Vec<String> = serde_json::from_str(text)
            .map_err(|e| format!("CORS_ORIGINS must be \"*\" or a JSON list of origins: {e}"))?;
        if list.iter().any(|o| o == "*") {
            return Ok(AllowedOrigins::Any);
        }
        list.iter().map(|origin| checked(origin)).collect::<Result<_, _>>().map(AllowedOrigins::Listed)
    }

    /// The headers that let a page read an answer. `origin` gives the request's `Origin`; it is
    /// read only for a list (a header read crosses into JavaScript, and 429s can come in floods).
    pub fn headers(&self, origin: impl FnOnce() -> Option<String>) -> Vec<(&'static str, String)> {
        match self {
            AllowedOrigins::None => Vec::new(),
            AllowedOrigins::Any => vec![("Access-Control-Allow-Origin", "*".to_owned())],
            AllowedOrigins::Listed(list) => {
                let mut headers = vec![("Vary", "Origin".to_owned())];
                if let Some(origin) = origin().filter(|o| list.iter().any(|allowed| allowed.eq_ignore_ascii_case(o))) {
                    headers.push(("Access-Control-Allow-Origin", origin));
                    headers.push(("Access-Control-Allow-Credentials", "true".to_owned()));
                }
                headers
            }
        }
    }
}

/// `origin` if it is `http(s)://host[:port]`, as browsers send `Origin`: in lower case, without
/// the scheme's default port.
fn checked(origin: &str) -> Result<String, String> {
    let lower = origin.to_ascii_lowercase();
    let host = lower.strip_prefix("https://").or_else(|| lower.strip_prefix("http://"));
    match host {
        Some(host) if !host.is_empty() && !host.contains(['/', '?', '#', ' ', '*', '@']) => {
            match site::host_and_port_error(host) {
                Some(problem) => Err(format!("CORS_ORIGINS: {origin:?}: {problem}")),
                None => Ok(site::normal_site(&lower)),
            }
        }
        _ => {
            Err(format!("CORS_ORIGINS: {origin:?} is not an origin (scheme://host[:port], no path or trailing slash)"))
        }
    }
}

/// Whether `req` is a CORS preflight: `OPTIONS` with `Origin` and `Access-Control-Request-Method`.
pub fn is_preflight(req: &Incoming, method: &str) -> bool {
    method.eq_ignore_ascii_case("OPTIONS")
        && req.header("Origin").is_some()
        && req.header("Access-Control-Request-Method").is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_parse_from_a_star_or_a_list() {
        assert_eq!(AllowedOrigins::parse("*"), Ok(AllowedOrigins::Any));
        assert_eq!(AllowedOrigins::parse(r#"["*"]"#), Ok(AllowedOrigins::Any));
        assert_eq!(AllowedOrigins::parse(" "), Ok(AllowedOrigins::None), "empty, like an empty ORIGIN, is unset");
        assert_eq!(
            AllowedOrigins::parse(r#"["https://App.example.com", "http://localhost:5173"]"#),
            Ok(AllowedOrigins::Listed(vec!["https://app.example.com".into(), "http://localhost:5173".into()]))
        );
        assert_eq!(
            AllowedOrigins::parse(
                r#"["https://app.example.com:443", "http://localhost:80", "https://x.example:8443"]"#
            ),
            Ok(AllowedOrigins::Listed(vec![
                "https://app.example.com".into(),
                "http://localhost".into(),
                "https://x.example:8443".into()
            ])),
            "a default port is left out, as browsers send Origin"
        );
        assert_eq!(
            AllowedOrigins::parse(r#"["https://a.example:0443", "http://[0:0:0:0:0:0:0:1]:8080"]"#),
            Ok(AllowedOrigins::Listed(vec!["https://a.example".into(), "http://[::1]:8080".into()])),
            "as the URL parser serialises them"
        );
        for bad in [
            r#"["https://app.example.com/"]"#,
            r#"["app.example.com"]"#,
            r#"["https://"]"#,
            r#"["https://:443"]"#,
            r#"["https://bücher.example"]"#,
            r#"["https://user@app.example.com"]"#,
            r#"["http://1.2.3.256"]"#,
            "https://a.b",
            "{}",
        ] {
            assert!(AllowedOrigins::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn only_a_listed_origin_is_allowed_with_credentials() {
        let listed = AllowedOrigins::Listed(vec!["https://app.example.com".into()]);
        assert_eq!(
            listed.headers(|| Some("https://app.example.com".into())),
            [
                ("Vary", "Origin".to_owned()),
                ("Access-Control-Allow-Origin", "https://app.example.com".to_owned()),
                ("Access-Control-Allow-Credentials", "true".to_owned()),
            ]
        );
        assert_eq!(listed.headers(|| Some("https://evil.example".into())), [("Vary", "Origin".to_owned())]);
        assert_eq!(listed.headers(|| None), [("Vary", "Origin".to_owned())]);
        assert_eq!(
            AllowedOrigins::Any.headers(|| unreachable!("no list, no Origin read")),
            [("Access-Control-Allow-Origin", "*".to_owned())]
        );
        assert!(AllowedOrigins::None.headers(|| unreachable!("no list, no Origin read")).is_empty());
    }
}
