//! One bucket for JS: the core's [`TokenBucket`] with the [`Clock`] its times are read in.
//!
//! Each method takes the time JS read (see [`time`](super::time)) and arguments as `f64`, and
//! returns a status; result numbers are left in the [`exchange`](super::exchange), in the slots
//! each method names.

use wasm_bindgen::prelude::*;

use super::configuration::{strategy, RawConfiguration};
use super::errors::BindingError;
use super::exchange::{integer, put, put_nanos, status, ARG_OWED, ARG_TOKENS, ARG_WAIT};
use super::time::Clock;
use crate::TokenBucket;

/// A bucket held in wasm memory.
#[wasm_bindgen(js_name = RawBucket)]
#[derive(Debug)]
pub struct RawBucket {
    bucket: TokenBucket,
    clock: Clock,
}

fn tokens(value: f64) -> Result<i64, BindingError> {
    integer(value, ARG_TOKENS, "tokens")
}

#[wasm_bindgen(js_class = RawBucket)]
impl RawBucket {
    /// A bucket created at `now`; times are milliseconds (`unit_is_millis`) or nanoseconds
    /// after `origin_millis`.
    #[wasm_bindgen(constructor)]
    pub fn new(
        configuration: &RawConfiguration,
        unit_is_millis: bool,
        origin_millis: f64,
        now: f64,
    ) -> Result<RawBucket, JsValue> {
        let clock = Clock::new(unit_is_millis, origin_millis)?;
        let now = clock.nanos(now)?;
        Ok(RawBucket { bucket: TokenBucket::new(configuration.configuration.clone(), now), clock })
    }

    /// `tryConsume`: status true or false.
    #[wasm_bindgen(js_name = tryConsume)]
    pub fn try_consume(&mut self, tokens: f64, now: f64) -> u32 {
        status(self.try_consume_inner(tokens, now))
    }

    #[inline]
    fn try_consume_inner(&mut self, tokens: f64, now: f64) -> Result<bool, BindingError> {
        let tokens = self::tokens(tokens)?;
        Ok(self.bucket.try_consume(tokens, self.clock.nanos(now)?)?)
    }

    /// `tryConsumeAndReturnRemaining`: status consumed; slots remaining, wait for refill, wait for reset.
    #[wasm_bindgen(js_name = tryConsumeAndReturnRemaining)]
    pub fn try_consume_and_return_remaining(&mut self, tokens: f64, now: f64) -> u32 {
        status((|| {
            let tokens = self::tokens(tokens)?;
            let probe = self.bucket.try_consume_and_return_remaining(tokens, self.clock.nanos(now)?)?;
            put(0, probe.remaining_tokens);
            put_nanos(1, probe.nanos_to_wait_for_refill);
            put_nanos(2, probe.nanos_to_wait_for_reset);
            Ok(probe.consumed)
        })())
    }

    /// `estimateAbilityToConsume`: status can be consumed; slots remaining, wait for refill.
    #[wasm_bindgen(js_name = estimateAbilityToConsume)]
    pub fn estimate_ability_to_consume(&self, tokens: f64, now: f64) -> u32 {
        status((|| {
            let tokens = self::tokens(tokens)?;
            let probe = self.bucket.estimate_ability_to_consume(tokens, self.clock.nanos(now)?)?;
            put(0, probe.remaining_tokens);
            put_nanos(1, probe.nanos_to_wait_for_refill);
            Ok(probe.can_be_consumed)
        })())
    }

    /// `tryConsumeAsMuchAsPossible(limit?)`: `limit` NaN-free number or `Infinity` for no limit;
    /// slot 0 the tokens consumed.
    #[wasm_bindgen(js_name = tryConsumeAsMuchAsPossible)]
    pub fn try_consume_as_much_as_possible(&mut self, limit: f64, now: f64) -> u32 {
        status((|| {
            let now = self.clock.nanos(now)?;
            let consumed = if limit == f64::INFINITY {
                self.bucket.try_consume_as_much_as_possible(now)
            } else {
                let limit = integer(limit, ARG_TOKENS, "limit")?;
                self.bucket.try_consume_as_much_as_possible_up_to(limit, now)?
            };
            put(0, consumed);
            Ok(true)
        })())
    }

    /// `addTokens`.
    #[wasm_bindgen(js_name = addTokens)]
    pub fn add_tokens(&mut self, tokens: f64, now: f64) -> u32 {
        status((|| Ok(self.bucket.add_tokens(self::tokens(tokens)?, self.clock.nanos(now)?).map(|()| true)?))())
    }

    /// `forceAddTokens`.
    #[wasm_bindgen(js_name = forceAddTokens)]
    pub fn force_add_tokens(&mut self, tokens: f64, now: f64) -> u32 {
        status((|| Ok(self.bucket.force_add_tokens(self::tokens(tokens)?, self.clock.nanos(now)?).map(|()| true)?))())
    }

    /// Gives back `tokens` of a cancelled reservation while `still_owed` tokens of later ones
    /// keep waiting (see [`TokenBucket::return_reserved`]); the scheduler's abort.
    #[wasm_bindgen(js_name = returnReserved)]
    pub fn return_reserved(&mut self, tokens: f64, still_owed: f64, now: f64) -> u32 {
        status((|| {
            let tokens = self::tokens(tokens)?;
            let owed = integer(still_owed, ARG_OWED, "tokens still owed")?;
            let owed = u64::try_from(owed).map_err(|_| {
                BindingError::InvalidArgument(format!("tokens still owed must not be negative, got {owed}"))
            })?;
            Ok(self.bucket.return_reserved(tokens, owed, self.clock.nanos(now)?).map(|()| true)?)
        })())
    }

    /// `consumeIgnoringRateLimits`: slot 0 the nanoseconds of the violation.
    #[wasm_bindgen(js_name = consumeIgnoringRateLimits)]
    pub fn consume_ignoring_rate_limits(&mut self, tokens: f64, now: f64) -> u32 {
        status((|| {
            let tokens = self::tokens(tokens)?;
            put_nanos(0, self.bucket.consume_ignoring_rate_limits(tokens, self.clock.nanos(now)?)?);
            Ok(true)
        })())
    }

    /// `reserve`: status reserved (false: the wait would exceed `max_wait_nanos`, nothing changed);
    /// slot 0 the wait in nanoseconds.
    pub fn reserve(&mut self, tokens: f64, max_wait_nanos: f64, now: f64) -> u32 {
        status((|| {
            let tokens = self::tokens(tokens)?;
            let max_wait = if max_wait_nanos == f64::INFINITY {
                crate::INFINITY_DURATION
            } else {
                integer(max_wait_nanos, ARG_WAIT, "maximum wait")?
            };
            match self.bucket.reserve(tokens, max_wait, self.clock.nanos(now)?)? {
                Some(wait) => {
                    put_nanos(0, wait);
                    Ok(true)
                }
                None => Ok(false),
            }
        })())
    }

    /// `getAvailableTokens`: slot 0.
    #[wasm_bindgen(js_name = getAvailableTokens)]
    pub fn get_available_tokens(&self, now: f64) -> u32 {
        status(self.clock.nanos(now).map(|now| put(0, self.bucket.get_available_tokens(now))).map(|()| true))
    }

    /// `reset`.
    pub fn reset(&mut self, now: f64) -> u32 {
        status(self.clock.nanos(now).map(|now| self.bucket.reset(now)).map(|()| true))
    }

    /// `replaceConfiguration` with a strategy by name.
    #[wasm_bindgen(js_name = replaceConfiguration)]
    pub fn replace_configuration(
        &mut self,
        configuration: &RawConfiguration,
        strategy_name: &str,
        now: f64,
    ) -> Result<(), JsValue> {
        let strategy = strategy(strategy_name)?;
        let now = self.clock.nanos(now)?;
        self.bucket
            .replace_configuration(configuration.configuration.clone(), strategy, now)
            .map_err(|e| BindingError::from(e).into())
    }

    /// The configuration in force.
    pub fn configuration(&self) -> RawConfiguration {
        RawConfiguration { configuration: self.bucket.configuration().clone() }
    }

    /// Diagnostics: slots available tokens, nanoseconds to full refill; per bandwidth see
    /// [`RawBucket::diagnostic`].
    pub fn diagnostics(&self, now: f64) -> u32 {
        status(self.clock.nanos(now).map(|now| {
            let diagnostics = self.bucket.diagnostics(now);
            put(0, diagnostics.available_tokens);
            put_nanos(1, diagnostics.nanos_to_full_refill);
            true
        }))
    }

    /// Bandwidth `index` of the diagnostics: slots capacity, available tokens, nanoseconds to
    /// full refill.
    pub fn diagnostic(&self, index: u32, now: f64) -> u32 {
        status(self.clock.nanos(now).map(|now| {
            let diagnostics = self.bucket.diagnostics(now);
            let Some(bandwidth) = diagnostics.bandwidths.get(index as usize) else { return false };
            put(0, bandwidth.capacity);
            put(1, bandwidth.available_tokens);
            put_nanos(2, bandwidth.nanos_to_full_refill);
            true
        }))
    }
}
