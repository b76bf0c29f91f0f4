//! Property tests of the keyed store: a key behaves exactly like a standalone `TokenBucket`.
//!
//! The model is a map of `TokenBucket`s and follows the store's documented rules, written with
//! the public bucket API only: a key the store no longer holds (evicted, or swept because it
//! was expired, that is full with at least its initial tokens) starts afresh; a key of an older
//! version gets the current configuration by `replace_configuration`, or starts afresh if it
//! was expired.

use std::collections::HashMap;
use std::time::Duration;

use edgebucket::{
    Bandwidth, BucketConfiguration, BucketStore, Error, StoreOptions, TokenBucket, TokensInheritanceStrategy as Inherit,
};
use proptest::prelude::*;

const MS: i64 = 1_000_000;

#[derive(Debug, Clone)]
enum Op {
    TryConsume(u8, i64),
    Probe(u8, i64),
    Estimate(u8, i64),
    Available(u8),
    Remove(u8),
    Clear,
    /// Next configuration of the pool, a new version, this strategy.
    Reconfigure(Inherit),
}

fn bandwidth() -> impl Strategy<Value = Bandwidth> {
    (1i64..20, 1i64..10, 1u64..2000, any::<bool>(), proptest::option::of(0i64..25)).prop_map(
        |(capacity, tokens, period_ms, greedy, initial)| {
            let period = Duration::from_millis(period_ms);
            let builder = Bandwidth::builder().capacity(capacity);
            let builder =
                if greedy { builder.refill_greedy(tokens, period) } else { builder.refill_intervally(tokens, period) };
            match initial {
                Some(initial) => builder.initial_tokens(initial).build().unwrap(),
                None => builder.build().unwrap(),
            }
        },
    )
}

fn configuration() -> impl Strategy<Value = BucketConfiguration> {
    proptest::collection::vec(bandwidth(), 1..5).prop_map(|b| BucketConfiguration::new(b).unwrap())
}

fn strategy() -> impl Strategy<Value = Inherit> {
    prop_oneof![Just(Inherit::Reset), Just(Inherit::Proportionally), Just(Inherit::AsIs), Just(Inherit::Additive)]
}

/// Keys in play: 0 to 5.
const KEYS: usize = 6;

fn op() -> impl Strategy<Value = Op> {
    let key = 0u8..KEYS as u8;
    prop_oneof![
        4 => (key.clone(), 1i64..12).prop_map(|(k, n)| Op::TryConsume(k, n)),
        2 => (key.clone(), 1i64..12).prop_map(|(k, n)| Op::Probe(k, n)),
        2 => (key.clone(), 1i64..12).prop_map(|(k, n)| Op::Estimate(k, n)),
        2 => key.clone().prop_map(Op::Available),
        1 => key.prop_map(Op::Remove),
        1 => Just(Op::Clear),
        1 => strategy().prop_map(Op::Reconfigure),
    ]
}

struct Model {
    buckets: HashMap<u8, (TokenBucket, u64)>,
    pool: Vec<BucketConfiguration>,
    version: u64,
    strategy: Inherit,
}

impl Model {
    fn current(&self) -> BucketConfiguration {
        self.pool[self.version as usize % self.pool.len()].clone()
    }

    /// The bucket `key` has at `now` under the store's rules. A key the store no longer holds
    /// starts afresh; without eviction (`may_evict` false) it must have been dropped as expired,
    /// so its bucket must be full.
    fn bucket(&mut self, key: u8, held: bool, may_evict: bool, now: i64) -> Result<&mut TokenBucket, TestCaseError> {
        if !held {
            if let Some((dropped, _)) = self.buckets.remove(&key) {
                prop_assert!(
                    may_evict || dropped.nanos_until_forgettable(now) == 0,
                    "dropped key {} was not expired",
                    key
                );
            }
        }
        let (current, version, strategy) = (self.current(), self.version, self.strategy);
        let entry = self.buckets.entry(key).or_insert_with(|| (TokenBucket::new(current.clone(), now), version));
        if entry.1 < version {
            if entry.0.nanos_until_forgettable(now) == 0 {
                *entry = (TokenBucket::new(current, now), version);
            } else {
                entry.0.replace_configuration(current, strategy, now).unwrap();
                entry.1 = version;
            }
        }
        Ok(&mut entry.0)
    }
}

/// How a run's store is set up.
#[derive(Debug, Clone, Copy)]
struct Setup {
    max_keys: usize,
    /// No default configuration: the test supplies one whenever the store asks (`supply`).
    supplied: bool,
    /// Key 5 is 65,530 bytes in a key space of 65,536, so it and the short keys cannot all be
    /// held: a new key may be refused with `KEY_SPACE_FULL`, a held key never.
    long_key: bool,
}

impl Setup {
    fn key(&self, k: u8) -> Vec<u8> {
        if self.long_key && k == 5 {
            vec![b'L'; 65_530]
        } else {
            vec![b'k', k]
        }
    }

    /// Key `k`, and whether the store holds it.
    fn lookup(&self, store: &BucketStore, k: u8) -> (Vec<u8>, bool) {
        let key = self.key(k);
        let held = store.contains_key(&key);
        (key, held)
    }
}

/// `op` on the store; a key the store asks a configuration for gets `current`, then `op` again.
fn ask<T>(
    store: &mut BucketStore,
    key: &[u8],
    current: &BucketConfiguration,
    now: i64,
    mut op: impl FnMut(&mut BucketStore) -> Result<Option<T>, Error>,
) -> Result<Option<T>, Error> {
    match op(store)? {
        None => {
            store.supply(key, current, now)?;
            op(store)
        }
        answer => Ok(answer),
    }
}

/// The store's answer against the model's. A refused key must be a new one refused for room;
/// the model then forgets the bucket it made for it.
fn settle<T: PartialEq + std::fmt::Debug>(
    answer: Result<Option<T>, Error>,
    expected: T,
    held: bool,
    model: &mut Model,
    k: u8,
) -> Result<(), TestCaseError> {
    match answer {
        Ok(answer) => prop_assert_eq!(answer, Some(expected)),
        Err(error) => {
            prop_assert!(!held && error.code() == "KEY_SPACE_FULL", "key {} (held: {}): {}", k, held, error);
            model.buckets.remove(&k);
        }
    }
    Ok(())
}

fn run(pool: Vec<BucketConfiguration>, setup: Setup, steps: Vec<(i64, Op)>) -> Result<(), TestCaseError> {
    let max_key_bytes = if setup.long_key { 65_536 } else { StoreOptions::default().max_key_bytes };
    let options = StoreOptions { max_keys: setup.max_keys, max_key_bytes, hash_seed: 7, ..StoreOptions::default() };
    let mut store = BucketStore::new(options).unwrap();
    let default = |configuration: BucketConfiguration| (!setup.supplied).then_some(configuration);
    store.configure(default(pool[0].clone()), 0, Inherit::Reset);
    let mut model = Model { buckets: HashMap::new(), pool, version: 0, strategy: Inherit::Reset };
    let may_evict = setup.max_keys < KEYS;
    let mut now = 0;
    for (step, op) in steps {
        now += step;
        let current = model.current();
        match op {
            Op::Reconfigure(strategy) => {
                model.version += 1;
                model.strategy = strategy;
                store.configure(default(model.current()), model.version, strategy);
            }
            Op::Clear => {
                store.clear();
                model.buckets.clear();
                prop_assert_eq!(store.len(), 0);
            }
            Op::Remove(k) => {
                let (key, held) = setup.lookup(&store, k);
                prop_assert_eq!(store.remove(&key), held);
                model.buckets.remove(&k);
            }
            Op::TryConsume(k, n) => {
                let (key, held) = setup.lookup(&store, k);
                let expected = model.bucket(k, held, may_evict, now)?.try_consume(n, now).unwrap();
                let answer = ask(&mut store, &key, &current, now, |s| s.try_consume(&key, n, now));
                settle(answer, expected, held, &mut model, k)?;
            }
            Op::Probe(k, n) => {
                let (key, held) = setup.lookup(&store, k);
                let expected = model.bucket(k, held, may_evict, now)?.try_consume_and_return_remaining(n, now).unwrap();
                let answer = ask(&mut store, &key, &current, now, |s| s.try_consume_and_return_remaining(&key, n, now));
                settle(answer, expected, held, &mut model, k)?;
            }
            Op::Estimate(k, n) => {
                let (key, held) = setup.lookup(&store, k);
                let expected = model.bucket(k, held, may_evict, now)?.estimate_ability_to_consume(n, now).unwrap();
                let answer = ask(&mut store, &key, &current, now, |s| s.estimate_ability_to_consume(&key, n, now));
                settle(answer, expected, held, &mut model, k)?;
            }
            Op::Available(k) => {
                let (key, held) = setup.lookup(&store, k);
                let expected = model.bucket(k, held, may_evict, now)?.get_available_tokens(now);
                let answer = ask(&mut store, &key, &current, now, |s| s.get_available_tokens(&key, now));
                settle(answer, expected, held, &mut model, k)?;
            }
        }
        prop_assert!(store.len() <= setup.max_keys);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    /// Any configurations, eviction, expiry and replacement: the store follows the model.
    #[test]
    fn a_key_behaves_like_a_token_bucket(
        pool in proptest::collection::vec(configuration(), 1..4),
        max_keys in 1usize..8,
        steps in proptest::collection::vec((0i64..1500 * MS, op()), 1..60),
    ) {
        run(pool, Setup { max_keys, supplied: false, long_key: false }, steps)?;
    }

    /// The same with every configuration supplied per key, and a key space too small for all
    /// the keys: a held key is never refused, a refused new key changes nothing.
    #[test]
    fn supplied_keys_in_a_full_key_space_behave_like_token_buckets(
        pool in proptest::collection::vec(configuration(), 1..4),
        max_keys in 1usize..8,
        supplied in any::<bool>(),
        steps in proptest::collection::vec((0i64..1500 * MS, op()), 1..60),
    ) {
        run(pool, Setup { max_keys, supplied, long_key: true }, steps)?;
    }

    /// With greedy refill, initial tokens at capacity and no eviction, expiry is unobservable:
    /// a key behaves like a bucket that is never dropped.
    #[test]
    fn expiry_of_a_greedy_full_bucket_is_unobservable(
        capacity in 1i64..20,
        tokens in 1i64..10,
        period_ms in 1u64..2000,
        steps in proptest::collection::vec((0u8..3, 0i64..1500 * MS, 1i64..12), 1..80),
    ) {
        let limit = Bandwidth::builder().capacity(capacity).refill_greedy(tokens, Duration::from_millis(period_ms));
        let config = BucketConfiguration::builder().add_limit(limit.build().unwrap()).build().unwrap();
        let mut store = BucketStore::new(StoreOptions::default()).unwrap();
        store.configure(Some(config.clone()), 0, Inherit::Reset);
        let mut buckets: HashMap<u8, TokenBucket> = HashMap::new();
        let mut now = 0;
        for (k, step, n) in steps {
            now += step;
            let bucket = buckets.entry(k).or_insert_with(|| TokenBucket::new(config.clone(), now));
            let expected = bucket.try_consume_and_return_remaining(n, now).unwrap();
            prop_assert_eq!(store.try_consume_and_return_remaining(&[k], n, now).unwrap(), Some(expected));
        }
    }
}

/// A store whose keys get one bandwidth of `capacity`, refilling a token a minute; the tests
/// using it decide at time 0, so nothing refills.
fn slow_store(capacity: i64, options: StoreOptions) -> BucketStore {
    let limit = Bandwidth::builder().capacity(capacity).refill_greedy(1, Duration::from_secs(60)).build().unwrap();
    let config = BucketConfiguration::builder().add_limit(limit).build().unwrap();
    let mut store = BucketStore::new(options).unwrap();
    store.configure(Some(config), 0, Inherit::Reset);
    store
}

#[test]
fn many_keys_stay_distinct() {
    let mut store = slow_store(3, StoreOptions { max_keys: 200_000, ..StoreOptions::default() });
    for i in 0..100_000u32 {
        assert_eq!(store.try_consume(format!("user:{i}").as_bytes(), 1 + i64::from(i % 3), 0).unwrap(), Some(true));
    }
    assert_eq!(store.len(), 100_000);
    for i in 0..100_000u32 {
        let left = store.get_available_tokens(format!("user:{i}").as_bytes(), 0).unwrap();
        assert_eq!(left, Some(2 - i64::from(i % 3)), "key {i}");
    }
}

#[test]
fn keys_that_fill_the_key_arena_exactly_then_an_empty_key() {
    // 32-byte keys fill a 64 KiB chunk of the key arena exactly; an empty key right after must
    // neither panic nor alias another key.
    let mut store = slow_store(5, StoreOptions::default());
    let key = |i: u32| format!("{i:032}").into_bytes();
    for i in 0..2048 {
        assert_eq!(store.try_consume(&key(i), 1, 0).unwrap(), Some(true));
    }
    assert_eq!(store.try_consume(b"", 3, 0).unwrap(), Some(true));
    assert_eq!(store.try_consume(b"", 3, 0).unwrap(), Some(false), "the empty key keeps its own bucket");
    assert_eq!(store.try_consume(&key(2048), 5, 0).unwrap(), Some(true));
    assert_eq!(store.get_available_tokens(b"", 0).unwrap(), Some(2));
    assert_eq!(store.get_available_tokens(&key(0), 0).unwrap(), Some(4));
    assert_eq!(store.len(), 2050);
}

#[test]
fn keys_inserted_after_clear_stay_distinct() {
    let mut store = slow_store(5, StoreOptions::default());
    for k in [b"a", b"b", b"c", b"d", b"e"] {
        store.try_consume(k, 1, 0).unwrap();
    }
    store.remove(b"d");
    store.clear();
    for i in 0..6i64 {
        assert_eq!(store.try_consume(format!("k{i}").as_bytes(), 1 + i % 5, 0).unwrap(), Some(true));
    }
    for i in 0..6i64 {
        let left = store.get_available_tokens(format!("k{i}").as_bytes(), 0).unwrap();
        assert_eq!(left, Some(4 - i % 5), "k{i}");
    }
    assert_eq!(store.len(), 6);
}

#[test]
fn removed_keys_are_reclaimed_for_a_new_key_that_does_not_look_for_expired_ones() {
    // Eight slots and one refusal: the next new key skips the look for expired keys (one look
    // per two refusals), so only the compaction of removed keys' bytes lets it in.
    let mut store = slow_store(5, StoreOptions { max_key_bytes: 65_536, ..StoreOptions::default() });
    let key = |c: u8, len: usize| vec![c; len];
    for c in b'0'..b'8' {
        // 64,000 bytes in all
        assert_eq!(store.try_consume(&key(c, 8_000), 1, 0).unwrap(), Some(true));
    }
    assert_eq!(store.try_consume(&key(b'x', 9_000), 1, 0).unwrap_err().code(), "KEY_SPACE_FULL");
    assert!(store.remove(&key(b'0', 8_000))); // an eighth of the bytes held
    assert_eq!(store.try_consume(&key(b'x', 9_000), 1, 0), Ok(Some(true)));
    assert_eq!(store.len(), 8);
}
