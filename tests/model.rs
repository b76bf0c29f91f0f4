//! Property tests: random configurations and operation sequences, checked against a small
//! reference model written independently of `src/` in exact rational arithmetic.
//!
//! The model keeps, per bandwidth, the token count `x` as an exact [`BigRational`] and the time
//! of the last refill `L` as a [`BigInt`], and follows the specification of the semantics
//! (Bucket4j's) directly: no scaled integers, no overflow handling other than where the
//! specification asks for an error. Because nothing in it can overflow or round, any difference
//! from the implementation is either a bug in the implementation or a misreading of the
//! specification, never an artefact of the model's own arithmetic.
//!
//! Properties:
//! 1. [`agrees_with_model`]: every return value and every observable (available tokens,
//!    per-bandwidth diagnostics, time to full refill) equals the model's, after every operation;
//!    an operation that fails leaves the bucket exactly as it was.
//! 2. [`never_above_capacity`]: a bandwidth never holds more than its capacity unless a forced
//!    addition or initial tokens above capacity put it there.
//! 3. [`admits_no_more_than_earned`]: tokens admitted never exceed initial tokens + tokens added +
//!    an upper bound of the refill credited (capacity ignored); reservations count at the time
//!    they say the tokens will be there.
//! 4. [`refill_is_time_split_invariant`]: extra refilling observations between operations change
//!    nothing observable, and after a final refill both buckets are identical.
//! 5. [`extremes_do_not_panic_and_agree`]: extreme configurations, times and arguments never panic
//!    (debug builds check arithmetic overflow) and still agree with the model.
//! 6. [`codec_round_trips`]: `decode(encode(b)) == b` for buckets reached by random sequences.
//!
//! Property 1 has focused variants: [`agrees_with_model_small`] (capacities and periods of a few
//! units, so boundaries collide often), [`inherits_tokens_exactly`] and [`inherits_debts_exactly`]
//! (configuration replacement from fractional, above-capacity and deeply indebted states).
//! [`failed_replacement_changes_nothing`] is the minimal case of a disagreement they found.
//!
//! Readings of the specification the model commits to:
//! - Refill is committed by operations that succeed (also a `false` try_consume); errors, `None`
//!   reservations and `&self` queries change nothing, which is observable once the clock goes back.
//! - A greedy wait is `ceil((n - x)·P/T)` plus `L - now` when the clock is behind the last refill
//!   (tokens accrue from `L` only; the intervally wait `L + m·P - now` counts it likewise).
//! - Argument errors are checked in the order tokens, max wait; `consume_ignoring_rate_limits`
//!   and `reserve` report `ReservationOverflow`/`None` before `TokensOverflow`.

use edgebucket::codec;
use edgebucket::{
    Bandwidth, BandwidthDiagnostics, BucketConfiguration, ConsumptionProbe, Diagnostics, Error, EstimationProbe,
    RefillKind, TokenBucket, TokensInheritanceStrategy, INFINITY_DURATION,
};
use num_bigint::BigInt;
use num_rational::BigRational;
use num_traits::{ToPrimitive, Zero};
use proptest::prelude::*;

type Q = BigRational;

const SECOND: i64 = 1_000_000_000;
const HOUR: i64 = 3600 * SECOND;

// ------------------------------------------------------------------------------------------------
// Exact arithmetic helpers
// ------------------------------------------------------------------------------------------------

fn int(v: i64) -> BigInt {
    BigInt::from(v)
}

fn q(v: i64) -> Q {
    Q::from_integer(int(v))
}

fn qi(v: BigInt) -> Q {
    Q::from_integer(v)
}

fn frac(num: BigInt, den: BigInt) -> Q {
    Q::new(num, den)
}

fn floor(x: &Q) -> BigInt {
    x.floor().to_integer()
}

fn ceil(x: &Q) -> BigInt {
    x.ceil().to_integer()
}

/// A model count that the specification keeps within `i64` (the model asserts it does).
fn to_i64(v: &BigInt) -> i64 {
    v.to_i64().unwrap_or_else(|| panic!("model value {v} outside i64: the model broke an invariant"))
}

/// A wait as the API reports it: anything at or beyond `i64::MAX` is `INFINITY_DURATION`.
fn clamp_wait(w: &BigInt) -> i64 {
    assert!(*w >= BigInt::zero(), "model computed a negative wait {w}");
    if *w >= int(INFINITY_DURATION) {
        INFINITY_DURATION
    } else {
        to_i64(w)
    }
}

// ------------------------------------------------------------------------------------------------
// Configuration description (shared by the implementation and the model)
// ------------------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Greedy,
    Intervally,
    Aligned { first: i64, adaptive: bool },
}

/// A bandwidth as generated: the model reads this, the implementation gets it via the builder.
#[derive(Debug, Clone, PartialEq, Eq)]
struct BandSpec {
    capacity: i64,
    tokens: i64,
    period: i64,
    kind: Kind,
    initial: Option<i64>,
    id: Option<String>,
}

impl BandSpec {
    fn is_greedy(&self) -> bool {
        self.kind == Kind::Greedy
    }

    fn build(&self) -> Bandwidth {
        let kind = match self.kind {
            Kind::Greedy => RefillKind::Greedy,
            Kind::Intervally => RefillKind::Intervally,
            Kind::Aligned { first, adaptive } => {
                RefillKind::IntervallyAligned { first_refill_nanos: first, adaptive_initial_tokens: adaptive }
            }
        };
        let mut builder =
            Bandwidth::builder().capacity(self.capacity).refill_nanos(kind, self.tokens, self.period as i128);
        if let Some(initial) = self.initial {
            builder = builder.initial_tokens(initial);
        }
        if let Some(id) = &self.id {
            builder = builder.id(id.clone());
        }
        builder.build().unwrap_or_else(|e| panic!("generated bandwidth {self:?} rejected: {e}"))
    }
}

fn build_config(specs: &[BandSpec]) -> BucketConfiguration {
    BucketConfiguration::new(specs.iter().map(BandSpec::build).collect()).expect("generated configuration is valid")
}

// ------------------------------------------------------------------------------------------------
// Operations and their results
// ------------------------------------------------------------------------------------------------

#[derive(Debug, Clone)]
enum Op {
    TryConsume(i64),
    Probe(i64),
    Estimate(i64),
    AsMuch,
    AsMuchUpTo(i64),
    Add(i64),
    ForceAdd(i64),
    Ignoring(i64),
    Reserve(i64, i64),
    Available,
    NanosToFull,
    Diagnostics,
    Reset,
    Replace(Vec<BandSpec>, TokensInheritanceStrategy),
    /// A replacement by a variation of the configuration in force (so that bandwidths match by
    /// id and tokens are inherited); [`resolve`] turns it into a `Replace` before it is applied.
    ReplaceSimilar(Vec<Tweak>, TokensInheritanceStrategy),
}

/// How [`Op::ReplaceSimilar`] varies one bandwidth of the configuration in force.
#[derive(Debug, Clone)]
struct Tweak {
    capacity: Option<i64>,
    period: Option<i64>,
    switch: Switch,
}

/// How a [`Tweak`] changes a bandwidth's refill kind.
#[derive(Debug, Clone)]
enum Switch {
    Keep,
    /// Greedy to intervally, anything else to greedy.
    Flip,
    /// To an aligned refill with this first refill (chains of aligned schedules included).
    Align(i64),
}

/// The bandwidth description of a configured bandwidth (read through the public accessors).
fn spec_of(bandwidth: &Bandwidth) -> BandSpec {
    let refill = bandwidth.refill();
    let kind = match refill.kind() {
        RefillKind::Greedy => Kind::Greedy,
        RefillKind::Intervally => Kind::Intervally,
        RefillKind::IntervallyAligned { first_refill_nanos, adaptive_initial_tokens } => {
            Kind::Aligned { first: first_refill_nanos, adaptive: adaptive_initial_tokens }
        }
    };
    BandSpec {
        capacity: bandwidth.capacity(),
        tokens: refill.tokens(),
        period: refill.period_nanos(),
        kind,
        initial: bandwidth.has_explicit_initial_tokens().then(|| bandwidth.initial_tokens()),
        id: bandwidth.id().map(str::to_owned),
    }
}

/// Turns an [`Op::ReplaceSimilar`] into the concrete `Replace` for the configuration in force;
/// any other operation is returned as it is.
fn resolve(op: &Op, bucket: &TokenBucket) -> Op {
    let Op::ReplaceSimilar(tweaks, strategy) = op else { return op.clone() };
    let specs = bucket
        .configuration()
        .bandwidths()
        .iter()
        .enumerate()
        .map(|(i, bandwidth)| {
            let mut spec = spec_of(bandwidth);
            let tweak = &tweaks[i % tweaks.len()];
            if let Some(capacity) = tweak.capacity {
                spec.capacity = capacity;
            }
            if let Some(period) = tweak.period {
                spec.period = period;
                spec.tokens = spec.tokens.min(period);
            }
            match tweak.switch {
                Switch::Keep => {}
                Switch::Flip => spec.kind = if spec.is_greedy() { Kind::Intervally } else { Kind::Greedy },
                Switch::Align(first) => {
                    spec.kind = Kind::Aligned { first, adaptive: false };
                }
            }
            spec
        })
        .collect();
    Op::Replace(specs, *strategy)
}

/// What an operation returned, in one comparable type.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Outcome {
    Unit,
    Bool(bool),
    Int(i64),
    MaybeInt(Option<i64>),
    Consumption(ConsumptionProbe),
    Estimation(EstimationProbe),
    Diag(Diagnostics),
}

fn apply_real(bucket: &mut TokenBucket, op: &Op, now: i64) -> Result<Outcome, Error> {
    Ok(match op {
        Op::TryConsume(n) => Outcome::Bool(bucket.try_consume(*n, now)?),
        Op::Probe(n) => Outcome::Consumption(bucket.try_consume_and_return_remaining(*n, now)?),
        Op::Estimate(n) => Outcome::Estimation(bucket.estimate_ability_to_consume(*n, now)?),
        Op::AsMuch => Outcome::Int(bucket.try_consume_as_much_as_possible(now)),
        Op::AsMuchUpTo(limit) => Outcome::Int(bucket.try_consume_as_much_as_possible_up_to(*limit, now)?),
        Op::Add(n) => {
            bucket.add_tokens(*n, now)?;
            Outcome::Unit
        }
        Op::ForceAdd(n) => {
            bucket.force_add_tokens(*n, now)?;
            Outcome::Unit
        }
        Op::Ignoring(n) => Outcome::Int(bucket.consume_ignoring_rate_limits(*n, now)?),
        Op::Reserve(n, max_wait) => Outcome::MaybeInt(bucket.reserve(*n, *max_wait, now)?),
        Op::Available => Outcome::Int(bucket.get_available_tokens(now)),
        Op::NanosToFull => Outcome::Int(bucket.nanos_to_full_refill(now)),
        Op::Diagnostics => Outcome::Diag(bucket.diagnostics(now)),
        Op::Reset => {
            bucket.reset(now);
            Outcome::Unit
        }
        Op::Replace(specs, strategy) => {
            bucket.replace_configuration(build_config(specs), *strategy, now)?;
            Outcome::Unit
        }
        Op::ReplaceSimilar(..) => return apply_real(bucket, &resolve(op, bucket), now),
    })
}

// ------------------------------------------------------------------------------------------------
// The reference model
// ------------------------------------------------------------------------------------------------

/// One bandwidth of the model: exact tokens `x` and last refill time `last`.
#[derive(Debug, Clone)]
struct MBand {
    spec: BandSpec,
    x: Q,
    last: BigInt,
}

impl MBand {
    /// A bandwidth created at `now`: initial tokens (adaptive if so configured); the last refill
    /// is `now`, or one period before the first refill for an aligned refill.
    fn fresh(spec: &BandSpec, now: i64) -> MBand {
        let (c, t, p) = (int(spec.capacity), int(spec.tokens), int(spec.period));
        let (x, last) = match spec.kind {
            Kind::Aligned { first, adaptive } => {
                let x = if !adaptive {
                    int(spec.initial.unwrap_or(spec.capacity))
                } else if now < first {
                    let base = (&c - &t).max(BigInt::zero());
                    let earned = floor(&frac((int(first) - int(now)) * &t, p.clone()));
                    (base + earned).min(c.clone())
                } else {
                    c.clone()
                };
                (qi(x), int(first) - &p)
            }
            Kind::Greedy | Kind::Intervally => (q(spec.initial.unwrap_or(spec.capacity)), int(now)),
        };
        MBand { spec: spec.clone(), x, last }
    }

    fn capacity(&self) -> Q {
        q(self.spec.capacity)
    }

    /// Credits the refill due by `now`. Capped at capacity; a bandwidth at or above capacity is
    /// left as it is.
    fn refill(&mut self, now: i64) {
        let now = int(now);
        if now <= self.last {
            return;
        }
        let (t, p) = (int(self.spec.tokens), int(self.spec.period));
        let cap = self.capacity();
        if self.spec.is_greedy() {
            if self.x < cap {
                let earned = frac((&now - &self.last) * t, p);
                self.x = (&self.x + earned).min(cap);
            }
            self.last = now;
        } else {
            let periods = floor(&frac(&now - &self.last, p.clone()));
            if periods.is_zero() {
                return;
            }
            self.last += &periods * p;
            if self.x < cap {
                self.x = (&self.x + qi(periods * t)).min(cap);
            }
        }
    }

    fn available(&self) -> BigInt {
        floor(&self.x)
    }

    /// Nanoseconds from `now` until `n` tokens are there, capacity not considered (unclamped).
    fn wait(&self, n: &BigInt, now: i64) -> BigInt {
        let qn = qi(n.clone());
        if self.x >= qn {
            return BigInt::zero();
        }
        let (t, p) = (int(self.spec.tokens), int(self.spec.period));
        if self.spec.is_greedy() {
            // Tokens accrue from `L` only, so a clock behind the last refill (`now < L`) waits
            // `L - now` more (Bucket4j ignores this and reports a wait that is early).
            let behind = (&self.last - int(now)).max(BigInt::zero());
            ceil(&((qn - &self.x) * qi(p) / qi(t))) + behind
        } else {
            let periods = ceil(&frac(n - self.available(), t));
            &self.last + periods * p - int(now)
        }
    }

    /// Unclamped wait until full (0 if full).
    fn wait_full(&self, now: i64) -> BigInt {
        self.wait(&int(self.spec.capacity), now)
    }

    /// The tokens a matched bandwidth inherits under `strategy`, or `TokensOverflow`.
    fn inherit(&self, strategy: TokensInheritanceStrategy, new: &BandSpec, now: i64) -> Result<MBand, Error> {
        let (old_cap, new_cap) = (self.capacity(), q(new.capacity));
        let whole = qi(self.available());
        let as_is = || if whole >= new_cap { new_cap.clone() } else { self.x.clone() };
        let x = match strategy {
            TokensInheritanceStrategy::AsIs => as_is(),
            TokensInheritanceStrategy::Additive => {
                if new_cap <= old_cap {
                    as_is()
                } else if whole >= old_cap {
                    new_cap.clone()
                } else {
                    &self.x + (&new_cap - &old_cap)
                }
            }
            TokensInheritanceStrategy::Proportionally => {
                if whole >= old_cap {
                    new_cap.clone()
                } else {
                    &self.x * &new_cap / &old_cap
                }
            }
            TokensInheritanceStrategy::Reset => unreachable!("reset inherits nothing"),
        };
        // The new bandwidth keeps fractions of 1/period (greedy) or whole tokens (intervally).
        let x = if new.is_greedy() {
            let p = int(new.period);
            frac(floor(&(x * qi(p.clone()))), p)
        } else {
            qi(floor(&x))
        };
        if floor(&x) < int(i64::MIN) {
            return Err(Error::TokensOverflow);
        }
        // The last refill carries over, except from an aligned schedule not yet started (its first
        // refill ahead, its last one period before that): the new bandwidth's time starts now,
        // or at the last boundary of its own aligned schedule not after now.
        let not_started = match self.spec.kind {
            Kind::Aligned { first, .. } => self.last == int(first) - int(self.spec.period) && int(first) > int(now),
            _ => false,
        };
        let last = match new.kind {
            _ if !not_started => self.last.clone(),
            Kind::Aligned { first, .. } => {
                // The last boundary first + k·period (any integer k) not after now, but no earlier
                // than a fresh schedule's first - period: refills never come before the first.
                let (first, period) = (int(first), int(new.period));
                let boundary = &first + floor(&frac(int(now) - &first, period.clone())) * &period;
                boundary.max(first - period)
            }
            Kind::Greedy | Kind::Intervally => int(now),
        };
        Ok(MBand { spec: new.clone(), x, last })
    }
}

#[derive(Debug, Clone)]
struct Model {
    bands: Vec<MBand>,
}

impl Model {
    fn new(specs: &[BandSpec], now: i64) -> Model {
        Model { bands: specs.iter().map(|s| MBand::fresh(s, now)).collect() }
    }

    fn refill(&mut self, now: i64) {
        self.bands.iter_mut().for_each(|b| b.refill(now));
    }

    fn refilled(&self, now: i64) -> Model {
        let mut m = self.clone();
        m.refill(now);
        m
    }

    fn available(&self) -> i64 {
        to_i64(&self.bands.iter().map(MBand::available).min().expect("at least one bandwidth"))
    }

    fn can_consume(&self, n: i64) -> bool {
        self.bands.iter().all(|b| b.x >= q(n))
    }

    /// Debits `n` from every bandwidth if each has it; whether it did.
    fn take(&mut self, n: i64) -> bool {
        let ok = self.can_consume(n);
        if ok {
            self.debit(n);
        }
        ok
    }

    /// Debits every bandwidth (the caller checked that the counts stay in range).
    fn debit(&mut self, n: i64) {
        for b in &mut self.bands {
            b.x -= q(n);
            to_i64(&b.available());
        }
    }

    /// Whether debiting `n` keeps every whole count at or above `i64::MIN`.
    fn debit_fits(&self, n: i64) -> bool {
        self.bands.iter().all(|b| b.available() - int(n) >= int(i64::MIN))
    }

    /// The longest wait over bandwidths for `n` tokens, capacity not considered (unclamped).
    fn wait(&self, n: i64, now: i64) -> BigInt {
        self.bands.iter().map(|b| b.wait(&int(n), now)).max().expect("at least one bandwidth")
    }

    /// The wait reported by probes and estimates: infinite when a bandwidth that lacks the tokens
    /// can never hold them (more than its capacity, where refill stops).
    fn probe_wait(&self, n: i64, now: i64) -> i64 {
        if self.bands.iter().any(|b| n > b.spec.capacity && b.x < q(n)) {
            INFINITY_DURATION
        } else {
            clamp_wait(&self.wait(n, now))
        }
    }

    fn wait_reset(&self, now: i64) -> i64 {
        clamp_wait(&self.bands.iter().map(|b| b.wait_full(now)).max().expect("at least one bandwidth"))
    }

    fn diagnostics(&self, now: i64) -> Diagnostics {
        let m = self.refilled(now);
        let bandwidths: Vec<BandwidthDiagnostics> = m
            .bands
            .iter()
            .map(|b| BandwidthDiagnostics {
                id: b.spec.id.clone(),
                capacity: b.spec.capacity,
                available_tokens: to_i64(&b.available()),
                nanos_to_full_refill: clamp_wait(&b.wait_full(now)),
            })
            .collect();
        Diagnostics { available_tokens: m.available(), nanos_to_full_refill: m.wait_reset(now), bandwidths }
    }

    fn as_much(&mut self, limit: i64, now: i64) -> i64 {
        self.refill(now);
        let k = limit.min(self.available());
        if k <= 0 {
            return 0;
        }
        self.debit(k);
        k
    }

    fn replace(&mut self, specs: &[BandSpec], strategy: TokensInheritanceStrategy, now: i64) -> Result<(), Error> {
        self.refill(now);
        if strategy == TokensInheritanceStrategy::Reset {
            *self = Model::new(specs, now);
            return Ok(());
        }
        let unnamed = |ids: &mut dyn Iterator<Item = &Option<String>>| ids.filter(|id| id.is_none()).count();
        let nulls_match =
            unnamed(&mut self.bands.iter().map(|b| &b.spec.id)) <= 1 && unnamed(&mut specs.iter().map(|s| &s.id)) <= 1;
        let mut bands = Vec::with_capacity(specs.len());
        for spec in specs {
            let matched = self.bands.iter().find(|old| old.spec.id == spec.id && (spec.id.is_some() || nulls_match));
            bands.push(match matched {
                Some(old) => old.inherit(strategy, spec, now)?,
                None => MBand::fresh(spec, now),
            });
        }
        self.bands = bands;
        Ok(())
    }

    /// Applies `op` at `now`. The new state (refill included) is kept only when the operation
    /// succeeds and is not a declined reservation: the specification says both errors and a
    /// `None` reservation change nothing, which is observable when the clock later goes back.
    fn apply(&mut self, op: &Op, now: i64) -> Result<Outcome, Error> {
        let mut next = self.clone();
        let result = next.apply_in_place(op, now);
        if result.is_ok() && result != Ok(Outcome::MaybeInt(None)) {
            *self = next;
        }
        result
    }

    fn apply_in_place(&mut self, op: &Op, now: i64) -> Result<Outcome, Error> {
        let positive = |n: i64| if n <= 0 { Err(Error::NonPositiveTokens { tokens: n }) } else { Ok(()) };
        Ok(match op {
            Op::TryConsume(n) => {
                positive(*n)?;
                self.refill(now);
                Outcome::Bool(self.take(*n))
            }
            Op::Probe(n) => {
                positive(*n)?;
                self.refill(now);
                let consumed = self.take(*n);
                Outcome::Consumption(ConsumptionProbe {
                    consumed,
                    remaining_tokens: self.available().max(0),
                    nanos_to_wait_for_refill: if consumed { 0 } else { self.probe_wait(*n, now) },
                    nanos_to_wait_for_reset: self.wait_reset(now),
                })
            }
            Op::Estimate(n) => {
                positive(*n)?;
                let m = self.refilled(now);
                let can = *n <= m.available();
                Outcome::Estimation(EstimationProbe {
                    can_be_consumed: can,
                    remaining_tokens: m.available().max(0),
                    nanos_to_wait_for_refill: if can { 0 } else { m.probe_wait(*n, now) },
                })
            }
            Op::AsMuch => Outcome::Int(self.as_much(i64::MAX, now)),
            Op::AsMuchUpTo(limit) => {
                if *limit <= 0 {
                    return Err(Error::NonPositiveLimit { limit: *limit });
                }
                Outcome::Int(self.as_much(*limit, now))
            }
            Op::Add(n) => {
                positive(*n)?;
                self.refill(now);
                for b in &mut self.bands {
                    b.x = (&b.x + q(*n)).min(b.capacity());
                }
                Outcome::Unit
            }
            Op::ForceAdd(n) => {
                positive(*n)?;
                self.refill(now);
                if self.bands.iter().any(|b| b.available() + int(*n) > int(i64::MAX)) {
                    return Err(Error::TokensOverflow);
                }
                for b in &mut self.bands {
                    b.x += q(*n);
                }
                Outcome::Unit
            }
            Op::Ignoring(n) => {
                positive(*n)?;
                self.refill(now);
                let wait = clamp_wait(&self.wait(*n, now));
                if wait == INFINITY_DURATION {
                    return Err(Error::ReservationOverflow { tokens: *n });
                }
                if !self.debit_fits(*n) {
                    return Err(Error::TokensOverflow);
                }
                self.debit(*n);
                Outcome::Int(wait)
            }
            Op::Reserve(n, max_wait) => {
                positive(*n)?;
                if *max_wait <= 0 {
                    return Err(Error::NonPositiveMaxWait { nanos: *max_wait });
                }
                self.refill(now);
                let wait = clamp_wait(&self.wait(*n, now));
                if wait == 0 {
                    self.debit(*n);
                    Outcome::MaybeInt(Some(0))
                } else if wait == INFINITY_DURATION || wait > *max_wait {
                    Outcome::MaybeInt(None)
                } else {
                    if !self.debit_fits(*n) {
                        return Err(Error::TokensOverflow);
                    }
                    self.debit(*n);
                    Outcome::MaybeInt(Some(wait))
                }
            }
            Op::Available => Outcome::Int(self.refilled(now).available()),
            Op::NanosToFull => Outcome::Int(self.diagnostics(now).nanos_to_full_refill),
            Op::Diagnostics => Outcome::Diag(self.diagnostics(now)),
            Op::Reset => {
                self.refill(now);
                for b in &mut self.bands {
                    b.x = b.capacity();
                }
                Outcome::Unit
            }
            Op::Replace(specs, strategy) => {
                self.replace(specs, *strategy, now)?;
                Outcome::Unit
            }
            Op::ReplaceSimilar(..) => unreachable!("resolved against the bucket before it reaches the model"),
        })
    }
}

// ------------------------------------------------------------------------------------------------
// Strategies
// ------------------------------------------------------------------------------------------------

fn cases(n: u32) -> ProptestConfig {
    // No failure persistence: this file is the only one these tests may write.
    ProptestConfig { cases: n, failure_persistence: None, ..ProptestConfig::default() }
}

fn period_strategy() -> BoxedStrategy<i64> {
    prop_oneof![
        3 => 1i64..=10,
        3 => 1i64..=1_000,
        2 => 1i64..=1_000_000,
        2 => Just(SECOND),
        1 => Just(60 * SECOND),
        1 => Just(HOUR),
        1 => 1i64..=HOUR,
    ]
    .boxed()
}

fn capacity_strategy() -> BoxedStrategy<i64> {
    prop_oneof![
        6 => 1i64..=10,
        6 => 1i64..=1_000,
        1 => 1i64..=i64::MAX / 2,
    ]
    .boxed()
}

/// Refill tokens for a period: `1 <= tokens <= period`.
fn tokens_for(period: i64) -> BoxedStrategy<i64> {
    prop_oneof![
        3 => 1i64..=period.min(10),
        3 => 1i64..=period.min(1_000),
        1 => 1i64..=period,
        1 => Just(period),
    ]
    .boxed()
}

fn initial_for(capacity: i64) -> BoxedStrategy<Option<i64>> {
    prop_oneof![
        4 => Just(None),
        3 => (0..=capacity).prop_map(Some),
        1 => (capacity..=capacity.saturating_mul(2)).prop_map(Some),
        1 => (0..=i64::MAX / 2).prop_map(Some),
    ]
    .boxed()
}

fn kind_strategy(first: BoxedStrategy<i64>) -> BoxedStrategy<Kind> {
    prop_oneof![
        3 => Just(Kind::Greedy),
        2 => Just(Kind::Intervally),
        2 => (first, any::<bool>()).prop_map(|(first, adaptive)| Kind::Aligned { first, adaptive }),
    ]
    .boxed()
}

fn id_strategy() -> BoxedStrategy<Option<String>> {
    prop_oneof![
        1 => Just(None),
        1 => prop::sample::select(vec!["a", "b", "c"]).prop_map(|s| Some(s.to_owned())),
    ]
    .boxed()
}

/// Assembles a valid bandwidth from independently drawn parts.
fn band(
    capacity: BoxedStrategy<i64>,
    period: BoxedStrategy<i64>,
    tokens: fn(i64) -> BoxedStrategy<i64>,
    initial: fn(i64) -> BoxedStrategy<Option<i64>>,
    first: BoxedStrategy<i64>,
) -> BoxedStrategy<BandSpec> {
    (capacity, period, kind_strategy(first), id_strategy())
        .prop_flat_map(move |(capacity, period, kind, id)| {
            (Just(capacity), Just(period), tokens(period), initial(capacity), Just(kind), Just(id))
        })
        .prop_map(|(capacity, period, tokens, initial, kind, id)| {
            // Adaptive initial tokens exclude explicit ones.
            let initial = match kind {
                Kind::Aligned { adaptive: true, .. } => None,
                _ => initial,
            };
            BandSpec { capacity, tokens, period, kind, initial, id }
        })
        .boxed()
}

/// 1–3 bandwidths; a repeated id is dropped so the configuration is valid.
fn config_from(band: BoxedStrategy<BandSpec>) -> BoxedStrategy<Vec<BandSpec>> {
    prop::collection::vec(band, 1..=3)
        .prop_map(|mut specs| {
            for i in 1..specs.len() {
                if specs[i].id.is_some() && specs[..i].iter().any(|s| s.id == specs[i].id) {
                    specs[i].id = None;
                }
            }
            specs
        })
        .boxed()
}

fn normal_config() -> BoxedStrategy<Vec<BandSpec>> {
    config_from(band(capacity_strategy(), period_strategy(), tokens_for, initial_for, (0i64..=10_000 * SECOND).boxed()))
}

fn amount_strategy() -> BoxedStrategy<i64> {
    prop_oneof![
        1 => -2i64..=0,
        8 => 1i64..=10,
        4 => 1i64..=1_000,
        1 => 1i64..=1_000_000,
        1 => Just(i64::MAX),
        1 => 1i64..=i64::MAX,
    ]
    .boxed()
}

fn max_wait_strategy() -> BoxedStrategy<i64> {
    prop_oneof![
        1 => -1i64..=0,
        2 => 1i64..=1_000,
        2 => 1i64..=SECOND,
        2 => 1i64..=1_000 * SECOND,
        1 => Just(i64::MAX),
    ]
    .boxed()
}

fn strategy_strategy() -> BoxedStrategy<TokensInheritanceStrategy> {
    prop::sample::select(vec![
        TokensInheritanceStrategy::Reset,
        TokensInheritanceStrategy::Proportionally,
        TokensInheritanceStrategy::AsIs,
        TokensInheritanceStrategy::Additive,
    ])
    .boxed()
}

/// Which operations a property draws from.
#[derive(Clone, Copy)]
struct Mix {
    /// `reset` and `replace_configuration` (excluded where they would break a simple bound).
    reset_and_replace: bool,
}

fn tweak_strategy(
    capacity: BoxedStrategy<i64>,
    period: BoxedStrategy<i64>,
    first: BoxedStrategy<i64>,
) -> BoxedStrategy<Vec<Tweak>> {
    let switch = prop_oneof![8 => Just(Switch::Keep), 1 => Just(Switch::Flip), 1 => first.prop_map(Switch::Align)];
    prop::collection::vec(
        (prop::option::of(capacity), prop::option::weighted(0.3, period), switch)
            .prop_map(|(capacity, period, switch)| Tweak { capacity, period, switch }),
        1..=3,
    )
    .boxed()
}

fn op_strategy(
    mix: Mix,
    amount: BoxedStrategy<i64>,
    max_wait: BoxedStrategy<i64>,
    config: BoxedStrategy<Vec<BandSpec>>,
    tweaks: BoxedStrategy<Vec<Tweak>>,
) -> BoxedStrategy<Op> {
    let a = || amount.clone();
    let core = prop_oneof![
        6 => a().prop_map(Op::TryConsume),
        4 => a().prop_map(Op::Probe),
        3 => a().prop_map(Op::Estimate),
        1 => Just(Op::AsMuch),
        2 => a().prop_map(Op::AsMuchUpTo),
        2 => a().prop_map(Op::Add),
        2 => a().prop_map(Op::ForceAdd),
        2 => a().prop_map(Op::Ignoring),
        3 => (a(), max_wait).prop_map(|(n, w)| Op::Reserve(n, w)),
        1 => Just(Op::Available),
        1 => Just(Op::NanosToFull),
        1 => Just(Op::Diagnostics),
    ];
    if !mix.reset_and_replace {
        return core.boxed();
    }
    prop_oneof![
        20 => core,
        1 => Just(Op::Reset),
        2 => (config, strategy_strategy()).prop_map(|(c, s)| Op::Replace(c, s)),
        2 => (tweaks, strategy_strategy()).prop_map(|(t, s)| Op::ReplaceSimilar(t, s)),
    ]
    .boxed()
}

fn normal_ops(mix: Mix) -> BoxedStrategy<Op> {
    op_strategy(
        mix,
        amount_strategy(),
        max_wait_strategy(),
        normal_config(),
        tweak_strategy(capacity_strategy(), period_strategy(), (0i64..=10_000 * SECOND).boxed()),
    )
}

/// Time steps: mostly forward by amounts from nothing to hours; with `backwards`, sometimes a
/// little back (a clock that is not monotonic).
fn dt_strategy(backwards: bool) -> BoxedStrategy<i64> {
    let forward = prop_oneof![
        4 => Just(0i64),
        3 => 1i64..=10,
        3 => 1i64..=1_000,
        2 => 1i64..=1_000_000,
        2 => 1i64..=SECOND,
        1 => 1i64..=1_000 * SECOND,
        1 => 1i64..=10_000 * SECOND,
    ];
    if backwards {
        prop_oneof![12 => forward, 1 => -1_000i64..=-1].boxed()
    } else {
        forward.boxed()
    }
}

fn t0_strategy() -> BoxedStrategy<i64> {
    prop_oneof![3 => 0i64..=10_000 * SECOND, 1 => -1_000_000i64..=1_000_000].boxed()
}

type Scenario = (Vec<BandSpec>, i64, Vec<(i64, Op)>);

fn scenario(mix: Mix, backwards: bool, max_ops: usize) -> BoxedStrategy<Scenario> {
    (normal_config(), t0_strategy(), prop::collection::vec((dt_strategy(backwards), normal_ops(mix)), 1..=max_ops))
        .boxed()
}

// --- extremes ---

fn extreme_i64(lo: i64) -> BoxedStrategy<i64> {
    prop_oneof![
        1 => Just(lo),
        1 => Just(lo.saturating_add(1)),
        1 => Just(i64::MAX),
        1 => Just(i64::MAX - 1),
        1 => Just(i64::MAX / 2),
        2 => lo..=i64::MAX,
        1 => lo..=lo.saturating_add(10),
    ]
    .boxed()
}

fn extreme_tokens(period: i64) -> BoxedStrategy<i64> {
    prop_oneof![Just(1i64), Just(period), Just((period - 1).max(1)), 1..=period].boxed()
}

fn extreme_initial(capacity: i64) -> BoxedStrategy<Option<i64>> {
    prop_oneof![Just(None), Just(Some(0)), Just(Some(i64::MAX)), Just(Some(capacity)), (0..=i64::MAX).prop_map(Some)]
        .boxed()
}

fn extreme_config() -> BoxedStrategy<Vec<BandSpec>> {
    config_from(band(extreme_i64(1), extreme_i64(1), extreme_tokens, extreme_initial, extreme_i64(0)))
}

fn extreme_amount() -> BoxedStrategy<i64> {
    prop_oneof![
        1 => Just(i64::MIN),
        1 => Just(0i64),
        2 => Just(i64::MAX),
        1 => Just(i64::MAX - 1),
        2 => 1i64..=10,
        3 => any::<i64>(),
        2 => 1i64..=i64::MAX,
    ]
    .boxed()
}

fn extreme_time() -> BoxedStrategy<i64> {
    prop_oneof![
        1 => Just(i64::MIN),
        1 => Just(i64::MAX),
        1 => Just(0i64),
        1 => Just(i64::MIN + 1),
        1 => Just(i64::MAX - 1),
        4 => any::<i64>(),
        2 => -1_000i64..=1_000,
    ]
    .boxed()
}

fn extreme_scenario() -> BoxedStrategy<Scenario> {
    let ops = op_strategy(
        Mix { reset_and_replace: true },
        extreme_amount(),
        extreme_amount(),
        extreme_config(),
        tweak_strategy(extreme_i64(1), extreme_i64(1), extreme_i64(0)),
    );
    (extreme_config(), extreme_time(), prop::collection::vec((extreme_time(), ops), 1..=24)).boxed()
}

// ------------------------------------------------------------------------------------------------
// Checks
// ------------------------------------------------------------------------------------------------

/// Compares every observable of `bucket` with `model` at `now` and a few later (and one earlier)
/// times. `&self` observations change nothing, so looking ahead is free.
fn check_observables(bucket: &TokenBucket, model: &Model, now: i64, context: &str) -> Result<(), TestCaseError> {
    for offset in [0i64, 1, -1, 997, SECOND + 7, 3 * HOUR] {
        let t = now.saturating_add(offset);
        let expected = model.diagnostics(t);
        prop_assert_eq!(&bucket.diagnostics(t), &expected, "diagnostics at {} ({})", t, context);
        prop_assert_eq!(bucket.get_available_tokens(t), expected.available_tokens, "available at {} ({})", t, context);
        prop_assert_eq!(
            bucket.nanos_to_full_refill(t),
            expected.nanos_to_full_refill,
            "to full at {} ({})",
            t,
            context
        );
    }
    Ok(())
}

/// Runs `steps` on the implementation and the model side by side. `absolute` steps carry the
/// time itself, otherwise the time advances by the step.
fn run_against_model(specs: &[BandSpec], t0: i64, steps: &[(i64, Op)], absolute: bool) -> Result<(), TestCaseError> {
    let mut bucket = TokenBucket::new(build_config(specs), t0);
    let mut model = Model::new(specs, t0);
    check_observables(&bucket, &model, t0, "creation")?;
    let mut now = t0;
    for (i, (time, op)) in steps.iter().enumerate() {
        now = if absolute { *time } else { now.saturating_add(*time) };
        let op = &resolve(op, &bucket);
        let before = bucket.clone();
        let real = apply_real(&mut bucket, op, now);
        let expected = model.apply(op, now);
        let context = format!("step {i}: {op:?} at {now}");
        prop_assert_eq!(&real, &expected, "{}", context);
        if real.is_err() {
            prop_assert_eq!(&bucket, &before, "an operation that failed changed the bucket ({})", context);
        }
        check_observables(&bucket, &model, now, &context)?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(cases(768))]

    /// Property 1: the implementation agrees with the model on every result and observable.
    #[test]
    fn agrees_with_model((specs, t0, steps) in scenario(Mix { reset_and_replace: true }, true, 40)) {
        run_against_model(&specs, t0, &steps, false)?;
    }
}

proptest! {
    #![proptest_config(cases(256))]

    /// Property 1 on small configurations only, where collisions of refill, consumption and
    /// capacity are frequent (capacities and periods of a few units).
    #[test]
    fn agrees_with_model_small(
        (specs, t0, steps) in (
            config_from(band(
                (1i64..=5).boxed(),
                (1i64..=7).boxed(),
                tokens_for,
                initial_for,
                (0i64..=20).boxed(),
            )),
            -5i64..=20,
            prop::collection::vec(
                (
                    prop_oneof![4 => 0i64..=3, 1 => 4i64..=20, 1 => -3i64..=-1],
                    op_strategy(
                        Mix { reset_and_replace: true },
                        prop_oneof![1 => -1i64..=0, 10 => 1i64..=8].boxed(),
                        (-1i64..=30).boxed(),
                        config_from(band(
                            (1i64..=5).boxed(),
                            (1i64..=7).boxed(),
                            tokens_for,
                            initial_for,
                            (0i64..=20).boxed(),
                        )),
                        tweak_strategy((1i64..=8).boxed(), (1i64..=7).boxed(), (0i64..=20).boxed()),
                    ),
                ),
                1..=40,
            ),
        )
    ) {
        run_against_model(&specs, t0, &steps, false)?;
    }
}

proptest! {
    #![proptest_config(cases(256))]

    /// Property 1, aimed at inheritance of debts: a greedy bandwidth of one token per nanosecond
    /// is overdrawn by up to almost `i64::MAX` tokens, then replaced (by every strategy) by a
    /// bandwidth of another capacity and period. Proportional scaling of a deep debt must fail
    /// with `TokensOverflow` exactly when the scaled count leaves the 64-bit range, and be exact
    /// (rounded down to the new unit) otherwise.
    #[test]
    fn inherits_debts_exactly(
        capacity in prop_oneof![1i64..=1_000, 1i64..=i64::MAX / 2],
        debt in prop_oneof![1i64..=1_000, i64::MAX / 4..=i64::MAX / 2, i64::MAX / 2..=i64::MAX - 1],
        elapsed in prop_oneof![Just(0i64), 1i64..=1_000],
        new in band(
            prop_oneof![1i64..=2_000, 1i64..=i64::MAX].boxed(),
            prop_oneof![1i64..=1_000, 1i64..=i64::MAX].boxed(),
            tokens_for,
            initial_for,
            (0i64..=1_000).boxed(),
        ),
        strategy in strategy_strategy(),
        t0 in -1_000i64..=1_000,
    ) {
        let old = BandSpec { capacity, tokens: 1, period: 1, kind: Kind::Greedy, initial: None, id: None };
        let new = BandSpec { id: None, ..new };
        // Overdraw by `debt` (the wait, `debt` ns, stays finite as long as the debt is below
        // `i64::MAX`), let a little refill in, then replace.
        let n = capacity.saturating_add(debt);
        let steps = vec![
            (0, Op::Ignoring(n)),
            (elapsed, Op::Replace(vec![new], strategy)),
            (0, Op::Available),
            (1, Op::Probe(1)),
        ];
        run_against_model(&[old], t0, &steps, false)?;
    }
}

/// A small bandwidth without id (so that two such bandwidths always match on replacement).
fn small_band(first: i64) -> BoxedStrategy<BandSpec> {
    band((1i64..=10).boxed(), (1i64..=7).boxed(), tokens_for, initial_for, (0..=first).boxed())
        .prop_map(|spec| BandSpec { id: None, ..spec })
        .boxed()
}

proptest! {
    #![proptest_config(cases(2048))]

    /// Property 1, aimed at token inheritance: one small bandwidth is brought into a random state
    /// (fractions of a token, debt, above capacity), replaced by another small bandwidth that it
    /// matches, and then probed, so every rounding and boundary of the strategies is exercised.
    #[test]
    fn inherits_tokens_exactly(
        old in small_band(20),
        new in small_band(20),
        t0 in -5i64..=20,
        before in prop::collection::vec(
            (
                0i64..=6,
                prop_oneof![
                    (1i64..=10).prop_map(Op::TryConsume),
                    (1i64..=14).prop_map(Op::Ignoring),
                    (1i64..=4).prop_map(Op::ForceAdd),
                    (1i64..=10).prop_map(Op::AsMuchUpTo),
                ],
            ),
            0..=4,
        ),
        replace_after in 0i64..=6,
        strategy in strategy_strategy(),
        after in prop::collection::vec(
            (
                prop_oneof![3 => 0i64..=6, 1 => -3i64..=-1],
                prop_oneof![
                    (1i64..=6).prop_map(Op::TryConsume),
                    (1i64..=12).prop_map(Op::Probe),
                    (1i64..=12).prop_map(Op::Estimate),
                    ((1i64..=12), (1i64..=20)).prop_map(|(n, w)| Op::Reserve(n, w)),
                ],
            ),
            1..=4,
        ),
    ) {
        let mut steps = before;
        steps.push((replace_after, Op::Replace(vec![new], strategy)));
        steps.extend(after);
        run_against_model(&[old], t0, &steps, false)?;
    }
}

proptest! {
    #![proptest_config(cases(256))]

    /// Property 2: no bandwidth exceeds its capacity unless a forced addition or initial tokens
    /// above capacity put it there (and nothing since has brought it back down).
    #[test]
    fn never_above_capacity((specs, t0, steps) in scenario(Mix { reset_and_replace: true }, true, 40)) {
        let mut bucket = TokenBucket::new(build_config(&specs), t0);
        // Per bandwidth: may it legitimately hold more than its capacity?
        let mut may_exceed: Vec<bool> = specs.iter().map(|s| s.initial.is_some_and(|i| i > s.capacity)).collect();
        let mut current = specs.clone();
        let mut now = t0;
        for (dt, op) in &steps {
            now = now.saturating_add(*dt);
            let op = &resolve(op, &bucket);
            let result = apply_real(&mut bucket, op, now);
            if result.is_ok() {
                match op {
                    Op::ForceAdd(_) => may_exceed.iter_mut().for_each(|f| *f = true),
                    // Both set every bandwidth to at most its capacity.
                    Op::Add(_) | Op::Reset => may_exceed.iter_mut().for_each(|f| *f = false),
                    Op::Replace(new, strategy) => {
                        // Only a new bandwidth that starts fresh can start above capacity; every
                        // strategy caps inherited tokens at the new capacity.
                        let unnamed = |c: &[BandSpec]| c.iter().filter(|s| s.id.is_none()).count();
                        let nulls_match = unnamed(&current) <= 1 && unnamed(new) <= 1;
                        may_exceed = new
                            .iter()
                            .map(|s| {
                                let matched = *strategy != TokensInheritanceStrategy::Reset
                                    && current.iter().any(|o| o.id == s.id && (s.id.is_some() || nulls_match));
                                !matched && s.initial.is_some_and(|i| i > s.capacity)
                            })
                            .collect();
                        current = new.clone();
                    }
                    _ => {}
                }
            }
            for t in [now, now.saturating_add(1), now.saturating_add(HOUR)] {
                let diagnostics = bucket.diagnostics(t);
                for (i, b) in diagnostics.bandwidths.iter().enumerate() {
                    prop_assert!(
                        may_exceed[i] || b.available_tokens <= b.capacity,
                        "bandwidth {} holds {} > capacity {} at {} after {:?}", i, b.available_tokens, b.capacity, t, op
                    );
                }
                let max_capacity = current.iter().map(|s| s.capacity).max().unwrap();
                prop_assert!(
                    may_exceed.iter().any(|f| *f) || bucket.get_available_tokens(t) <= max_capacity,
                    "bucket above capacity at {}", t
                );
            }
        }
    }
}

/// An upper bound of the tokens a bandwidth created at `created` can have been credited by `t`
/// (capacity ignored, which can only lower the real credit).
fn credit_bound(spec: &BandSpec, created: i64, t: &BigInt) -> Q {
    let (tokens, period) = (int(spec.tokens), int(spec.period));
    let start = match spec.kind {
        Kind::Aligned { first, .. } => int(first) - &period,
        _ => int(created),
    };
    let elapsed = t - start;
    if elapsed <= BigInt::zero() {
        return q(0);
    }
    if spec.is_greedy() {
        frac(elapsed * tokens, period)
    } else {
        qi(floor(&frac(elapsed, period)) * tokens)
    }
}

proptest! {
    #![proptest_config(cases(384))]

    /// Property 3: tokens admitted never exceed initial + added + credited refill, per bandwidth.
    /// A reservation (or an overdraft) that says "the tokens are there in w" is checked against the
    /// refill credited by `now + w`: waits are never early.
    #[test]
    fn admits_no_more_than_earned(
        (specs, t0, steps) in scenario(Mix { reset_and_replace: false }, false, 40)
    ) {
        let mut bucket = TokenBucket::new(build_config(&specs), t0);
        let mut admitted = int(0);
        let mut added = int(0);
        // The latest time by which the tokens admitted so far must have been earned (exact: a
        // reservation can end beyond `i64::MAX`).
        let mut horizon = int(t0);
        let mut now = t0;
        for (dt, op) in &steps {
            now = now.saturating_add(*dt);
            horizon = horizon.max(int(now));
            let result = apply_real(&mut bucket, op, now);
            let (taken, wait) = match (op, &result) {
                (Op::TryConsume(n), Ok(Outcome::Bool(true))) => (*n, 0),
                (Op::Probe(n), Ok(Outcome::Consumption(p))) if p.consumed => (*n, 0),
                (Op::AsMuch | Op::AsMuchUpTo(_), Ok(Outcome::Int(k))) => (*k, 0),
                (Op::Reserve(n, _), Ok(Outcome::MaybeInt(Some(w)))) => (*n, *w),
                (Op::Ignoring(n), Ok(Outcome::Int(w))) => (*n, *w),
                (Op::Add(n) | Op::ForceAdd(n), Ok(_)) => {
                    added += int(*n);
                    (0, 0)
                }
                _ => (0, 0),
            };
            prop_assert!(taken >= 0);
            prop_assert!((0..INFINITY_DURATION).contains(&wait), "a successful operation reported wait {}", wait);
            admitted += int(taken);
            horizon = horizon.max(int(now) + int(wait));
            for spec in &specs {
                let initial = spec.initial.unwrap_or(spec.capacity);
                let bound = q(initial) + qi(added.clone()) + credit_bound(spec, t0, &horizon);
                prop_assert!(
                    qi(admitted.clone()) <= bound,
                    "admitted {} > bound {} of {:?} by {} after {:?} at {}", admitted, bound, spec, horizon, op, now
                );
            }
        }
    }
}

/// A refilling observation that changes nothing observable: a `try_consume` of one more token than
/// is available, which must fail (and refills in place).
fn observe(bucket: &mut TokenBucket, t: i64) -> Result<(), TestCaseError> {
    let available = bucket.get_available_tokens(t);
    if available < i64::MAX {
        let n = available.max(0) + 1;
        prop_assert_eq!(bucket.try_consume(n, t), Ok(false), "observing {} at {}", n, t);
    }
    Ok(())
}

proptest! {
    #![proptest_config(cases(256))]

    /// Property 4: one long refill equals many short ones. Bucket `b` gets extra refilling
    /// observations at times between the previous operation and the next; every result and
    /// observable stays the same, and after a final refill the two buckets are identical.
    #[test]
    fn refill_is_time_split_invariant(
        (specs, t0, steps) in scenario(Mix { reset_and_replace: true }, false, 40),
        splits in prop::collection::vec(prop::collection::vec(any::<u64>(), 0..=3), 40),
    ) {
        let mut a = TokenBucket::new(build_config(&specs), t0);
        let mut b = a.clone();
        let mut now = t0;
        for (i, (dt, op)) in steps.iter().enumerate() {
            let previous = now;
            now = now.saturating_add(*dt);
            let gap = (now - previous) as u64;
            let mut times: Vec<i64> = splits[i].iter().map(|s| previous + (s % (gap + 1)) as i64).collect();
            times.sort_unstable();
            for t in times {
                observe(&mut b, t)?;
            }
            let op = &resolve(op, &a);
            let ra = apply_real(&mut a, op, now);
            let rb = apply_real(&mut b, op, now);
            prop_assert_eq!(&ra, &rb, "step {}: {:?} at {}", i, op, now);
            for t in [now, now + 1, now + HOUR] {
                prop_assert_eq!(a.diagnostics(t), b.diagnostics(t), "diagnostics at {} after step {}", t, i);
            }
        }
        let end = now + 1;
        observe(&mut a, end)?;
        observe(&mut b, end)?;
        prop_assert_eq!(&a, &b, "buckets differ after a final refill at {}", end);
        prop_assert_eq!(codec::encode(&a, None), codec::encode(&b, None));
    }
}

proptest! {
    #![proptest_config(cases(512))]

    /// Property 5: extreme configurations (capacity and period up to `i64::MAX`, 1 token per ns,
    /// initial 0 or `i64::MAX`), extreme times and arguments: no panic (debug builds trap
    /// arithmetic overflow), and the results still agree with the exact model.
    #[test]
    fn extremes_do_not_panic_and_agree((specs, t0, steps) in extreme_scenario()) {
        run_against_model(&specs, t0, &steps, true)?;
    }
}

proptest! {
    #![proptest_config(cases(128))]

    /// Property 6: the codec round-trips every bucket a random sequence reaches, with and without
    /// a configuration version.
    #[test]
    fn codec_round_trips(
        (specs, t0, steps) in prop_oneof![
            3 => scenario(Mix { reset_and_replace: true }, true, 30),
            1 => extreme_scenario(),
        ],
        version in prop::option::of(any::<u64>()),
    ) {
        let mut bucket = TokenBucket::new(build_config(&specs), t0);
        let mut now = t0;
        for (dt, op) in &steps {
            now = now.saturating_add(*dt);
            let _ = apply_real(&mut bucket, op, now);
            let decoded = codec::decode(&codec::encode(&bucket, version)).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(&decoded.bucket, &bucket);
            prop_assert_eq!(decoded.configuration_version, version);
        }
    }
}

// ------------------------------------------------------------------------------------------------
// Sanity checks of the model itself, against the documented examples
// ------------------------------------------------------------------------------------------------

fn greedy_spec(capacity: i64, tokens: i64, period: i64) -> BandSpec {
    BandSpec { capacity, tokens, period, kind: Kind::Greedy, initial: None, id: None }
}

#[test]
fn model_reproduces_documented_examples() {
    const MS: i64 = 1_000_000;
    // 10 per second: a token every 100 ms; 0.5 earned and 1.5 missing is 150 ms.
    let mut m = Model::new(&[greedy_spec(10, 10, SECOND)], 0);
    assert_eq!(m.apply(&Op::TryConsume(10), 0), Ok(Outcome::Bool(true)));
    assert_eq!(m.apply(&Op::TryConsume(1), 99 * MS), Ok(Outcome::Bool(false)));
    assert_eq!(m.apply(&Op::TryConsume(1), 100 * MS), Ok(Outcome::Bool(true)));
    match m.apply(&Op::Probe(2), 150 * MS) {
        Ok(Outcome::Consumption(p)) => assert_eq!((p.consumed, p.nanos_to_wait_for_refill), (false, 150 * MS)),
        other => panic!("{other:?}"),
    }

    // Overdraft: 2 tokens + 1 earned, 6 taken leaves -3, repaid in 300 ms.
    let mut spec = greedy_spec(10, 10, SECOND);
    spec.initial = Some(2);
    let mut m = Model::new(&[spec], 0);
    assert_eq!(m.apply(&Op::Ignoring(6), 100 * MS), Ok(Outcome::Int(300 * MS)));
    assert_eq!(m.apply(&Op::Available, 100 * MS), Ok(Outcome::Int(-3)));
    assert_eq!(m.apply(&Op::TryConsume(1), 499 * MS), Ok(Outcome::Bool(false)));
    assert_eq!(m.apply(&Op::TryConsume(1), 500 * MS), Ok(Outcome::Bool(true)));

    // Reservations beyond capacity are debts.
    let mut m = Model::new(&[greedy_spec(1, 10, SECOND)], 0);
    assert_eq!(m.apply(&Op::Reserve(1, 1), 0), Ok(Outcome::MaybeInt(Some(0))));
    assert_eq!(m.apply(&Op::Reserve(5, 500 * MS), 0), Ok(Outcome::MaybeInt(Some(500 * MS))));
    assert_eq!(m.apply(&Op::Reserve(1, 500 * MS), 0), Ok(Outcome::MaybeInt(None)));

    // Replacement: 100 with 40 available, to 200 and to 20.
    use TokensInheritanceStrategy as S;
    for (capacity, expected) in [(200, [80, 40, 140]), (20, [8, 20, 20])] {
        for (strategy, want) in [S::Proportionally, S::AsIs, S::Additive].into_iter().zip(expected) {
            let mut m = Model::new(&[greedy_spec(100, 10, 60 * SECOND)], 0);
            m.apply(&Op::TryConsume(60), 0).unwrap();
            m.apply(&Op::Replace(vec![greedy_spec(capacity, 10, 60 * SECOND)], strategy), 0).unwrap();
            assert_eq!(m.apply(&Op::Available, 0), Ok(Outcome::Int(want)), "{strategy:?} to {capacity}");
        }
    }

    // Adaptive initial tokens: created 40 of 60 minutes before the first refill.
    const MIN: i64 = 60 * SECOND;
    let spec = BandSpec {
        capacity: 400,
        tokens: 400,
        period: HOUR,
        kind: Kind::Aligned { first: 60 * MIN, adaptive: true },
        initial: None,
        id: None,
    };
    let m = Model::new(&[spec], 20 * MIN);
    assert_eq!(m.refilled(20 * MIN).available(), 266);
}

#[test]
fn model_intervally_waits_for_period_boundaries() {
    // 3 tokens every 10 ns, capacity 5, created at 0 with 5; take 5 at 4: nothing until 10.
    let spec = BandSpec { capacity: 5, tokens: 3, period: 10, kind: Kind::Intervally, initial: None, id: None };
    let mut m = Model::new(&[spec], 0);
    assert_eq!(m.apply(&Op::TryConsume(5), 4), Ok(Outcome::Bool(true)));
    // 4 tokens: two periods, the second ends at 20, 16 ns after 4.
    assert_eq!(
        m.apply(&Op::Estimate(4), 4).map(|o| matches!(o, Outcome::Estimation(e) if e.nanos_to_wait_for_refill == 16)),
        Ok(true)
    );
    assert_eq!(m.apply(&Op::Available, 19), Ok(Outcome::Int(3)));
    assert_eq!(m.apply(&Op::Available, 20), Ok(Outcome::Int(5)));
}

/// Minimal case found by [`inherits_debts_exactly`]: a replacement that fails with
/// `TokensOverflow` must leave the bucket as it was ("an operation that returns an error has
/// changed nothing"). It is observable once the clock goes back: the failed call at 1 must not
/// have credited the refill from 0 to 1.
#[test]
fn failed_replacement_changes_nothing() {
    let one = |capacity| BucketConfiguration::new(vec![BandSpec { capacity, ..greedy_spec(1, 1, 1) }.build()]).unwrap();
    let mut bucket = TokenBucket::new(one(1), 0);
    // 1 token, 1 + 2^62 taken: a debt of 2^62, repaid in 2^62 ns.
    assert_eq!(bucket.consume_ignoring_rate_limits(1 + (1 << 62), 0), Ok(1 << 62));
    let before = bucket.clone();
    // Scaling the debt by 4 leaves the 64-bit range.
    let result = bucket.replace_configuration(one(4), TokensInheritanceStrategy::Proportionally, 1);
    assert_eq!(result, Err(Error::TokensOverflow));
    assert_eq!(bucket.get_available_tokens(0), -(1 << 62));
    assert_eq!(bucket, before);
}
