//! The incoming request, read straight from the runtime's object: only the parts a decision needs,
//! each fetched across the JavaScript boundary when asked for (workers-rs's `Request` reads the
//! `cf` object and more on every request, which costs a measurable share of a decision). Its
//! body is read by `entry.js` (see [`exchange`](super::exchange)).

use worker::web_sys;

/// A request as the runtime gave it.
#[derive(Debug)]
pub struct Incoming {
    raw: web_sys::Request,
    url: String,
}

impl Incoming {
    /// Wraps the runtime's request.
    pub fn new(raw: web_sys::Request) -> Self {
        let url = raw.url();
        Incoming { raw, url }
    }

    /// The method, as sent (upper case for the standard ones).
    pub fn method(&self) -> String {
        self.raw.method()
    }

    /// The path, still percent-encoded.
    pub fn path(&self) -> &str {
        split_url(&self.url).0
    }

    /// The query string without `?`, if any.
    pub fn query(&self) -> Option<&str> {
        split_url(&self.url).1
    }

    /// A header's value.
    pub fn header(&self, name: &str) -> Option<String> {
        self.raw.headers().get(name).ok().flatten()
    }

    /// The body's length as `Content-Length` declares it, if it does (a chunked body does not).
    pub fn declared_length(&self) -> Option<u64> {
        self.header("Content-Length").and_then(|v| v.parse().ok())
    }

    /// The runtime's request, to forward.
    pub fn raw(&self) -> &web_sys::Request {
        &self.raw
    }
}

/// The path and query of an absolute URL as the runtime serializes it (`scheme://authority/…`).
fn split_url(url: &str) -> (&str, Option<&str>) {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    let path_and_query = url[after_scheme..].find('/').map_or("/", |i| &url[after_scheme + i..]);
    let without_fragment = path_and_query.split('#').next().unwrap_or_default();
    match without_fragment.split_once('?') {
        Some((path, query)) => (path, Some(query)),
        None => (without_fragment, None),
    }
}

#[cfg(test)]
mod tests {
    use super::split_url;

    #[test]
    fn urls_split_into_path_and_query() {
        assert_eq!(split_url("http://127.0.0.1:8787/v1/buckets/a%2Fb/consume"), ("/v1/buckets/a%2Fb/consume", None));
        assert_eq!(split_url("https://x.example/items/7?color=red&n=1"), ("/items/7", Some("color=red&n=1")));
        assert_eq!(split_url("https://x.example"), ("/", None));
        assert_eq!(split_url("https://x.example/?"), ("/", Some("")));
        assert_eq!(split_url("https://x.example/a#frag"), ("/a", None));
    }
}
