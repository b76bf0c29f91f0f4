//! Configuration replacement: carrying a bucket's tokens over to a new configuration.

use std::collections::HashMap;

use ethnum::I256;
use foldhash::fast::FixedState;

use super::bandwidth::{Bandwidth, RefillKind};
use super::error::{Error, Result};
use super::state::{floor_div, BandwidthState};

/// How tokens pass from the old configuration to the new one, per matched bandwidth.
///
/// Bandwidths are matched by id; a bandwidth without id matches the other configuration's
/// bandwidth without id only when each configuration has at most one such bandwidth. A new
/// bandwidth without a match starts fresh (initial tokens, as at creation).
///
/// A matched bandwidth keeps its last refill time, as in Bucket4j, so the time since then is
/// credited at the new refill's rate: replacing an intervally refill (whose last refill is the
/// last period boundary) by a greedy or shorter one can add, at the same instant, the tokens that
/// time earns under the new refill, up to the new capacity. One exception, where Bucket4j would
/// carry the time over: an aligned bandwidth whose first refill is still ahead (its last refill
/// is then one period before the first, a refill the bucket never saw) passes on its tokens but
/// not its time. The new bandwidth starts refilling at `now`, or on its own aligned schedule from
/// its last boundary at or before `now`, instead of crediting nothing until that time or time
/// from before the bucket existed.
///
/// Examples (Bucket4j's): capacity 100 with 40 available, replaced by capacity 200 gives
/// `Proportionally` 80, `AsIs` 40, `Additive` 140; replaced by capacity 20 gives 8, 20, 20.
///
/// Two deliberate differences from Bucket4j, both in the fractional token a greedy refill carries:
/// Bucket4j rescales it by the ratio of the periods truncated to an integer (a shorter period
/// loses it altogether) and computes `Proportionally` in floating point. Here the fraction is
/// rescaled exactly (`fraction × new_period / old_period`, rounded down) and `Proportionally` is
/// exact rational arithmetic rounded down. As in Bucket4j, a new bandwidth with an intervally
/// refill keeps whole tokens only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TokensInheritanceStrategy {
    /// Forget the old state: the bucket starts afresh with the new configuration.
    Reset,
    /// Scale available tokens by `new_capacity / old_capacity`; a bandwidth at or above its old
    /// capacity becomes full.
    Proportionally,
    /// Keep available tokens, lowered to the new capacity if above it.
    AsIs,
    /// Keep available tokens and, when the capacity grows, add the growth:
    /// `min(available, new_capacity) + max(0, new_capacity - old_capacity)`, at most the new
    /// capacity. When the capacity does not grow this is `AsIs`.
    Additive,
}

impl TokensInheritanceStrategy {
    /// The strategy's name in the JSON schema and in Bucket4j: `RESET`, `PROPORTIONALLY`,
    /// `AS_IS`, `ADDITIVE`.
    pub fn name(self) -> &'static str {
        match self {
            TokensInheritanceStrategy::Reset => "RESET",
            TokensInheritanceStrategy::Proportionally => "PROPORTIONALLY",
            TokensInheritanceStrategy::AsIs => "AS_IS",
            TokensInheritanceStrategy::Additive => "ADDITIVE",
        }
    }

    /// Parses a name as given by [`TokensInheritanceStrategy::name`].
    pub fn from_name(name: &str) -> Option<Self> {
        [Self::Reset, Self::Proportionally, Self::AsIs, Self::Additive].into_iter().find(|s| s.name() == name)
    }
}

/// The states for `new` bandwidths, inherited from `old` ones already refilled to `now`.
pub(crate) fn replace(
    old: &[Bandwidth],
    old_states: &[BandwidthState],
    new: &[Bandwidth],
    strategy: TokensInheritanceStrategy,
    now: i64,
) -> Result<Vec<BandwidthState>> {
    let nulls_match = count_unnamed(old) <= 1 && count_unnamed(new) <= 1;
    // Each old bandwidth's position by id in a map rather than a scan per new bandwidth:
    // configurations come from decoded bytes and JSON, where a pairwise scan would let a large
    // input cost quadratic time. (Ids are unique in a configuration.)
    let mut named: HashMap<&str, usize, FixedState> = HashMap::default();
    let mut unnamed = None;
    if strategy != TokensInheritanceStrategy::Reset {
        for (at, bandwidth) in old.iter().enumerate() {
            match bandwidth.id() {
                Some(id) => _ = named.insert(id, at),
                None => _ = unnamed.get_or_insert(at),
            }
        }
    }
    new.iter()
        .map(|bandwidth| {
            let matched = match bandwidth.id() {
                Some(id) => named.get(id).copied(),
                None => unnamed.filter(|_| nulls_match),
            };
            match matched {
                None => Ok(BandwidthState::initial(bandwidth, now)),
                Some(i) => inherit(strategy, &old[i], old_states[i], bandwidth, now),
            }
        })
        .collect()
}

fn count_unnamed(bandwidths: &[Bandwidth]) -> usize {
    bandwidths.iter().filter(|b| b.id().is_none()).count()
}

fn inherit(
    strategy: TokensInheritanceStrategy,
    old: &Bandwidth,
    state: BandwidthState,
    new: &Bandwidth,
    now: i64,
) -> Result<BandwidthState> {
    let tokens = state.tokens(old);
    let level = match strategy {
        TokensInheritanceStrategy::Proportionally if tokens >= old.capacity => new.scaled_capacity(),
        TokensInheritanceStrategy::Proportionally => proportional(old, state.level, new)?,
        TokensInheritanceStrategy::Additive if new.capacity > old.capacity => {
            if tokens >= old.capacity {
                new.scaled_capacity()
            } else {
                let growth = (new.capacity - old.capacity) as i128 * old.refill.period_nanos as i128;
                rescale(old, state.level + growth, new)
            }
        }
        // AsIs, and Additive when the capacity does not grow. (Reset never matches.)
        _ if tokens >= new.capacity => new.scaled_capacity(),
        _ => rescale(old, state.level, new),
    };
    // Every branch stays below the new capacity unless it returned exactly the capacity.
    Ok(BandwidthState::from_parts(level, inherited_last_refill(old, state, new, now)))
}

/// When the new bandwidth's refill starts counting: the old bandwidth's last refill, except for
/// an aligned schedule that has not started yet (its first refill still ahead, its last refill
/// the boundary one period before it). That passes its tokens on but not its time: the new
/// bandwidth starts counting at `now`, or on its own aligned schedule ([`schedule_start`]). That
/// last refill is no refill the bucket saw: ahead of `now` (created over a period early), passed
/// on it would make a greedy or intervally successor credit nothing until then (hours, for a
/// daily schedule); behind, it would credit time from before the bucket existed; and an aligned
/// successor would follow the old schedule rather than its own.
fn inherited_last_refill(old: &Bandwidth, state: BandwidthState, new: &Bandwidth, now: i64) -> i64 {
    let not_started = match old.refill.kind {
        // Refills only move the last refill to the first refill or later; a clock that went back
        // after them is left as it is everywhere else (nothing credited until it catches up).
        RefillKind::IntervallyAligned { first_refill_nanos, .. } => {
            state.last_refill_nanos == first_refill_nanos - old.refill.period_nanos && first_refill_nanos > now
        }
        _ => false,
    };
    if not_started {
        schedule_start(new, now)
    } else {
        state.last_refill_nanos
    }
}

/// Where `new`'s refill starts counting when it inherits no time: where a fresh `new` created at
/// `now` counts from, refilled to `now`. That is `now`, or for an aligned schedule its last
/// boundary at or before `now` (one period before its first refill while that is ahead). Not the
/// anchor itself: a schedule anchored in the past would be credited every period since, and an
/// emptied bucket come back full at the replacement.
fn schedule_start(new: &Bandwidth, now: i64) -> i64 {
    BandwidthState::initial(new, now).refilled(new, now).last_refill_nanos
}

/// `level` (in `old`'s unit) in `new`'s unit: whole tokens kept, the fraction rescaled exactly
/// (rounded down) for a greedy `new`, dropped for an intervally one.
fn rescale(old: &Bandwidth, level: i128, new: &Bandwidth) -> i128 {
    let old_period = old.refill.period_nanos as i128;
    let new_period = new.refill.period_nanos as i128;
    let tokens = floor_div(level, old.refill.period_nanos);
    let fraction = level - tokens * old_period; // in [0, old_period)
    let new_fraction = if new.refill.is_intervally() { 0 } else { fraction * new_period / old_period };
    tokens * new_period + new_fraction
}

/// `level × new_capacity / old_capacity`, exactly, in `new`'s unit (rounded down).
fn proportional(old: &Bandwidth, level: i128, new: &Bandwidth) -> Result<i128> {
    // level < 2^126 and the factors < 2^63 each: 256 bits hold the product.
    let numerator = I256::from(level) * I256::from(new.capacity) * I256::from(new.refill.period_nanos);
    let denominator = I256::from(old.capacity) * I256::from(old.refill.period_nanos);
    let scaled = numerator.div_euclid(denominator);
    let new_period = I256::from(new.refill.period_nanos);
    let tokens = scaled.div_euclid(new_period);
    if tokens < I256::from(i64::MIN) {
        return Err(Error::TokensOverflow);
    }
    let level = if new.refill.is_intervally() { tokens * new_period } else { scaled };
    Ok(level.as_i128())
}
