//! What the gateway sends the origin and what it makes of the answer: the request as the client
//! sent it but for what only the gateway may say (where the client sent it, none of the
//! gateway's own secrets), and the origin's answer with the rate-limit headers added and a
//! redirect to the origin pointed back at the gateway.

use std::net::IpAddr;

use worker::web_sys;
use worker::worker_sys::ext::ResponseExt;

use super::auth::Secrets;
use super::errors::ApiError;
use super::incoming::{client_ip, split_site, Incoming};
use super::site;

/// Request headers that say where a request was sent, as a proxy in front of the origin would
/// set them. A client's own would be believed by an origin that builds links from them
/// (password-reset mails pointing at the client's site), so all are dropped, and the gateway
/// sets the first three itself.
const CLIENT_CLAIMS: [&str; 6] =
    ["Forwarded", "X-Forwarded-Host", "X-Forwarded-Proto", "X-Forwarded-Port", "X-Forwarded-Prefix", "X-Original-Host"];

/// Request headers that name the client's address alone, as a proxy sets them (nginx's
/// `X-Real-IP`, Cloudflare's and Akamai's `True-Client-IP`). Origins that read them believe
/// them, so the gateway says them itself, or drops the client's.
const CLIENT_ADDRESS: [&str; 2] = ["X-Real-IP", "True-Client-IP"];

/// The same request aimed at `target`: method, headers (less `Host`) and body stream.
/// - `Forwarded`, `X-Forwarded-Host` and `X-Forwarded-Proto` say where the client sent it,
///   replacing the client's; its `X-Forwarded-Port`, `X-Forwarded-Prefix` and `X-Original-Host`
///   are dropped.
/// - The client's address (`CF-Connecting-IP`, read before anything the client's `Connection`
///   names is dropped) goes in `Forwarded`'s `for=` and at the end of `X-Forwarded-For`, after
///   the client's own list (its claims; ours is the rightmost): the standard headers for it,
///   which origins and their frameworks read behind a proxy. Without an address to add (only a
///   local run can lack one), the client's `X-Forwarded-For` is dropped, as a claim nobody
///   vouches for.
/// - `X-Real-IP` and `True-Client-IP` are that address alone, replacing the client's (dropped
///   when there is none).
/// - An `Authorization` carrying one of the worker's own `secrets` (a client calling the service
///   API at a path that is the gateway's) is dropped: the origin never sees them.
/// - Headers the client's `Connection` names, and `Keep-Alive` and `Proxy-Connection`, are for
///   the hop to the gateway alone (RFC 9110 §7.6.1) and dropped, but for `Upgrade`, with which
///   the runtime forwards a WebSocket upgrade, and the `keyed` header (below).
/// - A GET or HEAD body (which HTTP gives no meaning and fetch refuses to send) is dropped.
/// - `Expect` is dropped: the runtime has already answered the client's `100-continue` by reading
///   the body, and the runtime's fetch hands back an origin's interim `100 Continue` as its
///   final answer (cloudflare/workers-sdk#7185), which would turn every upload sent with it
///   (curl's past 1 MiB, S3 SDKs') into a 502 after the origin had taken it.
/// - The `keyed` header goes as the one value the bucket was keyed on: sent twice, it would
///   otherwise reach the origin as two lines, of which many origins read the first, while each
///   new second line named a new bucket.
///
/// # Errors
/// When the runtime refuses a header or the request.
pub fn upstream_request(
    req: &Incoming,
    target: &str,
    keyed: Option<&str>,
    secrets: &Secrets,
) -> worker::Result<web_sys::Request> {
    let inner = req.raw();
    let headers = web_sys::Headers::new_with_headers(&inner.headers())?;
    // Before `drop_hop_by_hop`: a client's `Connection` must not name its address away.
    let client = headers.get("CF-Connecting-IP")?.and_then(|address| client_ip(&address));
    drop_hop_by_hop(&headers, keyed)?;
    headers.delete("Host")?;
    headers.delete("Expect")?;
    for name in CLIENT_CLAIMS {
        headers.delete(name)?;
    }
    if let Some((scheme, host)) = req.site().split_once("://") {
        headers.set("X-Forwarded-Host", host)?;
        headers.set("X-Forwarded-Proto", scheme)?;
        let node = client.map(|ip| format!("for={};", forwarded_node(ip))).unwrap_or_default();
        headers.set("Forwarded", &format!("{node}host=\"{host}\";proto={scheme}"))?;
    }
    match client {
        Some(ip) => headers.set("X-Forwarded-For", &forwarded_for(headers.get("X-Forwarded-For")?, ip))?,
        None => headers.delete("X-Forwarded-For")?,
    }
    for name in CLIENT_ADDRESS {
        match client {
            Some(ip) => headers.set(name, &ip.to_string())?,
            None => headers.delete(name)?,
        }
    }
    if headers.get("Authorization")?.is_some_and(|value| secrets.is_secret(&value)) {
        headers.delete("Authorization")?;
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

/// `address` as `Forwarded`'s `for=` takes it (RFC 7239 §6): an IPv6 address quoted in brackets.
fn forwarded_node(address: IpAddr) -> String {
    match address {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => format!("\"[{v6}]\""),
    }
}

/// `X-Forwarded-For` with `address` at the end. The client's own list is kept before it, as
/// proxies keep it (nginx's `$proxy_add_x_forwarded_for`, Cloudflare's edge): its entries are
/// claims, and the rightmost, ours, is the address the gateway saw.
fn forwarded_for(prior: Option<String>, address: IpAddr) -> String {
    match prior.as_deref().map(|p| p.trim_matches([' ', '\t', ','])).filter(|p| !p.is_empty()) {
        Some(prior) => format!("{prior}, {address}"),
        None => address.to_string(),
    }
}

/// Drops the headers that were for one hop alone; see [`upstream_request`].
fn drop_hop_by_hop(headers: &web_sys::Headers, keyed: Option<&str>) -> worker::Result<()> {
    if let Some(named) = headers.get("Connection")? {
        // The header the bucket was keyed on always reaches the origin: dropped, the origin would
        // see an anonymous request the gateway admitted under a made-up key.
        let keyed = |name: &str| keyed.is_some_and(|k| k.eq_ignore_ascii_case(name));
        for name in hop_by_hop_names(&named).filter(|name| !keyed(name)) {
            // A name the runtime refuses (not a token) names no header it holds either.
            let _ = headers.delete(name);
        }
    }
    headers.delete("Keep-Alive")?;
    headers.delete("Proxy-Connection")?;
    Ok(())
}

/// The header names a `Connection` value lists, but for `Upgrade`.
fn hop_by_hop_names(connection: &str) -> impl Iterator<Item = &str> {
    connection
        .split(',')
        .map(|name| name.trim_matches([' ', '\t']))
        .filter(|name| !name.is_empty() && !name.eq_ignore_ascii_case("upgrade"))
}

/// The origin's answer with `extra` headers added and its `Location` passed through `relocate`.
/// Its hop-by-hop headers are dropped as the request's are (see [`upstream_request`]). workerd
/// itself removes the origin's `Connection` and `Keep-Alive` before a Worker sees the answer, so
/// there `Proxy-Connection` is what is left to drop, and a header the origin's `Connection`
/// named cannot be told from any other and passes.
///
/// # Errors
/// 502 `ORIGIN_INVALID_STATUS` when its status is one a response cannot carry (a 101 can only
/// with a WebSocket); 500 when the runtime fails.
pub fn decorated(
    response: web_sys::Response,
    extra: &[(&str, String)],
    relocate: impl Fn(&str) -> Option<String>,
) -> Result<web_sys::Response, ApiError> {
    let status = response.status();
    // A 101 without a socket (an origin switching protocols on a plain request) is refused by
    // the runtime like any status outside 200–599, which reached the client as a bare 500.
    if status == 101 && response.websocket().is_some() {
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
    drop_hop_by_hop(&headers.0, None).map_err(internal)?;
    if let Some(location) = headers.get("Location").ok().flatten().and_then(|l| relocate(&l)) {
        headers.set("Location", &location).map_err(internal)?;
    }
    for (name, value) in extra {
        let value = match *name {
            "Access-Control-Expose-Headers" => merged_list(headers.get(name).ok().flatten(), value),
            // The origin's own limits stay beside ours: its clients must keep to both, and the
            // draft asks intermediaries not to remove them (that would advertise a more
            // permissive quota). Both are lists, so joining them is one list.
            "RateLimit" | "RateLimit-Policy" => appended(headers.get(name).ok().flatten(), value),
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

/// The origin's list field, if it sent one, with our items after its own. A value that is not
/// a Structured Field List, such as draft-07's `limit=100, remaining=99, reset=60` (a Dictionary,
/// which express-rate-limit sends), is replaced by ours: joined, the field would not parse either,
/// and a recipient drops an unparseable field whole, our limits with it.
fn appended(origin: Option<String>, ours: &str) -> String {
    match origin.as_deref().map(str::trim).filter(|o| !o.is_empty()) {
        Some(origin) if is_list(origin) => format!("{origin}, {ours}"),
        _ => ours.to_owned(),
    }
}

/// Whether `value` parses as a Structured Field List (RFC 9651).
fn is_list(value: &str) -> bool {
    sfv::Parser::new(value).parse_list_with_visitor(sfv::visitor::Ignored).is_ok()
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
/// rewriting does (nginx's `proxy_redirect default`). The URL is read as a browser on `site`
/// reads it (`absolute_parts`); scheme and host compare without case and a default port
/// (`:443`, `:80`) counts as none, as the URL parser has them. Anything else is `None` and stays
/// as the origin sent it: a relative URL, another site, a user name, and a path that climbs out
/// of the origin's base path with `..` (rewritten, the gateway would send it back under the base
/// path).
pub fn public_location(location: &str, origin: &str, site: &str) -> Option<String> {
    let (origin_site, base) = split_site(origin);
    let (location_site, rest) = absolute_parts(location, scheme(origin_site), scheme(site))?;
    if site::normal_site(&location_site) != site::normal_site(origin_site) {
        return None;
    }
    let tail = rest.strip_prefix(base)?;
    let path = tail.split(['?', '#']).next().unwrap_or_default();
    if path.split('/').any(is_dot_segment) {
        return None;
    }
    match tail.chars().next() {
        None => Some(format!("{site}/")),
        Some('/') => Some(format!("{site}{tail}")),
        Some('?' | '#') => Some(format!("{site}/{tail}")),
        Some(_) => None, // `/base2` is not under `/base`
    }
}

/// The scheme of `scheme://…`, in lower case.
fn scheme(site: &str) -> String {
    site.split("://").next().unwrap_or_default().to_ascii_lowercase()
}

/// An http(s) `location`'s `scheme://authority` and the rest (path, query, fragment), as the URL
/// parser reads it on a page whose scheme is `page_scheme`; `None` for a URL relative to that
/// page. The parser drops spaces and controls around the URL and every tab and newline in it,
/// takes `\` for `/` (so the rest is returned with `/` in its path), and skips any run of slashes
/// before the authority: `http:\\host`, `http:/\host`, and `http:host` or `http:/host` on a
/// page of another scheme. A scheme-relative `//host` is taken with `origin_scheme`, as the
/// origin meant it.
fn absolute_parts(location: &str, origin_scheme: String, page_scheme: String) -> Option<(String, String)> {
    let cleaned: String =
        location.trim_matches(|c: char| c <= ' ').chars().filter(|c| !matches!(c, '\t' | '\n' | '\r')).collect();
    let explicit = split_scheme(&cleaned);
    // Without a scheme, or with the page's own, the authority needs two slashes before it.
    let page_relative = explicit.as_ref().is_none_or(|(scheme, _)| *scheme == page_scheme);
    let (scheme, after) = explicit.unwrap_or((origin_scheme, &cleaned));
    let rest = after.trim_start_matches(['/', '\\']);
    if (page_relative && after.len() - rest.len() < 2) || !matches!(scheme.as_str(), "http" | "https") {
        return None;
    }
    let (authority, tail) = rest.split_at(rest.find(['/', '\\', '?', '#']).unwrap_or(rest.len()));
    let path_end = tail.find(['?', '#']).unwrap_or(tail.len());
    let tail = format!("{}{}", tail[..path_end].replace('\\', "/"), &tail[path_end..]);
    Some((format!("{scheme}://{authority}"), tail))
}

/// A URL's scheme (a letter, then letters, digits, `+`, `-` and `.`, before a `:`), in lower
/// case, and what follows the `:`.
fn split_scheme(url: &str) -> Option<(String, &str)> {
    let (scheme, after) = url.split_once(':')?;
    let mut chars = scheme.chars();
    let valid = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    valid.then(|| (scheme.to_ascii_lowercase(), after))
}

/// Whether the URL parser reads `segment` as `.` or `..`: `%2e` (any case) is a dot.
fn is_dot_segment(segment: &str) -> bool {
    matches!(segment.to_ascii_lowercase().replace("%2e", ".").as_str(), "." | "..")
}

#[cfg(test)]
mod tests {
    use std::net::IpAddr;

    use super::{appended, forwarded_for, forwarded_node, hop_by_hop_names, merged_list, public_location};

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn the_client_address_is_told_in_both_forms() {
        assert_eq!(forwarded_node(ip("203.0.113.7")), "203.0.113.7");
        assert_eq!(forwarded_node(ip("2001:db8::7")), "\"[2001:db8::7]\"", "quoted, in brackets");
    }

    #[test]
    fn the_client_address_goes_last_in_x_forwarded_for() {
        assert_eq!(forwarded_for(None, ip("203.0.113.7")), "203.0.113.7");
        assert_eq!(forwarded_for(Some(" ".into()), ip("203.0.113.7")), "203.0.113.7");
        assert_eq!(forwarded_for(Some("10.0.0.1".into()), ip("203.0.113.7")), "10.0.0.1, 203.0.113.7");
        assert_eq!(
            forwarded_for(Some("1.1.1.1, 10.0.0.1, ".into()), ip("2001:db8::7")),
            "1.1.1.1, 10.0.0.1, 2001:db8::7"
        );
    }

    #[test]
    fn the_origin_s_own_limits_come_first() {
        let ours = r#""burst";q=2;w=3600"#;
        assert_eq!(appended(None, ours), ours);
        assert_eq!(appended(Some(" ".into()), ours), ours);
        assert_eq!(appended(Some(r#""origin";q=100;w=60 "#.into()), ours), format!(r#""origin";q=100;w=60, {ours}"#));
        // draft-07 (express-rate-limit): a Dictionary; joined, the whole field would be dropped.
        assert_eq!(appended(Some("limit=100, remaining=99, reset=60".into()), ours), ours);
        assert_eq!(appended(Some("100;w=60".into()), ours), format!("100;w=60, {ours}"), "a List, if an odd one");
        assert_eq!(appended(Some(r#""unterminated"#.into()), ours), ours);
    }

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
        assert_eq!(at("//10.0.0.5:8080/x", origin).as_deref(), Some("https://gw.example/x"), "scheme-relative");
        assert_eq!(
            at("http://10.0.0.5:08080/x", origin).as_deref(),
            Some("https://gw.example/x"),
            "as the parser reads it"
        );
        assert_eq!(at("http://10.0.0.5:+80/x", "http://10.0.0.5"), None, "a port the parser refuses");
        for elsewhere in ["/login", "login", "https://10.0.0.5:8080/", "http://10.0.0.5/", "https://idp.example/auth"] {
            assert_eq!(at(elsewhere, origin), None, "{elsewhere}");
        }
        assert_eq!(at("http://user@10.0.0.5:8080/x", origin), None, "a user name is another site");
        let based = "https://api.example/base";
        assert_eq!(at("https://api.example/base/x", based).as_deref(), Some("https://gw.example/x"));
        assert_eq!(at("https://api.example/base", based).as_deref(), Some("https://gw.example/"));
        assert_eq!(at("https://api.example/base2/x", based), None);
        assert_eq!(at("https://api.example/other", based), None);
        assert_eq!(at("https://api.example/Base/x", based), None, "paths compare exactly");
        assert_eq!(at("https://api.example/base/../other", based), None, "climbs out of the base path");
        assert_eq!(at("https://api.example/base/a/./b?q=..", based), None);
        assert_eq!(at("https://api.example/base/a?q=/../", based).as_deref(), Some("https://gw.example/a?q=/../"));
        // The URL parser reads these as `..` too: `%2e` is a dot, `\` a slash, tabs are dropped.
        for climbing in ["%2e%2e/other", ".%2E/other", "..\\other", ".\t./other", "a/%2E/b"] {
            let location = format!("https://api.example/base/{climbing}");
            assert_eq!(public_location(&location, based, "https://gw.example"), None, "{climbing}");
        }
        assert_eq!(at("https://api.example/base/%2e%2ex", based).as_deref(), Some("https://gw.example/%2e%2ex"));
    }

    #[test]
    fn redirects_are_read_as_a_browser_reads_them() {
        let at = |location, origin| public_location(location, origin, "https://gw.example");
        let origin = "http://10.0.0.5:8080";
        // Each of these takes a browser on the gateway to the origin (`new URL(location, page)`).
        for to_origin in [
            "http://10.0.0.5:8080\\x",
            "http:\\\\10.0.0.5:8080/x",
            "http:/\\10.0.0.5:8080/x",
            "HTTP:////10.0.0.5:8080/x",
            "\\\\10.0.0.5:8080/x",
            "/\\10.0.0.5:8080/x",
            " http://10.0.0.5:8080/x\n",
            "\u{1}ht\ttp://10.0.0.5:8080/x\u{0}",
            "http:10.0.0.5:8080/x",
            "http:/10.0.0.5:8080/x",
        ] {
            assert_eq!(at(to_origin, origin).as_deref(), Some("https://gw.example/x"), "{to_origin:?}");
        }
        // On a page of the same scheme, these are paths on the gateway itself.
        let on_http = |location| public_location(location, origin, "http://gw.example");
        assert_eq!(on_http("http:10.0.0.5:8080/x"), None);
        assert_eq!(on_http("http:/10.0.0.5:8080/x"), None);
        assert_eq!(on_http("http:/\\10.0.0.5:8080/x").as_deref(), Some("http://gw.example/x"));
        assert_eq!(at("/x:y", origin), None);
        assert_eq!(at("ws://10.0.0.5:8080/x", origin), None);
        assert_eq!(at("http://", origin), None);
        let based = "https://api.example/base";
        assert_eq!(at("https://api.example\\base\\x?a\\b", based).as_deref(), Some("https://gw.example/x?a\\b"));
        assert_eq!(at("https://api.example/base\\..\\other", based), None, "climbs out of the base path");
        assert_eq!(at("https://api.example/base/.\t./other", based), None, "climbs out of the base path");
    }

    #[test]
    fn default_ports_are_no_port() {
        let at = |location, origin| public_location(location, origin, "https://gw.example");
        assert_eq!(at("https://api.example/x", "https://api.example:443").as_deref(), Some("https://gw.example/x"));
        assert_eq!(at("https://API.example:443/x", "https://api.example").as_deref(), Some("https://gw.example/x"));
        assert_eq!(at("http://api.example/x", "http://api.example:80").as_deref(), Some("https://gw.example/x"));
        assert_eq!(at("http://api.example:443/x", "http://api.example"), None, "443 is not http's default");
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

    #[test]
    fn connection_names_the_hop_by_hop_headers_but_upgrade_stays() {
        let names: Vec<&str> = hop_by_hop_names("keep-alive, X-Drop,,\tUpgrade ,close").collect();
        assert_eq!(names, ["keep-alive", "X-Drop", "close"]);
    }
}
