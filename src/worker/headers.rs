//! The rate-limit headers of a decision: IETF draft-ietf-httpapi-ratelimit-headers-10
//! `RateLimit-Policy` and `RateLimit` (one item per bandwidth), `Retry-After`, the optional
//! legacy `X-RateLimit-*` trio, and `Access-Control-Expose-Headers` so browsers can read them.
//!
//! - `RateLimit-Policy: "burst";q=50;w=5, "hourly";q=1000;w=3600`: `q` the capacity, `w` the
//!   seconds to refill it from empty.
//! - `RateLimit: "burst";r=12;t=0, "hourly";r=940;t=0`: `r` the whole tokens left (never
//!   negative), `t` the seconds until the bandwidth again holds the request's tokens (0 if it
//!   does), rounded up; absent when it never will.
//! - `Retry-After` (rejections only): delta-seconds, the exact wait rounded up, so never earlier
//!   than any `t` nor than the moment the tokens are there.

use super::failure::FailureMode;
use super::protocol::{round_up, BandwidthView, Outcome, SECOND};

/// Every rate-limit header this worker sends, for `Access-Control-Expose-Headers`.
pub const EXPOSED: &str = "RateLimit, RateLimit-Policy, Retry-After, X-RateLimit-Limit, X-RateLimit-Remaining, \
                           X-RateLimit-Reset, EdgeBucket-Fallback, EdgeBucket-Shadow";

/// How a decision was reached, beyond its outcome.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Context {
    /// Add `X-RateLimit-*` (the policy's `legacyHeaders`).
    pub legacy: bool,
    /// The failure mode that decided, sent as `EdgeBucket-Fallback`.
    pub fallback: Option<FailureMode>,
    /// Shadow mode admitted a rejection: `EdgeBucket-Shadow: rejected`, and no `Retry-After`.
    pub shadow_rejected: bool,
    /// An estimate, answered 200 whatever it found: no `Retry-After`, which belongs to rejections.
    pub estimate: bool,
}

/// The headers for `outcome`. Failing open or closed (in shadow mode) there is no bucket state:
/// only `RateLimit-Policy`.
pub fn for_outcome(outcome: &Outcome, context: Context) -> Vec<(&'static str, String)> {
    let mut headers = vec![("RateLimit-Policy", policy_field(&outcome.bandwidths))];
    if matches!(context.fallback, None | Some(FailureMode::Degrade)) {
        headers.push(("RateLimit", limit_field(&outcome.bandwidths)));
        if context.legacy {
            headers.extend(legacy_fields(outcome));
        }
    }
    if !outcome.allowed && !context.shadow_rejected && !context.estimate {
        if let Some(seconds) = retry_after(outcome) {
            headers.push(("Retry-After", seconds.to_string()));
        }
    }
    if let Some(mode) = context.fallback {
        headers.push(("EdgeBucket-Fallback", mode.label().to_owned()));
    }
    if context.shadow_rejected {
        headers.push(("EdgeBucket-Shadow", "rejected".to_owned()));
    }
    headers.push(("Access-Control-Expose-Headers", EXPOSED.to_owned()));
    headers
}

/// The headers for a request a shadow route let through without a decision, because it could
/// not key it: no bucket, so only `EdgeBucket-Shadow: rejected`.
pub fn shadow_unkeyed() -> Vec<(&'static str, String)> {
    vec![("EdgeBucket-Shadow", "rejected".to_owned()), ("Access-Control-Expose-Headers", EXPOSED.to_owned())]
}

/// `RateLimit-Policy`: `"name";q=capacity;w=window` per bandwidth.
pub fn policy_field(bandwidths: &[BandwidthView]) -> String {
    list(bandwidths, |b| {
        format!("{};q={};w={}", sf_string(&b.name), sf_integer(b.capacity), sf_integer(b.window_seconds))
    })
}

/// `RateLimit`: `"name";r=remaining;t=seconds` per bandwidth.
pub fn limit_field(bandwidths: &[BandwidthView]) -> String {
    list(bandwidths, |b| {
        let mut item = format!("{};r={}", sf_string(&b.name), sf_integer(b.available.max(0)));
        if let Some(t) = seconds_up(b.wait_nanos) {
            item.push_str(&format!(";t={t}")); // nanoseconds in an i64: at most 10 digits of seconds
        }
        item
    })
}

/// The largest Structured Field integer (RFC 8941 §3.3.1: at most 15 digits).
pub const MAX_SF_INTEGER: i64 = 999_999_999_999_999;

/// `n` (at least 0) within [`MAX_SF_INTEGER`]: a parser must refuse the whole field for a longer
/// integer. Only beyond 10^15 tokens or seconds (31 million years) does it change anything.
fn sf_integer(n: i64) -> i64 {
    n.min(MAX_SF_INTEGER)
}

/// `Retry-After` seconds for a rejection: the wait rounded up, and at least every `t`.
pub fn retry_after(outcome: &Outcome) -> Option<i64> {
    if outcome.no_retry_after {
        return None;
    }
    seconds_up(outcome.wait_nanos).map(|wait| wait.max(largest_t(&outcome.bandwidths)))
}

/// The largest `t` of the bandwidths, 0 when none has one.
fn largest_t(bandwidths: &[BandwidthView]) -> i64 {
    bandwidths.iter().filter_map(|b| seconds_up(b.wait_nanos)).max().unwrap_or(0)
}

/// The legacy trio for the bandwidth that binds: its capacity, its remaining tokens and the
/// delta-seconds until it is full, left out (as `t` is) when that is beyond 2^63 ns: 0 would
/// read as "full now". When nothing remains, `Reset` is never earlier than the request could
/// pass (see [`legacy_reset`]).
fn legacy_fields(outcome: &Outcome) -> Vec<(&'static str, String)> {
    let Some(binding) = binding_bandwidth(&outcome.bandwidths) else {
        return Vec::new();
    };
    let mut fields = vec![
        ("X-RateLimit-Limit", binding.capacity.to_string()),
        ("X-RateLimit-Remaining", binding.available.max(0).to_string()),
    ];
    if let Some(seconds) = legacy_reset(outcome, binding) {
        fields.push(("X-RateLimit-Reset", seconds.to_string()));
    }
    fields
}

/// The bandwidth with the fewest whole tokens left, counting debt as 0 (as `Remaining` shows it);
/// of those, the one full last. Raw debt would pick the deepest debt, and a tie the first
/// bandwidth: often the fast one, whose `Reset` comes long before the slow one lets a request
/// through.
fn binding_bandwidth(bandwidths: &[BandwidthView]) -> Option<&BandwidthView> {
    bandwidths.iter().min_by_key(|b| (b.available.max(0), std::cmp::Reverse(b.full_nanos)))
}

/// `Reset` for `binding`: the seconds until it is full. With nothing left, at least the seconds
/// until the request could pass (every `t`), since another bandwidth, short of the request's
/// tokens, can hold it longer; on a refusal, never before `Retry-After`, tokens left or not.
fn legacy_reset(outcome: &Outcome, binding: &BandwidthView) -> Option<i64> {
    let full = seconds_up(binding.full_nanos)?;
    let largest_t = largest_t(&outcome.bandwidths);
    let floor = if !outcome.allowed {
        // As `Retry-After`: a cost above what is left can be refused with tokens left.
        seconds_up(outcome.wait_nanos).unwrap_or(0).max(largest_t)
    } else if binding.available <= 0 {
        largest_t
    } else {
        0
    };
    Some(full.max(floor))
}

/// Nanoseconds as whole seconds rounded up; `None` for never.
pub fn seconds_up(nanos: i64) -> Option<i64> {
    round_up(nanos, SECOND)
}

/// A Structured Field list: members separated by `", "` (RFC 8941's serialization).
fn list(bandwidths: &[BandwidthView], item: impl Fn(&BandwidthView) -> String) -> String {
    bandwidths.iter().map(item).collect::<Vec<_>>().join(", ")
}

/// A Structured Field string; names are checked to be printable ASCII when policies are read.
fn sf_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        if matches!(c, '"' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::INFINITY_DURATION;

    const MS: i64 = 1_000_000;
    const NANOS_PER_SECOND: i64 = SECOND;

    fn view(name: &str, capacity: i64, window_seconds: i64, available: i64, wait_nanos: i64) -> BandwidthView {
        BandwidthView { name: name.into(), capacity, window_seconds, available, wait_nanos, full_nanos: 3_800 * MS }
    }

    fn outcome(allowed: bool, wait_nanos: i64, bandwidths: Vec<BandwidthView>) -> Outcome {
        Outcome {
            policy: "api".into(),
            version: 1,
            at_millis: 0,
            allowed,
            wait_nanos,
            bandwidths,
            no_retry_after: false,
        }
    }

    #[test]
    fn two_bandwidths_give_two_items_each() {
        let o = outcome(true, 0, vec![view("burst", 50, 5, 12, 0), view("hourly", 1000, 3600, 940, 0)]);
        let headers = for_outcome(&o, Context::default());
        assert_eq!(headers[0], ("RateLimit-Policy", r#""burst";q=50;w=5, "hourly";q=1000;w=3600"#.into()));
        assert_eq!(headers[1], ("RateLimit", r#""burst";r=12;t=0, "hourly";r=940;t=0"#.into()));
        assert_eq!(headers[2].0, "Access-Control-Expose-Headers");
        assert_eq!(headers.len(), 3, "no Retry-After when allowed");
    }

    #[test]
    fn retry_after_rounds_up_and_is_never_earlier_than_t() {
        let o = outcome(false, 1_200 * MS, vec![view("burst", 50, 5, 0, 1_200 * MS), view("hourly", 1000, 3600, 0, 1)]);
        assert_eq!(limit_field(&o.bandwidths), r#""burst";r=0;t=2, "hourly";r=0;t=1"#);
        assert_eq!(retry_after(&o), Some(2));
        let exact = outcome(false, 3 * NANOS_PER_SECOND, vec![view("b", 1, 1, 0, 3 * NANOS_PER_SECOND)]);
        assert_eq!(retry_after(&exact), Some(3));
        let headers = for_outcome(&exact, Context::default());
        assert!(headers.contains(&("Retry-After", "3".into())));
        let shadow = for_outcome(&exact, Context { shadow_rejected: true, ..Context::default() });
        assert!(shadow.contains(&("EdgeBucket-Shadow", "rejected".into())));
        assert!(!shadow.iter().any(|(name, _)| *name == "Retry-After"), "shadow mode never rejects");
        let estimate = for_outcome(&exact, Context { estimate: true, ..Context::default() });
        assert!(!estimate.iter().any(|(name, _)| *name == "Retry-After"), "an estimate is a 200");
        assert!(estimate.contains(&("RateLimit", r#""b";r=0;t=3"#.into())));
    }

    #[test]
    fn integers_stay_within_structured_fields_fifteen_digits() {
        let huge = 10_000_000_000_000_000;
        let o = outcome(false, huge, vec![view("b", huge, huge, huge, huge)]);
        assert_eq!(policy_field(&o.bandwidths), r#""b";q=999999999999999;w=999999999999999"#);
        assert_eq!(limit_field(&o.bandwidths), r#""b";r=999999999999999;t=10000000"#, "t is in seconds");
    }

    #[test]
    fn debt_reports_zero_remaining_and_endless_waits_omit_t() {
        let o = outcome(false, INFINITY_DURATION, vec![view("b", 5, 1, -3, INFINITY_DURATION)]);
        assert_eq!(limit_field(&o.bandwidths), r#""b";r=0"#);
        assert_eq!(retry_after(&o), None);
    }

    #[test]
    fn legacy_headers_describe_the_tightest_bandwidth() {
        let o = outcome(true, 0, vec![view("burst", 50, 5, 12, 0), view("hourly", 1000, 3600, 3, 0)]);
        let headers = for_outcome(&o, Context { legacy: true, ..Context::default() });
        assert!(headers.contains(&("X-RateLimit-Limit", "1000".into())));
        assert!(headers.contains(&("X-RateLimit-Remaining", "3".into())));
        assert!(headers.contains(&("X-RateLimit-Reset", "4".into())));
        // Never full within 2^63 ns (a refill of 1 token per 50 years, 6 tokens short).
        let never = BandwidthView { full_nanos: INFINITY_DURATION, ..view("slow", 10, 10, 4, 0) };
        let headers = legacy_fields(&outcome(true, 0, vec![never]));
        assert_eq!(headers.iter().map(|h| h.0).collect::<Vec<_>>(), ["X-RateLimit-Limit", "X-RateLimit-Remaining"]);
    }

    fn full_in(b: BandwidthView, full_nanos: i64) -> BandwidthView {
        BandwidthView { full_nanos, ..b }
    }

    fn legacy(o: &Outcome) -> [String; 3] {
        let headers = for_outcome(o, Context { legacy: true, ..Context::default() });
        let value = |name| headers.iter().find(|h| h.0 == name).map(|h| h.1.clone()).unwrap_or_default();
        [value("X-RateLimit-Limit"), value("X-RateLimit-Remaining"), value("X-RateLimit-Reset")]
    }

    #[test]
    fn legacy_headers_in_debt_describe_the_bandwidth_that_lets_a_request_pass_last() {
        // The shipped `api` policy after an ignore-limits consume of 100, then a refused consume:
        // burst 90 in debt (full in 20 s), per-minute empty until its refill in 60 s.
        let burst = full_in(view("burst", 10, 2, -90, 18_200 * MS), 20 * NANOS_PER_SECOND);
        let minute = full_in(view("per-minute", 100, 60, 0, 60 * NANOS_PER_SECOND), 60 * NANOS_PER_SECOND);
        let o = outcome(false, 60 * NANOS_PER_SECOND, vec![burst, minute]);
        assert_eq!(limit_field(&o.bandwidths), r#""burst";r=0;t=19, "per-minute";r=0;t=60"#, "unchanged");
        assert_eq!(retry_after(&o), Some(60));
        assert_eq!(legacy(&o), ["100", "0", "60"], "not burst's 20, before the request can pass");
    }

    #[test]
    fn legacy_headers_on_a_tie_describe_the_bandwidth_full_last_in_any_order() {
        // The last token spent on both: burst is full again in 2 s, per-minute in 45.
        let burst = full_in(view("burst", 10, 2, 0, 200 * MS), 2 * NANOS_PER_SECOND);
        let minute = full_in(view("per-minute", 100, 60, 0, 45 * NANOS_PER_SECOND), 45 * NANOS_PER_SECOND);
        let o = outcome(true, 0, vec![burst.clone(), minute.clone()]);
        assert_eq!(legacy(&o), ["100", "0", "45"]);
        assert_eq!(legacy(&outcome(true, 0, vec![minute, burst])), ["100", "0", "45"]);
        // Tokens left on both: the same rule.
        let a = full_in(view("a", 10, 2, 4, 0), NANOS_PER_SECOND);
        let b = full_in(view("b", 50, 60, 4, 0), 50 * NANOS_PER_SECOND);
        assert_eq!(legacy(&outcome(true, 0, vec![a, b])), ["50", "4", "50"]);
    }

    #[test]
    fn legacy_reset_with_nothing_left_is_never_before_retry_after() {
        // A request for 2: burst is empty (full in 2 s), daily holds 1 and refills in 50 s, so
        // daily's wait decides the refusal though burst has the fewest tokens.
        let burst = full_in(view("burst", 2, 2, 0, 2 * NANOS_PER_SECOND), 2 * NANOS_PER_SECOND);
        let daily = full_in(view("daily", 10, 86_400, 1, 50 * NANOS_PER_SECOND), 50 * NANOS_PER_SECOND);
        let o = outcome(false, 50 * NANOS_PER_SECOND, vec![burst, daily]);
        assert_eq!(retry_after(&o), Some(50));
        assert_eq!(legacy(&o), ["2", "0", "50"]);
        // Admitted, the same state says when the same request passes again: every `t`.
        let admitted = Outcome { allowed: true, wait_nanos: 0, ..o.clone() };
        assert_eq!(legacy(&admitted), ["2", "0", "50"]);
        // With tokens left, `Reset` is the time to full alone.
        let some = full_in(view("burst", 2, 2, 1, 2 * NANOS_PER_SECOND), NANOS_PER_SECOND);
        assert_eq!(legacy(&outcome(true, 0, vec![some])), ["2", "1", "1"]);
        // Refused with tokens left (a cost of 3): not before Retry-After either.
        let fast = full_in(view("fast", 5, 1, 1, 400 * MS), 800 * MS);
        let hourly = full_in(view("hourly", 10, 36_000, 2, 3_600 * NANOS_PER_SECOND), 28_800 * NANOS_PER_SECOND);
        let refused = outcome(false, 3_600 * NANOS_PER_SECOND, vec![fast, hourly]);
        assert_eq!(retry_after(&refused), Some(3_600));
        assert_eq!(legacy(&refused), ["5", "1", "3600"]);
    }

    #[test]
    fn fallbacks_are_visible_and_failing_open_claims_no_state() {
        let o = outcome(true, 0, vec![view("burst", 50, 5, 50, 0)]);
        let open = for_outcome(&o, Context { fallback: Some(FailureMode::Open), legacy: true, ..Context::default() });
        let names: Vec<_> = open.iter().map(|(name, _)| *name).collect();
        assert_eq!(names, ["RateLimit-Policy", "EdgeBucket-Fallback", "Access-Control-Expose-Headers"]);
        let local = for_outcome(&o, Context { fallback: Some(FailureMode::Degrade), ..Context::default() });
        assert!(local.contains(&("EdgeBucket-Fallback", "local".into())));
        assert!(local.iter().any(|(name, _)| *name == "RateLimit"));
    }

    #[test]
    fn names_are_structured_field_strings() {
        assert_eq!(sf_string(r#"a "q" \ b"#), r#""a \"q\" \\ b""#);
    }
}
