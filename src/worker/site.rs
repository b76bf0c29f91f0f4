//! A site, `scheme://host[:port]`: what `ORIGIN` starts with and what `CORS_ORIGINS` lists.
//! Checked here as the URL parser would take it, so that a value the runtime would refuse, or
//! one no browser's `Origin` could equal, is a configuration error at once rather than a failure
//! on every request. (The `url` crate would add 190 KB of wasm for these checks.)

use std::net::{Ipv4Addr, Ipv6Addr};

/// Why `authority` (`host[:port]`) is not one the URL parser takes as it is, if it is not: a
/// name of ASCII letters, digits, `-`, `_` and `.` (punycode for others), a dotted-quad IPv4
/// address, or a bracketed IPv6 address; a port of digits, at most 65535.
pub fn host_and_port_error(authority: &str) -> Option<&'static str> {
    let (host, port) = match authority.rsplit_once(':') {
        Some((host, port)) if !port.contains(']') => (host, Some(port)),
        _ => (authority, None),
    };
    // Digits only: `parse` alone would take a sign. It refuses an empty port and one past 65535.
    if port.is_some_and(|p| !p.bytes().all(|b| b.is_ascii_digit()) || p.parse::<u16>().is_err()) {
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
    if ends_in_a_number(host) && host.parse::<Ipv4Addr>().is_err() {
        return Some("an IPv4 address is four decimal numbers from 0 to 255, such as 192.0.2.1");
    }
    None
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

/// `scheme://host[:port]` in lower case, without the scheme's default port, as browsers send
/// `Origin` and as the URL parser compares sites.
pub fn normal_site(site: &str) -> String {
    let lower = site.to_ascii_lowercase();
    let default_port = if lower.starts_with("https://") { ":443" } else { ":80" };
    lower.strip_suffix(default_port).map(str::to_owned).unwrap_or(lower)
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
            "[::1]:8080",
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
    fn a_default_port_counts_as_none() {
        assert_eq!(normal_site("HTTPS://App.Example.com:443"), "https://app.example.com");
        assert_eq!(normal_site("http://app.example.com:80"), "http://app.example.com");
        assert_eq!(normal_site("https://app.example.com:8443"), "https://app.example.com:8443");
        assert_eq!(normal_site("https://app.example.com:80"), "https://app.example.com:80");
    }
}
