//! The incoming request, read straight from the runtime's object: only the parts a decision needs,
//! each fetched across the JavaScript boundary when asked for (workers-rs's `Request` reads the
//! `cf` object and more on every request, which costs a measurable share of a decision). Its
//! body is read by `entry.js` (see [`exchange`](super::exchange)).

use std::net::IpAddr;

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

    /// `scheme://authority`: where the client sent the request.
    pub fn site(&self) -> &str {
        split_site(&self.url).0
    }

    /// The query string without `?`, if any.
    pub fn query(&self) -> Option<&str> {
        split_url(&self.url).1
    }

    /// A header's value.
    pub fn header(&self, name: &str) -> Option<String> {
        self.raw.headers().get(name).ok().flatten()
    }

    /// The body's length as `Content-Length` declares it, if it does: a chunked body does not,
    /// and beside a `Transfer-Encoding` the chunks decide the length (RFC 9112 §6.3).
    pub fn declared_length(&self) -> Option<u64> {
        if self.header("Transfer-Encoding").is_some() {
            return None;
        }
        self.header("Content-Length").and_then(|v| v.parse().ok())
    }

    /// The runtime's request, to forward.
    pub fn raw(&self) -> &web_sys::Request {
        &self.raw
    }
}

/// The client's address as Cloudflare puts it in `CF-Connecting-IP`, in canonical form: an
/// IPv4-mapped IPv6 address is the IPv4 address, so one client is not spelled two ways. `None`
/// when the value is not an IP address, which on Cloudflare it always is (only a local run lets
/// a client send its own).
pub fn client_ip(value: &str) -> Option<IpAddr> {
    value.trim().parse::<IpAddr>().ok().map(|ip| ip.to_canonical())
}

/// An absolute URL's `scheme://authority` and what follows it (path, query, fragment); a URL
/// without `://` is all rest.
pub fn split_site(url: &str) -> (&str, &str) {
    let Some(after_scheme) = url.find("://").map(|i| i + 3) else {
        return ("", url);
    };
    let end = url[after_scheme..].find(['/', '?', '#']).map_or(url.len(), |i| after_scheme + i);
    url.split_at(end)
}

/// The path and query of an absolute URL as the runtime serializes it (`scheme://authority/…`).
fn split_url(url: &str) -> (&str, Option<&str>) {
    let rest = split_site(url).1;
    let path_and_query = if rest.starts_with('/') { rest } else { "/" };
    let without_fragment = path_and_query.split('#').next().unwrap_or_default();
    match without_fragment.split_once('?') {
        Some((path, query)) => (path, Some(query)),
        None => (without_fragment, None),
    }
}

#[cfg(test)]
mod tests {
    use super::{client_ip, split_site, split_url};

    #[test]
    fn a_client_address_is_read_in_canonical_form() {
        let ip = |text: &str| client_ip(text).map(|ip| ip.to_string());
        assert_eq!(ip(" 203.0.113.7 ").as_deref(), Some("203.0.113.7"));
        assert_eq!(ip("2001:DB8:0::7").as_deref(), Some("2001:db8::7"));
        assert_eq!(ip("::ffff:198.51.100.1").as_deref(), Some("198.51.100.1"), "IPv4-mapped is IPv4");
        for odd in ["", "localhost", "203.0.113.7, 10.0.0.1", "[2001:db8::7]", "\"x\";for=evil"] {
            assert_eq!(ip(odd), None, "{odd:?}");
        }
    }

    #[test]
    fn urls_split_into_path_and_query() {
        assert_eq!(split_url("http://127.0.0.1:8787/v1/buckets/a%2Fb/consume"), ("/v1/buckets/a%2Fb/consume", None));
        assert_eq!(split_url("https://x.example/items/7?color=red&n=1"), ("/items/7", Some("color=red&n=1")));
        assert_eq!(split_url("https://x.example"), ("/", None));
        assert_eq!(split_url("https://x.example/?"), ("/", Some("")));
        assert_eq!(split_url("https://x.example/a#frag"), ("/a", None));
        assert_eq!(split_site("http://127.0.0.1:8787/v1?x"), ("http://127.0.0.1:8787", "/v1?x"));
        assert_eq!(split_site("https://x.example?q"), ("https://x.example", "?q"));
        assert_eq!(split_site("https://x.example"), ("https://x.example", ""));
        assert_eq!(split_site("/relative"), ("", "/relative"));
    }
}
