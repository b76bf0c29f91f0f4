//! Shared by the `bucket_ops` and `configuration_ops` targets: value generators biased towards
//! the edges of every field, and an engine that runs every public `TokenBucket` operation with
//! arbitrary arguments and times, checking after each one that
//!
//! - nothing panicked (the targets are built with overflow checks),
//! - an operation that returned an error changed nothing (the crate's documented promise),
//! - the bucket re-encodes to bytes that decode to the same bucket (so a stored row written
//!   after any operation is readable again by the worker),
//! - a handful of cross-checks between operations that must agree (see `check_consistency`).
#![allow(dead_code)]

use std::time::Duration;

use edgebucket::{
    codec, Bandwidth, BucketConfiguration, RefillKind, TokenBucket, TokensInheritanceStrategy as S,
    INFINITY_DURATION,
};
use libfuzzer_sys::arbitrary::{Result, Unstructured};

pub const EPOCH_2026: i64 = 1_795_280_400_000_000_000;

/// An i64 from `edges`, or a small one, or any.
pub fn pick(u: &mut Unstructured, edges: &[i64]) -> Result<i64> {
    Ok(match u.int_in_range(0..=9u8)? {
        0..=5 if !edges.is_empty() => *u.choose(edges)?,
        6 => u.int_in_range(-3..=3)?,
        7 => u.int_in_range(0..=1_000_000)?,
        _ => u.arbitrary()?,
    })
}

const TIME_EDGES: &[i64] = &[
    i64::MIN,
    i64::MIN + 1,
    -1_000_000_000,
    -1,
    0,
    1,
    999_999_999,
    1_000_000_000,
    3_600_000_000_000,
    EPOCH_2026,
    i64::MAX / 2,
    i64::MAX - 1,
    i64::MAX,
];

pub fn pick_time(u: &mut Unstructured, anchors: &[i64]) -> Result<i64> {
    if !anchors.is_empty() && u.ratio(1u8, 2)? {
        let anchor = *u.choose(anchors)?;
        let delta = pick(u, &[-1, 0, 1, 1_000_000_000, -1_000_000_000, i64::MAX, i64::MIN])?;
        return Ok(match u.int_in_range(0..=1u8)? {
            0 => anchor.saturating_add(delta),
            _ => anchor.wrapping_add(delta),
        });
    }
    pick(u, TIME_EDGES)
}

pub fn pick_tokens(u: &mut Unstructured, capacities: &[i64]) -> Result<i64> {
    if !capacities.is_empty() && u.ratio(1u8, 3)? {
        let c = *u.choose(capacities)?;
        return Ok(match u.int_in_range(0..=3u8)? {
            0 => c,
            1 => c.saturating_add(1),
            2 => c.saturating_sub(1),
            _ => c / 2,
        });
    }
    pick(u, &[i64::MIN, -1, 0, 1, 2, 3, 10, 1_000, i64::MAX / 2, i64::MAX - 1, i64::MAX])
}

pub fn pick_kind(u: &mut Unstructured) -> Result<RefillKind> {
    Ok(match u.int_in_range(0..=2u8)? {
        0 => RefillKind::Greedy,
        1 => RefillKind::Intervally,
        _ => RefillKind::IntervallyAligned {
            first_refill_nanos: pick(u, &[0, 1, 1_000_000_000, EPOCH_2026, i64::MAX - 1, i64::MAX, -1])?,
            adaptive_initial_tokens: u.arbitrary()?,
        },
    })
}

/// The raw fields of one bandwidth, mostly valid, sometimes not (the decoder must refuse those).
#[derive(Debug, Clone)]
pub struct BandwidthFields {
    pub capacity: i64,
    pub kind: RefillKind,
    pub refill_tokens: i64,
    pub period_nanos: i64,
    pub initial_tokens: Option<i64>,
    pub id: Option<String>,
}

pub fn pick_bandwidth_fields(u: &mut Unstructured) -> Result<BandwidthFields> {
    let capacity = pick(u, &[1, 2, 10, 1_000_000_000, i64::MAX / 2, i64::MAX - 1, i64::MAX, 0, -1])?;
    let period_nanos = pick(u, &[1, 2, 1_000_000, 1_000_000_000, 3_600_000_000_000, i64::MAX / 2, i64::MAX - 1, i64::MAX])?;
    let refill_tokens = match u.int_in_range(0..=4u8)? {
        0 => 1,
        1 => period_nanos,
        2 => (period_nanos / 2).max(1),
        3 if period_nanos > 0 => u.int_in_range(1..=period_nanos)?,
        _ => pick(u, &[1, 10, i64::MAX, 0, -1])?,
    };
    let kind = pick_kind(u)?;
    let initial_tokens = if u.ratio(1u8, 3)? {
        Some(pick(u, &[0, 1, capacity, capacity.saturating_add(1), i64::MAX, -1])?)
    } else {
        None
    };
    let id = match u.int_in_range(0..=4u8)? {
        0 | 1 => None,
        2 => Some("a".to_owned()),
        3 => Some("b".to_owned()),
        _ => Some("c".to_owned()),
    };
    Ok(BandwidthFields { capacity, kind, refill_tokens, period_nanos, initial_tokens, id })
}

pub fn build_bandwidth(f: &BandwidthFields) -> edgebucket::Result<Bandwidth> {
    let mut b = Bandwidth::builder().capacity(f.capacity).refill_nanos(f.kind, f.refill_tokens, f.period_nanos.into());
    if let Some(t) = f.initial_tokens {
        b = b.initial_tokens(t);
    }
    if let Some(id) = &f.id {
        b = b.id(id.clone());
    }
    b.build()
}

/// A valid configuration of 1 to 4 bandwidths, or `None` if the fields drawn were not valid.
pub fn pick_configuration(u: &mut Unstructured) -> Result<Option<BucketConfiguration>> {
    let n = u.int_in_range(1..=4usize)?;
    let mut bandwidths = Vec::with_capacity(n);
    for _ in 0..n {
        let Ok(b) = build_bandwidth(&pick_bandwidth_fields(u)?) else { return Ok(None) };
        bandwidths.push(b);
    }
    Ok(BucketConfiguration::new(bandwidths).ok())
}

pub fn pick_strategy(u: &mut Unstructured) -> Result<S> {
    Ok(*u.choose(&[S::Reset, S::Proportionally, S::AsIs, S::Additive])?)
}

fn roundtrip(bucket: &TokenBucket, what: &str) {
    let bytes = codec::encode(bucket, Some(7));
    match codec::decode(&bytes) {
        Ok(again) => {
            assert_eq!(again.bucket, *bucket, "after {what}: decode(encode(b)) != b");
            assert_eq!(again.configuration_version, Some(7));
        }
        Err(e) => panic!("after {what}: the bucket no longer decodes: {e} ({}) bytes={}", e.code(), hex(&bytes)),
    }
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// An operation's result: an error must have left the bucket as it was.
fn atomic<T>(before: &TokenBucket, after: &TokenBucket, result: &edgebucket::Result<T>, what: &str) {
    if let Err(e) = result {
        let _ = e.code();
        let _ = e.to_string();
        assert_eq!(before, after, "{what} failed with {e} but changed the bucket");
    }
}

/// Runs up to 24 operations on `bucket`, `anchors` being times of interest (last refills, first
/// refills) to draw `now` near.
pub fn run_operations(u: &mut Unstructured, mut bucket: TokenBucket, anchors: &mut Vec<i64>) -> Result<()> {
    roundtrip(&bucket, "decode");
    for _ in 0..24 {
        if u.is_empty() {
            break;
        }
        let capacities: Vec<i64> = bucket.configuration().bandwidths().iter().map(|b| b.capacity()).collect();
        let now = pick_time(u, anchors)?;
        let tokens = pick_tokens(u, &capacities)?;
        let before = bucket.clone();
        let was = tokens_each(&bucket, now);
        let caps: Vec<i128> = capacities.iter().map(|&c| c as i128).collect();
        let op = u.int_in_range(0..=22u8)?;
        let what = format!("op {op} tokens={tokens} now={now}");
        if std::env::var_os("EB_DEBUG").is_some() {
            eprintln!("{what} on bucket {}", hex(&codec::encode(&bucket, None)));
        }
        match op {
            0 => {
                let r = bucket.try_consume(tokens, now);
                atomic(&before, &bucket, &r, &what);
                if let Ok(consumed) = r {
                    let spent = if consumed { tokens as i128 } else { 0 };
                    expect_each(&bucket, now, &what, |i| was[i] - spent);
                }
            }
            1 => {
                let r = bucket.try_consume_and_return_remaining(tokens, now);
                atomic(&before, &bucket, &r, &what);
                if let Ok(p) = r {
                    assert!(p.remaining_tokens >= 0 && p.nanos_to_wait_for_refill >= 0 && p.nanos_to_wait_for_reset >= 0);
                    if p.consumed {
                        assert_eq!(p.nanos_to_wait_for_refill, 0, "{what}");
                    }
                    let spent = if p.consumed { tokens as i128 } else { 0 };
                    expect_each(&bucket, now, &what, |i| was[i] - spent);
                    assert_eq!(p.remaining_tokens, bucket.get_available_tokens(now).max(0), "{what}");
                    assert_eq!(p.nanos_to_wait_for_reset, bucket.nanos_to_full_refill(now), "{what}");
                }
            }
            2 => {
                let r = bucket.estimate_ability_to_consume(tokens, now);
                atomic(&before, &bucket, &r, &what);
                assert_eq!(before, bucket, "{what}: an estimate changed the bucket");
            }
            3 => {
                let available = bucket.get_available_tokens(now);
                let got = bucket.try_consume_as_much_as_possible(now);
                assert_eq!(got, available.max(0), "{what}");
                expect_each(&bucket, now, &what, |i| was[i] - got as i128);
            }
            4 => {
                let r = bucket.try_consume_as_much_as_possible_up_to(tokens, now);
                atomic(&before, &bucket, &r, &what);
                if let Ok(got) = r {
                    let least = was.iter().copied().min().unwrap();
                    assert_eq!(got as i128, least.max(0).min(tokens as i128), "{what}");
                    expect_each(&bucket, now, &what, |i| was[i] - got as i128);
                }
            }
            5 => {
                let r = bucket.add_tokens(tokens, now);
                atomic(&before, &bucket, &r, &what);
                if r.is_ok() {
                    expect_each(&bucket, now, &what, |i| (was[i] + tokens as i128).min(caps[i]));
                }
            }
            6 => {
                let r = bucket.force_add_tokens(tokens, now);
                atomic(&before, &bucket, &r, &what);
                match &r {
                    Ok(()) => expect_each(&bucket, now, &what, |i| was[i] + tokens as i128),
                    Err(edgebucket::Error::TokensOverflow) => {
                        assert!(was.iter().any(|&w| w + tokens as i128 > i64::MAX as i128), "{what}: spurious overflow")
                    }
                    Err(_) => assert!(tokens <= 0),
                }
            }
            7 => {
                let r = bucket.consume_ignoring_rate_limits(tokens, now);
                atomic(&before, &bucket, &r, &what);
                if let Ok(w) = r {
                    expect_each(&bucket, now, &what, |i| was[i] - tokens as i128);
                    check_debt_repaid(&bucket, now, w, &what);
                }
            }
            8 => {
                let max_wait = pick(u, &[1, 1_000_000_000, i64::MAX - 1, i64::MAX, 0, -1])?;
                let r = bucket.reserve(tokens, max_wait, now);
                atomic(&before, &bucket, &r, &what);
                match r {
                    Ok(Some(w)) => {
                        assert!((0..=max_wait).contains(&w), "{what}: reserve waited {w} > {max_wait}");
                        expect_each(&bucket, now, &what, |i| was[i] - tokens as i128);
                        check_debt_repaid(&bucket, now, w, &what);
                    }
                    Ok(None) => assert_eq!(before, bucket, "{what}: a refused reservation changed the bucket"),
                    Err(_) => {}
                }
            }
            9 => {
                let still_owed: u64 = match u.int_in_range(0..=3u8)? {
                    0 => 0,
                    1 => u64::MAX,
                    2 => tokens.unsigned_abs(),
                    _ => u.arbitrary()?,
                };
                let r = bucket.return_reserved(tokens, still_owed, now);
                atomic(&before, &bucket, &r, &what);
                if r.is_ok() {
                    expect_each(&bucket, now, &what, |i| {
                        was[i].max((was[i] + tokens as i128).min(caps[i] - still_owed as i128))
                    });
                }
            }
            10 => {
                let _ = bucket.get_available_tokens(now);
            }
            11 => {
                bucket.reset(now);
                expect_each(&bucket, now, &what, |i| caps[i]);
            }
            12 | 13 => {
                let strategy = pick_strategy(u)?;
                let configuration = if op == 12 {
                    match pick_configuration(u)? {
                        Some(c) => c,
                        None => continue,
                    }
                } else {
                    bucket.configuration().clone()
                };
                let fresh = TokenBucket::new(configuration.clone(), now);
                let r = bucket.replace_configuration(configuration, strategy, now);
                atomic(&before, &bucket, &r, &format!("{what} replace {strategy:?}"));
                if strategy == S::Reset {
                    assert_eq!(bucket, fresh, "{what}: a RESET replacement is not a fresh bucket");
                }
            }
            14 => {
                let _ = bucket.diagnostics(now);
            }
            15 => {
                let _ = bucket.nanos_to_full_refill(now);
            }
            16 => {
                let keep = Duration::from_nanos(u.arbitrary()?);
                let e = bucket.idle_expiry_nanos(keep, now);
                assert!((1..=INFINITY_DURATION).contains(&e));
                let _ = bucket.idle_expiry_nanos(Duration::MAX, now);
            }
            17 => {
                let _ = bucket.nanos_until_forgettable(now);
            }
            18 => {
                let r = bucket.nanos_until_per_bandwidth(tokens, now);
                atomic(&before, &bucket, &r, &what);
            }
            19 => {
                let r = bucket.verbose(now, |b| b.try_consume(tokens, now));
                atomic(&before, &bucket, &r, &what);
            }
            20 => {
                // Refill is idempotent in time: to t1 then to t2 is to t2 at once (t1 <= t2).
                // A failing try_consume of more than anyone holds refills in place and debits nothing.
                let later = pick_time(u, anchors)?;
                let (t1, t2) = (now.min(later), now.max(later));
                let mut stepwise = bucket.clone();
                let mut direct = bucket.clone();
                let a = stepwise.try_consume(i64::MAX, t1);
                let b = stepwise.try_consume(i64::MAX, t2);
                let c = direct.try_consume(i64::MAX, t2);
                if matches!((a, b, c), (Ok(false), Ok(false), Ok(false))) {
                    assert_eq!(stepwise, direct, "refill to {t1} then {t2} differs from refill to {t2}");
                }
            }
            21 => {
                check_consistency(&bucket, tokens, now, &what);
            }
            _ => {
                // The worker's decision logic on the (decoded) bucket, under a policy of its own
                // configuration, with a policy version above, equal or below the stored one.
                worker_apply(u, &mut bucket, tokens, now)?;
            }
        }
        anchors.push(now);
        roundtrip(&bucket, &what);
        let _ = bucket.diagnostics(now);
        let _ = bucket.nanos_until_forgettable(now);
        let _ = bucket.idle_expiry_nanos(Duration::from_secs(60), now);
    }
    Ok(())
}

/// Operations that must agree with each other on one state at one time.
pub fn check_consistency(bucket: &TokenBucket, tokens: i64, now: i64, what: &str) {
    let d = bucket.diagnostics(now);
    assert_eq!(d.available_tokens, bucket.get_available_tokens(now), "{what}: diagnostics vs available");
    assert_eq!(d.nanos_to_full_refill, bucket.nanos_to_full_refill(now), "{what}: diagnostics vs full refill");
    let Ok(estimate) = bucket.estimate_ability_to_consume(tokens, now) else { return };
    let mut copy = bucket.clone();
    let consumed = copy.try_consume(tokens, now).expect("tokens checked");
    assert_eq!(estimate.can_be_consumed, consumed, "{what}: estimate vs try_consume");
    let wait = estimate.nanos_to_wait_for_refill;
    if estimate.can_be_consumed || wait == INFINITY_DURATION {
        return;
    }
    // Never early, never late: consumable at now + wait, not at now + wait - 1.
    if let Some(at) = now.checked_add(wait) {
        let then = bucket.estimate_ability_to_consume(tokens, at).expect("tokens checked");
        assert!(then.can_be_consumed, "{what}: the wait {wait} was early: not consumable at {at}");
        let just_before = bucket.estimate_ability_to_consume(tokens, at - 1).expect("tokens checked");
        assert!(!just_before.can_be_consumed, "{what}: the wait {wait} was late: consumable at {}", at - 1);
    }
}

/// `decide::apply` on `bucket` held under policy "p" (its own configuration), with a second
/// policy "q" to replace into; the bucket is updated to what the worker would store.
pub fn worker_apply(u: &mut Unstructured, bucket: &mut TokenBucket, tokens: i64, now: i64) -> Result<()> {
    // Any `now`, though the worker's clock (Date.now()) is never before the epoch: a negative one
    // found an overflow in decide::reservable_in (seeds/bucket_ops/reservation-292-years-early.bin).
    use edgebucket::worker::decide::{apply, Held};
    use edgebucket::worker::policy::Policies;
    use edgebucket::worker::protocol::{Command, Mode};
    let stored_version: u64 = u.int_in_range(0..=3)?;
    let policy_version: u64 = u.int_in_range(0..=3)?;
    let mut p = serde_json::to_value(bucket.configuration()).expect("prints");
    p["version"] = serde_json::json!(policy_version);
    p["strategy"] = serde_json::json!(pick_strategy(u)?);
    let mut all = serde_json::json!({ "p": p });
    if let Some(q) = pick_configuration(u)? {
        all["q"] = serde_json::to_value(&q).expect("prints");
    }
    let Ok(policies) = Policies::parse(&all.to_string()) else { return Ok(()) };
    let policy = if u.ratio(1u8, 4)? { "q" } else { "p" }.to_owned();
    let command = match u.int_in_range(0..=6u8)? {
        0 => Command::Consume { policy, tokens, mode: Mode::Try },
        1 => Command::Consume { policy, tokens, mode: Mode::Estimate },
        2 => Command::Consume { policy, tokens, mode: Mode::IgnoreLimits },
        3 => Command::Reserve { policy, tokens, max_wait_nanos: pick(u, &[1, 1_000_000_000, i64::MAX, 0])? },
        4 => Command::Inspect,
        5 => Command::Replace { policy, strategy: if u.arbitrary()? { Some(pick_strategy(u)?) } else { None } },
        _ => Command::Reset,
    };
    if std::env::var_os("EB_DEBUG").is_some() {
        eprintln!("worker: stored version {stored_version}, policies {all}, command {command:?}, now {now}");
    }
    let mut held = Some(Held { bucket: bucket.clone(), policy: "p".into(), version: stored_version });
    let before = held.clone();
    match apply(&mut held, &command, &policies, now) {
        Ok(effect) => {
            let _ = edgebucket::worker::headers::retry_after(&effect.outcome);
            if let Some(h) = held {
                let again = Held::decode(h.policy.clone(), &h.encode()).expect("the worker's write decodes");
                assert_eq!(again, h);
                *bucket = h.bucket;
            }
        }
        Err(error) => {
            assert!((400..500).contains(&error.status), "{command:?} at {now}: {error:?}");
            assert_eq!(held, before, "{command:?} failed but changed the bucket");
        }
    }
    Ok(())
}

/// Whole tokens of each bandwidth at `now` (refilled), as i128 for overflow-free expectations.
pub fn tokens_each(bucket: &TokenBucket, now: i64) -> Vec<i128> {
    bucket.diagnostics(now).bandwidths.iter().map(|b| b.available_tokens as i128).collect()
}

fn expect_each(bucket: &TokenBucket, now: i64, what: &str, expected: impl Fn(usize) -> i128) {
    let got = tokens_each(bucket, now);
    let want: Vec<i128> = (0..got.len()).map(expected).collect();
    assert_eq!(got, want, "{what}: tokens per bandwidth after the operation");
}

/// After a debit whose reported wait is `w`, every bandwidth is out of debt at `now + w` and
/// (if `w > 0`) one is still in debt at `now + w - 1`.
fn check_debt_repaid(bucket: &TokenBucket, now: i64, w: i64, what: &str) {
    let Some(at) = now.checked_add(w) else { return };
    let least = bucket.get_available_tokens(at);
    assert!(least >= 0, "{what}: wait {w} reported, but still {least} tokens at {at}");
    if w > 0 {
        let earlier = bucket.get_available_tokens(at - 1);
        assert!(earlier < 0, "{what}: wait {w} reported, but out of debt already at {}", at - 1);
    }
}
