//! Unit tests: every operation and validation rule, with Bucket4j's documented examples.

use std::time::Duration;

use edgebucket::{
    Bandwidth, BucketConfiguration, Error, RefillKind, TokenBucket, TokensInheritanceStrategy as Strategy,
    INFINITY_DURATION,
};

const NS: i64 = 1;
const MS: i64 = 1_000_000;
const SEC: i64 = 1_000_000_000;
const MIN: i64 = 60 * SEC;

fn greedy(capacity: i64, tokens: i64, period: Duration) -> Bandwidth {
    Bandwidth::builder().capacity(capacity).refill_greedy(tokens, period).build().unwrap()
}

fn intervally(capacity: i64, tokens: i64, period: Duration) -> Bandwidth {
    Bandwidth::builder().capacity(capacity).refill_intervally(tokens, period).build().unwrap()
}

fn bucket(bandwidths: Vec<Bandwidth>, now: i64) -> TokenBucket {
    TokenBucket::new(BucketConfiguration::new(bandwidths).unwrap(), now)
}

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

// ---------- validation ----------

#[test]
fn capacity_must_be_positive() {
    for capacity in [0, -1, i64::MIN] {
        let err = Bandwidth::builder().capacity(capacity).refill_greedy(1, secs(1)).build().unwrap_err();
        assert_eq!(err, Error::NonPositiveCapacity { capacity });
    }
}

#[test]
fn capacity_and_refill_are_required() {
    assert_eq!(Bandwidth::builder().refill_greedy(1, secs(1)).build().unwrap_err(), Error::MissingCapacity);
    assert_eq!(Bandwidth::builder().capacity(1).build().unwrap_err(), Error::MissingRefill);
}

#[test]
fn refill_tokens_must_be_positive() {
    let err = Bandwidth::builder().capacity(1).refill_intervally(0, secs(1)).build().unwrap_err();
    assert_eq!(err, Error::NonPositiveRefillTokens { tokens: 0 });
    assert_eq!(err.code(), "NON_POSITIVE_REFILL_TOKENS");
}

#[test]
fn refill_period_must_be_positive_and_fit_in_64_bits() {
    let err = Bandwidth::builder().capacity(1).refill_greedy(1, Duration::ZERO).build().unwrap_err();
    assert_eq!(err, Error::NonPositiveRefillPeriod { period_nanos: 0 });
    let err = Bandwidth::builder().capacity(1).refill_nanos(RefillKind::Greedy, 1, -5).build().unwrap_err();
    assert_eq!(err, Error::NonPositiveRefillPeriod { period_nanos: -5 });
    let too_long = Duration::from_nanos(i64::MAX as u64) + Duration::from_nanos(1);
    let err = Bandwidth::builder().capacity(1).refill_greedy(1, too_long).build().unwrap_err();
    assert_eq!(err.code(), "REFILL_PERIOD_TOO_LONG");
    let longest = Duration::from_nanos(i64::MAX as u64);
    assert!(Bandwidth::builder().capacity(1).refill_greedy(1, longest).build().is_ok());
}

#[test]
fn refill_rate_is_at_most_one_token_per_nanosecond() {
    // Bucket4j's examples of rejected rates.
    for (tokens, period) in [(2, 1), (1_001, 1_000), (1_000_001, 1_000_000)] {
        let err = Bandwidth::builder()
            .capacity(10_000_000)
            .refill_greedy(tokens, Duration::from_nanos(period as u64))
            .build()
            .unwrap_err();
        assert_eq!(err, Error::TooHighRefillRate { tokens, period_nanos: period });
    }
    // Exactly one per nanosecond is allowed.
    assert!(Bandwidth::builder().capacity(1000).refill_greedy(1000, Duration::from_nanos(1000)).build().is_ok());
}

#[test]
fn initial_tokens_are_non_negative_and_may_exceed_capacity() {
    let err = Bandwidth::builder().capacity(10).refill_greedy(1, secs(1)).initial_tokens(-1).build().unwrap_err();
    assert_eq!(err, Error::NegativeInitialTokens { tokens: -1 });
    let zero = Bandwidth::builder().capacity(10).refill_greedy(1, secs(1)).initial_tokens(0).build().unwrap();
    assert_eq!(bucket(vec![zero], 0).get_available_tokens(0), 0);
    let above = Bandwidth::builder().capacity(10).refill_greedy(1, secs(1)).initial_tokens(25).build().unwrap();
    assert_eq!(bucket(vec![above], 0).get_available_tokens(0), 25);
}

#[test]
fn initial_tokens_default_to_capacity() {
    let b = greedy(42, 1, secs(1));
    assert_eq!(b.initial_tokens(), 42);
    assert!(!b.has_explicit_initial_tokens());
    assert_eq!(bucket(vec![b], 0).get_available_tokens(0), 42);
}

#[test]
fn explicit_initial_tokens_are_told_apart_from_the_default() {
    // Even when they equal the capacity, as the JSON form and the codec keep them.
    for initial in [0, 42, 100] {
        let b = Bandwidth::builder().capacity(42).refill_greedy(1, secs(1)).initial_tokens(initial).build().unwrap();
        assert_eq!(b.initial_tokens(), initial);
        assert!(b.has_explicit_initial_tokens(), "{initial}");
    }
}

#[test]
fn aligned_first_refill_must_not_precede_the_epoch() {
    let err = Bandwidth::builder().capacity(1).refill_intervally_aligned(1, secs(1), -1, false).build().unwrap_err();
    assert_eq!(err, Error::FirstRefillBeforeEpoch { nanos: -1 });
    assert!(Bandwidth::builder().capacity(1).refill_intervally_aligned(1, secs(1), 0, false).build().is_ok());
}

#[test]
fn adaptive_initial_tokens_exclude_explicit_initial_tokens() {
    let err = Bandwidth::builder()
        .capacity(10)
        .refill_intervally_aligned(10, secs(60), 0, true)
        .initial_tokens(3)
        .build()
        .unwrap_err();
    assert_eq!(err, Error::AdaptiveInitialTokensWithExplicitInitialTokens);
    // Without adaptive tokens, explicit initial tokens are fine.
    assert!(Bandwidth::builder()
        .capacity(10)
        .refill_intervally_aligned(10, secs(60), 0, false)
        .initial_tokens(3)
        .build()
        .is_ok());
}

#[test]
fn configurations_are_non_empty_with_unique_ids() {
    assert_eq!(BucketConfiguration::new(vec![]).unwrap_err(), Error::EmptyConfiguration);
    let a = Bandwidth::builder().capacity(1).refill_greedy(1, secs(1)).id("a").build().unwrap();
    let b = Bandwidth::builder().capacity(2).refill_greedy(1, secs(1)).id("b").build().unwrap();
    let err = BucketConfiguration::new(vec![a.clone(), b, a]).unwrap_err();
    assert_eq!(err, Error::DuplicateBandwidthId { id: "a".into(), first: 0, second: 2 });
    assert_eq!(err.to_string(), "bandwidths 0 and 2 have the same id \"a\"");
    // Several bandwidths without id are allowed.
    assert!(BucketConfiguration::new(vec![greedy(1, 1, secs(1)), greedy(2, 1, secs(1))]).is_ok());
}

#[test]
fn the_reported_duplicate_is_the_earliest_bandwidth_repeating_an_id() {
    let with_id = |id: Option<&str>| {
        let builder = Bandwidth::builder().capacity(1).refill_greedy(1, secs(1));
        match id {
            Some(id) => builder.id(id).build().unwrap(),
            None => builder.build().unwrap(),
        }
    };
    // The ids, and the duplicate reported: (id, first, second).
    type Case<'a> = (&'a [Option<&'a str>], Option<(&'a str, usize, usize)>);
    let cases: [Case; 5] = [
        (&[Some("a"), Some("b"), Some("b"), Some("a")], Some(("b", 1, 2))),
        (&[Some("b"), Some("a"), Some("a"), Some("b"), Some("a")], Some(("a", 1, 2))),
        (&[Some("x"), None, Some("y"), None, Some("x"), Some("y")], Some(("x", 0, 4))),
        (&[Some("c"), Some("c"), Some("c")], Some(("c", 0, 1))),
        (&[None, Some("a"), None, Some("b")], None),
    ];
    for (ids, expected) in cases {
        let result = BucketConfiguration::new(ids.iter().map(|&id| with_id(id)).collect());
        let expected = expected.map(|(id, first, second)| Error::DuplicateBandwidthId { id: id.into(), first, second });
        assert_eq!(result.err(), expected, "ids {ids:?}");
    }
}

#[test]
fn every_error_code_is_stable_screaming_snake_case() {
    let samples = [
        Error::MissingCapacity,
        Error::EmptyConfiguration,
        Error::TokensOverflow,
        Error::NonPositiveTokens { tokens: 0 },
        Error::ReservationOverflow { tokens: 1 },
        Error::InvalidEncoding { reason: "x".into() },
    ];
    for err in samples {
        assert!(err.code().chars().all(|c| c.is_ascii_uppercase() || c == '_'), "{}", err.code());
        assert!(!err.to_string().is_empty());
    }
}

// ---------- bad arguments change nothing ----------

#[test]
fn bad_arguments_are_errors_and_change_nothing() {
    let mut b = bucket(vec![greedy(10, 1, secs(1))], 0);
    b.try_consume(4, 0).unwrap();
    let before = b.clone();
    for tokens in [0, -1, i64::MIN] {
        assert_eq!(b.try_consume(tokens, 5 * SEC), Err(Error::NonPositiveTokens { tokens }));
        assert!(b.try_consume_and_return_remaining(tokens, 5 * SEC).is_err());
        assert!(b.estimate_ability_to_consume(tokens, 5 * SEC).is_err());
        assert!(b.add_tokens(tokens, 5 * SEC).is_err());
        assert!(b.force_add_tokens(tokens, 5 * SEC).is_err());
        assert!(b.consume_ignoring_rate_limits(tokens, 5 * SEC).is_err());
        assert!(b.reserve(tokens, SEC, 5 * SEC).is_err());
        assert_eq!(
            b.try_consume_as_much_as_possible_up_to(tokens, 5 * SEC),
            Err(Error::NonPositiveLimit { limit: tokens })
        );
    }
    for wait in [0, -1] {
        assert_eq!(b.reserve(1, wait, 5 * SEC), Err(Error::NonPositiveMaxWait { nanos: wait }));
    }
    assert_eq!(b, before);
}

// ---------- greedy and intervally refill ----------

#[test]
fn greedy_refill_adds_tokens_as_soon_as_possible() {
    // Bucket4j: 10 tokens per second adds one every 100 ms.
    let mut b = bucket(vec![greedy(10, 10, secs(1))], 0);
    assert_eq!(b.try_consume_as_much_as_possible(0), 10);
    assert_eq!(b.get_available_tokens(99 * MS), 0);
    assert_eq!(b.get_available_tokens(100 * MS), 1);
    assert_eq!(b.get_available_tokens(550 * MS), 5);
    assert_eq!(b.get_available_tokens(10 * SEC), 10, "capped at capacity");
}

#[test]
fn equivalent_greedy_rates_refill_alike() {
    // Bucket4j: 600/min, 10/s and 1/100ms are the same speed.
    let rates = [greedy(1000, 600, secs(60)), greedy(1000, 10, secs(1)), greedy(1000, 1, Duration::from_millis(100))];
    for rate in rates {
        let mut b = bucket(vec![rate], 0);
        b.try_consume(1000, 0).unwrap();
        assert_eq!(b.get_available_tokens(1234 * MS), 12);
    }
}

#[test]
fn fractions_carry_exactly_whatever_the_call_pattern() {
    // 1 token per 3 ns: after 10 single-nanosecond steps, 3 tokens and one third.
    let mut stepped = bucket(vec![greedy(100, 1, Duration::from_nanos(3))], 0);
    let mut once = stepped.clone();
    stepped.try_consume(100, 0).unwrap();
    once.try_consume(100, 0).unwrap();
    for t in 1..=10 {
        assert!(!stepped.try_consume(50, t).unwrap()); // refills in place
    }
    assert_eq!(stepped.get_available_tokens(10), 3);
    assert_eq!(once.get_available_tokens(10), 3);
    // The third third arrives at 12 ns on both.
    assert_eq!(stepped.get_available_tokens(11), 3);
    assert_eq!(stepped.get_available_tokens(12), 4);
    assert_eq!(once.get_available_tokens(12), 4);
}

#[test]
fn intervally_refill_waits_for_whole_periods() {
    let mut b = bucket(vec![intervally(1000, 100, secs(60))], 0);
    b.try_consume(1000, 0).unwrap();
    assert_eq!(b.get_available_tokens(59 * SEC), 0);
    assert_eq!(b.get_available_tokens(60 * SEC), 100);
    assert_eq!(b.get_available_tokens(179 * SEC), 200);
    // A refill at 61 s does not shift the grid: the next comes at 120 s.
    assert!(b.try_consume(100, 61 * SEC).unwrap());
    assert_eq!(b.get_available_tokens(119 * SEC), 0);
    assert_eq!(b.get_available_tokens(120 * SEC), 100);
}

#[test]
fn intervally_aligned_refill_follows_the_first_refill_time() {
    // Bucket4j: at 16:20, first refill at 17:00, hourly.
    let first = 17 * 60 * MIN;
    let now = 16 * 60 * MIN + 20 * MIN;
    let hourly =
        Bandwidth::builder().capacity(400).refill_intervally_aligned(400, secs(3600), first, false).build().unwrap();
    let mut b = bucket(vec![hourly], now);
    assert_eq!(b.get_available_tokens(now), 400, "full initial tokens without adaptivity");
    b.try_consume(400, now).unwrap();
    let probe = b.try_consume_and_return_remaining(1, now).unwrap();
    assert_eq!(probe.nanos_to_wait_for_refill, 40 * MIN);
    assert_eq!(b.get_available_tokens(first - 1), 0);
    assert_eq!(b.get_available_tokens(first), 400);
}

#[test]
fn adaptive_initial_tokens_grant_the_rest_of_the_period() {
    let first = 17 * 60 * MIN;
    let hourly = |capacity| {
        Bandwidth::builder().capacity(capacity).refill_intervally_aligned(400, secs(3600), first, true).build().unwrap()
    };
    // 40 of 60 minutes remain: 400 × 40/60 = 266.67 → 266.
    assert_eq!(bucket(vec![hourly(400)], first - 40 * MIN).get_available_tokens(first - 40 * MIN), 266);
    // With capacity above the refill, the difference is guaranteed: 100 + 266.
    assert_eq!(bucket(vec![hourly(500)], first - 40 * MIN).get_available_tokens(first - 40 * MIN), 366);
    // Never more than capacity, and full initial tokens once past the first refill.
    assert_eq!(bucket(vec![hourly(400)], first - 5 * 60 * MIN).get_available_tokens(first - 5 * 60 * MIN), 400);
    assert_eq!(bucket(vec![hourly(400)], first + MIN).get_available_tokens(first + MIN), 400);
}

#[test]
fn a_clock_that_goes_back_credits_nothing() {
    let mut b = bucket(vec![greedy(10, 10, secs(1))], 10 * SEC);
    b.try_consume(10, 10 * SEC).unwrap();
    assert_eq!(b.get_available_tokens(5 * SEC), 0);
    assert!(!b.try_consume(1, 5 * SEC).unwrap());
    assert_eq!(b.get_available_tokens(10 * SEC + 100 * MS), 1);
}

#[test]
fn waits_count_a_clock_that_is_behind_the_last_refill() {
    let mut b = bucket(vec![greedy(10, 10, secs(1))], 10 * SEC);
    b.try_consume(10, 10 * SEC).unwrap();
    // At 9 s the next token still needs the 100 ms after 10 s: 1.1 s, not Bucket4j's 100 ms.
    let wait = b.estimate_ability_to_consume(1, 9 * SEC).unwrap().nanos_to_wait_for_refill;
    assert_eq!(wait, SEC + 100 * MS);
    assert!(!b.try_consume(1, 9 * SEC + wait - 1).unwrap());
    assert!(b.try_consume(1, 9 * SEC + wait).unwrap());
}

// ---------- operations ----------

#[test]
fn try_consume_debits_every_bandwidth() {
    let mut b = bucket(vec![greedy(5, 5, secs(1)), greedy(100, 100, secs(3600))], 0);
    for _ in 0..5 {
        assert!(b.try_consume(1, 0).unwrap());
    }
    assert!(!b.try_consume(1, 0).unwrap(), "the 5-per-second bandwidth is empty");
    let d = b.diagnostics(0);
    assert_eq!(d.bandwidths.iter().map(|b| b.available_tokens).collect::<Vec<_>>(), [0, 95]);
    assert_eq!(d.available_tokens, 0);
}

#[test]
fn consumption_probe_reports_remaining_and_waits() {
    let mut b = bucket(vec![greedy(10, 10, secs(1))], 0);
    let p = b.try_consume_and_return_remaining(4, 0).unwrap();
    assert!(p.consumed);
    assert_eq!((p.remaining_tokens, p.nanos_to_wait_for_refill, p.nanos_to_wait_for_reset), (6, 0, 400 * MS));
    let p = b.try_consume_and_return_remaining(8, 0).unwrap();
    assert!(!p.consumed);
    assert_eq!((p.remaining_tokens, p.nanos_to_wait_for_refill, p.nanos_to_wait_for_reset), (6, 200 * MS, 400 * MS));
    // More than capacity can never be consumed.
    let p = b.try_consume_and_return_remaining(11, 0).unwrap();
    assert_eq!(p.nanos_to_wait_for_refill, INFINITY_DURATION);
}

/// `a` holds `held` initial tokens above its capacity of 5; `b` starts with `earned` and earns
/// one token per nanosecond.
fn held_above_capacity(held: i64, earned: i64) -> TokenBucket {
    let a = Bandwidth::builder().capacity(5).refill_greedy(1, secs(1)).initial_tokens(held).id("a").build().unwrap();
    let b =
        Bandwidth::builder().capacity(1000).refill_greedy(1, Duration::from_nanos(1)).initial_tokens(earned).id("b");
    bucket(vec![a, b.build().unwrap()], 0)
}

#[test]
fn tokens_beyond_a_capacity_a_bandwidth_already_holds_are_waited_for_not_refused() {
    let mut bucket = held_above_capacity(100, 0);
    let probe = bucket.try_consume_and_return_remaining(50, 0).unwrap();
    assert!(!probe.consumed);
    assert_eq!(probe.nanos_to_wait_for_refill, 50, "when `b` has them: `a` keeps its 100");
    assert_eq!(bucket.estimate_ability_to_consume(50, 0).unwrap().nanos_to_wait_for_refill, 50);
    assert!(!bucket.try_consume(50, 49).unwrap());
    assert!(bucket.try_consume(50, 50).unwrap());
    // Once `a` holds fewer than it could ever refill to, beyond its capacity is never.
    assert_eq!(bucket.estimate_ability_to_consume(51, 50).unwrap().nanos_to_wait_for_refill, INFINITY_DURATION);
}

#[test]
fn tokens_beyond_a_capacity_a_bandwidth_holds_exactly_are_waited_for_not_refused() {
    // `a` holds exactly the 50 asked for.
    let mut bucket = held_above_capacity(50, 10);
    let estimate = bucket.estimate_ability_to_consume(50, 0).unwrap();
    assert!(!estimate.can_be_consumed);
    assert_eq!(
        (estimate.remaining_tokens, estimate.nanos_to_wait_for_refill),
        (10, 40),
        "`a` has them: only `b` waits"
    );
    let probe = bucket.try_consume_and_return_remaining(50, 0).unwrap();
    assert!(!probe.consumed);
    assert_eq!(probe.nanos_to_wait_for_refill, 40);
    assert!(!bucket.try_consume(50, 39).unwrap());
    assert!(bucket.try_consume(50, 40).unwrap());
}

#[test]
fn waits_are_never_early() {
    // 3 tokens per 10 ns: one token takes 3.33 ns. Bucket4j would report 3 ns (too early).
    let mut b = bucket(vec![greedy(3, 3, Duration::from_nanos(10))], 0);
    b.try_consume(3, 0).unwrap();
    let wait = b.try_consume_and_return_remaining(1, 0).unwrap().nanos_to_wait_for_refill;
    assert_eq!(wait, 4 * NS);
    assert!(!b.try_consume(1, wait - 1).unwrap());
    assert!(b.try_consume(1, wait).unwrap());
}

#[test]
fn probe_remaining_is_never_negative() {
    let mut b = bucket(vec![greedy(10, 10, secs(1))], 0);
    b.consume_ignoring_rate_limits(15, 0).unwrap();
    assert_eq!(b.get_available_tokens(0), -5);
    let p = b.try_consume_and_return_remaining(1, 0).unwrap();
    assert_eq!(p.remaining_tokens, 0);
    assert_eq!(p.nanos_to_wait_for_refill, 600 * MS);
    assert_eq!(b.estimate_ability_to_consume(1, 0).unwrap().remaining_tokens, 0);
}

#[test]
fn estimate_changes_nothing_and_reports_available() {
    let mut b = bucket(vec![greedy(10, 10, secs(1))], 0);
    b.try_consume(7, 0).unwrap();
    let before = b.clone();
    let e = b.estimate_ability_to_consume(2, 0).unwrap();
    assert!(e.can_be_consumed);
    assert_eq!((e.remaining_tokens, e.nanos_to_wait_for_refill), (3, 0), "remaining is what is available (Bucket4j)");
    let e = b.estimate_ability_to_consume(5, 0).unwrap();
    assert!(!e.can_be_consumed);
    assert_eq!((e.remaining_tokens, e.nanos_to_wait_for_refill), (3, 200 * MS));
    assert_eq!(b.estimate_ability_to_consume(11, 0).unwrap().nanos_to_wait_for_refill, INFINITY_DURATION);
    assert_eq!(b, before);
}

#[test]
fn consume_as_much_as_possible_with_and_without_limit() {
    let mut b = bucket(vec![greedy(10, 10, secs(1))], 0);
    assert_eq!(b.try_consume_as_much_as_possible_up_to(3, 0).unwrap(), 3);
    assert_eq!(b.try_consume_as_much_as_possible(0), 7);
    assert_eq!(b.try_consume_as_much_as_possible(0), 0);
    assert_eq!(b.try_consume_as_much_as_possible_up_to(5, 250 * MS).unwrap(), 2);
    b.consume_ignoring_rate_limits(3, 250 * MS).unwrap();
    assert_eq!(b.try_consume_as_much_as_possible(250 * MS), 0, "nothing from a bucket in debt");
}

#[test]
fn add_tokens_caps_at_capacity_and_force_add_does_not() {
    let mut b = bucket(vec![greedy(10, 1, secs(1))], 0);
    b.try_consume(6, 0).unwrap();
    b.add_tokens(3, 0).unwrap();
    assert_eq!(b.get_available_tokens(0), 7);
    b.add_tokens(50, 0).unwrap();
    assert_eq!(b.get_available_tokens(0), 10);
    b.force_add_tokens(5, 0).unwrap();
    assert_eq!(b.get_available_tokens(0), 15);
    // Over capacity nothing refills; consumption still works.
    assert_eq!(b.get_available_tokens(100 * SEC), 15);
    assert!(b.try_consume(12, 100 * SEC).unwrap());
    // Bucket4j's formula min(capacity, available + added) lowers an overfilled bucket.
    b.force_add_tokens(20, 100 * SEC).unwrap();
    b.add_tokens(1, 100 * SEC).unwrap();
    assert_eq!(b.get_available_tokens(100 * SEC), 10);
}

#[test]
fn force_add_past_64_bits_is_an_error_that_changes_nothing() {
    let mut b = bucket(vec![greedy(10, 1, secs(1))], 0);
    b.force_add_tokens(i64::MAX - 10, 0).unwrap();
    assert_eq!(b.get_available_tokens(0), i64::MAX);
    let before = b.clone();
    assert_eq!(b.force_add_tokens(1, 0), Err(Error::TokensOverflow));
    assert_eq!(b, before);
}

#[test]
fn consume_ignoring_rate_limits_bucket4j_example() {
    // 10 tokens/s, 2 available, last refill 100 ms ago: 6 tokens → 300 ms violation, −3 left,
    // and no consumption succeeds for the 400 ms it takes to get back to 1 token.
    let limit = Bandwidth::builder().capacity(10).refill_greedy(10, secs(1)).initial_tokens(2).build().unwrap();
    let mut b = bucket(vec![limit], 0);
    assert_eq!(b.consume_ignoring_rate_limits(6, 100 * MS).unwrap(), 300_000_000);
    assert_eq!(b.get_available_tokens(100 * MS), -3);
    for t in [100 * MS, 300 * MS, 499 * MS] {
        assert!(!b.try_consume(1, t).unwrap(), "at {t}");
    }
    assert!(b.try_consume(1, 500 * MS).unwrap());
    // Without violation it returns 0.
    let mut b = bucket(vec![greedy(10, 10, secs(1))], 0);
    assert_eq!(b.consume_ignoring_rate_limits(4, 0).unwrap(), 0);
}

#[test]
fn consume_ignoring_rate_limits_rejects_an_unrepresentable_violation() {
    let slow =
        Bandwidth::builder().capacity(10).refill_greedy(1, Duration::from_nanos(i64::MAX as u64)).build().unwrap();
    let mut b = bucket(vec![slow], 0);
    let before = b.clone();
    assert_eq!(b.consume_ignoring_rate_limits(11, 0), Err(Error::ReservationOverflow { tokens: 11 }));
    assert_eq!(b, before);
}

#[test]
fn reserve_is_fair_and_bounded_by_max_wait() {
    let mut b = bucket(vec![greedy(10, 10, secs(1))], 0);
    assert_eq!(b.reserve(10, SEC, 0).unwrap(), Some(0));
    assert_eq!(b.reserve(5, SEC, 0).unwrap(), Some(500 * MS));
    // A later small request waits behind the earlier large one.
    assert_eq!(b.reserve(1, SEC, 0).unwrap(), Some(600 * MS));
    // Exactly the max wait is accepted; beyond it nothing changes.
    assert_eq!(b.reserve(4, SEC, 0).unwrap(), Some(SEC));
    let before = b.clone();
    assert_eq!(b.reserve(1, SEC, 0).unwrap(), None);
    assert_eq!(b, before);
    // Beyond capacity is a debt, not impossible.
    let mut b = bucket(vec![greedy(10, 10, secs(1))], 0);
    assert_eq!(b.reserve(15, 10 * SEC, 0).unwrap(), Some(500 * MS));
}

#[test]
fn a_cancelled_reservation_returns_its_tokens_to_each_bandwidth_without_taking_any() {
    // A fast burst beside a slow hourly bandwidth: the reservations wait for the hourly one.
    let mut b = bucket(vec![greedy(10, 10, secs(1)), intervally(20, 20, secs(3600))], 0);
    assert!(b.try_consume(10, 0).unwrap());
    assert!(b.try_consume(10, SEC).unwrap());
    assert!(b.reserve(5, i64::MAX, SEC).unwrap().unwrap() > 0); // to be cancelled
    assert!(b.reserve(5, i64::MAX, SEC).unwrap().unwrap() > 0); // still waiting behind it

    // Two seconds later the burst has refilled over both debts; the hourly one has not.
    b.return_reserved(5, 5, 3 * SEC).unwrap();
    let d = b.diagnostics(3 * SEC);
    assert_eq!(d.bandwidths[0].available_tokens, 10, "the burst keeps its refill: its capacity, nothing taken");
    assert_eq!(d.bandwidths[1].available_tokens, -5, "the hourly one owes only the waiting 5");
    // Bad input changes nothing.
    let before = b.clone();
    assert_eq!(b.return_reserved(0, 5, 3 * SEC), Err(Error::NonPositiveTokens { tokens: 0 }));
    assert_eq!(b, before);
}

#[test]
fn a_cancelled_reservation_leaves_room_only_for_the_tokens_still_owed() {
    let mut b = bucket(vec![greedy(10, 10, secs(1))], 0);
    assert_eq!(b.reserve(20, i64::MAX, 0).unwrap(), Some(SEC)); // to be cancelled
    assert_eq!(b.reserve(5, i64::MAX, 0).unwrap(), Some(1500 * MS)); // still waiting behind it

    // Cancelled half a second later, 5 refilled since: -10 + 20 is more than the room left by
    // capacity 10 less the 5 still owed, as if only the second reservation had been made.
    b.return_reserved(20, 5, 500 * MS).unwrap();
    assert_eq!(b.get_available_tokens(500 * MS), 5);
    assert_eq!(b.reserve(10, i64::MAX, 500 * MS).unwrap(), Some(500 * MS));
}

#[test]
fn intervally_waits_count_whole_periods() {
    let mut b = bucket(vec![intervally(100, 10, secs(60))], 0);
    b.try_consume(100, 30 * SEC).unwrap();
    let wait = |b: &TokenBucket, n| b.estimate_ability_to_consume(n, 30 * SEC).unwrap().nanos_to_wait_for_refill;
    assert_eq!(wait(&b, 10), 30 * SEC);
    assert_eq!(wait(&b, 11), 90 * SEC);
    assert_eq!(wait(&b, 20), 90 * SEC);
    assert_eq!(wait(&b, 21), 150 * SEC);
    assert_eq!(b.nanos_to_full_refill(30 * SEC), 570 * SEC);
}

#[test]
fn waits_are_the_longest_over_bandwidths() {
    let mut b = bucket(vec![greedy(10, 10, secs(1)), intervally(10, 10, secs(60))], 0);
    b.try_consume(10, 0).unwrap();
    let p = b.try_consume_and_return_remaining(1, 0).unwrap();
    assert_eq!(p.nanos_to_wait_for_refill, 60 * SEC);
    assert_eq!(p.nanos_to_wait_for_reset, 60 * SEC);
}

#[test]
fn per_bandwidth_waits_are_reported_one_by_one() {
    let mut b = bucket(vec![greedy(10, 10, secs(1)), intervally(10, 10, secs(60))], 0);
    b.try_consume(10, 0).unwrap();
    let before = b.clone();
    assert_eq!(b.nanos_until_per_bandwidth(1, 0).unwrap(), [100 * MS, 60 * SEC]);
    assert_eq!(b.nanos_until_per_bandwidth(1, 30 * SEC).unwrap(), [0, 30 * SEC]);
    // Their maximum is the probe's wait, and capacity is no bound (debt is repaid by refill).
    let probe = b.estimate_ability_to_consume(5, 0).unwrap();
    assert_eq!(b.nanos_until_per_bandwidth(5, 0).unwrap().into_iter().max(), Some(probe.nanos_to_wait_for_refill));
    assert_eq!(b.nanos_until_per_bandwidth(20, 0).unwrap(), [2 * SEC, 120 * SEC]);
    assert_eq!(b.nanos_until_per_bandwidth(0, 0), Err(Error::NonPositiveTokens { tokens: 0 }));
    assert_eq!(b, before, "read-only");
}

#[test]
fn reset_fills_every_bandwidth() {
    let mut b = bucket(vec![greedy(10, 1, secs(1)), intervally(20, 1, secs(1))], 0);
    b.consume_ignoring_rate_limits(30, 0).unwrap();
    b.reset(0);
    let d = b.diagnostics(0);
    assert_eq!(d.bandwidths.iter().map(|b| b.available_tokens).collect::<Vec<_>>(), [10, 20]);
    assert_eq!(d.nanos_to_full_refill, 0);
}

#[test]
fn diagnostics_and_verbose_results() {
    let a = Bandwidth::builder().capacity(10).refill_greedy(10, secs(1)).id("burst").build().unwrap();
    let mut b = bucket(vec![a, intervally(100, 100, secs(3600))], 0);
    let result = b.verbose(0, |b| b.try_consume(4, 0)).unwrap();
    assert!(result.value);
    assert_eq!(result.configuration, *b.configuration());
    let d = result.diagnostics;
    assert_eq!(d.available_tokens, 6);
    assert_eq!(d.bandwidths[0].id.as_deref(), Some("burst"));
    assert_eq!((d.bandwidths[0].available_tokens, d.bandwidths[0].nanos_to_full_refill), (6, 400 * MS));
    assert_eq!((d.bandwidths[1].available_tokens, d.bandwidths[1].nanos_to_full_refill), (96, 3600 * SEC));
    assert_eq!(d.nanos_to_full_refill, 3600 * SEC);
    // Errors pass through the verbose wrapper.
    assert!(b.verbose(0, |b| b.try_consume(0, 0)).is_err());
}

#[test]
fn idle_expiry_is_the_time_to_full_refill_plus_a_grace() {
    let mut b = bucket(vec![greedy(10, 10, secs(1))], 0);
    assert_eq!(b.idle_expiry_nanos(Duration::ZERO, 0), 1, "at least 1 ns");
    b.try_consume(5, 0).unwrap();
    assert_eq!(b.idle_expiry_nanos(Duration::ZERO, 0), 500 * MS);
    assert_eq!(b.idle_expiry_nanos(secs(60), 0), 60 * SEC + 500 * MS);
    assert_eq!(b.idle_expiry_nanos(Duration::MAX, 0), INFINITY_DURATION);
}

// ---------- configuration replacement ----------

fn replaced(capacity: i64, available: i64, new_capacity: i64, strategy: Strategy) -> i64 {
    let mut b = bucket(vec![greedy(capacity, 10, secs(60))], 0);
    b.try_consume(capacity - available, 0).unwrap();
    let config = BucketConfiguration::new(vec![greedy(new_capacity, 10, secs(60))]).unwrap();
    b.replace_configuration(config, strategy, 0).unwrap();
    b.get_available_tokens(0)
}

#[test]
fn replacement_bucket4j_examples() {
    assert_eq!(replaced(100, 40, 200, Strategy::Proportionally), 80);
    assert_eq!(replaced(100, 40, 200, Strategy::AsIs), 40);
    assert_eq!(replaced(100, 40, 200, Strategy::Additive), 140);
    assert_eq!(replaced(100, 40, 20, Strategy::Proportionally), 8);
    assert_eq!(replaced(100, 40, 20, Strategy::AsIs), 20);
    assert_eq!(replaced(100, 40, 20, Strategy::Additive), 20);
    assert_eq!(replaced(100, 10, 100, Strategy::Additive), 10);
    assert_eq!(replaced(100, 40, 200, Strategy::Reset), 200);
}

#[test]
fn replacement_of_a_full_or_overfilled_bandwidth_gives_a_full_one() {
    for strategy in [Strategy::Proportionally, Strategy::AsIs, Strategy::Additive] {
        let mut b = bucket(vec![greedy(100, 10, secs(60))], 0);
        b.force_add_tokens(50, 0).unwrap();
        let config = BucketConfiguration::new(vec![greedy(200, 10, secs(60))]).unwrap();
        b.replace_configuration(config, strategy, 0).unwrap();
        let expected = if strategy == Strategy::AsIs { 150 } else { 200 };
        assert_eq!(b.get_available_tokens(0), expected, "{strategy:?}");
    }
}

#[test]
fn replacement_keeps_debt() {
    for strategy in [Strategy::AsIs, Strategy::Additive] {
        let mut b = bucket(vec![greedy(100, 10, secs(60))], 0);
        b.consume_ignoring_rate_limits(130, 0).unwrap();
        let config = BucketConfiguration::new(vec![greedy(50, 10, secs(60))]).unwrap();
        b.replace_configuration(config, strategy, 0).unwrap();
        assert_eq!(b.get_available_tokens(0), -30, "{strategy:?}");
    }
    let mut b = bucket(vec![greedy(100, 10, secs(60))], 0);
    b.consume_ignoring_rate_limits(130, 0).unwrap();
    b.replace_configuration(
        BucketConfiguration::new(vec![greedy(50, 10, secs(60))]).unwrap(),
        Strategy::Proportionally,
        0,
    )
    .unwrap();
    assert_eq!(b.get_available_tokens(0), -15);
}

#[test]
fn replacement_matches_bandwidths_by_id() {
    let with_id = |id: &str, capacity| {
        Bandwidth::builder().capacity(capacity).refill_greedy(capacity, secs(1)).id(id).build().unwrap()
    };
    let mut b = bucket(vec![with_id("technical", 10), with_id("business", 10_000)], 0);
    b.try_consume(5, 0).unwrap();
    // Reordered, resized, and one new bandwidth.
    let config =
        BucketConfiguration::new(vec![with_id("business", 5_000), with_id("technical", 100), with_id("new", 7)])
            .unwrap();
    b.replace_configuration(config, Strategy::Proportionally, 0).unwrap();
    let d = b.diagnostics(0);
    let available: Vec<_> = d.bandwidths.iter().map(|b| b.available_tokens).collect();
    assert_eq!(available, [4_997, 50, 7]);
}

#[test]
fn replacement_credits_the_time_since_the_last_refill_at_the_new_rate() {
    // Emptied at 0:00 under 100 per hour intervally, replaced at 0:59: the last refill (0:00)
    // carries over, so the 59 minutes count under the new refill at once (as in Bucket4j).
    for (new, expected) in [(intervally(100, 100, secs(60)), 100), (greedy(100, 100, secs(3600)), 98)] {
        let mut b = bucket(vec![intervally(100, 100, secs(3600))], 0);
        b.try_consume(100, 0).unwrap();
        b.replace_configuration(BucketConfiguration::new(vec![new]).unwrap(), Strategy::AsIs, 59 * MIN).unwrap();
        assert_eq!(b.get_available_tokens(59 * MIN), expected);
    }
}

#[test]
fn an_aligned_schedule_not_yet_started_passes_on_its_tokens_but_not_its_time() {
    // Created at 0:00, first refill at 10:00: the aligned bandwidth's last refill is 9:00. A
    // greedy successor from 1:00 refills from 1:00, not from 9:00 (Bucket4j's, which would keep
    // an emptied bucket empty for eight hours).
    let hour = 60 * MIN;
    let aligned =
        Bandwidth::builder().capacity(10).refill_intervally_aligned(10, secs(3600), 10 * hour, false).build().unwrap();
    for new in [greedy(10, 10, secs(1)), intervally(10, 10, secs(1))] {
        let mut b = bucket(vec![aligned.clone()], 0);
        b.replace_configuration(BucketConfiguration::new(vec![new]).unwrap(), Strategy::AsIs, hour).unwrap();
        assert!(b.try_consume(10, hour).unwrap());
        assert_eq!(b.get_available_tokens(hour + SEC), 10);
    }
    // An aligned successor refills on its own schedule (every minute from 0:00), not from 9:00.
    let other = Bandwidth::builder().capacity(10).refill_intervally_aligned(10, secs(60), 0, false).build().unwrap();
    let mut b = bucket(vec![aligned.clone()], 0);
    b.replace_configuration(BucketConfiguration::new(vec![other]).unwrap(), Strategy::AsIs, hour).unwrap();
    assert!(b.try_consume(10, hour).unwrap());
    assert_eq!(b.get_available_tokens(hour + MIN - 1), 0);
    assert_eq!(b.get_available_tokens(hour + MIN), 10);
    // Nor does a chain of schedules not yet started pass the first one's time on: first refill
    // moved from 10:00 to 2:00, then a greedy successor at 0:00 refills from 0:00.
    for moved in [(10, 2 * hour, secs(3600)), (5, 10 * hour, secs(1800))] {
        let (tokens, first, period) = moved;
        let moved =
            Bandwidth::builder().capacity(10).refill_intervally_aligned(tokens, period, first, false).build().unwrap();
        let mut b = bucket(vec![aligned.clone()], 0);
        assert!(b.try_consume(10, 0).unwrap());
        b.replace_configuration(BucketConfiguration::new(vec![moved]).unwrap(), Strategy::AsIs, 0).unwrap();
        let greedy_hourly = greedy(10, 10, secs(3600));
        b.replace_configuration(BucketConfiguration::new(vec![greedy_hourly]).unwrap(), Strategy::AsIs, 0).unwrap();
        assert_eq!(b.get_available_tokens(hour), 10);
        assert_eq!(b.estimate_ability_to_consume(1, 0).unwrap().nanos_to_wait_for_refill, 360 * SEC);
    }
    // Created within a period of its first refill (Bucket4j's example: 16:20, hourly from 17:00),
    // the schedule's last refill, 16:00, is behind the bucket's creation: a greedy successor at
    // 16:21 credits nothing from before then (Bucket4j's, from 16:00, would grant 140 at once).
    let mut b = bucket(
        vec![Bandwidth::builder()
            .capacity(400)
            .refill_intervally_aligned(400, secs(3600), 17 * hour, false)
            .build()
            .unwrap()],
        16 * hour + 20 * MIN,
    );
    assert!(b.try_consume(400, 16 * hour + 20 * MIN).unwrap());
    let greedy_hourly = BucketConfiguration::new(vec![greedy(400, 400, secs(3600))]).unwrap();
    b.replace_configuration(greedy_hourly, Strategy::AsIs, 16 * hour + 21 * MIN).unwrap();
    assert_eq!(b.get_available_tokens(16 * hour + 21 * MIN), 0);
    assert_eq!(b.get_available_tokens(16 * hour + 30 * MIN), 60, "9 minutes at 400 an hour");
    // An aligned successor anchored in the past refills from its last boundary, not from the
    // anchor: an emptied bucket replaced at 1:30 on an hourly schedule gets its tokens at 2:00.
    let day = 24 * hour;
    let t = 100 * day;
    let ahead = Bandwidth::builder().capacity(10).refill_intervally_aligned(10, secs(3600), t + 10 * hour, false);
    let mut b = bucket(vec![ahead.build().unwrap()], t);
    assert!(b.try_consume(10, t).unwrap());
    let anchored = Bandwidth::builder().capacity(10).refill_intervally_aligned(10, secs(3600), t - 30 * day, false);
    let replaced_at = t + 90 * MIN;
    b.replace_configuration(
        BucketConfiguration::new(vec![anchored.build().unwrap()]).unwrap(),
        Strategy::AsIs,
        replaced_at,
    )
    .unwrap();
    assert_eq!(b.get_available_tokens(replaced_at), 0);
    assert_eq!(b.get_available_tokens(t + 2 * hour - 1), 0);
    assert_eq!(b.get_available_tokens(t + 2 * hour), 10);
}

#[test]
fn unnamed_bandwidths_match_only_when_alone_on_each_side() {
    let mut b = bucket(vec![greedy(10, 1, secs(1))], 0);
    b.try_consume(6, 0).unwrap();
    let config = BucketConfiguration::new(vec![greedy(20, 1, secs(1))]).unwrap();
    b.replace_configuration(config, Strategy::AsIs, 0).unwrap();
    assert_eq!(b.get_available_tokens(0), 4, "one unnamed on each side: matched");

    let mut b = bucket(vec![greedy(10, 1, secs(1)), greedy(30, 1, secs(1))], 0);
    b.try_consume(6, 0).unwrap();
    let config = BucketConfiguration::new(vec![greedy(20, 1, secs(1))]).unwrap();
    b.replace_configuration(config, Strategy::AsIs, 0).unwrap();
    assert_eq!(b.get_available_tokens(0), 20, "two unnamed before: unmatched, so fresh");
}

#[test]
fn replacement_keeps_the_last_refill_time() {
    let mut b = bucket(vec![intervally(100, 100, secs(60))], 0);
    b.try_consume(100, 0).unwrap();
    let config = BucketConfiguration::new(vec![intervally(100, 50, secs(60))]).unwrap();
    b.replace_configuration(config, Strategy::AsIs, 30 * SEC).unwrap();
    assert_eq!(b.get_available_tokens(59 * SEC), 0);
    assert_eq!(b.get_available_tokens(60 * SEC), 50, "the old grid still applies");
}

#[test]
fn as_is_rescales_the_fraction_exactly() {
    // Half a token earned at 1 token/s; replaced by 1 token/3 s the half is 1.5 s of refill, so
    // the next token arrives 1.5 s later. Bucket4j truncates the period ratio 3 to 3 exactly here,
    // but loses the fraction when the new period is shorter; check both directions.
    let mut b = bucket(vec![greedy(10, 1, secs(1))], 0);
    b.try_consume(10, 0).unwrap();
    b.replace_configuration(BucketConfiguration::new(vec![greedy(10, 1, secs(3))]).unwrap(), Strategy::AsIs, 500 * MS)
        .unwrap();
    assert_eq!(b.get_available_tokens(500 * MS + 1500 * MS - 1), 0);
    assert_eq!(b.get_available_tokens(500 * MS + 1500 * MS), 1);

    let mut b = bucket(vec![greedy(10, 1, secs(3))], 0);
    b.try_consume(10, 0).unwrap();
    // 1.5 s at 1 token per 3 s: half a token; with a 2 s period the half takes 1 s more.
    b.replace_configuration(BucketConfiguration::new(vec![greedy(10, 1, secs(2))]).unwrap(), Strategy::AsIs, 1500 * MS)
        .unwrap();
    assert_eq!(b.get_available_tokens(2500 * MS - 1), 0);
    assert_eq!(b.get_available_tokens(2500 * MS), 1);
}

#[test]
fn proportional_replacement_is_exact() {
    // 1 of 3 tokens available, scaled to capacity 7: 7/3 = 2.33 tokens, and 2/3 of a token at
    // 1 token per second arrives after 666.67 ms → 667 ms.
    let mut b = bucket(vec![greedy(3, 1, secs(1))], 0);
    b.try_consume(2, 0).unwrap();
    b.replace_configuration(
        BucketConfiguration::new(vec![greedy(7, 1, secs(1))]).unwrap(),
        Strategy::Proportionally,
        0,
    )
    .unwrap();
    assert_eq!(b.get_available_tokens(0), 2);
    assert_eq!(b.estimate_ability_to_consume(3, 0).unwrap().nanos_to_wait_for_refill, 666_666_667);
}

#[test]
fn replacement_overflow_changes_nothing() {
    let nano = Duration::from_nanos(1);
    let mut b = bucket(vec![greedy(1, 1, nano)], 0);
    b.consume_ignoring_rate_limits(i64::MAX / 2, 0).unwrap();
    let before = b.clone();
    let config = BucketConfiguration::new(vec![greedy(4, 1, nano)]).unwrap();
    assert_eq!(b.replace_configuration(config, Strategy::Proportionally, 0), Err(Error::TokensOverflow));
    assert_eq!(b, before);
}

#[test]
fn proportional_replacement_may_scale_a_debt_to_exactly_i64_min() {
    // A debt of 2^62 doubled is -2^63 tokens: i64::MIN itself still fits, one more does not.
    let nano = Duration::from_nanos(1);
    let empty = |capacity| Bandwidth::builder().capacity(capacity).refill_greedy(1, nano).initial_tokens(0).build();
    for (debt, fits) in [(1 << 62, true), ((1 << 62) + 1, false)] {
        let mut b = bucket(vec![empty(1).unwrap()], 0);
        assert_eq!(b.consume_ignoring_rate_limits(debt, 0), Ok(debt));
        let config = BucketConfiguration::new(vec![empty(2).unwrap()]).unwrap();
        let result = b.replace_configuration(config, Strategy::Proportionally, 0);
        if fits {
            assert_eq!(result, Ok(()));
            assert_eq!(b.get_available_tokens(0), i64::MIN);
            assert_eq!(b.nanos_to_full_refill(0), INFINITY_DURATION);
        } else {
            assert_eq!(result, Err(Error::TokensOverflow));
            assert_eq!(b.get_available_tokens(0), -debt);
        }
    }
}

#[test]
fn strategy_names_round_trip() {
    for s in [Strategy::Reset, Strategy::Proportionally, Strategy::AsIs, Strategy::Additive] {
        assert_eq!(Strategy::from_name(s.name()), Some(s));
    }
    assert_eq!(Strategy::from_name("as_is"), None);
}
