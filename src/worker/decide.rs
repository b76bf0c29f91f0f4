//! What a command does to a bucket at a given time: the one piece of decision logic, shared by
//! the Durable Object and the in-isolate fallback buckets. Pure: no storage, no clock.

use super::errors::ApiError;
use super::policy::{item_name, Policies, Policy};
use super::protocol::{round_up, BandwidthView, Command, Mode, Outcome, MILLISECOND};
use crate::{codec, TokenBucket, INFINITY_DURATION};

const NANOS_PER_SECOND: u128 = 1_000_000_000;

/// A stored bucket: the bucket, and the policy and version its configuration came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    /// The bucket.
    pub bucket: TokenBucket,
    /// Its policy's name.
    pub policy: String,
    /// The policy version of its configuration.
    pub version: u64,
}

/// A decision and whether it changed the stored state (and so must be written).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Effect {
    /// What to answer.
    pub outcome: Outcome,
    /// Whether the bucket must be written: created, moved to another policy or version, or its
    /// tokens or configuration changed (a refill alone is no change).
    pub changed: bool,
    /// Nanoseconds from now the bucket must still exist, whatever its idle expiry: until a
    /// refused reservation's retry time (its `waitMs`, or `Retry-After`). That time holds for this bucket's refill schedule
    /// (an interval refill's phase starts at creation), not for a fresh one's, and a reservation
    /// beyond capacity is refused by a full bucket, which idle expiry would otherwise delete
    /// before the retry. 0: nothing promised.
    pub promised_nanos: i64,
    /// Whether a retry time promised before still holds: a consume or reservation on a bucket
    /// that existed and kept its configuration. Its write must then not bring the idle deadline
    /// forward: a bucket that spent its last token before a refill is full again at that
    /// refill, sooner than a retry promised for a later one. A reset or a replacement (explicit,
    /// or implicit by version) may bring it forward, so that a reset bucket full again goes one
    /// grace (and a second, [`idle_keep`]) later: a promise made before then meets a fresh
    /// bucket, whose initial tokens and interval phase start at its creation, and which names its
    /// own time if it refuses.
    pub keeps_promises: bool,
}

impl Held {
    /// A new bucket under `policy`, created at `now`.
    pub fn new(policy: &Policy, now: i64) -> Self {
        Held {
            bucket: TokenBucket::new(policy.configuration.clone(), now),
            policy: policy.name.clone(),
            version: policy.version,
        }
    }

    /// The stored form: the core codec with the version; the policy name is stored beside it.
    pub fn encode(&self) -> Vec<u8> {
        codec::encode(&self.bucket, Some(self.version))
    }

    /// Reads what [`Held::encode`] wrote.
    ///
    /// # Errors
    /// The codec's error for bytes that are not a bucket.
    pub fn decode(policy: String, bytes: &[u8]) -> crate::Result<Self> {
        let decoded = codec::decode(bytes)?;
        Ok(Held { bucket: decoded.bucket, policy, version: decoded.configuration_version.unwrap_or(0) })
    }
}

/// How long a bucket is kept once full (and holding its initial tokens) under a policy's grace:
/// a second more. A refused consume's `Retry-After` rounds its wait up to a whole second, so it
/// can name a moment up to a second past full refill; without the second, a grace under a
/// second would delete the bucket before the retry, and a fresh bucket below capacity would
/// refuse it again, for ever. Kept here rather than promised per refusal, so refusals never
/// write.
pub fn idle_keep(grace: std::time::Duration) -> std::time::Duration {
    grace.saturating_add(std::time::Duration::from_secs(1))
}

/// Applies `command` (not `Delete`, which is the store's business) at `now` nanoseconds.
///
/// Consume and reserve create a missing bucket, and replace its configuration when the policy's
/// version has risen (implicit replacement). On error nothing has changed.
///
/// # Errors
/// 400 for bad arguments (core codes, `UNKNOWN_POLICY`, `TOKENS_EXCEED_CAPACITY`), 404
/// `BUCKET_NOT_FOUND`, 409 `POLICY_MISMATCH` or `STALE_POLICY_VERSION`.
pub fn apply(held: &mut Option<Held>, command: &Command, policies: &Policies, now: i64) -> Result<Effect, ApiError> {
    let existed = held.is_some();
    let version_before = held.as_ref().map(|h| h.version);
    let (allowed, wait, changed) = match command {
        Command::Consume { policy, tokens, mode } => {
            under_policy(held, lookup(policies, policy)?, now, |bucket| consume(bucket, *tokens, *mode, now))?
        }
        Command::Reserve { policy, tokens, max_wait_nanos } => {
            under_policy(held, lookup(policies, policy)?, now, |bucket| {
                match bucket.reserve(*tokens, *max_wait_nanos, now)? {
                    Some(wait) => Ok((true, wait, true)),
                    None => Ok((false, reservable_in(bucket, *tokens, *max_wait_nanos, now)?, false)),
                }
            })?
        }
        Command::Inspect => {
            existing(held)?;
            (true, 0, false)
        }
        Command::Replace { policy, strategy } => {
            let policy = lookup(policies, policy)?;
            (true, 0, changes(held, now, |held| replace(held, policy, *strategy, now))?)
        }
        Command::Reset => {
            let reset = |held: &mut Option<Held>| existing(held).map(|h| h.bucket.reset(now));
            (true, 0, changes(held, now, reset)?)
        }
        Command::Delete => return Err(ApiError::internal("delete is handled by the store")),
    };
    let held_now = held.as_ref().expect("every command that succeeds leaves a bucket");
    let mut outcome = outcome(held_now, command.cost(), allowed, wait, now)?;
    let mut promised_nanos = 0;
    if let Command::Reserve { tokens, max_wait_nanos, .. } = command {
        outcome.no_retry_after =
            !allowed && !retry_after_grants(&held_now.bucket, *tokens, *max_wait_nanos, &outcome, now);
        if !allowed && wait < INFINITY_DURATION {
            // The client comes back after the body's `waitMs` or at `Retry-After`, the wait
            // rounded up to a whole second. Counted from the moment the wait names, not from
            // now: repeated refusals promise the same.
            promised_nanos = wait.saturating_add(NANOS_PER_SECOND as i64);
        }
    }
    if existed || changed {
        let keeps_promises = command.is_decision() && version_before == Some(held_now.version);
        return Ok(Effect { outcome, changed, promised_nanos, keeps_promises });
    }
    // Created only to answer: nothing moved. A full bucket (initial tokens at capacity) is not
    // kept: a fresh one later is the same, so the key stays unknown and nothing is written. One
    // below capacity is kept when it refused (a consume, an estimate or a reservation), else
    // every later request would meet a fresh bucket again: refill would never accrue, and the
    // wait it named would never come true. A refused reservation that names a time is kept too:
    // the time holds for this bucket's refill schedule (an interval refill's phase starts at
    // creation), not for a new one's.
    let below_capacity = held.as_ref().is_some_and(|h| h.bucket.nanos_to_full_refill(now) > 0);
    let timed = matches!(command, Command::Reserve { .. }) && wait < INFINITY_DURATION;
    let keep = (below_capacity && !allowed) || timed;
    if !keep {
        *held = None;
    }
    Ok(Effect { outcome, changed: keep, promised_nanos, keeps_promises: false })
}

/// Runs `operation` on the bucket under `policy` (created or replaced first if need be) and
/// returns (allowed, wait, changed): changed when tokens moved or the configuration was replaced
/// (a creation alone is not a change). If the operation fails, a creation or replacement is undone.
fn under_policy(
    held: &mut Option<Held>,
    policy: &Policy,
    now: i64,
    operation: impl FnOnce(&mut TokenBucket) -> Result<(bool, i64, bool), ApiError>,
) -> Result<(bool, i64, bool), ApiError> {
    let undo = prepare(held, policy, now)?;
    match operation(&mut held.as_mut().expect("prepared").bucket) {
        Ok((allowed, wait, moved)) => Ok((allowed, wait, moved || matches!(undo, Some(Some(_))))),
        Err(error) => {
            if let Some(before) = undo {
                *held = before;
            }
            Err(error)
        }
    }
}

/// Runs `operation` and tells whether it changed what is stored: the policy, the version, or
/// the bucket beyond a refill to `now` (every operation refills first, so a refill alone is no
/// change). A reset of a full bucket, or a replacement by the same configuration that carries
/// every token over, is then not written.
fn changes(
    held: &mut Option<Held>,
    now: i64,
    operation: impl FnOnce(&mut Option<Held>) -> Result<(), ApiError>,
) -> Result<bool, ApiError> {
    let mut before = held.clone();
    if let Some(before) = &mut before {
        before.bucket.refill(now);
    }
    operation(held)?;
    Ok(*held != before)
}

fn replace(
    held: &mut Option<Held>,
    policy: &Policy,
    strategy: Option<crate::TokensInheritanceStrategy>,
    now: i64,
) -> Result<(), ApiError> {
    let Some(h) = held else {
        *held = Some(Held::new(policy, now));
        return Ok(());
    };
    // As implicit replacement never downgrades: during a rollout or after a rollback, an older
    // deployment must not put its configuration back, which the newer one would then replace
    // again, its strategy applied twice.
    if h.policy == policy.name && h.version > policy.version {
        return Err(ApiError::new(
            409,
            "STALE_POLICY_VERSION",
            format!(
                "the bucket is at version {} of policy {:?}, this deployment has version {}: replace it from a \
                 deployment with that version or later",
                h.version, policy.name, policy.version
            ),
        ));
    }
    h.bucket.replace_configuration(policy.configuration.clone(), strategy.unwrap_or(policy.strategy), now)?;
    (h.policy, h.version) = (policy.name.clone(), policy.version);
    Ok(())
}

/// What a fresh bucket under `policy` looks like: the limits without any state, for answers
/// that have no bucket behind them (failing open).
pub fn describe(policy: &Policy, now: i64) -> Outcome {
    outcome(&Held::new(policy, now), 1, true, 0, now).expect("a cost of 1 is valid")
}

/// The bad input the front worker can answer before asking the bucket, so that it is a 400
/// whether or not the object is reachable (and never admitted by a failure mode): an unknown
/// policy, or a consume (try or estimate) of more tokens than a bandwidth of the policy holds.
/// What only a bucket's state can refuse (an `ignore-limits` debt past 2^63 ns of refill) is
/// the object's to answer: failing open admits it, as it admits anything it cannot check.
///
/// # Errors
/// 400 `UNKNOWN_POLICY` or `TOKENS_EXCEED_CAPACITY`, as the object would answer (except for a
/// bucket under another policy, where the object's 409 `POLICY_MISMATCH` would come first).
pub fn check(command: &Command, policies: &Policies) -> Result<(), ApiError> {
    let Some(name) = command.policy() else { return Ok(()) };
    let policy = lookup(policies, name)?;
    match command {
        Command::Consume { tokens, mode, .. } if *mode != Mode::IgnoreLimits => {
            within_capacity(&policy.configuration, *tokens)
        }
        _ => Ok(()),
    }
}

fn lookup<'a>(policies: &'a Policies, name: &str) -> Result<&'a Policy, ApiError> {
    policies.get(name).ok_or_else(|| ApiError::bad_request("UNKNOWN_POLICY", format!("no policy named {name:?}")))
}

fn existing(held: &mut Option<Held>) -> Result<&mut Held, ApiError> {
    held.as_mut().ok_or_else(|| ApiError::new(404, "BUCKET_NOT_FOUND", "no bucket under this key"))
}

/// Creates the bucket, or replaces its configuration if the policy's version rose. Returns the
/// state before when it did either (to undo), `None` when the bucket was left as it was. A lower
/// version leaves the bucket alone: an older deployment may still be running.
#[allow(clippy::option_option)] // None: unchanged; Some(None): created; Some(Some(_)): replaced
fn prepare(held: &mut Option<Held>, policy: &Policy, now: i64) -> Result<Option<Option<Held>>, ApiError> {
    let Some(h) = held else {
        *held = Some(Held::new(policy, now));
        return Ok(Some(None));
    };
    if h.policy != policy.name {
        return Err(ApiError::new(
            409,
            "POLICY_MISMATCH",
            format!(
                "this bucket is under policy {:?}, not {:?} (an admin can move it with PUT .../configuration)",
                h.policy, policy.name
            ),
        ));
    }
    if policy.version <= h.version {
        return Ok(None);
    }
    let before = h.clone();
    h.bucket.replace_configuration(policy.configuration.clone(), policy.strategy, now)?;
    h.version = policy.version;
    Ok(Some(Some(before)))
}

/// Returns (allowed, wait, tokens moved).
fn consume(bucket: &mut TokenBucket, tokens: i64, mode: Mode, now: i64) -> Result<(bool, i64, bool), ApiError> {
    if mode != Mode::IgnoreLimits {
        within_capacity(bucket.configuration(), tokens)?;
    }
    Ok(match mode {
        Mode::Try => {
            let probe = bucket.try_consume_and_return_remaining(tokens, now)?;
            (probe.consumed, probe.nanos_to_wait_for_refill, probe.consumed)
        }
        Mode::Estimate => {
            let probe = bucket.estimate_ability_to_consume(tokens, now)?;
            (probe.can_be_consumed, probe.nanos_to_wait_for_refill, false)
        }
        Mode::IgnoreLimits => (true, bucket.consume_ignoring_rate_limits(tokens, now)?, true),
    })
}

/// A request no bandwidth could ever grant is bad input, not a rejection with an endless wait. A
/// bandwidth holds at most its capacity, or its initial tokens where they exceed it (refill stops
/// at the capacity; the initial tokens stay until spent).
fn within_capacity(configuration: &crate::BucketConfiguration, tokens: i64) -> Result<(), ApiError> {
    let bandwidths = configuration.bandwidths().iter();
    let most = bandwidths.map(|b| b.capacity().max(b.initial_tokens())).min().unwrap_or(0);
    if tokens > most {
        return Err(ApiError::bad_request(
            "TOKENS_EXCEED_CAPACITY",
            format!("{tokens} tokens can never be granted: a bandwidth of the policy holds at most {most}"),
        ));
    }
    Ok(())
}

/// Whether a reservation of `tokens` can be granted within `max_wait` at some moment: from a
/// full bucket at the most favourable time, every bandwidth must refill what exceeds its capacity
/// (or the tokens it holds above it now, initial or added ones, which only spending lowers) within
/// `max_wait` (greedy: `max_wait × tokens / period`; intervally: one refill at once, then one per
/// period). Otherwise waiting is no use, and a refusal must not suggest a retry time.
fn ever_reservable(bucket: &TokenBucket, tokens: i64, max_wait: i64, now: i64) -> bool {
    let held = bucket.diagnostics(now).bandwidths;
    bucket.configuration().bandwidths().iter().zip(held).all(|(bandwidth, held)| {
        let beyond = i128::from(tokens) - i128::from(bandwidth.capacity().max(held.available_tokens));
        let refill = bandwidth.refill();
        let (max_wait, period) = (i128::from(max_wait), i128::from(refill.period_nanos()));
        let refilled = if refill.is_intervally() {
            (1 + (max_wait - 1) / period) * i128::from(refill.tokens())
        } else {
            max_wait * i128::from(refill.tokens()) / period // < 2^126
        };
        beyond <= 0 || refilled >= beyond
    })
}

/// How long until a refused reservation would be granted, in whole milliseconds, checked on a
/// copy of the bucket; [`INFINITY_DURATION`] when waiting cannot help.
///
/// From a moment `at`, no grant comes before `at + wait - max_wait`: each bandwidth's
/// `t + wait(t)` never falls as `t` grows. That moment, rounded up to the millisecond (as
/// `waitMs` reports it and as the object's clock, `Date.now()`, decides), is checked; where it
/// is refused the search hops on from there. So a wait found is the first whole millisecond that
/// grants. Beyond an interval bandwidth's capacity a reservation is granted only in a window
/// before each refill, which may hold no whole millisecond (a `maxWait` under 1 ms, or several
/// bandwidths' windows that barely overlap): a retry aimed into it would be refused again, for
/// ever. Where such windows meet on a whole millisecond only after more than [`HOPS`] hops, the
/// answer is never.
fn reservable_in(bucket: &TokenBucket, tokens: i64, max_wait: i64, now: i64) -> Result<i64, ApiError> {
    if !ever_reservable(bucket, tokens, max_wait, now) {
        return Ok(INFINITY_DURATION);
    }
    let mut at = now;
    for _ in 0..HOPS {
        let wait = overall_wait(bucket, tokens, at)?;
        let first = at.saturating_add(wait.saturating_sub(max_wait).max(0));
        // Past i64::MAX (2262, or a clock before 1970 that far back) is as good as never.
        let Some(tick) = whole_millis_after(now, first).filter(|_| first < INFINITY_DURATION) else {
            break;
        };
        if granted_at(bucket, tokens, max_wait, tick) {
            return Ok(tick - now);
        }
        if tick <= at {
            break; // refused where its wait is within max_wait: only an overflow does that
        }
        at = tick;
    }
    Ok(INFINITY_DURATION)
}

/// How many moments [`reservable_in`] checks at most. Windows of one interval bandwidth need a
/// hop per refill until the bucket is full; those of several meet on a whole millisecond after
/// up to hundreds. Each hop costs a copy of the bucket and a reservation: a refusal that uses
/// them all costs tens of microseconds.
const HOPS: usize = 256;

/// The first moment at or after `at` that lies a whole number of milliseconds after `now`; `None`
/// past the range of `i64`.
fn whole_millis_after(now: i64, at: i64) -> Option<i64> {
    let millis = round_up(at.checked_sub(now)?, MILLISECOND)?;
    now.checked_add(millis.checked_mul(MILLISECOND)?)
}

/// Whether the refused reservation is granted at the moment its `Retry-After` names (whole
/// seconds, at least every `t`); without one there is nothing to check.
fn retry_after_grants(bucket: &TokenBucket, tokens: i64, max_wait: i64, outcome: &Outcome, now: i64) -> bool {
    let Some(seconds) = super::headers::retry_after(outcome) else { return true };
    granted_at(bucket, tokens, max_wait, now.saturating_add(seconds.saturating_mul(NANOS_PER_SECOND as i64)))
}

/// Whether the reservation would be granted at `at`, asked of a copy of the bucket.
fn granted_at(bucket: &TokenBucket, tokens: i64, max_wait: i64, at: i64) -> bool {
    matches!(bucket.clone().reserve(tokens, max_wait, at), Ok(Some(_)))
}

fn overall_wait(bucket: &TokenBucket, tokens: i64, now: i64) -> Result<i64, ApiError> {
    Ok(bucket.nanos_until_per_bandwidth(tokens, now)?.into_iter().max().unwrap_or(0))
}

fn outcome(held: &Held, cost: i64, allowed: bool, wait_nanos: i64, now: i64) -> Result<Outcome, ApiError> {
    let diagnostics = held.bucket.diagnostics(now);
    let waits = held.bucket.nanos_until_per_bandwidth(cost, now)?;
    let count = diagnostics.bandwidths.len();
    let bandwidths = held
        .bucket
        .configuration()
        .bandwidths()
        .iter()
        .zip(diagnostics.bandwidths)
        .zip(waits)
        .enumerate()
        .map(|(i, ((bandwidth, d), wait_nanos))| BandwidthView {
            name: item_name(&held.policy, bandwidth.id(), i, count),
            capacity: d.capacity,
            window_seconds: window_seconds(bandwidth),
            available: d.available_tokens,
            // Refill stops at the capacity: beyond it, a bandwidth holds only what it has now.
            wait_nanos: if cost > d.capacity && d.available_tokens < cost { INFINITY_DURATION } else { wait_nanos },
            full_nanos: d.nanos_to_full_refill,
        })
        .collect();
    Ok(Outcome {
        policy: held.policy.clone(),
        version: held.version,
        at_millis: now.div_euclid(1_000_000),
        allowed,
        wait_nanos,
        bandwidths,
        no_retry_after: false,
    })
}

/// Seconds to refill from empty to capacity, rounded up, at least 1 (the draft requires w > 0).
/// Interval refills arrive only at whole periods: as many periods as it takes.
fn window_seconds(bandwidth: &crate::Bandwidth) -> i64 {
    let refill = bandwidth.refill();
    // All three are positive: unsigned arithmetic, and the products fit in 126 bits.
    let (capacity, period, tokens) =
        (bandwidth.capacity() as u128, refill.period_nanos() as u128, refill.tokens() as u128);
    let nanos =
        if refill.is_intervally() { capacity.div_ceil(tokens) * period } else { (capacity * period).div_ceil(tokens) };
    nanos.div_ceil(NANOS_PER_SECOND).clamp(1, INFINITY_DURATION as u128) as i64
}

#[cfg(test)]
mod tests {
    use proptest::prelude::{prop, prop_assert, prop_assert_eq, prop_oneof, Just, Strategy};

    use super::*;

    const MS: i64 = 1_000_000;
    const T0: i64 = 1_800_000_000_000 * MS; // some epoch time in nanoseconds

    fn policies(version: u64, capacity: i64) -> Policies {
        Policies::parse(&format!(
            r#"{{"api": {{"version": {version}, "bandwidths": [
                  {{"id": "burst", "capacity": {capacity}, "refill": {{"kind": "greedy", "tokens": 10, "period": "1s"}}}},
                  {{"capacity": 100, "refill": {{"kind": "intervally", "tokens": 100, "period": "1h"}}}}]}},
                "other": {{"bandwidths": [{{"capacity": 1, "refill": {{"kind": "greedy", "tokens": 1, "period": "1s"}}}}]}}}}"#
        ))
        .unwrap()
    }

    /// A policy `p` of one bandwidth: capacity 10, refilling 10 per `period` by `kind`.
    fn single(kind: &str, period: &str) -> Policies {
        Policies::parse(&format!(
            r#"{{"p": {{"bandwidths": [{{"capacity": 10, "refill": {{"kind": "{kind}", "tokens": 10, "period": "{period}"}}}}]}}}}"#
        ))
        .unwrap()
    }

    /// A policy `slow`: capacity 10, `initial` tokens at creation, one more each second.
    fn slow(initial: i64) -> Policies {
        Policies::parse(&format!(
            r#"{{ "slow": {{ "bandwidths": [{{ "capacity": 10, "initialTokens": {initial},
                "refill": {{ "kind": "greedy", "tokens": 1, "period": "1s" }} }}] }} }}"#
        ))
        .unwrap()
    }

    /// A consume under [`slow`]'s policy.
    fn on_slow(tokens: i64, mode: Mode) -> Command {
        Command::Consume { policy: "slow".into(), tokens, mode }
    }

    fn consume(tokens: i64, mode: Mode) -> Command {
        Command::Consume { policy: "api".into(), tokens, mode }
    }

    #[test]
    fn a_refused_reservation_asked_292_years_early_waits_for_ever_instead_of_overflowing() {
        let p = Policies::parse(
            r#"{"p": {"bandwidths": [{"capacity": 1, "initialTokens": 0, "refill": {"kind": "greedy", "tokens": 1, "period": "1s"}}]}}"#,
        )
        .unwrap();
        let mut held = None;
        assert!(
            !apply(&mut held, &Command::Consume { policy: "p".into(), tokens: 1, mode: Mode::Try }, &p, 0)
                .unwrap()
                .outcome
                .allowed
        );
        let reserve = Command::Reserve { policy: "p".into(), tokens: 1, max_wait_nanos: 1 };
        let refused = apply(&mut held, &reserve, &p, i64::MIN).unwrap();
        assert!(!refused.outcome.allowed);
        assert_eq!(refused.outcome.wait_nanos, INFINITY_DURATION);
    }

    #[test]
    fn first_consume_creates_and_writes_then_rejections_write_nothing() {
        let p = policies(1, 5);
        let mut held = None;
        let first = apply(&mut held, &consume(5, Mode::Try), &p, T0).unwrap();
        assert!(first.changed && first.outcome.allowed);
        assert_eq!(first.outcome.remaining(), 0);
        assert_eq!(first.outcome.at_millis, T0 / MS);
        let rejected = apply(&mut held, &consume(2, Mode::Try), &p, T0 + 50 * MS).unwrap();
        assert!(!rejected.changed && !rejected.outcome.allowed);
        assert_eq!(rejected.outcome.wait_nanos, 150 * MS, "half a token earned, one and a half to go");
        assert_eq!(rejected.outcome.violated(0), ["burst"]);
        let names: Vec<_> = rejected.outcome.bandwidths.iter().map(|b| (b.name.as_str(), b.window_seconds)).collect();
        assert_eq!(names, [("burst", 1), ("api-2", 3600)]);
    }

    #[test]
    fn estimate_changes_nothing_and_ignore_limits_goes_into_debt() {
        let p = policies(1, 5);
        let mut held = None;
        apply(&mut held, &consume(1, Mode::Try), &p, T0).unwrap();
        let before = held.clone();
        let estimate = apply(&mut held, &consume(5, Mode::Estimate), &p, T0).unwrap();
        assert!(!estimate.changed && !estimate.outcome.allowed);
        assert_eq!(held, before);
        let debt = apply(&mut held, &consume(6, Mode::IgnoreLimits), &p, T0).unwrap();
        assert!(debt.changed && debt.outcome.allowed);
        assert_eq!(debt.outcome.bandwidths[0].available, -2);
        assert_eq!(debt.outcome.remaining(), 0);
    }

    #[test]
    fn an_allowing_estimate_on_an_unknown_key_answers_as_a_fresh_bucket_and_keeps_nothing() {
        let p = policies(1, 5);
        let mut held = None;
        let estimate = apply(&mut held, &consume(5, Mode::Estimate), &p, T0).unwrap();
        assert!(!estimate.changed && estimate.outcome.allowed);
        assert_eq!(estimate.outcome.bandwidths[0].available, 5);
        assert_eq!(held, None, "nothing to write, and the key stays unknown");
        assert!(apply(&mut held, &consume(1, Mode::Try), &p, T0).unwrap().changed);
        assert!(held.is_some());
    }

    #[test]
    fn a_refused_first_request_keeps_a_bucket_below_capacity_so_refill_accrues() {
        let p = slow(0);
        let take = |tokens| on_slow(tokens, Mode::Try);
        let mut held = None;
        let refused = apply(&mut held, &take(1), &p, T0).unwrap();
        assert!(!refused.outcome.allowed && refused.changed, "kept, and written");
        assert!(held.is_some());
        let later = apply(&mut held, &take(1), &p, T0 + 1_000 * MS).unwrap();
        assert!(later.outcome.allowed, "a token accrued since the first request");
    }

    #[test]
    fn a_refused_estimate_keeps_a_bucket_below_capacity_so_its_wait_comes_true() {
        let p = slow(2);
        let estimate = |tokens| on_slow(tokens, Mode::Estimate);
        let mut held = None;
        let allowed = apply(&mut held, &estimate(2), &p, T0).unwrap();
        assert!(allowed.outcome.allowed && !allowed.changed);
        assert_eq!(held, None, "what it said holds for a bucket made later too");
        let refused = apply(&mut held, &estimate(3), &p, T0).unwrap();
        assert_eq!((refused.outcome.allowed, refused.outcome.wait_nanos), (false, 1_000 * MS));
        assert!(refused.changed && held.is_some(), "kept, and written: the wait counts from now");
        let then = apply(&mut held, &estimate(3), &p, T0 + 1_000 * MS).unwrap();
        assert!(then.outcome.allowed && !then.changed);
        assert_eq!(held.as_ref().map(|h| h.bucket.get_available_tokens(T0 + 1_000 * MS)), Some(3), "nothing taken");
    }

    #[test]
    fn the_front_worker_refuses_what_the_object_would() {
        let p = policies(1, 5);
        assert_eq!(check(&consume(5, Mode::Try), &p), Ok(()));
        assert_eq!(check(&consume(6, Mode::Estimate), &p).unwrap_err().code, "TOKENS_EXCEED_CAPACITY");
        assert_eq!(check(&consume(6, Mode::IgnoreLimits), &p), Ok(()), "debt is allowed");
        let unknown = Command::Consume { policy: "nope".into(), tokens: 1, mode: Mode::Try };
        assert_eq!(check(&unknown, &p).unwrap_err().code, "UNKNOWN_POLICY");
        assert_eq!(check(&Command::Inspect, &p), Ok(()));
        let mut held = None;
        assert_eq!(apply(&mut held, &consume(6, Mode::Try), &p, T0).unwrap_err().code, "TOKENS_EXCEED_CAPACITY");
    }

    #[test]
    fn an_interval_window_counts_whole_periods() {
        let p = Policies::parse(
            r#"{ "i": { "bandwidths": [{ "capacity": 10, "refill": { "kind": "intervally", "tokens": 3, "period": "1m" } }] },
                 "g": { "bandwidths": [{ "capacity": 10, "refill": { "kind": "greedy", "tokens": 3, "period": "1m" } }] } }"#,
        )
        .unwrap();
        let window = |policy: &str| p.get(policy).unwrap().configuration.bandwidths()[0].clone();
        assert_eq!(window_seconds(&window("i")), 240, "four refills of 3 fill 10");
        assert_eq!(window_seconds(&window("g")), 200);
    }

    #[test]
    fn reserve_writes_only_what_it_reserves() {
        let p = policies(1, 5);
        let mut held = None;
        apply(&mut held, &consume(5, Mode::Try), &p, T0).unwrap();
        let reserve = |max| Command::Reserve { policy: "api".into(), tokens: 2, max_wait_nanos: max };
        let refused = apply(&mut held, &reserve(100 * MS), &p, T0).unwrap();
        assert!(!refused.changed && !refused.outcome.allowed);
        assert_eq!(refused.outcome.wait_nanos, 100 * MS, "then the wait is within the 100 ms");
        let reserved = apply(&mut held, &reserve(200 * MS), &p, T0).unwrap();
        assert!(reserved.changed && reserved.outcome.allowed);
        assert_eq!(reserved.outcome.wait_nanos, 200 * MS);
        assert_eq!((refused.promised_nanos, reserved.promised_nanos), (1_100 * MS, 0));
    }

    #[test]
    fn a_refused_reservation_names_only_the_bandwidths_that_refused_it() {
        let p = Policies::parse(
            r#"{"p": {"bandwidths": [
                {"id": "fast", "capacity": 10, "refill": {"kind": "greedy", "tokens": 10, "period": "1s"}},
                {"id": "slow", "capacity": 10, "refill": {"kind": "greedy", "tokens": 1, "period": "1s"}}]}}"#,
        )
        .unwrap();
        let mut held = None;
        apply(&mut held, &Command::Consume { policy: "p".into(), tokens: 10, mode: Mode::Try }, &p, T0).unwrap();
        // Two tokens: `fast` has them in 200 ms, within the second; `slow` only in 2 s.
        let reserve = Command::Reserve { policy: "p".into(), tokens: 2, max_wait_nanos: 1_000 * MS };
        let refused = apply(&mut held, &reserve, &p, T0).unwrap().outcome;
        assert!(!refused.allowed);
        assert_eq!(refused.violated(reserve.accepted_wait()), ["slow"]);
        assert_eq!(refused.violated(0), ["fast", "slow"], "as a consume, both refuse");
    }

    #[test]
    fn a_refused_consume_names_a_retry_before_its_bucket_may_be_deleted_and_writes_nothing() {
        const SEC: i64 = 1_000 * MS;
        let grace = r#""idleGrace": "100ms""#;
        let policies = [
            r#"[{"capacity": 1, "initialTokens": 0, "refill": {"kind": "greedy", "tokens": 1, "period": "1001ms"}}]"#,
            r#"[{"capacity": 1, "initialTokens": 0, "refill": {"kind": "greedy", "tokens": 1, "period": "1500ms"}}]"#,
            r#"[{"capacity": 3, "refill": {"kind": "intervally", "tokens": 3, "period": "2300ms"}},
                {"capacity": 5, "initialTokens": 1, "refill": {"kind": "greedy", "tokens": 1, "period": "700ms"}}]"#,
        ];
        for bandwidths in policies {
            let p = Policies::parse(&format!(r#"{{"p": {{{grace}, "bandwidths": {bandwidths}}}}}"#)).unwrap();
            let keep = idle_keep(p.get("p").unwrap().idle_grace);
            let try_one = Command::Consume { policy: "p".into(), tokens: 1, mode: Mode::Try };
            let mut held = None;
            // Written at T0 (created, or a token taken); its deadline is its idle expiry then.
            let written = apply(&mut held, &try_one, &p, T0).unwrap();
            assert!(written.changed);
            let deadline = T0 + held.as_ref().unwrap().bucket.idle_expiry_nanos(keep, T0);
            for step in 0..40 {
                let now = T0 + step * 100 * MS;
                let mut probe = held.clone();
                let refused = apply(&mut probe, &try_one, &p, now).unwrap();
                if refused.outcome.allowed {
                    continue;
                }
                assert_eq!((refused.changed, refused.promised_nanos), (false, 0), "a refusal writes nothing");
                let retry = now + super::super::headers::retry_after(&refused.outcome).unwrap() as i64 * SEC;
                assert!(
                    retry + 100 * MS <= deadline,
                    "{bandwidths} at +{step}00 ms: retry {retry}, deleted at {deadline}"
                );
            }
        }
    }

    #[test]
    fn a_reservation_beyond_capacity_is_never_refused_with_a_retry_time_that_cannot_help() {
        let p = policies(1, 5); // burst: 5, 10 per second
        let reserve = |tokens, max| Command::Reserve { policy: "api".into(), tokens, max_wait_nanos: max };
        let mut held = None;
        // 8 is 3 beyond the burst capacity, which a full bucket refills in 300 ms.
        let never = apply(&mut held, &reserve(8, 299 * MS), &p, T0).unwrap();
        assert_eq!((never.outcome.allowed, never.outcome.wait_nanos), (false, INFINITY_DURATION));
        assert_eq!(never.outcome.bandwidths[0].wait_nanos, INFINITY_DURATION, "burst never holds 8");
        assert!(never.outcome.bandwidths[1].wait_nanos < INFINITY_DURATION);
        apply(&mut held, &consume(5, Mode::Try), &p, T0).unwrap();
        let later = apply(&mut held, &reserve(8, 300 * MS), &p, T0).unwrap();
        assert_eq!((later.outcome.allowed, later.outcome.wait_nanos), (false, 500 * MS), "refused now, not forever");
        let early = apply(&mut held, &reserve(8, 300 * MS), &p, T0 + 500 * MS - 1).unwrap();
        assert!(!early.outcome.allowed, "not a nanosecond earlier");
        let then = apply(&mut held, &reserve(8, 300 * MS), &p, T0 + 500 * MS).unwrap();
        assert_eq!((then.outcome.allowed, then.outcome.wait_nanos), (true, 300 * MS), "granted at the retry time");
    }

    #[test]
    fn tokens_held_above_a_capacity_count_for_reservations_and_their_headers() {
        // `a` starts with 100 tokens above its capacity of 5; `b` has none and refills 1 per ms.
        let p = Policies::parse(
            r#"{"p": {"bandwidths": [
              {"id": "a", "capacity": 5, "initialTokens": 100, "refill": {"kind": "greedy", "tokens": 1, "period": "1s"}},
              {"id": "b", "capacity": 1000, "initialTokens": 0, "refill": {"kind": "greedy", "tokens": 1000, "period": "1s"}}]}}"#,
        )
        .unwrap();
        let reserve = Command::Reserve { policy: "p".into(), tokens: 50, max_wait_nanos: 10 * MS };
        let mut held = None;
        let refused = apply(&mut held, &reserve, &p, T0).unwrap().outcome;
        assert_eq!((refused.allowed, refused.wait_nanos), (false, 40 * MS), "granted 40 ms on, not never");
        assert_eq!(refused.bandwidths[0].wait_nanos, 0, "`a` holds the 50 now");
        assert_eq!(refused.bandwidths[1].wait_nanos, 50 * MS);
        let granted = apply(&mut held, &reserve, &p, T0 + 40 * MS).unwrap().outcome;
        assert!(granted.allowed);
        assert_eq!(granted.bandwidths[0].available, 50);
        // A consume may ask for what `a` holds; once it holds less, the answer is never.
        let mut fresh = None;
        let consume = |tokens| Command::Consume { policy: "p".into(), tokens, mode: Mode::Try };
        let later = apply(&mut fresh, &consume(60), &p, T0).unwrap().outcome;
        assert_eq!((later.allowed, later.wait_nanos), (false, 60 * MS), "`b` has 60 in 60 ms");
        assert!(apply(&mut fresh, &consume(60), &p, T0 + 60 * MS).unwrap().outcome.allowed);
        let never = apply(&mut fresh, &consume(60), &p, T0 + 120 * MS).unwrap().outcome;
        assert_eq!((never.allowed, never.wait_nanos), (false, INFINITY_DURATION), "`a` holds 40 of its 100");
        assert_eq!(apply(&mut fresh, &consume(101), &p, T0).unwrap_err().code, "TOKENS_EXCEED_CAPACITY");
    }

    #[test]
    fn a_refused_reservation_is_granted_at_its_retry_time_for_every_refill_kind() {
        // (tokens spent, tokens reserved, max wait): within and beyond capacity.
        let greedy = [(10, 5, 300 * MS), (4, 15, 600 * MS), (10, 25, 1_500 * MS)];
        let intervally = [(10, 5, 300 * MS), (1, 15, 500 * MS), (1, 25, 1_500 * MS)];
        for (kind, cases) in [("greedy", greedy), ("intervally", intervally)] {
            let p = single(kind, "1s");
            for (spent, tokens, max_wait) in cases {
                let mut held = None;
                let consume = Command::Consume { policy: "p".into(), tokens: spent, mode: Mode::Try };
                apply(&mut held, &consume, &p, T0 + 250 * MS).unwrap();
                let reserve = Command::Reserve { policy: "p".into(), tokens, max_wait_nanos: max_wait };
                let at = T0 + 400 * MS;
                let refused = apply(&mut held.clone(), &reserve, &p, at).unwrap().outcome;
                let case = format!("{kind}: {spent} spent, {tokens} within {max_wait}");
                assert!(!refused.allowed && refused.wait_nanos < INFINITY_DURATION, "{case}");
                let retried = apply(&mut held.clone(), &reserve, &p, at + refused.wait_nanos).unwrap().outcome;
                assert!(retried.allowed, "{case}: granted at the retry time");
                let early = apply(&mut held.clone(), &reserve, &p, at + refused.wait_nanos - 1).unwrap().outcome;
                assert!(!early.allowed, "{case}: the first such moment");
            }
        }
    }

    #[test]
    fn a_window_of_grants_shorter_than_a_millisecond_is_retried_only_where_it_holds_one() {
        // 11 tokens, one beyond capacity, within 500 µs: granted only in the 500 µs before each
        // refill. With a 2 s period no such window holds a whole millisecond, which is all the
        // object's clock decides at: the retry time it used to name was refused again, for ever.
        let reserve = Command::Reserve { policy: "p".into(), tokens: 11, max_wait_nanos: 500_000 };
        let mut held = None;
        let never = apply(&mut held, &reserve, &single("intervally", "2s"), T0).unwrap().outcome;
        assert_eq!((never.allowed, never.wait_nanos), (false, INFINITY_DURATION));
        // Refills every 1.5 ms: the windows [2.5, 3) ms, [4, 4.5) ms… hold a whole millisecond
        // every second time. Asked at 2 ms, the first is passed over for the second.
        let p = single("intervally", "1500us");
        let mut held = None;
        apply(&mut held, &Command::Consume { policy: "p".into(), tokens: 1, mode: Mode::Try }, &p, T0).unwrap();
        let refused = apply(&mut held.clone(), &reserve, &p, T0 + 2 * MS).unwrap().outcome;
        assert_eq!((refused.allowed, refused.wait_nanos), (false, 2 * MS), "at 4 ms, not 3");
        assert!(!apply(&mut held.clone(), &reserve, &p, T0 + 3 * MS).unwrap().outcome.allowed);
        assert!(apply(&mut held.clone(), &reserve, &p, T0 + 4 * MS).unwrap().outcome.allowed);
    }

    #[test]
    fn where_several_bandwidths_meet_only_briefly_the_retry_is_the_first_whole_millisecond_of_a_later_window() {
        // 3 tokens, one beyond both capacities, within 2.5 ms: granted where the windows before a
        // 14 ms and a 20 ms refill meet, [97.5, 98) ms (no whole one), then [137.5, 140) ms.
        let p = Policies::parse(
            r#"{"p": {"bandwidths": [
                {"capacity": 2, "refill": {"kind": "intervally", "tokens": 1, "period": "14ms"}},
                {"capacity": 2, "refill": {"kind": "intervally", "tokens": 1, "period": "20ms"}}]}}"#,
        )
        .unwrap();
        let mut held = None;
        apply(&mut held, &Command::Consume { policy: "p".into(), tokens: 2, mode: Mode::Try }, &p, T0).unwrap();
        let reserve = Command::Reserve { policy: "p".into(), tokens: 3, max_wait_nanos: 2_500_000 };
        let refused = apply(&mut held.clone(), &reserve, &p, T0 + MS).unwrap().outcome;
        assert_eq!((refused.allowed, refused.wait_nanos), (false, 137 * MS), "at 138 ms (was never)");
        // Three of them (5, 9 and 13 ms) meet on a whole millisecond first at 584 ms; and a
        // slowly refilling greedy bandwidth beside two interval ones must not send the search to
        // when the bucket is full (2,278 ms) past the grant at 378 ms.
        let cases = [
            (
                r#"[{"capacity": 4, "refill": {"kind": "intervally", "tokens": 4, "period": "5ms"}},
                 {"capacity": 4, "refill": {"kind": "intervally", "tokens": 4, "period": "9ms"}},
                 {"capacity": 4, "refill": {"kind": "intervally", "tokens": 4, "period": "13ms"}}]"#,
                1,
                0,
                5,
                584,
            ),
            (
                r#"[{"capacity": 1000, "refill": {"kind": "greedy", "tokens": 1, "period": "1s"}},
                 {"capacity": 2, "refill": {"kind": "intervally", "tokens": 1, "period": "19ms"}},
                 {"capacity": 2, "refill": {"kind": "intervally", "tokens": 1, "period": "20ms"}}]"#,
                2,
                1,
                3,
                378,
            ),
        ];
        for (bandwidths, spent, later, tokens, expected) in cases {
            let p = Policies::parse(&format!(r#"{{"p": {{"bandwidths": {bandwidths}}}}}"#)).unwrap();
            let mut held = None;
            apply(&mut held, &Command::Consume { policy: "p".into(), tokens: spent, mode: Mode::Try }, &p, T0).unwrap();
            let reserve = Command::Reserve { policy: "p".into(), tokens, max_wait_nanos: 1_500_000 };
            let refused = apply(&mut held.clone(), &reserve, &p, T0 + later * MS).unwrap().outcome;
            assert_eq!(refused.wait_nanos, expected * MS, "{bandwidths}");
            let first = (0..3_000)
                .find(|ms| granted_at(&held.as_ref().unwrap().bucket, tokens, 1_500_000, T0 + (later + ms) * MS));
            assert_eq!(first, Some(expected));
        }
        // Near i64::MAX (2262) the millisecond to retry at does not exist: never, not a wait off it.
        let p = single("greedy", "1s");
        let late = (i64::MAX / MS) * MS - 499 * MS;
        let mut held = None;
        apply(&mut held, &Command::Consume { policy: "p".into(), tokens: 10, mode: Mode::Try }, &p, late).unwrap();
        let reserve = Command::Reserve { policy: "p".into(), tokens: 5, max_wait_nanos: 300_000 };
        assert_eq!(apply(&mut held, &reserve, &p, late).unwrap().outcome.wait_nanos, INFINITY_DURATION);
    }

    /// A bandwidth for [`reservation_retries_are_the_first_whole_millisecond_that_grants`]:
    /// capacity, refill tokens, kind (0 greedy, 1 intervally, 2 aligned), period in ms, the
    /// aligned anchor's offset from `T0` in ns, and initial tokens.
    fn bandwidth() -> impl Strategy<Value = String> {
        (1i64..=10, 1i64..=10, 0u8..3, 1i64..=20, -10_000_000i64..10_000_000, prop::option::of(0i64..=22)).prop_map(
            |(capacity, tokens, kind, period_ms, offset, initial)| {
                let tokens = tokens.min(capacity);
                let kind = match kind {
                    0 => r#""kind": "greedy""#.to_string(),
                    1 => r#""kind": "intervally""#.to_string(),
                    _ => format!(r#""kind": "intervallyAligned", "firstRefillTime": {}"#, (T0 + offset) / MS),
                };
                let initial = initial.map_or(String::new(), |i| format!(r#", "initialTokens": {}"#, i.min(2 * capacity + 2)));
                format!(r#"{{"capacity": {capacity}{initial}, "refill": {{{kind}, "tokens": {tokens}, "period": "{period_ms}ms"}}}}"#)
            },
        )
    }

    /// How many of the policy `p`'s bandwidths refill by intervals.
    fn intervals(p: &Policies) -> usize {
        let bandwidths = p.get("p").unwrap().configuration.bandwidths();
        bandwidths.iter().filter(|b| b.refill().is_intervally()).count()
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(1000))]
        /// A refused reservation's wait is exactly the first whole millisecond (the object's
        /// clock) at which it is granted, found by trying each one up to 3 s on. Never is checked
        /// the same way where at most one bandwidth refills by intervals; the windows of several
        /// may meet only after more hops than the search makes (tested above).
        #[test]
        fn reservation_retries_are_the_first_whole_millisecond_that_grants(
            bandwidths in prop::collection::vec(bandwidth(), 1..=3),
            spent in 0i64..=20,
            into_debt in proptest::bool::ANY,
            later_ms in 0i64..30,
            tokens in 1i64..=13,
            max_wait in prop_oneof![Just(1i64), Just(999_999), Just(1_500_000), Just(2_500_000), 1i64..20 * MS],
        ) {
            let p = Policies::parse(&format!(r#"{{"p": {{"bandwidths": [{}]}}}}"#, bandwidths.join(","))).unwrap();
            let mode = if into_debt { Mode::IgnoreLimits } else { Mode::Try };
            let mut held = None;
            let _ = apply(&mut held, &Command::Consume { policy: "p".into(), tokens: spent.max(1), mode }, &p, T0);
            let Some(held) = held else { return Ok(()) };
            let now = T0 + later_ms * MS;
            let reserve = Command::Reserve { policy: "p".into(), tokens, max_wait_nanos: max_wait };
            let Ok(effect) = apply(&mut Some(held.clone()), &reserve, &p, now) else { return Ok(()) };
            if effect.outcome.allowed {
                return Ok(());
            }
            let first = (0..=3_000).find(|ms| granted_at(&held.bucket, tokens, max_wait, now + ms * MS));
            let wait = effect.outcome.wait_nanos;
            match first {
                Some(ms) if wait < INFINITY_DURATION || intervals(&p) <= 1 => prop_assert_eq!(wait, ms * MS),
                Some(_) => {}
                None => prop_assert!(wait > 3_000 * MS, "{} ns", wait),
            }
        }
    }

    #[test]
    fn a_retry_after_that_whole_seconds_would_aim_past_the_window_is_left_out() {
        // Intervally, 15 beyond capacity is granted only in the 300 ms before each refill; greedy
        // refill goes on, and any moment after the first grants.
        for (kind, spent, tokens, misses) in [("intervally", 1, 25, true), ("greedy", 10, 20, false)] {
            let p = single(kind, "2s");
            let mut held = None;
            apply(&mut held, &Command::Consume { policy: "p".into(), tokens: spent, mode: Mode::Try }, &p, T0).unwrap();
            let reserve = Command::Reserve { policy: "p".into(), tokens, max_wait_nanos: 2_300 * MS };
            let at = T0 + 100 * MS;
            let refused = apply(&mut held.clone(), &reserve, &p, at).unwrap().outcome;
            assert!(!refused.allowed);
            assert_eq!(refused.no_retry_after, misses, "{kind}");
            assert_eq!(super::super::headers::retry_after(&refused).is_none(), misses, "{kind}");
            let retried = apply(&mut held.clone(), &reserve, &p, at + refused.wait_nanos).unwrap().outcome;
            assert!(retried.allowed, "{kind}: the wait itself is exact");
        }
    }

    #[test]
    fn a_refused_reservation_on_a_new_key_keeps_the_bucket_its_time_is_for() {
        let p = single("intervally", "1s");
        let reserve = Command::Reserve { policy: "p".into(), tokens: 15, max_wait_nanos: 500 * MS };
        let mut held = None;
        let refused = apply(&mut held, &reserve, &p, T0).unwrap();
        assert!(!refused.outcome.allowed && refused.changed && held.is_some(), "kept, and so written");
        assert_eq!(refused.promised_nanos, refused.outcome.wait_nanos + 1_000 * MS, "kept until the retry");
        let granted = apply(&mut held, &reserve, &p, T0 + refused.outcome.wait_nanos).unwrap();
        assert!(granted.outcome.allowed, "granted at the time it named");
    }

    #[test]
    fn ever_reservable_agrees_with_the_core_at_the_most_favourable_moment() {
        const SEC: i64 = 1_000 * MS;
        for kind in ["greedy", "intervally"] {
            let policy = single(kind, "1s").get("p").unwrap().clone();
            let full = Held::new(&policy, T0).bucket;
            // Intervally, the best moment is 1 ns before a refill; greedy refill has none.
            let best = T0 + SEC - 1;
            for tokens in 1..=45 {
                for max_wait in [1, 300 * MS, SEC - 1, SEC, SEC + 1, 2 * SEC, 2 * SEC + 1, 3 * SEC + 1] {
                    let granted = full.clone().reserve(tokens, max_wait, best).unwrap().is_some();
                    assert_eq!(ever_reservable(&full, tokens, max_wait, T0), granted, "{kind} {tokens} {max_wait}");
                }
            }
        }
    }

    #[test]
    fn a_higher_version_replaces_the_configuration_once() {
        let mut held = None;
        apply(&mut held, &consume(4, Mode::Try), &policies(1, 5), T0).unwrap();
        let same = apply(&mut held, &consume(1, Mode::Estimate), &policies(1, 50), T0).unwrap();
        assert_eq!((same.changed, same.outcome.version, same.outcome.bandwidths[0].capacity), (false, 1, 5));
        let raised = apply(&mut held, &consume(1, Mode::Estimate), &policies(2, 50), T0).unwrap();
        assert_eq!((raised.changed, raised.outcome.version, raised.outcome.bandwidths[0].capacity), (true, 2, 50));
        assert_eq!(raised.outcome.bandwidths[0].available, 1, "AS_IS keeps the one token");
        let older = apply(&mut held, &consume(1, Mode::Estimate), &policies(1, 5), T0).unwrap();
        assert_eq!((older.changed, older.outcome.version), (false, 2), "an older deployment does not downgrade");
    }

    #[test]
    fn bad_input_changes_nothing() {
        let p = policies(1, 5);
        let mut held = None;
        let error = |held: &mut Option<Held>, command: Command| apply(held, &command, &p, T0).unwrap_err();
        assert_eq!(error(&mut held, consume(6, Mode::Try)).code, "TOKENS_EXCEED_CAPACITY");
        assert_eq!(held, None, "not even created");
        assert_eq!(error(&mut held, consume(0, Mode::Try)).code, "NON_POSITIVE_TOKENS");
        assert_eq!(error(&mut held, consume(i64::MAX, Mode::IgnoreLimits)).code, "RESERVATION_OVERFLOW");
        assert_eq!(held, None);
        let unknown = Command::Consume { policy: "nope".into(), tokens: 1, mode: Mode::Try };
        assert_eq!(error(&mut held, unknown).status, 400);
        assert_eq!(error(&mut held, Command::Inspect).status, 404);
        assert_eq!(error(&mut held, Command::Reset).code, "BUCKET_NOT_FOUND");
        apply(&mut held, &consume(1, Mode::Try), &p, T0).unwrap();
        let before = held.clone();
        let other = Command::Consume { policy: "other".into(), tokens: 1, mode: Mode::Try };
        let mismatch = error(&mut held, other);
        assert_eq!((mismatch.status, mismatch.code.as_str()), (409, "POLICY_MISMATCH"));
        assert_eq!(held, before);
    }

    #[test]
    fn replace_moves_a_bucket_to_another_policy_and_reset_fills_it() {
        let p = policies(1, 5);
        let mut held = None;
        apply(&mut held, &consume(5, Mode::Try), &p, T0).unwrap();
        let replace = Command::Replace { policy: "other".into(), strategy: None };
        let moved = apply(&mut held, &replace, &p, T0).unwrap();
        assert!(moved.changed);
        assert_eq!((moved.outcome.policy.as_str(), moved.outcome.bandwidths.len()), ("other", 1));
        assert_eq!(moved.outcome.bandwidths[0].name, "other");
        let reset = apply(&mut held, &Command::Reset, &p, T0).unwrap();
        assert_eq!(reset.outcome.remaining(), 1);
        let inspect = apply(&mut held, &Command::Inspect, &p, T0).unwrap();
        assert!(!inspect.changed);
    }

    #[test]
    fn reset_and_replacement_write_only_what_they_change() {
        use crate::TokensInheritanceStrategy as S;
        let p = policies(1, 5);
        let replace = |strategy| Command::Replace { policy: "api".into(), strategy };
        let changed = |held: &mut Option<Held>, command: &Command, policies: &Policies, at_ms: i64| {
            apply(held, command, policies, T0 + at_ms * MS).unwrap().changed
        };
        let mut held = None;
        apply(&mut held, &consume(1, Mode::Try), &p, T0).unwrap();
        assert!(changed(&mut held, &Command::Reset, &p, 0), "a reset fills what was taken");
        assert!(!changed(&mut held, &Command::Reset, &p, 600_000), "full, refilled only");
        for strategy in [None, Some(S::AsIs), Some(S::Proportionally), Some(S::Additive)] {
            assert!(!changed(&mut held, &replace(strategy), &p, 600_000), "{strategy:?} on a full bucket");
        }
        // RESET starts afresh: the intervally bandwidth's hour now starts at this moment.
        assert!(changed(&mut held, &replace(Some(S::Reset)), &p, 600_000), "RESET on a full bucket");
        apply(&mut held, &consume(3, Mode::Try), &p, T0 + 600_000 * MS).unwrap();
        for strategy in [Some(S::AsIs), Some(S::Proportionally), Some(S::Additive)] {
            assert!(!changed(&mut held, &replace(strategy), &p, 600_000), "{strategy:?} carries the 3 over");
        }
        assert!(changed(&mut held, &replace(Some(S::Reset)), &p, 600_000), "RESET refills");
        assert!(changed(&mut held, &replace(Some(S::AsIs)), &policies(2, 5), 600_000), "the version is stored");
        assert_eq!(held.as_ref().unwrap().version, 2);
        assert!(!changed(&mut held, &Command::Reset, &p, 600_000), "the version stays");
        let before = held.clone();
        let stale = apply(&mut held, &replace(Some(S::Reset)), &p, T0 + 600_000 * MS);
        assert_eq!((stale.unwrap_err().code.as_str(), &held), ("STALE_POLICY_VERSION", &before), "version 1 after 2");
        let before = held.clone();
        let unknown = apply(&mut held, &Command::Replace { policy: "nope".into(), strategy: None }, &p, T0);
        assert_eq!((unknown.unwrap_err().code.as_str(), &held), ("UNKNOWN_POLICY", &before));
    }

    #[test]
    fn only_decisions_under_the_same_configuration_keep_earlier_promises() {
        let p = policies(1, 5);
        let keeps = |held: &mut Option<Held>, command: &Command, policies: &Policies| {
            apply(held, command, policies, T0).unwrap().keeps_promises
        };
        let reserve = Command::Reserve { policy: "api".into(), tokens: 8, max_wait_nanos: 250 * MS };
        let mut held = None;
        assert!(!keeps(&mut held, &consume(1, Mode::Try), &p), "a new bucket was promised nothing");
        assert!(keeps(&mut held, &consume(1, Mode::Try), &p));
        assert!(keeps(&mut held, &consume(9, Mode::IgnoreLimits), &p));
        assert!(keeps(&mut held, &reserve, &p));
        assert!(!keeps(&mut held, &consume(1, Mode::Try), &policies(2, 5)), "replaced by its version");
        assert!(keeps(&mut held, &consume(1, Mode::Try), &policies(2, 5)), "then under the new one");
        assert!(!keeps(&mut held, &Command::Reset, &p));
        assert!(!keeps(&mut held, &Command::Replace { policy: "api".into(), strategy: None }, &policies(2, 5)));
    }

    #[test]
    fn stored_bytes_round_trip() {
        let mut held = None;
        apply(&mut held, &consume(3, Mode::Try), &policies(7, 5), T0).unwrap();
        let held = held.unwrap();
        assert_eq!(Held::decode("api".into(), &held.encode()).unwrap(), held);
        assert_eq!(Held::decode("api".into(), b"garbage").unwrap_err().code(), "INVALID_ENCODING");
    }
}
