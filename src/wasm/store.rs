//! The keyed store for JS: the core's [`BucketStore`] with a [`Clock`].
//!
//! Keys arrive as bytes JS wrote into the [`exchange`](super::exchange); operations return a
//! status, [`STATUS_NEEDS_CONFIGURATION`] when the key needs a configuration from the JS
//! supplier (JS then calls [`RawStore::supply`] and repeats the operation).

use std::time::Duration;

use wasm_bindgen::prelude::*;

use super::configuration::{strategy, RawConfiguration};
use super::errors::{leave, BindingError};
use super::exchange::{
    integer, put, put_nanos, with_key, ARG_TOKENS, STATUS_ERROR, STATUS_FALSE, STATUS_NEEDS_CONFIGURATION, STATUS_TRUE,
};
use super::time::{duration_nanos, Clock};
use crate::core::store::{KEY_SPACE_BYTES, MAX_KEY_BYTES};
use crate::{BucketStore, StoreOptions, TokensInheritanceStrategy};

/// A store held in wasm memory.
#[wasm_bindgen(js_name = RawStore)]
#[derive(Debug)]
pub struct RawStore {
    store: BucketStore,
    clock: Clock,
}

/// An operation's outcome as a status.
#[inline]
fn store_status(outcome: Result<Option<bool>, BindingError>) -> u32 {
    match outcome {
        Ok(Some(true)) => STATUS_TRUE,
        Ok(Some(false)) => STATUS_FALSE,
        Ok(None) => STATUS_NEEDS_CONFIGURATION,
        Err(error) => {
            leave(error);
            STATUS_ERROR
        }
    }
}

fn version_and_strategy(version: f64, strategy_name: &str) -> Result<(u64, TokensInheritanceStrategy), BindingError> {
    let strategy = strategy(strategy_name)?;
    let version = u64::try_from(integer(version, 0, "version")?)
        .map_err(|_| BindingError::InvalidArgument("version must not be negative".into()))?;
    Ok((version, strategy))
}

/// A random hash seed, a new one for each store: keys often come from clients, who should not
/// choose collisions. Public for the bindings' tests.
pub fn hash_seed() -> u64 {
    // crypto.getRandomValues is in every runtime the package supports (Node 20 and later,
    // browsers, workerd); should it fail, the non-cryptographic Math.random still varies the
    // seed between stores.
    getrandom::u64().unwrap_or_else(|_| (js_sys::Math::random() * 2f64.powi(53)) as u64)
}

/// `maxKeys` as a count wasm memory can address: 1 to `usize::MAX` (2^32 - 1 on wasm32).
fn key_cap(max_keys: i64) -> Result<usize, BindingError> {
    usize::try_from(max_keys).ok().filter(|&n| n >= 1).ok_or_else(|| {
        BindingError::InvalidArgument(format!("maxKeys must be from 1 to {} or Infinity, got {max_keys}", usize::MAX))
    })
}

/// `maxKeyBytes`: 64 KiB to 4 GiB ([`KEY_SPACE_BYTES`]), which the core rounds up to whole 64 KiB chunks.
fn key_bytes_cap(max_key_bytes: f64) -> Result<u64, BindingError> {
    let bytes = integer(max_key_bytes, 0, "maxKeyBytes")?;
    u64::try_from(bytes).ok().filter(|n| (MAX_KEY_BYTES as u64 + 1..=KEY_SPACE_BYTES).contains(n)).ok_or_else(|| {
        let min = MAX_KEY_BYTES + 1;
        BindingError::InvalidArgument(format!("maxKeyBytes must be from {min} to {KEY_SPACE_BYTES}, got {bytes}"))
    })
}

#[wasm_bindgen(js_class = RawStore)]
impl RawStore {
    /// An empty store of at most `max_keys` keys (`Infinity`: no cap) and `max_key_bytes` of
    /// key bytes, whose keys are kept `idle_grace` (a duration) after they are full again; times
    /// as for [`RawBucket::new`](super::bucket::RawBucket::new).
    #[wasm_bindgen(constructor)]
    pub fn new(
        max_keys: f64,
        max_key_bytes: f64,
        idle_grace: JsValue,
        unit_is_millis: bool,
        origin_millis: f64,
    ) -> Result<RawStore, JsValue> {
        let max_keys = if max_keys == f64::INFINITY { usize::MAX } else { key_cap(integer(max_keys, 0, "maxKeys")?)? };
        let max_key_bytes = key_bytes_cap(max_key_bytes)?;
        let idle_grace = Duration::from_nanos(duration_nanos(idle_grace)? as u64);
        let options = StoreOptions { max_keys, idle_grace, max_key_bytes, hash_seed: hash_seed() };
        let store = BucketStore::new(options).map_err(BindingError::from)?;
        Ok(RawStore { store, clock: Clock::new(unit_is_millis, origin_millis)? })
    }

    /// Gives every new and outdated key `configuration`; sets the version and the strategy.
    #[wasm_bindgen(js_name = configureDefault)]
    pub fn configure_default(
        &mut self,
        configuration: &RawConfiguration,
        version: f64,
        strategy_name: &str,
    ) -> Result<(), JsValue> {
        let (version, strategy) = version_and_strategy(version, strategy_name)?;
        self.store.configure(Some(configuration.configuration.clone()), version, strategy);
        Ok(())
    }

    /// Has new and outdated keys ask for their configuration ([`STATUS_NEEDS_CONFIGURATION`]);
    /// sets the version and the strategy.
    #[wasm_bindgen(js_name = configureSupplied)]
    pub fn configure_supplied(&mut self, version: f64, strategy_name: &str) -> Result<(), JsValue> {
        let (version, strategy) = version_and_strategy(version, strategy_name)?;
        self.store.configure(None, version, strategy);
        Ok(())
    }

    /// `tryConsume` on the key of `key_len` bytes in the exchange.
    #[wasm_bindgen(js_name = tryConsume)]
    pub fn try_consume(&mut self, key_len: u32, tokens: f64, now: f64) -> u32 {
        store_status((|| {
            let (tokens, now) = (integer(tokens, ARG_TOKENS, "tokens")?, self.clock.nanos(now)?);
            Ok(with_key(key_len, |key| self.store.try_consume(key, tokens, now))?)
        })())
    }

    /// `tryConsumeAndReturnRemaining`: slots as [`RawBucket`](super::bucket::RawBucket)'s.
    #[wasm_bindgen(js_name = tryConsumeAndReturnRemaining)]
    pub fn try_consume_and_return_remaining(&mut self, key_len: u32, tokens: f64, now: f64) -> u32 {
        store_status((|| {
            let (tokens, now) = (integer(tokens, ARG_TOKENS, "tokens")?, self.clock.nanos(now)?);
            let probe = with_key(key_len, |key| self.store.try_consume_and_return_remaining(key, tokens, now))?;
            Ok(probe.map(|probe| {
                put(0, probe.remaining_tokens);
                put_nanos(1, probe.nanos_to_wait_for_refill);
                put_nanos(2, probe.nanos_to_wait_for_reset);
                probe.consumed
            }))
        })())
    }

    /// `estimateAbilityToConsume`: slots as [`RawBucket`](super::bucket::RawBucket)'s.
    #[wasm_bindgen(js_name = estimateAbilityToConsume)]
    pub fn estimate_ability_to_consume(&mut self, key_len: u32, tokens: f64, now: f64) -> u32 {
        store_status((|| {
            let (tokens, now) = (integer(tokens, ARG_TOKENS, "tokens")?, self.clock.nanos(now)?);
            let probe = with_key(key_len, |key| self.store.estimate_ability_to_consume(key, tokens, now))?;
            Ok(probe.map(|probe| {
                put(0, probe.remaining_tokens);
                put_nanos(1, probe.nanos_to_wait_for_refill);
                probe.can_be_consumed
            }))
        })())
    }

    /// `getAvailableTokens`: slot 0.
    #[wasm_bindgen(js_name = getAvailableTokens)]
    pub fn get_available_tokens(&mut self, key_len: u32, now: f64) -> u32 {
        store_status((|| {
            let now = self.clock.nanos(now)?;
            let available = with_key(key_len, |key| self.store.get_available_tokens(key, now))?;
            Ok(available.map(|tokens| {
                put(0, tokens);
                true
            }))
        })())
    }

    /// Gives the key the configuration an operation asked for.
    pub fn supply(&mut self, key_len: u32, configuration: &RawConfiguration, now: f64) -> Result<(), JsValue> {
        let now = self.clock.nanos(now)?;
        with_key(key_len, |key| self.store.supply(key, &configuration.configuration, now))
            .map_err(|e| BindingError::from(e).into())
    }

    /// Drops the key; whether it was held.
    pub fn remove(&mut self, key_len: u32) -> bool {
        with_key(key_len, |key| self.store.remove(key))
    }

    /// Whether the key is held.
    pub fn has(&self, key_len: u32) -> bool {
        with_key(key_len, |key| self.store.contains_key(key))
    }

    /// Drops every expired key; how many.
    #[wasm_bindgen(js_name = removeExpired)]
    pub fn remove_expired(&mut self, now: f64) -> Result<f64, JsValue> {
        let now = self.clock.nanos(now)?;
        Ok(self.store.remove_expired(now) as f64)
    }

    /// Drops every key.
    pub fn clear(&mut self) {
        self.store.clear();
    }

    /// Keys held.
    #[wasm_bindgen(getter)]
    pub fn size(&self) -> f64 {
        self.store.len() as f64
    }
}
