//! The mutable state of one bandwidth, and the exact arithmetic of refill and waiting.
//!
//! # Why one scaled integer
//!
//! Bucket4j keeps, per bandwidth, a whole token count `size` and a `roundingError`: the numerator
//! of the fractional token, over the refill period. Here both live in one integer,
//! `level = size × period + roundingError`: the token count in units of `1 / period` tokens.
//! A greedy refill of `elapsed` nanoseconds then adds exactly `refill_tokens × elapsed`, and a
//! consumption of `n` tokens subtracts `n × period`: multiplications only, no division and no
//! rounding, so the hot path costs a few instructions and results do not depend on how time is
//! split between calls. Whole tokens are recovered by floor division only when reported.
//!
//! `level` is an `i128`: capacity and period are each below 2^63, so every product stays below
//! 2^127. The token count `floor(level / period)` is kept within `i64` by the operations that
//! could leave it ([`Error::TokensOverflow`](crate::Error::TokensOverflow)).

use super::bandwidth::{Bandwidth, RefillKind};

/// A wait that cannot be represented in `i64` nanoseconds, or tokens that can never be had.
///
/// Bucket4j's `INFINITY_DURATION`: `i64::MAX` nanoseconds (about 292 years).
pub const INFINITY_DURATION: i64 = i64::MAX;

/// The state of one bandwidth: its exact token level and the time of its last refill.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BandwidthState {
    /// Tokens × refill period (see the module docs). May be negative after overdraft.
    pub(crate) level: i128,
    /// Nanoseconds; refills are credited from here.
    pub(crate) last_refill_nanos: i64,
}

impl BandwidthState {
    /// A fresh bandwidth created at `now`: initial tokens (adaptive if so configured) and, for an
    /// aligned refill, the last refill one period before the first.
    pub(crate) fn initial(bandwidth: &Bandwidth, now: i64) -> Self {
        let period = bandwidth.refill.period_nanos;
        let tokens = initial_tokens(bandwidth, now);
        let last_refill_nanos = match bandwidth.refill.kind {
            // first_refill >= 0 and period > 0, so this cannot overflow.
            RefillKind::IntervallyAligned { first_refill_nanos, .. } => first_refill_nanos - period,
            _ => now,
        };
        BandwidthState { level: tokens as i128 * period as i128, last_refill_nanos }
    }

    /// Builds a state from a level and a last refill time, as the codec and replacement do.
    pub(crate) fn from_parts(level: i128, last_refill_nanos: i64) -> Self {
        BandwidthState { level, last_refill_nanos }
    }

    /// Whole tokens available (floor), without refill.
    #[inline]
    pub(crate) fn tokens(&self, bandwidth: &Bandwidth) -> i64 {
        floor_div(self.level, bandwidth.refill.period_nanos) as i64
    }

    /// This state after crediting the refill due by `now`. Idempotent in time: refilling to `t1`
    /// and then to `t2` gives exactly the state of refilling to `t2` at once.
    #[inline]
    pub(crate) fn refilled(self, bandwidth: &Bandwidth, now: i64) -> Self {
        if now <= self.last_refill_nanos {
            return self; // a clock that went back, or has not moved, credits nothing
        }
        self.refilled_later(bandwidth, now)
    }

    /// [`refilled`](Self::refilled) at a `now` past the last refill. Out of line on wasm, where
    /// the npm package's millisecond clock puts most decisions within the millisecond of the
    /// last one and the call keeps every export small. Inlined natively, where `cargo bench`
    /// measured the call: out of line, `try_consume` took 4.9 ns against 3.0 inlined, and
    /// three bandwidths 16.6 against 11.3.
    #[cfg_attr(target_arch = "wasm32", inline(never))]
    #[cfg_attr(not(target_arch = "wasm32"), inline)]
    fn refilled_later(self, bandwidth: &Bandwidth, now: i64) -> Self {
        let refill = bandwidth.refill;
        // Both are i64, so the difference fits in u64.
        let mut elapsed = now.wrapping_sub(self.last_refill_nanos) as u64;
        if refill.is_intervally() {
            elapsed -= elapsed % refill.period_nanos as u64;
            if elapsed == 0 {
                return self;
            }
        }
        let last_refill_nanos = self.last_refill_nanos.wrapping_add(elapsed as i64);
        let capacity = bandwidth.scaled_capacity();
        if self.level >= capacity {
            // Full, or overfilled by force: nothing to credit, but time moves on.
            return BandwidthState { level: self.level, last_refill_nanos };
        }
        let room = (capacity - self.level) as u128;
        // Refill tokens are positive: widening through u64 spares the sign extension.
        let credit = widening_mul(refill.tokens as u64, elapsed); // < 2^63 × 2^64
        let level = if credit >= room { capacity } else { self.level + credit as i128 };
        BandwidthState { level, last_refill_nanos }
    }

    /// True when at least `tokens` whole tokens are available.
    #[inline]
    pub(crate) fn has(&self, bandwidth: &Bandwidth, tokens: i64) -> bool {
        self.level >= scaled(tokens, bandwidth)
    }

    /// Nanoseconds from `now` (this state refilled to it) until forgetting this bandwidth would
    /// grant nothing: it holds its capacity and at least its initial tokens, so a fresh one would
    /// start with no more. [`INFINITY_DURATION`] when refill cannot get there: initial tokens
    /// above capacity, partly spent, come back only up to capacity. Idle expiry waits for this.
    pub(crate) fn nanos_until_forgettable(&self, bandwidth: &Bandwidth, now: i64) -> i64 {
        let initial = bandwidth.initial_tokens();
        if initial > bandwidth.capacity && !self.has(bandwidth, initial) {
            return INFINITY_DURATION;
        }
        self.nanos_until(bandwidth, bandwidth.capacity, now)
    }

    /// Removes `tokens`; the caller guarantees the token count stays within `i64`.
    #[inline]
    pub(crate) fn debit(&mut self, bandwidth: &Bandwidth, tokens: i64) {
        self.level -= scaled(tokens, bandwidth);
    }

    /// Nanoseconds from `now` until `tokens` whole tokens are available, assuming nothing else is
    /// consumed; [`INFINITY_DURATION`] if that is not representable. Never early: at `now` plus
    /// the returned wait the tokens are there (Bucket4j rounds greedy waits down, which can
    /// report a wait 1 ns too short, and ignores a clock that is behind the last refill).
    ///
    /// Capacity is not considered: a reservation beyond capacity is a debt repaid by refill.
    pub(crate) fn nanos_until(&self, bandwidth: &Bandwidth, tokens: i64, now: i64) -> i64 {
        let needed = scaled(tokens, bandwidth);
        if self.level >= needed {
            return 0;
        }
        let refill = bandwidth.refill;
        let wait = if refill.is_intervally() {
            // Only whole refills count: whole periods from the last refill.
            let deficit = tokens as i128 - floor_div(self.level, refill.period_nanos);
            let periods = ceil_div(deficit as u128, refill.tokens as u128) as i128;
            let until_last = self.last_refill_nanos as i128 - now as i128;
            periods.saturating_mul(refill.period_nanos as i128).saturating_add(until_last)
        } else {
            // Smallest t with level + refill_tokens × t >= needed, counted from the last refill:
            // when the clock is behind it (it went back), nothing accrues before it.
            let accrual = ceil_div((needed - self.level) as u128, refill.tokens as u128).min(i128::MAX as u128) as i128;
            let not_before = (self.last_refill_nanos as i128 - now as i128).max(0);
            accrual.saturating_add(not_before)
        };
        clamp_wait(wait)
    }
}

/// `tokens` (at least 0) in the level's unit. Counts, capacities and periods are validated
/// positive, so the product is unsigned: one multiplication, no sign extension.
#[inline]
pub(crate) fn scaled(tokens: i64, bandwidth: &Bandwidth) -> i128 {
    debug_assert!(tokens >= 0);
    widening_mul(tokens as u64, bandwidth.refill.period_nanos as u64) as i128
}

/// `a × b` exactly. x86-64 and AArch64 multiply 64×64→128 bits in one instruction; wasm has no
/// such multiply and calls a library routine (`__multi3`, an eighth of a keyed decision's time in
/// a profile), so there a product that fits in 64 bits takes one 64-bit multiplication instead.
#[inline]
pub(crate) fn widening_mul(a: u64, b: u64) -> u128 {
    #[cfg(target_arch = "wasm32")]
    if a.leading_zeros() + b.leading_zeros() >= u64::BITS {
        return (a * b) as u128; // at most 64 significant bits in all
    }
    a as u128 * b as u128
}

/// Initial tokens at `now`, applying adaptive initial tokens (Bucket4j's formula, exact).
fn initial_tokens(bandwidth: &Bandwidth, now: i64) -> i64 {
    let RefillKind::IntervallyAligned { first_refill_nanos, adaptive_initial_tokens: true } = bandwidth.refill.kind
    else {
        return bandwidth.initial_tokens();
    };
    if now >= first_refill_nanos {
        return bandwidth.initial_tokens();
    }
    let refill = bandwidth.refill;
    let guaranteed = (bandwidth.capacity - refill.tokens).max(0) as i128;
    let until_first = first_refill_nanos as i128 - now as i128; // < 2^64
    let earned = until_first * refill.tokens as i128 / refill.period_nanos as i128;
    (guaranteed + earned).min(bandwidth.capacity as i128) as i64
}

/// `floor(level / period)`; the division is 64-bit whenever the level fits, as it usually does.
#[inline]
pub(crate) fn floor_div(level: i128, period: i64) -> i128 {
    match i64::try_from(level) {
        Ok(small) => small.div_euclid(period) as i128,
        Err(_) => level.div_euclid(period as i128),
    }
}

/// `ceil(a / b)` for `b > 0`.
#[inline]
pub(crate) fn ceil_div(a: u128, b: u128) -> u128 {
    // A 64-bit division is several times cheaper than the 128-bit library routine.
    if let (Ok(a), Ok(b)) = (u64::try_from(a), u64::try_from(b)) {
        return a.div_ceil(b) as u128;
    }
    a.div_ceil(b)
}

/// A wait in nanoseconds, or [`INFINITY_DURATION`] when it does not fit.
#[inline]
pub(crate) fn clamp_wait(wait: i128) -> i64 {
    if wait >= INFINITY_DURATION as i128 {
        INFINITY_DURATION
    } else {
        wait.max(0) as i64
    }
}

#[cfg(test)]
mod tests {
    use super::widening_mul;

    /// Natively this checks the plain path only: wasm's fast path is compiled out here, and is
    /// checked by `tests/wasm` (`scaled_counts_are_exact_on_both_sides_of_64_bits`).
    #[test]
    fn widening_mul_is_exact_at_the_edges() {
        let edges =
            [0, 1, 2, 3, u32::MAX as u64, u32::MAX as u64 + 1, 1 << 40, i64::MAX as u64, u64::MAX - 1, u64::MAX];
        for a in edges {
            for b in edges {
                assert_eq!(widening_mul(a, b), a as u128 * b as u128, "{a} × {b}");
            }
        }
    }
}
