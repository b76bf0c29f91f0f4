//! A site, `scheme://host[:port]`: what `ORIGIN` starts with and what `CORS_ORIGINS` lists.
//! Checked here as the URL parser would take it, so that a value the runtime would refuse, or
//! one no browser's `Origin` could equal, is a configuration error at once rather than a failure
//! on every request. (The `url` crate would add 190 KB of wasm for these checks.)

use std::net::{Ipv4Addr, Ipv6Addr};

/// Why `authority` (`host[:port]`) is not one the URL parser takes as it is, if it is not: a
/// name of ASCII letters, digits, `-`, `_` and `.` (punycode for others), a dotted-quad IPv4
/// address, or a bracketed IPv6 address; a port of digits, at most 65535.
pub fn host_and_port_error(authority: &str) -> Option<&'static str> {
    let (host, port) = split_port(authority);
    // An empty port is refused too: it is a slip in a configuration.
    if port.is_some_and(|p| port_number(p).is_none()) {
        return Some("a port is 0 to 65535");
    }
    if let Some(v6) = host.strip_prefix('[') {
        return match v6.strip_suffix(']').map(str::parse::<Ipv6Addr>) {
            Some(Ok(_)) => None,
            _ => Some("an IPv6 address in brackets must be a whole address, such as [2001:db8::1]"),
        };
    }
    if host.is_empty() || !host.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b)) {
        return Some("a host name is ASCII letters, digits, '-', '_' and '.' (punycode for other letters)");
    }
    // The URL parser reads a name whose last label is a number as an IPv4 address, and fails on
    // one that is not (`1.2.3.256`, `api.example.1`); its other IPv4 forms (`127.1`, octal,
    // hex) are refused here too, as too easily misread.
    if ends_in_a_number(host) && ipv4(host).is_none() {
        return Some("an IPv4 address is four decimal numbers from 0 to 255, such as 192.0.2.1");
    }
    None
}

/// `host[:port]` split at the port's `:` (not one inside a bracketed IPv6 address).
fn split_port(authority: &str) -> (&str, Option<&str>) {
    match authority.rsplit_once(':') {
        Some((host, port)) if !port.contains(']') => (host, Some(port)),
        _ => (authority, None),
    }
}

/// A port of digits only (`parse` alone would take a sign, as in `+80`), at most 65535.
fn port_number(text: &str) -> Option<u16> {
    text.bytes().all(|b| b.is_ascii_digit()).then(|| text.parse().ok())?
}

/// The URL standard's "ends in a number": the last label (before one trailing dot) is decimal
/// digits, or `0x` and hex digits.
fn ends_in_a_number(host: &str) -> bool {
    let last = host.strip_suffix('.').unwrap_or(host).rsplit('.').next().unwrap_or_default();
    let hex = last.strip_prefix("0x").or_else(|| last.strip_prefix("0X"));
    match hex {
        Some(digits) => digits.bytes().all(|b| b.is_ascii_hexdigit()),
        None => !last.is_empty() && last.bytes().all(|b| b.is_ascii_digit()),
    }
}

/// A dotted-quad IPv4 address, with or without the trailing dot the URL parser drops.
fn ipv4(host: &str) -> Option<Ipv4Addr> {
    host.strip_suffix('.').unwrap_or(host).parse().ok()
}

/// `scheme://host[:port]` as the URL parser serialises it, and so as browsers send `Origin`: in
/// lower case, an IP address in its shortest form, the port without leading zeros and left out
/// when it is the scheme's default. Anything it cannot read stays as it is, in lower case.
pub fn normal_site(site: &str) -> String {
    let lower = site.to_ascii_lowercase();
    let Some((scheme, authority)) = lower.split_once("://") else { return lower };
    let (host, port) = split_port(authority);
    let default_port = if scheme == "https" { 443 } else { 80 };
    // An empty port is none, as for the parser; one it refuses stays as written.
    let port = match port.map(|text| (text, port_number(text))) {
        None | Some(("", _)) => String::new(),
        Some((_, Some(port))) if port == default_port => String::new(),
        Some((_, Some(port))) => format!(":{port}"),
        Some((text, None)) => format!(":{text}"),
    };
    let host = match host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).map(str::parse::<Ipv6Addr>) {
        Some(Ok(v6)) => format!("[{}]", ipv6_text(v6)),
        _ => ipv4(host).filter(|_| ends_in_a_number(host)).map_or_else(|| host.to_owned(), |v4| v4.to_string()),
    };
    format!("{scheme}://{host}{port}")
}

/// An IPv6 address as the URL standard writes it: hex pieces without leading zeros, the first
/// longest run of two or more zero pieces as `::`. (Rust's `Display` writes `::ffff:a.b.c.d`,
/// which the standard does not.)
fn ipv6_text(address: Ipv6Addr) -> String {
    let pieces = address.segments();
    let (mut longest, mut run) = ((0, 0), (0, 0)); // (start, length)
    for (at, &piece) in pieces.iter().enumerate() {
        run = if piece == 0 { (if run.1 == 0 { at } else { run.0 }, run.1 + 1) } else { (0, 0) };
        if run.1 > longest.1 {
            longest = run;
        }
    }
    let hex = |pieces: &[u16]| pieces.iter().map(|p| format!("{p:x}")).collect::<Vec<_>>().join(":");
    if longest.1 < 2 {
        return hex(&pieces);
    }
    format!("{}::{}", hex(&pieces[..longest.0]), hex(&pieces[longest.0 + longest.1..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_are_those_the_url_parser_takes_as_they_are() {
        for good in [
            "api.example.com",
            "localhost:8080",
            "192.0.2.1",
            "192.0.2.1.:80",
            "[::1]:8080",
            "[::ffff:192.0.2.1]",
            "[2001:db8::1]",
            "a_b.example",
            "x1.example",
        ] {
            assert_eq!(host_and_port_error(good), None, "{good}");
        }
        for bad in [
            "1.2.3.256",
            "api.example.1",
            "api.example.0x1f",
            "127.1",
            "010.0.0.1",
            "[1]",
            "[::1::2]",
            "[::1",
            "",
            "bücher.example",
            "a%41.example",
            "x.example:99999",
            "x.example:",
            "x.example:+80",
        ] {
            assert!(host_and_port_error(bad).is_some(), "{bad}");
        }
    }

    #[test]
    fn sites_are_written_as_the_url_parser_serialises_them() {
        for (written, serialised) in [
            ("HTTPS://App.Example.com:443", "https://app.example.com"),
            ("http://app.example.com:80", "http://app.example.com"),
            ("https://app.example.com:0443", "https://app.example.com"),
            ("https://x:08443", "https://x:8443"),
            ("http://x:+80", "http://x:+80"),
            ("http://x:", "http://x"),
            ("https://app.example.com:80", "https://app.example.com:80"),
            ("http://[0:0:0:0:0:0:0:1]:8080", "http://[::1]:8080"),
            ("http://[2001:DB8:0:0:1:0:0:1]", "http://[2001:db8::1:0:0:1]"),
            ("http://[::ffff:192.0.2.1]", "http://[::ffff:c000:201]"),
            ("http://[1:0:2:3:4:5:6:7]", "http://[1:0:2:3:4:5:6:7]"),
            ("http://192.0.2.1.", "http://192.0.2.1"),
            ("http://example.com.", "http://example.com."),
            ("https://gw.example", "https://gw.example"),
            ("no scheme", "no scheme"),
        ] {
            assert_eq!(normal_site(written), serialised, "{written}");
        }
    }
}
