//! Counters of this isolate (allowed, rejected, errors, fallbacks, a latency histogram), served
//! at `GET /v1/metrics` in the Prometheus text format.
//!
//! Per isolate: Cloudflare runs many isolates, each with its own counters that start at zero when
//! it starts and vanish when it is evicted; a scrape sees the one isolate that served it. Sum
//! across scrapes with care, or use the decision log for totals.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt::Write;

/// Upper bounds of the latency buckets, in seconds.
const LATENCY_BOUNDS: [f64; 11] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5];

thread_local! {
    static METRICS: RefCell<Metrics> = RefCell::new(Metrics::default());
}

/// Runs `f` on this isolate's counters.
pub fn with<R>(f: impl FnOnce(&mut Metrics) -> R) -> R {
    METRICS.with(|metrics| f(&mut metrics.borrow_mut()))
}

/// The counters.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Metrics {
    decisions: BTreeMap<(String, &'static str), u64>,
    errors: BTreeMap<String, u64>,
    fallbacks: BTreeMap<(String, &'static str), u64>,
    latency_buckets: [u64; LATENCY_BOUNDS.len()],
    latency_count: u64,
    latency_sum_seconds: f64,
}

impl Metrics {
    /// Counts a decision under `policy` (`outcome`: `allowed`, `rejected`, `shadow_rejected` or
    /// `estimate`)
    /// that took `seconds` to reach.
    pub fn decision(&mut self, policy: &str, outcome: &'static str, seconds: f64) {
        *self.decisions.entry((policy.to_owned(), outcome)).or_default() += 1;
        self.latency_count += 1;
        self.latency_sum_seconds += seconds;
        if let Some(i) = LATENCY_BOUNDS.iter().position(|&bound| seconds <= bound) {
            self.latency_buckets[i] += 1;
        }
    }

    /// Counts an error answer by its code.
    pub fn error(&mut self, code: &str) {
        *self.errors.entry(code.to_owned()).or_default() += 1;
    }

    /// Counts a decision taken by a policy's failure mode (`open`, `closed` or `local`).
    pub fn fallback(&mut self, policy: &str, mode: &'static str) {
        *self.fallbacks.entry((policy.to_owned(), mode)).or_default() += 1;
    }

    /// The Prometheus text exposition.
    pub fn render(&self) -> String {
        let mut out = String::new();
        header(&mut out, "edgebucket_decisions_total", "counter", "Rate-limit decisions by this isolate.");
        for ((policy, outcome), n) in &self.decisions {
            let _ =
                writeln!(out, "edgebucket_decisions_total{{policy=\"{}\",outcome=\"{outcome}\"}} {n}", escape(policy));
        }
        header(&mut out, "edgebucket_errors_total", "counter", "Error answers by this isolate, by code.");
        for (code, n) in &self.errors {
            let _ = writeln!(out, "edgebucket_errors_total{{code=\"{}\"}} {n}", escape(code));
        }
        header(&mut out, "edgebucket_fallbacks_total", "counter", "Decisions taken by a failure mode.");
        for ((policy, mode), n) in &self.fallbacks {
            let _ = writeln!(out, "edgebucket_fallbacks_total{{policy=\"{}\",mode=\"{mode}\"}} {n}", escape(policy));
        }
        self.render_latency(&mut out);
        out
    }

    fn render_latency(&self, out: &mut String) {
        let name = "edgebucket_decision_latency_seconds";
        header(out, name, "histogram", "Time from request to decision (clock: the isolate's, advanced by I/O).");
        let mut cumulative = 0;
        for (bound, n) in LATENCY_BOUNDS.iter().zip(self.latency_buckets) {
            cumulative += n;
            let _ = writeln!(out, "{name}_bucket{{le=\"{bound}\"}} {cumulative}");
        }
        let _ = writeln!(out, "{name}_bucket{{le=\"+Inf\"}} {}", self.latency_count);
        let _ = writeln!(out, "{name}_sum {}", self.latency_sum_seconds);
        let _ = writeln!(out, "{name}_count {}", self.latency_count);
    }
}

fn header(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

fn escape(label: &str) -> String {
    label.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_counters_and_a_cumulative_histogram() {
        let mut m = Metrics::default();
        m.decision("api", "allowed", 0.0);
        m.decision("api", "allowed", 0.003);
        m.decision("api", "rejected", 3.0);
        m.error("INVALID_JSON");
        m.fallback("api", "local");
        let text = m.render();
        for line in [
            "# TYPE edgebucket_decisions_total counter",
            "edgebucket_decisions_total{policy=\"api\",outcome=\"allowed\"} 2",
            "edgebucket_decisions_total{policy=\"api\",outcome=\"rejected\"} 1",
            "edgebucket_errors_total{code=\"INVALID_JSON\"} 1",
            "edgebucket_fallbacks_total{policy=\"api\",mode=\"local\"} 1",
            "# TYPE edgebucket_decision_latency_seconds histogram",
            "edgebucket_decision_latency_seconds_bucket{le=\"0.001\"} 1",
            "edgebucket_decision_latency_seconds_bucket{le=\"0.005\"} 2",
            "edgebucket_decision_latency_seconds_bucket{le=\"2.5\"} 2",
            "edgebucket_decision_latency_seconds_bucket{le=\"+Inf\"} 3",
            "edgebucket_decision_latency_seconds_sum 3.003",
            "edgebucket_decision_latency_seconds_count 3",
        ] {
            assert!(text.lines().any(|l| l == line), "missing {line:?} in\n{text}");
        }
        assert_eq!(escape("a\"b\\"), "a\\\"b\\\\");
    }
}
