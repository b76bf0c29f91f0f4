//! The gateway's route table from `[vars] ROUTES`: which requests are limited, under which policy,
//! keyed by what, at what cost. The first route that matches a request decides; requests that
//! match none pass through unlimited.
//!
//! ```json
//! [{ "pattern": "/users/:user/**", "methods": ["POST"], "policy": "writes",
//!    "key": { "source": "segment", "name": "user" }, "cost": 1 }]
//! ```
//!
//! A pattern is a path of segments: a literal, `:name` (any one segment, captured), `*` (any one
//! segment) or, last, `**` (any rest, also none). Literals match exactly, or with ASCII letters
//! in any case with `"caseInsensitive": true`, for an origin that routes so. Key sources:
//! `{"source": "ip"}` (`CF-Connecting-IP`; IPv6 by its /64, or `"ipv6Prefix": n` bits),
//! `{"source": "header", "name": …}`, `{"source": "apiKey", "header": …}` (default `X-API-Key`;
//! a `Bearer` scheme in any case and surrounding spaces are dropped; the key is hashed),
//! `{"source": "segment", "name": …}` and `{"source": "constant", "value": …}`.

use std::borrow::Cow;
use std::net::{IpAddr, Ipv6Addr};

use percent_encoding::percent_decode_str;
use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::api::ApiPrefix;
use super::auth::scheme_and_credential;
use super::errors::ApiError;
use super::incoming::client_ip;
use super::keys;
use super::policy::Policies;

/// Where a route takes its bucket key from.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(tag = "source", rename_all = "camelCase", deny_unknown_fields)]
pub enum KeySource {
    /// The client address Cloudflare puts in `CF-Connecting-IP`. An IPv6 address counts by its
    /// network (the first `ipv6Prefix` bits, default 64): one subscriber is routinely given a
    /// whole /64, so keying on the full address would hand each client 2^64 buckets.
    Ip {
        /// Bits of an IPv6 address that name its bucket, 1 to 128.
        #[serde(default = "default_ipv6_prefix", rename = "ipv6Prefix")]
        ipv6_prefix: u8,
    },
    /// A request header's value.
    Header {
        /// The header's name.
        name: String,
    },
    /// An API key header, hashed (SHA-256) so keys never reach logs or object names.
    ApiKey {
        /// The header's name.
        #[serde(default = "default_api_key_header")]
        header: String,
    },
    /// A `:name` segment of the pattern.
    Segment {
        /// The segment's name, without the colon.
        name: String,
    },
    /// The same bucket for every request.
    Constant {
        /// The key.
        value: String,
    },
}

impl KeySource {
    /// The request header the key is read from, if any.
    pub fn header(&self) -> Option<&str> {
        match self {
            KeySource::Header { name } => Some(name),
            KeySource::ApiKey { header } => Some(header),
            _ => None,
        }
    }

    /// The `WWW-Authenticate` challenge for a request without its API key: `Bearer` when the key
    /// goes in `Authorization`, else `ApiKey header="<name>"`. No registered scheme names a key
    /// in a header of its own, and a 401 must carry some challenge (RFC 9110, 11.6.1); this one
    /// says where the key goes.
    pub fn challenge(&self) -> String {
        match self {
            KeySource::ApiKey { header } if !header.eq_ignore_ascii_case("Authorization") => {
                format!("ApiKey header=\"{header}\"")
            }
            _ => "Bearer".into(),
        }
    }
}

fn default_ipv6_prefix() -> u8 {
    64
}

fn default_api_key_header() -> String {
    "X-API-Key".into()
}

/// One route as JSON writes it.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RouteSpec {
    pattern: String,
    methods: Option<Vec<String>>,
    policy: String,
    key: KeySource,
    #[serde(default = "one")]
    cost: i64,
    #[serde(default)]
    case_insensitive: bool,
}

fn one() -> i64 {
    1
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    Literal(String),
    Param(String),
    Any,
    Rest,
}

/// A checked route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// The pattern as written.
    pub pattern: String,
    segments: Vec<Segment>,
    methods: Option<Vec<String>>,
    /// The policy's name.
    pub policy: String,
    /// Where the key comes from.
    pub key: KeySource,
    /// Tokens per request.
    pub cost: i64,
    /// Whether literal segments match in any case, for an origin that routes so.
    case_insensitive: bool,
}

impl Route {
    /// Whether a path segment is the literal `literal`: exactly, or with ASCII letters in any
    /// case for a `caseInsensitive` route. (Unicode's case tables would add 13 KB of wasm for
    /// route literals, which are ASCII in practice.)
    fn same_literal(&self, literal: &str, part: &str) -> bool {
        literal == part || (self.case_insensitive && literal.eq_ignore_ascii_case(part))
    }
}

/// The captured `:name` segments of a match.
pub type Captures<'a> = Vec<(&'a str, &'a str)>;

/// Reads `ROUTES`, checking every route against `policies` and the service API's place.
///
/// # Errors
/// A message naming the route and what is wrong with it.
pub fn parse(json: &str, policies: &Policies, api: &ApiPrefix) -> Result<Vec<Route>, String> {
    let specs: Vec<RouteSpec> = serde_json::from_str(json).map_err(|e| format!("ROUTES: {e}"))?;
    specs.into_iter().map(|spec| check(spec, policies, api)).collect()
}

fn check(spec: RouteSpec, policies: &Policies, api: &ApiPrefix) -> Result<Route, String> {
    let at = |message: String| format!("route {:?}: {message}", spec.pattern);
    let segments = parse_pattern(&spec.pattern).map_err(at)?;
    if under(&segments, api) {
        return Err(at(format!(
            "its paths are the service API's (API_PREFIX {:?}): set API_PREFIX to another path, such as \
             /edgebucket/v1, to limit them",
            api.as_str()
        )));
    }
    let policy = policies.get(&spec.policy).ok_or_else(|| at(format!("no policy named {:?}", spec.policy)))?;
    let smallest = policy.configuration.bandwidths().iter().map(|b| b.capacity()).min().unwrap_or(0);
    if spec.cost < 1 || spec.cost > smallest {
        return Err(at(format!("cost must be 1 to {smallest} (the policy's smallest capacity), got {}", spec.cost)));
    }
    if let KeySource::Ip { ipv6_prefix } = spec.key {
        if !(1..=128).contains(&ipv6_prefix) {
            return Err(at(format!("ipv6Prefix must be 1 to 128 bits, got {ipv6_prefix}")));
        }
    }
    // Checked per request too, where a bad constant would blame every client for it.
    if let KeySource::Constant { value } = &spec.key {
        keys::check(&keys::gateway_key(&spec.policy, "constant", value))
            .map_err(|e| at(format!("the constant key is unusable: {}", e.message)))?;
    }
    if let KeySource::Segment { name } = &spec.key {
        if !segments.contains(&Segment::Param(name.clone())) {
            return Err(at(format!("the key names segment {name:?}, which the pattern lacks (write :{name})")));
        }
    }
    if let Some(name) = spec.key.header().filter(|name| !is_token(name)) {
        return Err(at(format!("{name:?} is not a header name")));
    }
    if spec.key.header().is_some_and(|name| name.eq_ignore_ascii_case("Cookie")) {
        return Err(at("a Cookie header holds any cookies a client cares to add, each spelling a new bucket: \
                       key on a header or path segment that names the client"
            .into()));
    }
    if let KeySource::Header { name } = &spec.key {
        if ADDRESS_HEADERS.iter().any(|a| name.eq_ignore_ascii_case(a)) {
            return Err(at(format!(
                "{name} is whatever the client claims, and the gateway sends the origin its own: \
                 key on the client's address with {{\"source\": \"ip\"}}"
            )));
        }
        if CREDENTIAL_HEADERS.iter().any(|c| name.eq_ignore_ascii_case(c)) {
            return Err(at(format!(
                "{name} carries credentials, which a header key would put in bucket names and logs as they are: \
                 use {{\"source\": \"apiKey\", \"header\": \"{name}\"}}, which hashes them"
            )));
        }
    }
    match spec.methods.as_deref() {
        Some([]) => {
            return Err(at("methods is empty, so the route would never match: list methods or leave it out".into()))
        }
        Some(methods) => {
            if let Some(bad) = methods.iter().find(|m| !is_token(m)) {
                return Err(at(format!("{bad:?} is not an HTTP method")));
            }
        }
        None => {}
    }
    let methods = spec.methods.map(|m| m.iter().map(|m| m.to_ascii_uppercase()).collect());
    Ok(Route {
        pattern: spec.pattern,
        segments,
        methods,
        policy: spec.policy,
        key: spec.key,
        cost: spec.cost,
        case_insensitive: spec.case_insensitive,
    })
}

/// Whether every path a pattern matches is under the API prefix (its first segments are the
/// prefix's, as literals). Such a route would never see a request: the API answers them first.
fn under(segments: &[Segment], api: &ApiPrefix) -> bool {
    let mut pattern = segments.iter();
    api.segments().all(|part| matches!(pattern.next(), Some(Segment::Literal(literal)) if literal == part))
}

/// Headers that carry secrets: a `header` key on them is refused in favour of `apiKey`.
const CREDENTIAL_HEADERS: [&str; 3] = ["Authorization", "Proxy-Authorization", "X-API-Key"];

/// Headers that claim the client's address, which the gateway replaces or extends before the
/// origin sees them (`forwarding::upstream_request`): a bucket keyed on one is the client's to
/// choose, and not the value the origin is sent.
const ADDRESS_HEADERS: [&str; 4] = ["X-Forwarded-For", "Forwarded", "X-Real-IP", "True-Client-IP"];

/// An HTTP token (RFC 9110 5.6.2): what method and header names are made of.
fn is_token(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

fn parse_pattern(pattern: &str) -> Result<Vec<Segment>, String> {
    let Some(rest) = pattern.strip_prefix('/') else {
        return Err("a pattern starts with /".into());
    };
    let parts: Vec<&str> = rest.split('/').filter(|s| !s.is_empty()).collect();
    let last = parts.len().saturating_sub(1);
    let segments: Vec<Segment> = parts
        .iter()
        .enumerate()
        .map(|(i, part)| match *part {
            "**" if i == last => Ok(Segment::Rest),
            "**" => Err("** may only end a pattern".to_owned()),
            "*" => Ok(Segment::Any),
            // Requests are matched decoded, with dot segments resolved: these never match.
            "." | ".." => {
                Err(format!("a {part:?} segment never matches: requests are matched with dot segments resolved"))
            }
            // Written as in a URL, they would start the query or fragment, which no route sees.
            p if p.contains(['?', '#']) => {
                Err(format!("{p:?} holds '?' or '#': routes match the path alone, never the query or fragment"))
            }
            p if p.contains(['%', '\\']) => Err(format!(
                "{p:?} never matches: requests are matched percent-decoded, with \\ as /; write it decoded"
            )),
            p if p.starts_with(':') && p.len() > 1 => Ok(Segment::Param(p[1..].to_owned())),
            p => Ok(Segment::Literal(p.to_owned())),
        })
        .collect::<Result<_, _>>()?;
    let names: Vec<&str> =
        segments.iter().filter_map(|s| if let Segment::Param(n) = s { Some(n.as_str()) } else { None }).collect();
    // A pattern has a few names: comparing pairs beats linking a sort for them.
    if let Some((_, name)) = names.iter().enumerate().find(|(i, name)| names[..*i].contains(name)) {
        return Err(format!("the segment name :{name} appears twice"));
    }
    Ok(segments)
}

/// A request path read as an origin reads it, for matching (see [`read_path`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathReading {
    /// Every segment, percent-decoded, dot segments resolved, empty ones dropped.
    Clear(Vec<String>),
    /// A segment origins read differently (see [`read_path`]): only the segments before it are
    /// known, less one for each `..` after it (which may climb back into them); anything may
    /// follow them.
    Unclear {
        /// The segments known to start the path.
        known: Vec<String>,
        /// 400 `INVALID_PATH`, for a request a route may limit.
        error: ApiError,
    },
}

/// The segments of a request path as an origin sees them, for matching: each percent-decoded
/// (so `/%61pi` is `/api`), empty and `.` segments dropped, `..` removing the one before.
///
/// The forwarded request's URL is parsed by the URL standard, which for http(s) reads `\` as
/// `/` and drops tabs and newlines, so the path is split and cleaned the same way: otherwise
/// `/x\..\api/1` would match no route and yet reach the origin as `/api/1`.
///
/// A segment that is not UTF-8 once decoded, or holds an encoded `/` or `\`, is unclear: origins
/// disagree on whether `%2F` (or, on Windows, `%5C`) separates segments, and on the charset of
/// other bytes, so any one reading would let a request escape its route's limit at an origin that
/// reads it another way. So is a dot segment with parameters (`..;x`, `.;`), which Java servlet
/// containers read as the dot segment. Such a path is refused only where a route could match it
/// (see [`could_match`]); elsewhere it passes, as `/projects/group%2Fproject` must.
///
/// From the first unclear segment on, only dot segments count: each `..` that any reading could
/// see, inside an unclear segment too (`/x/..%2Flogin` is `/login` to an origin that splits on
/// `%2F`), removes one known segment.
pub fn read_path(path: &str) -> PathReading {
    let path = &*without_tabs(path);
    // Dot segments are resolved with empty segments kept, as the URL standard does (`/a//../b`
    // is `/a/b`, not `/b`); empty segments are dropped only afterwards, for matching.
    let mut parts: Vec<String> = Vec::new();
    let mut unclear: Option<&str> = None;
    let path = path.strip_prefix(['/', '\\']).unwrap_or(path);
    for raw in path.split(['/', '\\']) {
        let bytes: Cow<[u8]> = percent_decode_str(raw).into(); // borrowed when nothing is escaped
        match std::str::from_utf8(&bytes) {
            Ok("..") => _ = parts.pop(),
            Ok(".") => {}
            decoded => {
                if unclear.is_none() {
                    unclear = unclear_because(raw, decoded);
                }
                match (unclear, decoded) {
                    (None, Ok(part)) => parts.push(part.to_owned()),
                    _ => {
                        // Where slashes are merged first (nginx, Tomcat), an empty segment takes
                        // no `..`: `/x//..%2Flogin` is `/login` there.
                        parts.retain(|part| !part.is_empty());
                        parts.truncate(parts.len().saturating_sub(climbs(raw, &bytes)));
                    }
                }
            }
        }
    }
    parts.retain(|part| !part.is_empty());
    match unclear {
        None => PathReading::Clear(parts),
        Some(message) => PathReading::Unclear { known: parts, error: ApiError::bad_request("INVALID_PATH", message) },
    }
}

/// The segments of `path` as the origins that read the most into it see them: split at encoded
/// `/` and `\` too, IIS's `%uXXXX` decoded, every segment's `;params` dropped (Tomcat, Jetty),
/// bytes that are not UTF-8 replaced, dot segments resolved. Two readings: with empty segments
/// kept while dot segments resolve, as the URL standard does, and with them merged first, as
/// nginx (`merge_slashes`), Tomcat and path normalisers do (`/x//..%2Fv1` is `/x/v1` to the one,
/// `/v1` to the other). [`read_path`] gives the plain reading, and stops at an unclear segment.
pub fn split_readings(path: &str) -> [Vec<String>; 2] {
    let pieces = split_pieces(path);
    let merged = merged(&pieces);
    [resolve(pieces).0, resolve(merged).0]
}

/// Whether some reading of `path` (see [`split_readings`]) climbs above its root: `/a/..%2F..%2Fx`
/// is `/x` to the URL standard but `../x` to an origin that splits on `%2F`, which joined under a
/// base path (`/base/a/../../x`) reaches `/x`, outside it.
pub fn climbs_above_root(path: &str) -> bool {
    // The merged reading alone: an empty segment kept only adds depth, so the other reading
    // never climbs where this one does not.
    resolve(merged(&split_pieces(path))).1
}

/// The pieces of `path` before dot segments are resolved, for [`split_readings`], empty ones
/// kept.
fn split_pieces(path: &str) -> Vec<String> {
    let path = without_tabs(path);
    let mut pieces = Vec::new();
    for raw in path.split(['/', '\\']) {
        let decoded = if iis_escape(raw) { iis_decoded(raw) } else { percent_decode_str(raw).collect() };
        for piece in decoded.split(|b| matches!(b, b'/' | b'\\')) {
            let piece = String::from_utf8_lossy(piece);
            pieces.push(piece.split(';').next().unwrap_or_default().to_owned());
        }
    }
    pieces
}

/// `pieces` with the empty ones merged away, as nginx (`merge_slashes`) and Tomcat read a path.
fn merged(pieces: &[String]) -> Vec<String> {
    pieces.iter().filter(|piece| !piece.is_empty()).cloned().collect()
}

/// Whether every origin reads `path` as [`read_path`] does: nothing escaped, and no `\\`, `;`,
/// tab, line break or empty segment inside it. Then [`split_readings`] would only repeat the
/// plain reading, and a request need not pay for it.
pub fn one_reading(path: &str) -> bool {
    !path.contains(['%', '\\', ';', '\t', '\n', '\r']) && !path.contains("//")
}

/// `path` without the tabs and line breaks the URL parser drops; borrowed when it has none.
fn without_tabs(path: &str) -> Cow<'_, str> {
    if path.contains(['\t', '\n', '\r']) {
        Cow::Owned(path.chars().filter(|c| !matches!(c, '\t' | '\n' | '\r')).collect())
    } else {
        Cow::Borrowed(path)
    }
}

/// `pieces` with dot segments resolved, then empty ones dropped; and whether a `..` found
/// nothing left to remove (climbed above the root).
fn resolve(pieces: Vec<String>) -> (Vec<String>, bool) {
    let mut parts: Vec<String> = Vec::new();
    let mut climbed = false;
    for piece in pieces {
        match piece.as_str() {
            ".." => climbed |= parts.pop().is_none(),
            "." => {}
            _ => parts.push(piece),
        }
    }
    parts.retain(|part| !part.is_empty());
    (parts, climbed)
}

/// Why a segment other than `.` and `..` (`raw`, and `decoded` from it) is unclear (see
/// [`read_path`]), if it is.
fn unclear_because(raw: &str, decoded: Result<&str, std::str::Utf8Error>) -> Option<&'static str> {
    if iis_escape(raw) {
        return Some("a '%u' escape is ambiguous (IIS reads '%u002e' as '.', others as it is)");
    }
    match decoded {
        Err(_) => Some("the path is not UTF-8 once percent-decoded"),
        Ok(part) if part.contains(['/', '\\']) => {
            Some("an encoded '/' or '\\' (%2F, %5C) in a path segment is ambiguous")
        }
        Ok(part) if matches!(part.split(';').next(), Some(".." | ".")) => {
            Some("a dot segment with parameters ('..;') is read as '..' by some origins")
        }
        Ok(_) => None,
    }
}

/// How many segments the segment `raw` (`decoded` once percent-decoded) may climb under some
/// reading: one for each piece, split at `/` and `\`, that is `..`, parameters (`;…`) aside;
/// with IIS's `%uXXXX` escapes decoded too, where there are any.
fn climbs(raw: &str, decoded: &[u8]) -> usize {
    let count = |bytes: &[u8]| {
        let dot_dot = |piece: &[u8]| piece.split(|b| *b == b';').next() == Some(b"..");
        bytes.split(|b| matches!(b, b'/' | b'\\')).filter(|piece| dot_dot(piece)).count()
    };
    let iis = if iis_escape(raw) { count(&iis_decoded(raw)) } else { 0 };
    count(decoded).max(iis)
}

/// Whether `raw` has an IIS `%uXXXX` escape (four hex digits): the URL standard leaves it as it
/// is, IIS reads it as a character. Other stray `%`s (`/files/100%.pdf`) have one reading.
fn iis_escape(raw: &str) -> bool {
    raw.match_indices('%').any(|(at, _)| iis_unit(&raw[at + 1..]).is_some())
}

/// The UTF-16 unit of the IIS escape `uXXXX` that `rest` (what follows a `%`) starts with.
fn iis_unit(rest: &str) -> Option<u32> {
    let hex = rest.get(..5)?.strip_prefix(['u', 'U'])?;
    // Checked first: `from_str_radix` would also take a sign (`%u+02e`).
    hex.bytes().all(|b| b.is_ascii_hexdigit()).then(|| u32::from_str_radix(hex, 16).ok())?
}

/// `raw` percent-decoded as IIS does, `%uXXXX` (a UTF-16 unit; a lone surrogate as U+FFFD) too.
fn iis_decoded(raw: &str) -> Vec<u8> {
    let mut text = String::with_capacity(raw.len());
    let mut rest = raw;
    while let Some(at) = rest.find('%') {
        text.push_str(&rest[..at]);
        match iis_unit(&rest[at + 1..]) {
            Some(unit) => {
                text.push(char::from_u32(unit).unwrap_or(char::REPLACEMENT_CHARACTER));
                rest = &rest[at + 6..];
            }
            None => {
                text.push('%');
                rest = &rest[at + 1..];
            }
        }
    }
    text.push_str(rest);
    percent_decode_str(&text).collect()
}

/// Whether `route` could match `method` and a path that starts with the segments `known` and
/// goes on with anything (see [`PathReading::Unclear`]).
pub fn could_match(route: &Route, method: Method, known: &[String]) -> bool {
    if !method_matches(route, method) {
        return false;
    }
    for (i, part) in known.iter().enumerate() {
        match route.segments.get(i) {
            Some(Segment::Rest) => return true,
            Some(Segment::Literal(literal)) if route.same_literal(literal, part) => {}
            Some(Segment::Any | Segment::Param(_)) => {}
            _ => return false,
        }
    }
    true
}

/// How a request is matched against routes' `methods`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method<'a> {
    /// An ordinary request: routes without `methods` match any.
    Plain(&'a str),
    /// A CORS preflight: only routes that list `OPTIONS` match (see [`cors`](super::cors)).
    Preflight,
}

/// The first route matching `method` and the path `parts` (see [`read_path`]), with its captures.
pub fn find<'r, 'p>(routes: &'r [Route], method: Method, parts: &'p [String]) -> Option<(&'r Route, Captures<'p>)>
where
    'r: 'p,
{
    let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
    routes
        .iter()
        .filter(|route| method_matches(route, method))
        .find_map(|route| matches(route, &parts).map(|captures| (route, captures)))
}

fn method_matches(route: &Route, method: Method) -> bool {
    match (method, &route.methods) {
        (Method::Plain(_), None) => true,
        (Method::Preflight, None) => false,
        // HEAD is GET without the body (RFC 9110 9.3.2); most origins run the GET handler for it.
        (Method::Plain(method), Some(listed)) => listed.iter().any(|m| {
            m.eq_ignore_ascii_case(method) || (method.eq_ignore_ascii_case("HEAD") && m.eq_ignore_ascii_case("GET"))
        }),
        (Method::Preflight, Some(listed)) => listed.iter().any(|m| m == "OPTIONS"),
    }
}

fn matches<'r, 'p>(route: &'r Route, parts: &[&'p str]) -> Option<Captures<'p>>
where
    'r: 'p,
{
    let segments = &route.segments;
    let mut captures = Vec::new();
    for (i, segment) in segments.iter().enumerate() {
        match (segment, parts.get(i)) {
            (Segment::Rest, _) => return Some(captures),
            (Segment::Literal(literal), Some(part)) if route.same_literal(literal, part) => {}
            (Segment::Any, Some(_)) => {}
            (Segment::Param(name), Some(part)) => captures.push((name.as_str(), *part)),
            _ => return None,
        }
    }
    (segments.len() == parts.len()).then_some(captures)
}

/// The bucket key for a request on `route`: `{policy}:{source}:{value}`, so that sources never
/// collide and an admin can find the bucket.
///
/// # Errors
/// 400 `MISSING_KEY` (401 `MISSING_API_KEY`) when the request lacks the key, 400 `INVALID_KEY`
/// when it is unusable.
pub fn bucket_key(
    route: &Route,
    captures: &Captures,
    header: impl Fn(&str) -> Option<String>,
) -> Result<String, ApiError> {
    let missing =
        |what: &str| ApiError::bad_request("MISSING_KEY", format!("the request has no {what} to key its bucket on"));
    let (source, value) = match &route.key {
        KeySource::Ip { ipv6_prefix } => {
            let address = header("CF-Connecting-IP").ok_or_else(|| missing("CF-Connecting-IP header"))?;
            ("ip", client_network(&address, *ipv6_prefix)?)
        }
        // An empty value is no value: otherwise everyone sending it would share one bucket.
        KeySource::Header { name } => {
            ("header", present(header(name)).ok_or_else(|| missing(&format!("{name} header")))?)
        }
        KeySource::ApiKey { header: name } => {
            let raw = present(header(name).map(|raw| credential(&raw)))
                .ok_or_else(|| ApiError::new(401, "MISSING_API_KEY", format!("send your API key in {name}")))?;
            ("apikey", hash_api_key(&raw))
        }
        KeySource::Segment { name } => {
            // Already percent-decoded by `read_path`.
            let value = captures.iter().find(|(n, _)| n == name).map(|(_, v)| *v).ok_or_else(|| missing(name))?;
            ("segment", value.to_owned())
        }
        KeySource::Constant { value } => ("constant", value.clone()),
    };
    keys::check(&keys::gateway_key(&route.policy, source, &value))
}

/// `value` unless it is empty or only spaces and tabs.
fn present(value: Option<String>) -> Option<String> {
    value.filter(|v| !v.trim_matches([' ', '\t']).is_empty())
}

/// The key part for a client address: an IPv4 address as it is (also when written as an
/// IPv4-mapped IPv6 address), an IPv6 address as its network `addr/prefix` (the full address at
/// 128), in canonical form, so one network cannot be spelled into several buckets.
///
/// # Errors
/// 400 `INVALID_KEY` when `address` is not an IP address.
fn client_network(address: &str, ipv6_prefix: u8) -> Result<String, ApiError> {
    let parsed = client_ip(address).ok_or_else(|| {
        ApiError::bad_request("INVALID_KEY", format!("CF-Connecting-IP is not an IP address: {address:?}"))
    })?;
    Ok(match parsed {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) if ipv6_prefix >= 128 => v6.to_string(),
        IpAddr::V6(v6) => {
            let mask = u128::MAX << (128 - u32::from(ipv6_prefix));
            format!("{}/{ipv6_prefix}", Ipv6Addr::from(u128::from(v6) & mask))
        }
    })
}

/// The credential in an API-key header, so that one key cannot be spelled into several
/// buckets: surrounding spaces removed; the scheme, which ends at a space or tab, in any case
/// (RFC 9110 §11.1 makes schemes case-insensitive): `Bearer` dropped, another (`Basic …`) kept in
/// lower case with one space before its credential.
fn credential(raw: &str) -> String {
    let raw = raw.trim();
    match scheme_and_credential(raw) {
        Some((scheme, rest)) => {
            if scheme.eq_ignore_ascii_case("bearer") {
                rest.to_owned()
            } else {
                format!("{} {rest}", scheme.to_ascii_lowercase())
            }
        }
        None if raw.eq_ignore_ascii_case("bearer") => String::new(), // the scheme without a credential
        None => raw.to_owned(),
    }
}

/// The first 128 bits of SHA-256, in hex: enough to never collide, useless to an attacker.
fn hash_api_key(key: &str) -> String {
    Sha256::digest(key.as_bytes())[..16].iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(path: &str) -> Vec<String> {
        match read_path(path) {
            PathReading::Clear(parts) => parts,
            unclear => panic!("{path} read as {unclear:?}"),
        }
    }

    fn is_unclear(path: &str) -> bool {
        matches!(read_path(path), PathReading::Unclear { error, .. } if error.code == "INVALID_PATH")
    }

    #[test]
    fn paths_are_matched_as_origins_read_them() {
        assert_eq!(at("/%61pi/x"), ["api", "x"], "an encoded letter is the letter");
        assert_eq!(at("//api/./v1/../items/"), ["api", "items"]);
        assert_eq!(at("/a%20b"), ["a b"]);
        assert!(is_unclear("/api%2Fx"));
        assert!(is_unclear("/%FF"));
        // As the URL standard reads the forwarded URL: `\` separates, tabs and newlines vanish.
        assert_eq!(at("/x\\..\\api/1"), ["api", "1"]);
        assert_eq!(at("/api\\1"), ["api", "1"]);
        assert_eq!(at("/api//../1"), ["api", "1"], "`..` removes the empty segment, as the URL parser does");
        assert_eq!(at("/api/x//.."), ["api", "x"]);
        assert_eq!(at("/a\tp\ni/1"), ["api", "1"]);
        assert!(is_unclear("/api%5C1"));
        let table = routes(r#"[{"pattern": "/api/**", "policy": "api", "key": {"source": "ip"}}]"#).unwrap();
        for path in ["/%61pi/x", "/API/../api/x", "/./api//x", "/v1\\..\\api/x"] {
            assert!(find(&table, Method::Plain("GET"), &at(path)).is_some(), "{path}");
        }
    }

    #[test]
    fn an_unclear_path_is_refused_only_where_a_route_could_match_it() {
        let known = |path: &str| match read_path(path) {
            PathReading::Unclear { known, error } => {
                assert_eq!(error.code, "INVALID_PATH");
                known
            }
            clear => panic!("{path} read as {clear:?}"),
        };
        assert_eq!(known("/projects/group%2Fproject/issues"), ["projects"]);
        assert_eq!(known("/a/b/%FF/x"), ["a", "b"]);
        assert_eq!(known("/a/b/%2F/.."), ["a"], "each `..` after it may climb back");
        assert_eq!(known("/%2F"), Vec::<String>::new());
        let table = routes(
            r#"[{"pattern": "/api/**", "policy": "api", "key": {"source": "ip"}},
                {"pattern": "/users/:id/posts", "methods": ["POST"], "policy": "api", "key": {"source": "ip"}}]"#,
        )
        .unwrap();
        let could = |method, path| table.iter().any(|r| could_match(r, Method::Plain(method), &known(path)));
        assert!(could("GET", "/api/x%2Fy"));
        assert!(could("GET", "/api%2Fx"), "nothing known: /api/x under one reading");
        assert!(could("POST", "/users/a%2Fb/posts"));
        assert!(could("POST", "/users/%FF/posts"));
        assert!(!could("GET", "/users/a%2Fb/posts"), "the route limits POST only");
        assert!(!could("GET", "/projects/group%2Fproject"));
        assert!(!could("POST", "/users/1/posts/2/%2F"), "longer than the route");
        assert!(could("GET", "/x/%2F/../api"), "`..` may climb out of the unclear segment");
        assert!(could("GET", "/api/v1/x%2Fy"), "** takes any rest after the known segments");
        assert!(could("POST", "/users/1/posts%2F"), ":id takes any known segment");
        // A `..` inside the unclear segment climbs too, for origins that split at `%2F` or `%5C`
        // before resolving dot segments (nginx, Python's http.server, IIS); found in review.
        for path in
            ["/x/..%2flogin", "/x/..%5Clogin", "/a/b/..%2f..%2flogin", "/a/..%2F/login", "/x/%FF/..%2f..%2flogin"]
        {
            assert_eq!(known(path), Vec::<String>::new(), "{path}");
        }
        assert_eq!(known("/a/b%2F.."), Vec::<String>::new(), "split, it is /a; each `..` piece counts, conservatively");
        // An empty segment before it does not stop the climb where slashes are merged first (nginx's
        // `merge_slashes`, Tomcat): `/x//..%2Flogin` is `/login` there (found in review).
        for path in ["/x//..%2Flogin", "/x//..;/login", "/a/b///..%2F..%2Flogin", "/x//%u002e%u002e/login"] {
            assert_eq!(known(path), Vec::<String>::new(), "{path}");
        }
        assert_eq!(known("/a//b/%2Fc"), ["a", "b"], "empty segments are no known segment");
        // Servlet containers drop `;params` before resolving dot segments: `..;` is `..` there.
        for path in ["/x/..;/login", "/x/..;a=b/login", "/x/%2e%2e;/login", "/x/..%3B/login"] {
            assert_eq!(known(path), Vec::<String>::new(), "{path}");
        }
        assert_eq!(known("/a/.;x/b"), ["a"]);
        assert!(could("POST", "/x/..%2Fusers/1/posts"));
        assert_eq!(at("/login;x"), ["login;x"], "other `;params` stay part of the segment (README)");
        assert_eq!(at("/a/..b/c."), ["a", "..b", "c."], "only whole dot segments are dot segments");
        // IIS reads `%uXXXX` as the character: a `%` that is not an escape is unclear, and its
        // `..` climbs (found in review).
        assert_eq!(known("/%u006cogin"), Vec::<String>::new());
        for path in ["/x/%u002e%u002e/login", "/x/..%u002flogin", "/x/%U002E%U002E/login"] {
            assert_eq!(known(path), Vec::<String>::new(), "{path}");
        }
        assert_eq!(known("/a/b/%u002e./c"), ["a"]);
        assert_eq!(known("/a/b/%u002e%2e/c"), ["a"], "an IIS escape beside a plain one");
        assert_eq!(known("/a/%uD800./b"), ["a"], "a lone surrogate is no dot");
        // Other stray `%`s are read as they are everywhere: not unclear.
        assert_eq!(at("/files/100%.pdf"), ["files", "100%.pdf"]);
        assert_eq!(at("/a/%u+02e./b"), ["a", "%u+02e.", "b"], "not four hex digits: not an escape");
        assert_eq!(at("/a/%zz/%u12"), ["a", "%zz", "%u12"]);
        assert!(could("POST", "/%u0075sers/1/posts"));
    }

    fn policies() -> Policies {
        Policies::parse(
            r#"{"api": {"bandwidths": [{"capacity": 5, "refill": {"kind": "greedy", "tokens": 5, "period": "1s"}}]}}"#,
        )
        .unwrap()
    }

    fn routes(json: &str) -> Result<Vec<Route>, String> {
        parse(json, &policies(), &ApiPrefix::default())
    }

    #[test]
    fn first_matching_route_wins_and_captures_segments() {
        let table = routes(
            r#"[{"pattern": "/users/:user/**", "methods": ["post"], "policy": "api", "key": {"source": "segment", "name": "user"}, "cost": 2},
                {"pattern": "/api/*/items", "policy": "api", "key": {"source": "ip"}},
                {"pattern": "/**", "policy": "api", "key": {"source": "constant", "value": "all"}}]"#,
        )
        .unwrap();
        let parts = at("/users/42/photos/7");
        let (route, captures) = find(&table, Method::Plain("POST"), &parts).unwrap();
        assert_eq!((route.pattern.as_str(), route.cost), ("/users/:user/**", 2));
        assert_eq!(captures, [("user", "42")]);
        assert_eq!(
            find(&table, Method::Plain("POST"), &at("/users/42")).unwrap().0.pattern,
            "/users/:user/**",
            "** matches nothing too"
        );
        assert_eq!(find(&table, Method::Plain("GET"), &at("/users/42")).unwrap().0.pattern, "/**", "method filter");
        let get_only =
            routes(r#"[{"pattern": "/search", "methods": ["GET"], "policy": "api", "key": {"source": "ip"}}]"#);
        let get_only = get_only.unwrap();
        assert!(find(&get_only, Method::Plain("HEAD"), &at("/search")).is_some(), "HEAD is limited as GET");
        assert!(find(&get_only, Method::Plain("POST"), &at("/search")).is_none());
        assert_eq!(find(&table, Method::Plain("GET"), &at("/api/v2/items")).unwrap().0.pattern, "/api/*/items");
        assert_eq!(find(&table, Method::Plain("GET"), &at("/api/v2/items/3")).unwrap().0.pattern, "/**");
        assert!(find(&table[..2], Method::Plain("GET"), &at("/other")).is_none());
        let colon = routes(r#"[{"pattern": "/a/:", "policy": "api", "key": {"source": "ip"}}]"#).unwrap();
        assert!(find(&colon, Method::Plain("GET"), &at("/a/:")).is_some());
        assert!(find(&colon, Method::Plain("GET"), &at("/a/x")).is_none(), "a lone ':' is a literal, not a capture");
    }

    #[test]
    fn a_case_insensitive_route_matches_literals_in_any_case() {
        let table = routes(
            r#"[{"pattern": "/login/:user", "methods": ["POST"], "policy": "api", "key": {"source": "ip"}, "caseInsensitive": true},
                {"pattern": "/Admin", "policy": "api", "key": {"source": "ip"}}]"#,
        )
        .unwrap();
        let pattern = |path| find(&table, Method::Plain("POST"), &at(path)).map(|(route, _)| route.pattern.clone());
        for spelling in ["/login/Eve", "/LOGIN/Eve", "/LoGiN/Eve"] {
            assert_eq!(pattern(spelling).as_deref(), Some("/login/:user"), "{spelling}");
            let parts = at(spelling);
            assert_eq!(find(&table, Method::Plain("POST"), &parts).unwrap().1, [("user", "Eve")], "captured as sent");
        }
        assert_eq!(pattern("/Admin").as_deref(), Some("/Admin"));
        assert_eq!(pattern("/admin"), None, "other routes stay exact");
        let same = |part: &str| table[0].same_literal("straße", part);
        assert!(same("STRAßE") && !same("STRASSE") && !same("strasse"), "ASCII letters in any case");
        assert!(!table[0].same_literal("é", "É"), "other letters exactly");
        let known = |path: &str| split_readings(path)[0].clone();
        let could = |method, path| table.iter().any(|r| could_match(r, Method::Plain(method), &known(path)));
        assert!(could("POST", "/LOGIN"), "unclear paths are judged alike");
        assert!(!could("GET", "/ADMIN"));
    }

    #[test]
    fn a_preflight_matches_only_routes_that_list_options() {
        let table = routes(
            r#"[{"pattern": "/a", "policy": "api", "key": {"source": "ip"}},
                {"pattern": "/b", "methods": ["POST"], "policy": "api", "key": {"source": "ip"}},
                {"pattern": "/c", "methods": ["post", "options"], "policy": "api", "key": {"source": "ip"}}]"#,
        )
        .unwrap();
        assert!(find(&table, Method::Plain("OPTIONS"), &at("/a")).is_some(), "a plain OPTIONS is a request");
        assert!(find(&table, Method::Preflight, &at("/a")).is_none());
        assert!(find(&table, Method::Preflight, &at("/b")).is_none());
        assert_eq!(find(&table, Method::Preflight, &at("/c")).unwrap().0.pattern, "/c");
    }

    #[test]
    fn routes_are_checked_against_policies() {
        let route = |extra: &str| routes(&format!(r#"[{{"pattern": "/a/:id", "policy": "api", {extra}}}]"#));
        assert!(route(r#""key": {"source": "ip"}, "cost": 6"#).unwrap_err().contains("cost must be 1 to 5"));
        assert!(route(r#""key": {"source": "ip"}, "cost": 0"#).is_err());
        assert!(route(r#""key": {"source": "ip"}, "cost": 5"#).is_ok(), "the smallest capacity itself");
        assert!(route(r#""key": {"source": "segment", "name": "user"}"#).unwrap_err().contains("lacks"));
        assert!(route(r#""key": {"source": "cookie"}"#).unwrap_err().contains("unknown variant"));
        assert!(routes(r#"[{"pattern": "/a", "policy": "nope", "key": {"source": "ip"}}]"#)
            .unwrap_err()
            .contains("no policy"));
        assert!(routes(r#"[{"pattern": "a", "policy": "api", "key": {"source": "ip"}}]"#).is_err());
        assert!(routes(r#"[{"pattern": "/**/a", "policy": "api", "key": {"source": "ip"}}]"#).is_err());
    }

    #[test]
    fn the_split_readings_split_where_some_origin_does() {
        let split = |path: &str| split_readings(path).map(|reading| reading.join("/"));
        assert_eq!(split("/v1%2Fmetrics"), ["v1/metrics"; 2]);
        assert_eq!(split("/v1%5cbuckets/k"), ["v1/buckets/k"; 2]);
        assert_eq!(split("/x/..%2Fv1/metrics"), ["v1/metrics"; 2]);
        assert_eq!(split("/x/..;/v1"), ["v1"; 2]);
        assert_eq!(split("/x/..;/v1;a/metrics"), ["v1/metrics"; 2], "parameters dropped from every segment");
        assert_eq!(split("/%u0076%u0031/metrics"), ["v1/metrics"; 2], "IIS");
        assert_eq!(split("//v1\\x/./y/"), ["v1/x/y"; 2]);
        assert_eq!(split("/@babel%2Fcore"), ["@babel/core"; 2]);
        assert_eq!(split("/caf%E9/v1"), ["caf\u{fffd}/v1"; 2]);
        assert_eq!(split("/a/../../b"), ["b"; 2]);
        // Empty segments: kept while dots resolve (the URL standard), or merged first (nginx, Tomcat).
        assert_eq!(split("/x//..%2Fv1/metrics"), ["x/v1/metrics", "v1/metrics"]);
        assert_eq!(split("/x/%2F..%2Fv1/metrics"), ["x/v1/metrics", "v1/metrics"]);
        assert_eq!(split("/x//..;/v1/metrics"), ["x/v1/metrics", "v1/metrics"]);
        // Nothing some origin reads another way: the plain reading is the only one.
        for plain in ["/v1/metrics", "/a/../b/", "/../v1", "/api/./x", "a/b"] {
            assert!(one_reading(plain), "{plain}");
            assert_eq!(split_readings(plain), [at(plain), at(plain)], "{plain}");
        }
        for other in ["/x//../v1", "/v1%2Fm", "/a\\b", "/..;/v1", "/x/\t/../v1"] {
            assert!(!one_reading(other), "{other}");
        }
        let api = ApiPrefix::default();
        for other in
            ["/@babel%2Fcore", "/caf%E9", "/https:%2F%2Fcdn.example%2Fa.png", "/a%2Fb", "/x/..%2Fy", "/v2%2Fv1"]
        {
            assert!(!split_readings(other).iter().any(|r| api.heads(r)), "{other} is not the API's under any reading");
        }
    }

    #[test]
    fn a_path_climbs_above_the_root_if_some_reading_does() {
        for climbing in [
            "/x/..%2F..%2Fsecret",
            "/..%2Fsecret",
            "/%2e%2e%2Fsecret",
            "/x/..;/..;/secret",
            "/%u002e%u002e/secret",
            "/a//..%2F..%2Fsecret", // merged first: a, .., .. climbs once too often
            "/x\\..%5c..%5csecret",
            "/.%2F..%2Fsecret",
        ] {
            assert!(climbs_above_root(climbing), "{climbing}");
        }
        for inside in ["/x/..%2Fsecret", "/a/b/..%2F..%2Fc", "/@babel%2Fcore", "/v1/metrics", "/a/%2e%2e", "/", ""] {
            assert!(!climbs_above_root(inside), "{inside}");
        }
    }

    #[test]
    fn a_route_under_the_api_prefix_is_a_configuration_error() {
        let route = |pattern: &str, api: &str| {
            let json = format!(r#"[{{"pattern": "{pattern}", "policy": "api", "key": {{"source": "ip"}}}}]"#);
            parse(&json, &policies(), &ApiPrefix::parse(api).unwrap())
        };
        for pattern in ["/v1", "/v1/**", "/v1/users/:id", "//v1/*"] {
            assert!(route(pattern, "/v1").unwrap_err().contains("API_PREFIX \"/v1\""), "{pattern}");
        }
        assert!(route("/eb/v1/x", "/eb/v1").is_err());
        // Patterns that also match paths outside the API are kept: the API answers its own first.
        for pattern in ["/v1x", "/:version/users", "/*/**", "/**", "/v2/users", "/"] {
            assert!(route(pattern, "/v1").is_ok(), "{pattern}");
        }
        assert!(route("/eb", "/eb/v1").is_ok(), "matches /eb only");
        assert!(route("/eb/**", "/eb/v1").is_ok(), "matches /eb/v2 too");
        assert!(route("/v1/users/**", "/edgebucket/v1").is_ok(), "the API moved out of the way");
    }

    #[test]
    fn routes_that_could_never_match_or_key_are_configuration_errors() {
        let route = |pattern: &str, extra: &str| {
            routes(&format!(r#"[{{"pattern": "{pattern}", "policy": "api", "key": {{"source": "ip"}}{extra}}}]"#))
        };
        assert!(route("/a", r#", "methods": []"#).unwrap_err().contains("methods is empty"));
        assert!(route("/a", r#", "methods": ["GET POST"]"#).unwrap_err().contains("not an HTTP method"));
        for pattern in ["/a/./b", "/a/..", "/%61pi", "/a\\\\b"] {
            assert!(route(pattern, "").unwrap_err().contains("never matches"), "{pattern}");
        }
        // A route matches the path alone: `/search?q=*` limited no request (found in review).
        for pattern in ["/search?q=*", "/page#top", "/a/?"] {
            assert!(route(pattern, "").unwrap_err().contains("never the query"), "{pattern}");
        }
        assert!(route("/:id/x/:id", "").unwrap_err().contains(":id appears twice"));
        assert!(route("/a/:id/:other", r#", "methods": ["get", "M-SEARCH"]"#).is_ok());
        let keyed = |key: &str| routes(&format!(r#"[{{"pattern": "/a", "policy": "api", "key": {key}}}]"#));
        assert!(keyed(r#"{"source": "header", "name": "X User"}"#).unwrap_err().contains("not a header name"));
        for source in ["header\", \"name", "apiKey\", \"header"] {
            let error = keyed(&format!(r#"{{"source": "{source}": "cookie"}}"#)).unwrap_err();
            assert!(error.contains("a Cookie header holds any cookies"), "{error}");
        }
        for name in ["authorization", "X-Api-Key", "PROXY-AUTHORIZATION"] {
            let error = keyed(&format!(r#"{{"source": "header", "name": "{name}"}}"#)).unwrap_err();
            assert!(error.contains(&format!(r#"use {{"source": "apiKey", "header": "{name}"}}"#)), "{error}");
            assert!(keyed(&format!(r#"{{"source": "apiKey", "header": "{name}"}}"#)).is_ok());
        }
        for name in ["x-forwarded-for", "Forwarded", "X-Real-IP", "true-client-ip"] {
            let error = keyed(&format!(r#"{{"source": "header", "name": "{name}"}}"#)).unwrap_err();
            assert!(error.contains(r#"key on the client's address with {"source": "ip"}"#), "{error}");
        }
        assert!(keyed(r#"{"source": "header", "name": "CF-Connecting-IP"}"#).is_ok());
        assert!(keyed(r#"{"source": "header", "name": ""}"#).is_err());
        assert!(keyed(r#"{"source": "apiKey", "header": "X-Key:"}"#).is_err());
        assert!(keyed(r#"{"source": "apiKey", "header": "X-Key"}"#).is_ok());
    }

    #[test]
    fn keys_come_from_the_configured_source() {
        let table = routes(
            r#"[{"pattern": "/ip", "policy": "api", "key": {"source": "ip"}},
                {"pattern": "/h", "policy": "api", "key": {"source": "header", "name": "X-User"}},
                {"pattern": "/k", "policy": "api", "key": {"source": "apiKey", "header": "Authorization"}},
                {"pattern": "/s/:who", "policy": "api", "key": {"source": "segment", "name": "who"}},
                {"pattern": "/c", "policy": "api", "key": {"source": "constant", "value": "everyone"}},
                {"pattern": "/d", "policy": "api", "key": {"source": "apiKey"}}]"#,
        )
        .unwrap();
        let headers = |name: &str| match name {
            "CF-Connecting-IP" => Some("203.0.113.7".to_owned()),
            "X-User" => Some("ann".to_owned()),
            "Authorization" => Some("Bearer secret".to_owned()),
            "X-API-Key" => Some("other".to_owned()),
            _ => None,
        };
        let key = |path: &str| {
            let parts = at(path);
            let (route, captures) = find(&table, Method::Plain("GET"), &parts).unwrap();
            bucket_key(route, &captures, headers)
        };
        assert_eq!(key("/ip").unwrap(), "gateway:api:ip:203.0.113.7");
        assert_eq!(key("/h").unwrap(), "gateway:api:header:ann");
        assert_eq!(key("/k").unwrap(), format!("gateway:api:apikey:{}", hash_api_key("secret")));
        assert_eq!(hash_api_key("secret"), "2bb80d537b1da3e38bd30361aa855686");
        assert_eq!(key("/d").unwrap(), format!("gateway:api:apikey:{}", hash_api_key("other")), "X-API-Key by default");
        for spelling in
            ["Bearer secret", "bearer secret", "BEARER  secret", " Bearer secret ", "Bearer\tsecret", "secret"]
        {
            assert_eq!(credential(spelling), "secret", "{spelling:?}");
        }
        for spelling in ["Basic c2VjcmV0", "basic  c2VjcmV0", "BASIC\tc2VjcmV0 "] {
            assert_eq!(credential(spelling), "basic c2VjcmV0", "another scheme is part of the key: {spelling:?}");
        }
        assert_eq!(key("/s/bo%20b").unwrap(), "gateway:api:segment:bo b");
        assert_eq!(key("/c").unwrap(), "gateway:api:constant:everyone");
        let parts = at("/k");
        let (route, captures) = find(&table, Method::Plain("GET"), &parts).unwrap();
        assert_eq!(bucket_key(route, &captures, |_| None).unwrap_err().status, 401);
        let parts = at("/h");
        let (route, captures) = find(&table, Method::Plain("GET"), &parts).unwrap();
        assert_eq!(bucket_key(route, &captures, |_| None).unwrap_err().code, "MISSING_KEY");
        assert_eq!(bucket_key(route, &captures, |_| Some("x".repeat(300))).unwrap_err().code, "INVALID_KEY");
        for empty in ["", " ", "\t"] {
            let refused = bucket_key(route, &captures, |_| Some(empty.to_owned())).unwrap_err();
            assert_eq!(refused.code, "MISSING_KEY", "an empty value shares no bucket: {empty:?}");
        }
        let parts = at("/k");
        let (route, captures) = find(&table, Method::Plain("GET"), &parts).unwrap();
        assert_eq!(route.key.challenge(), "Bearer", "the key goes in Authorization");
        let own_header = KeySource::ApiKey { header: "X-API-Key".into() };
        assert_eq!(own_header.challenge(), r#"ApiKey header="X-API-Key""#);
        for empty in ["", "Bearer ", "Bearer  "] {
            let refused = bucket_key(route, &captures, |_| Some(empty.to_owned())).unwrap_err();
            assert_eq!(refused.code, "MISSING_API_KEY", "{empty:?}");
        }
    }

    #[test]
    fn an_ipv6_client_is_keyed_by_its_network() {
        assert_eq!(client_network("2001:db8:1:2:aaaa::1", 64).unwrap(), "2001:db8:1:2::/64");
        assert_eq!(
            client_network("2001:0DB8:0001:0002:ffff:ffff:ffff:ffff", 64).unwrap(),
            "2001:db8:1:2::/64",
            "any spelling of any address in the /64 is one key"
        );
        assert_eq!(client_network("2001:db8:1:3::1", 64).unwrap(), "2001:db8:1:3::/64", "the next /64");
        assert_eq!(client_network("2001:db8:1:2ff::1", 56).unwrap(), "2001:db8:1:200::/56");
        assert_eq!(client_network("2001:db8::1", 128).unwrap(), "2001:db8::1");
        assert_eq!(client_network("2001:db8::1", 1).unwrap(), "::/1");
        assert_eq!(client_network("203.0.113.7", 64).unwrap(), "203.0.113.7");
        assert_eq!(client_network("::ffff:203.0.113.7", 64).unwrap(), "203.0.113.7", "IPv4-mapped is IPv4");
        assert_eq!(client_network(" 203.0.113.7 ", 64).unwrap(), "203.0.113.7");
        for bad in ["", "localhost", "203.0.113.256", "2001:db8::1/64", "[::1]"] {
            assert_eq!(client_network(bad, 64).unwrap_err().code, "INVALID_KEY", "{bad:?}");
        }
    }

    #[test]
    fn the_ipv6_prefix_is_checked() {
        let route = |key: &str| routes(&format!(r#"[{{"pattern": "/a", "policy": "api", "key": {key}}}]"#));
        assert_eq!(route(r#"{"source": "ip"}"#).unwrap()[0].key, KeySource::Ip { ipv6_prefix: 64 });
        assert_eq!(route(r#"{"source": "ip", "ipv6Prefix": 48}"#).unwrap()[0].key, KeySource::Ip { ipv6_prefix: 48 });
        assert!(route(r#"{"source": "ip", "ipv6Prefix": 0}"#).unwrap_err().contains("ipv6Prefix must be 1 to 128"));
        assert!(route(r#"{"source": "ip", "ipv6Prefix": 129}"#).is_err());
        assert!(route(r#"{"source": "ip", "ipv6Prefix": -1}"#).is_err());
        assert!(route(r#"{"source": "ip", "prefix": 64}"#).is_err(), "unknown fields are refused");
    }

    #[test]
    fn a_repeated_field_is_refused_not_read_as_its_last() {
        let repeated = [
            r#"[{"pattern": "/a", "policy": "api", "policy": "login", "key": {"source": "ip"}}]"#,
            r#"[{"pattern": "/a", "policy": "api", "key": {"source": "ip", "source": "constant", "value": "all"}}]"#,
            r#"[{"pattern": "/a", "policy": "api", "key": {"source": "constant", "value": "a", "value": "b"}}]"#,
        ];
        for json in repeated {
            assert!(routes(json).unwrap_err().contains("duplicate field"), "{json}");
        }
    }

    #[test]
    fn a_constant_key_is_checked_with_the_configuration() {
        let route = |value: &str| {
            let key = serde_json::json!({ "source": "constant", "value": value });
            routes(&format!(r#"[{{"pattern": "/a", "policy": "api", "key": {key}}}]"#))
        };
        assert!(route("everyone").is_ok());
        assert!(route("a\u{7}b").unwrap_err().contains("the constant key is unusable: a key cannot contain control"));
        let long = "k".repeat(keys::MAX_KEY_BYTES);
        assert!(route(&long).unwrap_err().contains("the constant key is unusable: a key is at most"));
    }
}
