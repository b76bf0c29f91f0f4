//! Many buckets by key, held compactly: Bucket4j's `ProxyManager` idea, in local memory.
//!
//! A [`BucketStore`] maps byte-string keys to buckets. Each key costs a 40-byte slot (the state
//! of a single-bandwidth bucket inline), its bytes in a shared arena and about 5–10 bytes of
//! hash index (hashbrown's `HashTable` of slot ids), so a million single-bandwidth keys fit in
//! well under 64 bytes per key plus their bytes. Configurations are held once and shared.
//!
//! - **Configurations** come from the store's default, or, when it has none, from the caller:
//!   an operation on a key without a configuration returns `Ok(None)`, the caller supplies one
//!   with [`BucketStore::supply`] and repeats the operation. So a configuration supplier is
//!   consulted only for new keys (and outdated ones), and never runs while the store is busy.
//! - **Implicit replacement by version** (Bucket4j's `withImplicitConfigurationReplacement`):
//!   [`BucketStore::configure`] sets a version and a [`TokensInheritanceStrategy`]; a key created
//!   under a lower version gets the current configuration on its next access, its tokens carried
//!   over by the strategy.
//! - **Idle expiry**: a key is expired once it has been full (every bandwidth at capacity) for
//!   the idle grace, that is at its last consumption attempt plus the time to refill to maximum
//!   plus the grace (Bucket4j's `basedOnTimeForRefillingBucketUpToMax`, from the last write). An
//!   attempt refused by a full bucket (more tokens than a capacity) starts the grace again where
//!   the refill is greedy (it writes the refill time; an intervally refill's time moves only at
//!   its refills); reads (available tokens, estimates) do not. As with a TTL in any store,
//!   expiry is eventual: an insertion's sweep (two slots per insertion), the CLOCK hand and
//!   [`BucketStore::remove_expired`] drop expired keys; until then a key keeps its bucket, and
//!   after it the key starts afresh. A full bucket is indistinguishable from a fresh one when
//!   its initial tokens are its capacity and its refill is greedy; otherwise expiry forgets what
//!   Bucket4j's expiry forgets (initial tokens below capacity, an intervally refill's phase). A
//!   fresh phase may refill sooner than the old one would have: a key that emptied an intervally
//!   bandwidth, expired and was recreated gets a full period's tokens again at the new phase's
//!   first refill, as in Bucket4j. Unlike Bucket4j, a key whose initial
//!   tokens exceed a capacity does not expire once it holds fewer than them: refill stops at
//!   capacity, and a fresh bucket would hand out the initial burst again after each idle period.
//! - **Size cap**: beyond `max_keys` an insertion evicts a key chosen by CLOCK (second chance):
//!   the first key under the hand that is expired or has not been used since the hand last
//!   passed. The operation that creates a key is not a use, so a key used once goes before a
//!   key in steady use: a flood of new keys (one per request, a client rotating keys) evicts its
//!   own, not a busy key that would start afresh with a full bucket. An unused key can go before
//!   an expired one further on (finding every expired key would cost a scan of the store). An
//!   evicted key starts afresh, so a cap that is too small loosens limits; size it for the
//!   working set.
//! - **Key bytes**: past [`StoreOptions::max_key_bytes`] a new key is refused with
//!   [`Error::KeySpaceFull`] instead, as the bytes of long keys are what a count does not bound.
//!
//! ```
//! use std::time::Duration;
//! use edgebucket::{Bandwidth, BucketConfiguration, BucketStore, StoreOptions};
//!
//! const MS: i64 = 1_000_000;
//! let per_second = BucketConfiguration::builder()
//!     .add_limit(Bandwidth::builder().capacity(2).refill_greedy(2, Duration::from_secs(1)).build()?)
//!     .build()?;
//! let mut store = BucketStore::new(StoreOptions::default())?;
//! store.configure(Some(per_second), 0, edgebucket::TokensInheritanceStrategy::AsIs);
//! assert_eq!(store.try_consume(b"alice", 2, 0)?, Some(true));
//! assert_eq!(store.try_consume(b"alice", 1, 0)?, Some(false));
//! assert_eq!(store.try_consume(b"bob", 1, 0)?, Some(true));
//! assert_eq!(store.try_consume(b"alice", 1, 500 * MS)?, Some(true));
//! assert_eq!(store.len(), 2);
//! # Ok::<(), edgebucket::Error>(())
//! ```

mod configurations;
mod key_arena;
mod key_hasher;
mod slots;

use std::time::Duration;

use hashbrown::HashTable;

use super::bandwidth::Bandwidth;
use super::configuration::BucketConfiguration;
use super::error::{Error, Result};
use super::probe::{ConsumptionProbe, EstimationProbe};
use super::replacement::{replace, TokensInheritanceStrategy};
use super::state::BandwidthState;
use super::token_bucket as ops;
use configurations::Configurations;
use key_arena::KeyArena;
pub use key_arena::{KEY_SPACE_BYTES, MAX_KEY_BYTES};
use key_hasher::KeyHasher;
use slots::{ExtraStates, PackedState, Slots};

/// How a [`BucketStore`] bounds itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreOptions {
    /// The most keys held; an insertion beyond it evicts one. At least 1. Default 1,000,000.
    pub max_keys: usize,
    /// How long a key is kept after its bucket is full again (and after its last consumption
    /// attempt). Default 0.
    pub idle_grace: Duration,
    /// The most bytes of keys held, removed keys' included until compaction reclaims them
    /// (once they outweigh the live keys' bytes, or, when a new key finds the space full, once
    /// they are an eighth of the bytes held), rounded up to whole 64 KiB chunks:
    /// from 64 KiB to [`KEY_SPACE_BYTES`] (4 GiB, the default). A key never spans two chunks, so
    /// long keys leave chunk tails unused (up to half the space for keys just over 32 KiB). Past
    /// it, unless dropping expired keys makes room, a new key is refused with [`Error::KeySpaceFull`]
    /// (existing keys carry on), where `max_keys` would evict: it bounds
    /// memory that long keys, which often come from clients, could otherwise take. On wasm32 all
    /// memory is 4 GiB, so the bindings default to less (1 GiB).
    pub max_key_bytes: u64,
    /// The secret every seed of the key hash comes from. Keys often come from clients, so
    /// hosts should pass a random one (the wasm bindings use `getrandom`): with a known secret,
    /// such as the default 0, keys that all collide can be computed in advance.
    pub hash_seed: u64,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions { max_keys: 1_000_000, idle_grace: Duration::ZERO, max_key_bytes: KEY_SPACE_BYTES, hash_seed: 0 }
    }
}

/// Buckets by key; see the [module docs](self).
#[derive(Debug)]
pub struct BucketStore {
    index: HashTable<u32>,
    hasher: KeyHasher,
    slots: Slots,
    keys: KeyArena,
    extra: ExtraStates,
    configurations: Configurations,
    /// The configuration new and outdated keys get without asking, and its entry.
    default: Option<u32>,
    version: u64,
    strategy: TokensInheritanceStrategy,
    max_keys: usize,
    idle_grace_nanos: i64,
    len: usize,
    clock_hand: u32,
    sweep_cursor: u32,
    /// New keys refused for want of key space (see [`BucketStore::make_room_for_key`]).
    refused_for_room: usize,
    /// Reused for buckets with several bandwidths, so operations never allocate.
    scratch: Vec<BandwidthState>,
}

impl BucketStore {
    /// An empty store with no configuration yet (see [`BucketStore::configure`]).
    ///
    /// # Errors
    /// [`Error::InvalidConfiguration`] when `max_keys` is 0 or `max_key_bytes` is outside
    /// 64 KiB to [`KEY_SPACE_BYTES`].
    pub fn new(options: StoreOptions) -> Result<Self> {
        if options.max_keys == 0 {
            return Err(Error::InvalidConfiguration { reason: "a store needs max_keys of at least 1".into() });
        }
        let keys = KeyArena::with_max_bytes(options.max_key_bytes).ok_or_else(|| Error::InvalidConfiguration {
            reason: format!("max_key_bytes must be from {} to {KEY_SPACE_BYTES}", MAX_KEY_BYTES + 1),
        })?;
        Ok(BucketStore {
            index: HashTable::new(),
            hasher: KeyHasher::new(options.hash_seed),
            slots: Slots::default(),
            keys,
            extra: ExtraStates::default(),
            configurations: Configurations::default(),
            default: None,
            version: 0,
            strategy: TokensInheritanceStrategy::Reset,
            max_keys: options.max_keys,
            idle_grace_nanos: i64::try_from(options.idle_grace.as_nanos()).unwrap_or(i64::MAX),
            len: 0,
            clock_hand: 0,
            sweep_cursor: 0,
            refused_for_room: 0,
            scratch: Vec::new(),
        })
    }

    /// Sets the default configuration (`None`: the caller supplies one per key) and the
    /// configuration version. Keys created under a lower version are brought to the current
    /// configuration on their next access, their tokens carried over by `strategy`.
    pub fn configure(
        &mut self,
        default: Option<BucketConfiguration>,
        version: u64,
        strategy: TokensInheritanceStrategy,
    ) {
        let entry = default.map(|configuration| self.configurations.acquire(&configuration, version));
        if let Some(old) = std::mem::replace(&mut self.default, entry) {
            self.configurations.release(old);
        }
        self.version = version;
        self.strategy = strategy;
    }

    /// Keys held, expired ones not yet dropped included.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when no key is held.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes of all keys held.
    pub fn key_bytes(&self) -> usize {
        self.keys.live_bytes()
    }

    /// [`TokenBucket::try_consume`](crate::TokenBucket::try_consume) on `key`'s bucket, created
    /// if need be. `Ok(None)`: the key needs a configuration ([`BucketStore::supply`]).
    ///
    /// # Errors
    /// [`Error::NonPositiveTokens`], [`Error::KeyTooLong`], [`Error::KeySpaceFull`] for a new key
    /// when the store's keys fill 4 GiB; nothing changes.
    pub fn try_consume(&mut self, key: &[u8], tokens: i64, now: i64) -> Result<Option<bool>> {
        ops::check_tokens(tokens)?;
        self.access(key, now, |b, s| ops::try_consume(b, s, tokens, now))
    }

    /// [`TokenBucket::try_consume_and_return_remaining`](crate::TokenBucket::try_consume_and_return_remaining)
    /// on `key`'s bucket; see [`BucketStore::try_consume`].
    ///
    /// # Errors
    /// As [`BucketStore::try_consume`].
    pub fn try_consume_and_return_remaining(
        &mut self,
        key: &[u8],
        tokens: i64,
        now: i64,
    ) -> Result<Option<ConsumptionProbe>> {
        ops::check_tokens(tokens)?;
        self.access(key, now, |b, s| ops::try_consume_and_return_remaining(b, s, tokens, now))
    }

    /// [`TokenBucket::estimate_ability_to_consume`](crate::TokenBucket::estimate_ability_to_consume)
    /// on `key`'s bucket (created if need be, as any access does); see [`BucketStore::try_consume`].
    ///
    /// # Errors
    /// As [`BucketStore::try_consume`].
    pub fn estimate_ability_to_consume(
        &mut self,
        key: &[u8],
        tokens: i64,
        now: i64,
    ) -> Result<Option<EstimationProbe>> {
        ops::check_tokens(tokens)?;
        self.access(key, now, |b, s| ops::estimate_ability_to_consume(b, s, tokens, now))
    }

    /// Whole tokens available in `key`'s bucket; see [`BucketStore::try_consume`].
    ///
    /// # Errors
    /// [`Error::KeyTooLong`], [`Error::KeySpaceFull`].
    pub fn get_available_tokens(&mut self, key: &[u8], now: i64) -> Result<Option<i64>> {
        self.access(key, now, |b, s| Ok(ops::available(b, s, now)))
    }

    /// Gives `key` the configuration an operation asked for: a missing (or expired) key is
    /// created with it; a key of an older version is replaced by it with the store's strategy.
    /// A key already current is left as it is.
    ///
    /// # Errors
    /// [`Error::KeyTooLong`], [`Error::KeySpaceFull`]; [`Error::TokensOverflow`] when the
    /// strategy cannot carry the tokens over. Nothing changes.
    pub fn supply(&mut self, key: &[u8], configuration: &BucketConfiguration, now: i64) -> Result<()> {
        check_key(key)?;
        let hash = self.hasher.hash(key);
        let found = self.find(hash, key);
        let entry = self.configurations.acquire(configuration, self.version);
        let outcome = match found {
            None => self.insert(hash, key, entry, now).map(|_| ()),
            // Started afresh where it is: removing and inserting it again could find the key
            // space full and lose a key the store held.
            Some(id) if self.is_expired(id, now) => {
                self.assign(id, entry, now, None);
                Ok(())
            }
            Some(id) if self.is_outdated(id) => self.replace(id, entry, now),
            Some(_) => Ok(()),
        };
        self.configurations.release(entry); // insert and replace took their own reference
        outcome
    }

    /// True when `key` is held (expired or not).
    pub fn contains_key(&self, key: &[u8]) -> bool {
        key.len() <= MAX_KEY_BYTES && self.find(self.hasher.hash(key), key).is_some()
    }

    /// Drops `key`; returns whether it was held.
    pub fn remove(&mut self, key: &[u8]) -> bool {
        if key.len() > MAX_KEY_BYTES {
            return false;
        }
        match self.find(self.hasher.hash(key), key) {
            Some(id) => {
                self.remove_slot(id);
                true
            }
            None => false,
        }
    }

    /// Drops every expired key; returns how many.
    pub fn remove_expired(&mut self, now: i64) -> usize {
        let before = self.len;
        for id in 0..self.slots.high_water() {
            if self.slots.get(id).is_live() {
                self.remove_if_expired(id, now);
            }
        }
        before - self.len
    }

    /// Drops every key (configurations and version stay).
    pub fn clear(&mut self) {
        for id in 0..self.slots.high_water() {
            let slot = *self.slots.get(id);
            if slot.is_live() {
                self.configurations.release(slot.configuration);
            }
        }
        self.index.clear();
        self.slots.clear();
        self.keys = self.keys.emptied(); // keeps max_key_bytes
        self.extra.clear();
        self.len = 0;
        self.clock_hand = 0;
        self.sweep_cursor = 0;
        self.refused_for_room = 0;
    }

    // --- access ---

    /// Runs `op` on `key`'s bucket after finding, creating, expiring or replacing it.
    #[inline]
    fn access<T>(
        &mut self,
        key: &[u8],
        now: i64,
        op: impl FnOnce(&[Bandwidth], &mut [BandwidthState]) -> Result<T>,
    ) -> Result<Option<T>> {
        check_key(key)?;
        let hash = self.hasher.hash(key);
        let id = match self.find(hash, key) {
            Some(id) if !self.is_outdated(id) => id,
            Some(id) => match self.refresh(id, now)? {
                Some(id) => id,
                None => return Ok(None),
            },
            None => match self.default {
                Some(entry) => self.insert(hash, key, entry, now)?,
                None => return Ok(None),
            },
        };
        self.run(id, op).map(Some)
    }

    /// Outdated `id` ready for use at `now`: replaced by the default configuration (started
    /// afresh if expired); without a default, `None` (the caller must supply). A current key is
    /// used as it is, expired or not: expiry is the sweeps' business, so the hot path refills
    /// once.
    fn refresh(&mut self, id: u32, now: i64) -> Result<Option<u32>> {
        let Some(entry) = self.default else { return Ok(None) };
        if self.is_expired(id, now) {
            self.assign(id, entry, now, None);
        } else {
            self.replace(id, entry, now)?;
        }
        Ok(Some(id))
    }

    #[inline]
    fn run<T>(&mut self, id: u32, op: impl FnOnce(&[Bandwidth], &mut [BandwidthState]) -> Result<T>) -> Result<T> {
        let BucketStore { slots, configurations, extra, scratch, .. } = self;
        let slot = slots.get_mut(id);
        slot.mark_used();
        let bandwidths = configurations.get(slot.configuration).0.bandwidths();
        if let [_] = bandwidths {
            let mut state = slot.first.unpack();
            let value = op(bandwidths, std::slice::from_mut(&mut state))?;
            slot.first = PackedState::pack(state);
            return Ok(value);
        }
        scratch.clear();
        scratch.push(slot.first.unpack());
        scratch.extend(extra.get(slot.extra, bandwidths.len() - 1).iter().map(|s| s.unpack()));
        let value = op(bandwidths, scratch)?;
        slot.first = PackedState::pack(scratch[0]);
        for (packed, state) in extra.get_mut(slot.extra, bandwidths.len() - 1).iter_mut().zip(&scratch[1..]) {
            *packed = PackedState::pack(*state);
        }
        Ok(value)
    }

    // --- lifecycle of a key ---

    #[inline]
    fn find(&self, hash: u64, key: &[u8]) -> Option<u32> {
        let (slots, keys) = (&self.slots, &self.keys);
        self.index
            .find(hash, |&id| {
                let slot = slots.get(id);
                slot.key_len as usize == key.len() && same_bytes(keys.get(slot.key, slot.key_len), key)
            })
            .copied()
    }

    /// Creates `key` with configuration `entry` at `now`, evicting one key at the cap.
    fn insert(&mut self, hash: u64, key: &[u8], entry: u32, now: i64) -> Result<u32> {
        self.make_room_for_key(key.len(), now)?;
        self.sweep_some(now);
        if self.len >= self.max_keys {
            self.evict(now);
        }
        let id = self.slots.allocate();
        let at = self.keys.insert(key);
        let slot = self.slots.get_mut(id);
        slot.key = at;
        slot.key_len = key.len() as u16; // checked against MAX_KEY_BYTES
        self.assign(id, entry, now, Some(0));
        let BucketStore { index, slots, keys, hasher, .. } = self;
        index.insert_unique(hash, id, |&other| {
            let slot = slots.get(other);
            hasher.hash(keys.get(slot.key, slot.key_len))
        });
        self.len += 1;
        Ok(id)
    }

    /// At `max_key_bytes`, removed keys' bytes included, expired keys are dropped if that makes
    /// room, and compaction reclaims removed keys' bytes if they are worth it; a key that still
    /// does not fit is refused, and nothing else changes.
    ///
    /// The sweeps of insertions cannot be relied on here: a refused key sweeps nothing, so a
    /// space full of keys that have all gone idle would refuse every new key for good. A look
    /// for expired keys visits every slot, so it runs for the first refusal and then once per
    /// `high_water / 8 + 1` refusals: on average a refusal visits no more than eight slots.
    fn make_room_for_key(&mut self, len: usize, now: i64) -> Result<()> {
        let slots = self.slots.high_water() as usize;
        if !self.keys.has_room(len) && self.refused_for_room.is_multiple_of(slots / 8 + 1) {
            self.drop_expired_for_room(len, now);
        }
        if !self.keys.has_room(len) && self.keys.worth_compacting() {
            self.compact_keys();
        }
        if self.keys.has_room(len) {
            Ok(())
        } else {
            self.refused_for_room = self.refused_for_room.wrapping_add(1);
            Err(Error::KeySpaceFull { max_bytes: self.keys.max_bytes() })
        }
    }

    /// Drops the expired keys if that makes compaction worth it (see
    /// [`KeyArena::worth_compacting`]) and the compacted keys then leave room for a key of `len`
    /// bytes, and only then: held, an expired key is answered as a fresh bucket would be, but
    /// dropped without making room it would meet the same full space on its next access and be
    /// refused.
    fn drop_expired_for_room(&mut self, len: usize, now: i64) {
        let slots = &self.slots;
        let key_len = |id: &u32| usize::from(slots.get(*id).key_len);
        let expired: Vec<u32> =
            (0..slots.high_water()).filter(|&id| slots.get(id).is_live() && self.is_expired(id, now)).collect();
        if !self.keys.worth_compacting_after_release(expired.iter().map(key_len).sum()) {
            return; // before sorting every key
        }
        let kept = self.live_in_arena_order().into_iter().filter(|id| expired.binary_search(id).is_err());
        if self.keys.fits_after_compacting(kept.map(|id| key_len(&id)), len) {
            for id in expired {
                self.release_slot(id); // one compaction below for them all, none in between
            }
            self.compact_keys();
        }
    }

    /// Gives slot `id` configuration `entry` and fresh states at `now`, or `states` if given.
    /// `old_len` is the number of bandwidths it had (`Some(0)` for a new slot; `None`: look).
    fn assign(&mut self, id: u32, entry: u32, now: i64, old_len: Option<usize>) {
        let bandwidths = self.configurations.get(entry).0.bandwidths();
        let states: Vec<BandwidthState> = bandwidths.iter().map(|b| BandwidthState::initial(b, now)).collect();
        self.assign_states(id, entry, &states, old_len);
    }

    fn assign_states(&mut self, id: u32, entry: u32, states: &[BandwidthState], old_len: Option<usize>) {
        let old = *self.slots.get(id);
        let old_len = old_len.unwrap_or_else(|| self.configurations.get(old.configuration).0.bandwidths().len());
        if old_len > 1 {
            self.extra.release(old.extra, old_len - 1);
        }
        self.configurations.retain(entry); // first: `entry` may be the old configuration
        if old_len > 0 {
            self.configurations.release(old.configuration);
        }
        let extra = if states.len() > 1 { self.extra.allocate(states.len() - 1) } else { 0 };
        for (packed, state) in self.extra.get_mut(extra, states.len() - 1).iter_mut().zip(&states[1..]) {
            *packed = PackedState::pack(*state);
        }
        let slot = self.slots.get_mut(id);
        slot.configuration = entry;
        slot.extra = extra;
        slot.first = PackedState::pack(states[0]);
    }

    /// Replaces `id`'s configuration by `entry`'s, carrying tokens over; nothing changes on error.
    fn replace(&mut self, id: u32, entry: u32, now: i64) -> Result<()> {
        let old = self.states(id);
        let old_bandwidths = self.configurations.get(self.slots.get(id).configuration).0.bandwidths();
        let refilled: Vec<BandwidthState> = old_bandwidths.iter().zip(&old).map(|(b, s)| s.refilled(b, now)).collect();
        let new_bandwidths = self.configurations.get(entry).0.bandwidths();
        let states = replace(old_bandwidths, &refilled, new_bandwidths, self.strategy, now)?;
        self.assign_states(id, entry, &states, None);
        Ok(())
    }

    /// Removes slot `id` and its key, compacting the keys once removed ones outweigh them.
    fn remove_slot(&mut self, id: u32) {
        self.release_slot(id);
        if self.keys.needs_compaction() {
            self.compact_keys();
        }
    }

    /// Removes slot `id`; its key's bytes stay in the arena as garbage until a compaction.
    fn release_slot(&mut self, id: u32) {
        let slot = *self.slots.get(id);
        if let Ok(found) = self.index.find_entry(self.hasher.hash(self.keys.get(slot.key, slot.key_len)), |&x| x == id)
        {
            found.remove();
        }
        let bandwidths = self.configurations.get(slot.configuration).0.bandwidths().len();
        if bandwidths > 1 {
            self.extra.release(slot.extra, bandwidths - 1);
        }
        self.configurations.release(slot.configuration);
        self.keys.release(slot.key_len);
        self.slots.release(id);
        self.len -= 1;
    }

    /// Slides the live keys toward the front of the arena, reclaiming removed keys' bytes.
    ///
    /// In the keys' arena order, not slot order (slot ids are reused): only then does a key
    /// never move later, which lets compaction work in place (see [`key_arena::Compaction`]).
    fn compact_keys(&mut self) {
        let live = self.live_in_arena_order();
        let mut compaction = self.keys.compaction();
        for id in live {
            let slot = self.slots.get_mut(id);
            slot.key = compaction.relocate(slot.key, slot.key_len);
        }
    }

    /// The live slots in the order compaction visits their keys: by position, then length. An
    /// empty key shares its position with the key inserted after it, and moved after that key
    /// it could need a chunk of its own.
    fn live_in_arena_order(&self) -> Vec<u32> {
        let slots = &self.slots;
        let mut live: Vec<u32> = (0..slots.high_water()).filter(|&id| slots.get(id).is_live()).collect();
        live.sort_unstable_by_key(|&id| (slots.get(id).key, slots.get(id).key_len));
        live
    }

    // --- expiry and eviction ---

    fn states(&self, id: u32) -> Vec<BandwidthState> {
        let slot = self.slots.get(id);
        let len = self.configurations.get(slot.configuration).0.bandwidths().len();
        let extra = self.extra.get(slot.extra, len - 1).iter().map(|s| s.unpack());
        std::iter::once(slot.first.unpack()).chain(extra).collect()
    }

    #[inline]
    fn is_outdated(&self, id: u32) -> bool {
        self.configurations.get(self.slots.get(id).configuration).1 < self.version
    }

    /// Full since at least the idle grace: refilled to `now - grace`, every bandwidth is at
    /// capacity and at its initial tokens, so a fresh bucket would grant nothing more. A last
    /// refill after `now - grace` (a consumption attempt on the full bucket since, or a clock
    /// that went back) is never expired.
    #[inline]
    fn is_expired(&self, id: u32, now: i64) -> bool {
        let slot = self.slots.get(id);
        let bandwidths = self.configurations.get(slot.configuration).0.bandwidths();
        let at = now.saturating_sub(self.idle_grace_nanos);
        let full = |b: &Bandwidth, s: BandwidthState| {
            s.last_refill_nanos <= at && s.refilled(b, at).nanos_until_forgettable(b, at) == 0
        };
        if !full(&bandwidths[0], slot.first.unpack()) {
            return false;
        }
        let extra = self.extra.get(slot.extra, bandwidths.len() - 1);
        bandwidths[1..].iter().zip(extra).all(|(b, s)| full(b, s.unpack()))
    }

    /// Removes `id` if expired; returns whether it did.
    fn remove_if_expired(&mut self, id: u32, now: i64) -> bool {
        let expired = self.is_expired(id, now);
        if expired {
            self.remove_slot(id);
        }
        expired
    }

    /// Lazy collection: each insertion looks at the next two slots and drops them if expired.
    fn sweep_some(&mut self, now: i64) {
        let high_water = self.slots.high_water();
        for _ in 0..2.min(high_water) {
            self.sweep_cursor = (self.sweep_cursor + 1) % high_water;
            if self.slots.get(self.sweep_cursor).is_live() {
                self.remove_if_expired(self.sweep_cursor, now);
            }
        }
    }

    /// CLOCK: drops the first key under the hand that is expired or was not used since the
    /// hand last passed (nor since its creation: see `Slot::mark_used`), clearing the used mark
    /// of those it passes. The slot it frees is the next one allocated (the free list is last in,
    /// first out), so the new key sits just behind the hand: a whole turn to be used again.
    fn evict(&mut self, now: i64) {
        let high_water = self.slots.high_water();
        for _ in 0..=2 * high_water {
            let id = self.clock_hand;
            self.clock_hand = (self.clock_hand + 1) % high_water;
            let slot = self.slots.get_mut(id);
            if !slot.is_live() {
                continue;
            }
            if slot.is_referenced() && !self.is_expired(id, now) {
                self.slots.get_mut(id).clear_referenced();
                continue;
            }
            self.remove_slot(id);
            return;
        }
    }
}

fn check_key(key: &[u8]) -> Result<()> {
    if key.len() > MAX_KEY_BYTES {
        return Err(Error::KeyTooLong { len: key.len(), max: MAX_KEY_BYTES });
    }
    Ok(())
}

/// `a == b` for slices of equal length, eight bytes at a time. On wasm, `==` on byte slices
/// calls a `memcmp` that compares one byte per iteration; keys are compared on every lookup.
#[inline]
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    debug_assert_eq!(a.len(), b.len());
    let ((a_words, a_tail), (b_words, b_tail)) = (a.as_chunks::<8>(), b.as_chunks::<8>());
    let words_equal = a_words.iter().zip(b_words).all(|(x, y)| u64::from_ne_bytes(*x) == u64::from_ne_bytes(*y));
    // Indexing, not `==` on the tails, which would be the byte-wise `memcmp` call again.
    words_equal && (0..a_tail.len()).all(|i| a_tail[i] == b_tail[i])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TokenBucket;

    const MS: i64 = 1_000_000;
    const SEC: i64 = 1_000 * MS;

    #[test]
    fn same_bytes_finds_a_difference_at_any_position() {
        for len in 0..=20 {
            let key: Vec<u8> = (0..len as u8).collect();
            assert!(same_bytes(&key, &key.clone()), "length {len}");
            for at in 0..len {
                let mut other = key.clone();
                other[at] ^= 0x80;
                assert!(!same_bytes(&key, &other), "length {len}, difference at {at}");
            }
        }
    }

    fn greedy(capacity: i64, per_second: i64) -> BucketConfiguration {
        let b = Bandwidth::builder().capacity(capacity).refill_greedy(per_second, Duration::from_secs(1));
        BucketConfiguration::builder().add_limit(b.build().unwrap()).build().unwrap()
    }

    fn store(max_keys: usize, default: Option<BucketConfiguration>) -> BucketStore {
        let mut store = BucketStore::new(StoreOptions { max_keys, ..StoreOptions::default() }).unwrap();
        store.configure(default, 0, TokensInheritanceStrategy::AsIs);
        store
    }

    #[test]
    fn without_a_default_every_new_key_asks_for_a_configuration() {
        let mut store = store(10, None);
        assert_eq!(store.try_consume(b"k", 1, 0), Ok(None));
        assert!(!store.contains_key(b"k"), "asking creates nothing");
        store.supply(b"k", &greedy(3, 1), 0).unwrap();
        assert_eq!(store.try_consume(b"k", 3, 0), Ok(Some(true)));
        assert_eq!(store.try_consume(b"k", 1, 0), Ok(Some(false)));
        store.supply(b"k", &greedy(100, 100), 0).unwrap();
        assert_eq!(store.try_consume(b"k", 1, 0), Ok(Some(false)), "a current key keeps its bucket");
    }

    #[test]
    fn bad_arguments_change_nothing() {
        let mut store = store(10, Some(greedy(3, 1)));
        assert_eq!(store.try_consume(b"k", 0, 0), Err(Error::NonPositiveTokens { tokens: 0 }));
        assert_eq!(store.estimate_ability_to_consume(b"k", -1, 0), Err(Error::NonPositiveTokens { tokens: -1 }));
        let long = vec![b'x'; MAX_KEY_BYTES + 1];
        assert_eq!(store.try_consume(&long, 1, 0).unwrap_err().code(), "KEY_TOO_LONG");
        assert_eq!(store.supply(&long, &greedy(1, 1), 0).unwrap_err().code(), "KEY_TOO_LONG");
        assert!(store.is_empty());
        assert!(store.try_consume(&long[1..], 1, 0).unwrap().unwrap(), "the longest key is accepted");
    }

    #[test]
    fn a_full_bucket_expires_after_the_grace() {
        let mut store =
            BucketStore::new(StoreOptions { idle_grace: Duration::from_secs(1), ..Default::default() }).unwrap();
        store.configure(Some(greedy(10, 10)), 0, TokensInheritanceStrategy::AsIs);
        assert_eq!(store.try_consume(b"k", 5, 0), Ok(Some(true)));
        // Full again at 500 ms, expired at 1.5 s.
        assert_eq!(store.remove_expired(1500 * MS - 1), 0);
        assert_eq!(store.remove_expired(1500 * MS), 1);
        assert!(store.is_empty());
    }

    #[test]
    fn a_key_that_spent_initial_tokens_above_capacity_never_expires() {
        let burst = Bandwidth::builder().capacity(10).refill_greedy(10, Duration::from_secs(1)).initial_tokens(100);
        let config = BucketConfiguration::builder().add_limit(burst.build().unwrap()).build().unwrap();
        let mut store = store(10, Some(config));
        assert_eq!(store.try_consume(b"fresh", 1, 0), Ok(Some(true)));
        assert_eq!(store.try_consume(b"spent", 95, 0), Ok(Some(true)));
        // Both are back at capacity at once; a fresh bucket would hand out 100 again.
        assert_eq!(store.remove_expired(3600 * SEC), 0);
        assert_eq!(store.try_consume(b"spent", 11, 3600 * SEC), Ok(Some(false)));
        assert_eq!(store.try_consume(b"fresh", 99, 3600 * SEC), Ok(Some(true)), "99 of its 100 left");
        assert_eq!(store.remove_expired(3600 * SEC), 0);
    }

    #[test]
    fn an_expired_key_is_dropped_by_the_sweep_then_starts_afresh() {
        let interval = Bandwidth::builder().capacity(2).refill_intervally(2, Duration::from_secs(10)).initial_tokens(0);
        let config = BucketConfiguration::builder().add_limit(interval.build().unwrap()).build().unwrap();
        let mut store = store(10, None);
        store.supply(b"k", &config, 0).unwrap();
        assert_eq!(store.get_available_tokens(b"k", 0), Ok(Some(0)));
        // Full at 10 s, so expired; kept until a sweep drops it.
        assert_eq!(store.get_available_tokens(b"k", 20 * SEC), Ok(Some(2)));
        assert_eq!(store.remove_expired(30 * SEC), 1);
        // Then its supplier is asked again, and it starts with its initial tokens, as a
        // Bucket4j bucket whose stored state expired.
        assert_eq!(store.get_available_tokens(b"k", 30 * SEC), Ok(None));
        store.supply(b"k", &config, 30 * SEC).unwrap();
        assert_eq!(store.get_available_tokens(b"k", 30 * SEC), Ok(Some(0)));
    }

    #[test]
    fn insertions_sweep_expired_keys() {
        let mut store = store(usize::MAX, Some(greedy(10, 10)));
        for key in [b"a", b"b", b"c", b"d"] {
            store.try_consume(key, 1, 0).unwrap();
        }
        // All full again at 100 ms: two insertions sweep four slots.
        store.try_consume(b"e", 1, SEC).unwrap();
        store.try_consume(b"f", 1, SEC).unwrap();
        assert_eq!(store.len(), 2);
        assert!(store.contains_key(b"e") && store.contains_key(b"f"));
    }

    #[test]
    fn the_cap_evicts_by_clock_and_an_expired_key_has_no_second_chance() {
        let mut store = store(3, Some(greedy(10, 1)));
        for key in [b"a", b"b", b"c"] {
            store.try_consume(key, 1, 0).unwrap();
        }
        store.try_consume(b"d", 1, 0).unwrap(); // none used since created: the hand evicts a
        assert!(!store.contains_key(b"a"));
        store.try_consume(b"c", 1, 0).unwrap(); // c used again; b is not
        store.try_consume(b"e", 1, 0).unwrap();
        assert!(!store.contains_key(b"b"), "b had no second chance");
        assert!(store.contains_key(b"c") && store.contains_key(b"d") && store.contains_key(b"e"));
        assert_eq!(store.len(), 3);
        // d is full again after 1 s (expired); c and e are not (they lost 2 and 1).
        store.try_consume(b"c", 1, 0).unwrap();
        store.try_consume(b"e", 1, 0).unwrap();
        store.try_consume(b"f", 1, SEC).unwrap();
        assert!(!store.contains_key(b"d") && store.contains_key(b"c"));
    }

    #[test]
    fn a_key_used_since_the_hand_passed_gets_its_second_chance() {
        let mut store = store(3, Some(greedy(10, 1)));
        for key in [b"a", b"b", b"c", b"d"] {
            store.try_consume(key, 1, 0).unwrap(); // d: the hand evicts a
        }
        store.try_consume(b"b", 1, 0).unwrap(); // under the hand now, and used again, twice
        store.try_consume(b"b", 1, 0).unwrap();
        store.try_consume(b"e", 1, 0).unwrap();
        assert!(store.contains_key(b"b"), "b was spared, its mark cleared");
        assert!(!store.contains_key(b"c"), "c, unused since the hand passed, went");
    }

    #[test]
    fn a_flood_of_keys_used_once_evicts_its_own_not_a_key_in_use() {
        // 10 tokens, one a second: evicted and created afresh, the busy key would get 10 more.
        let mut store = store(100, Some(greedy(10, 1)));
        let mut granted = 0;
        for i in 0..1000 {
            granted += usize::from(store.try_consume(b"busy", 1, 0).unwrap() == Some(true));
            store.try_consume(format!("new {i}").as_bytes(), 1, 0).unwrap();
        }
        assert_eq!(granted, 10, "the busy key kept its bucket");
        assert_eq!(store.len(), 100);
    }

    #[test]
    fn a_supplied_key_is_fresh_until_its_second_use() {
        let mut store = store(2, None);
        store.supply(b"a", &greedy(10, 1), 0).unwrap();
        store.try_consume(b"a", 1, 0).unwrap(); // its first use, as a store's caller retries
        store.try_consume(b"a", 1, 0).unwrap();
        store.supply(b"b", &greedy(10, 1), 0).unwrap();
        store.try_consume(b"b", 1, 0).unwrap();
        store.supply(b"c", &greedy(10, 1), 0).unwrap();
        assert!(store.contains_key(b"a") && !store.contains_key(b"b"), "b, used once, went first");
    }

    /// A store of ten greedy keys whose key space is `max_key_bytes`.
    fn bounded(max_key_bytes: u64) -> BucketStore {
        let mut store =
            BucketStore::new(StoreOptions { max_keys: 10, max_key_bytes, ..StoreOptions::default() }).unwrap();
        store.configure(Some(greedy(10, 1)), 0, TokensInheritanceStrategy::AsIs);
        store
    }

    #[test]
    fn max_key_bytes_is_whole_chunks_from_one_to_the_key_space() {
        for bad in [0, 65_535, KEY_SPACE_BYTES + 1, u64::MAX] {
            let options = StoreOptions { max_key_bytes: bad, ..StoreOptions::default() };
            let refused = BucketStore::new(options).unwrap_err();
            assert_eq!(refused.code(), "INVALID_CONFIGURATION", "{bad}");
        }
        assert_eq!(bounded(65_536).keys.max_bytes(), 65_536);
        assert_eq!(bounded(65_537).keys.max_bytes(), 131_072, "rounded up to whole chunks");
        assert_eq!(bounded(KEY_SPACE_BYTES).keys.max_bytes(), KEY_SPACE_BYTES);
    }

    #[test]
    fn a_full_key_space_refuses_new_keys_and_changes_nothing() {
        let mut store = bounded(65_536); // one chunk
        let big = |c: u8| vec![c; 30_000];
        store.try_consume(&big(b'a'), 1, 0).unwrap();
        store.try_consume(&big(b'b'), 1, 0).unwrap();
        let refused = store.try_consume(&big(b'c'), 1, 0).unwrap_err();
        assert_eq!(refused, Error::KeySpaceFull { max_bytes: 65_536 });
        assert_eq!(refused.code(), "KEY_SPACE_FULL");
        assert_eq!(store.len(), 2);
        assert!(!store.contains_key(&big(b'c')));
        assert_eq!(store.get_available_tokens(&big(b'a'), 0), Ok(Some(9)), "existing keys are untouched");
        // Removed keys' bytes are reclaimed for the next key.
        assert!(store.remove(&big(b'a')));
        store.try_consume(&big(b'c'), 1, 0).unwrap();
        assert!(store.contains_key(&big(b'b')) && store.contains_key(&big(b'c')));
        assert_eq!(store.get_available_tokens(&big(b'b'), 0), Ok(Some(9)));
    }

    #[test]
    fn a_key_space_full_of_expired_keys_makes_room_for_a_new_key() {
        let mut store = bounded(65_536);
        let big = |c: u8| vec![c; 21_000];
        for c in [b'a', b'b', b'c'] {
            store.try_consume(&big(c), 1, 0).unwrap();
        }
        assert_eq!(store.try_consume(&big(b'd'), 1, 0).unwrap_err().code(), "KEY_SPACE_FULL");
        // One second later all three are full again, so expired: the next new key gets in.
        assert_eq!(store.try_consume(&big(b'd'), 1, SEC), Ok(Some(true)));
        assert_eq!(store.len(), 1);
        assert!(store.contains_key(&big(b'd')));
    }

    #[test]
    fn a_new_key_that_finds_the_space_full_drops_only_expired_keys_and_only_to_get_in() {
        let mut store = bounded(65_536);
        let big = |c: u8| vec![c; 21_000];
        store.try_consume(&big(b'a'), 1, 0).unwrap(); // full again at 1 s
        store.try_consume(&big(b'b'), 5, 0).unwrap(); // full again at 5 s
        store.try_consume(&big(b'c'), 5, 0).unwrap();
        // At 2 s only a is expired. Without it b and c leave 23,536 bytes, too few for 30,000:
        // it is kept, since dropped it would be refused itself on its next access.
        let refused = store.try_consume(&vec![b'e'; 30_000], 1, 2 * SEC);
        assert_eq!(refused.unwrap_err().code(), "KEY_SPACE_FULL");
        assert!(store.contains_key(&big(b'a')), "still held");
        // They can hold 21,000: a gives way, b and c are untouched.
        assert_eq!(store.try_consume(&big(b'd'), 1, 2 * SEC), Ok(Some(true)));
        assert!(!store.contains_key(&big(b'a')));
        assert_eq!(store.get_available_tokens(&big(b'b'), 2 * SEC), Ok(Some(7)));
    }

    #[test]
    fn expired_keys_are_kept_when_the_chunk_tails_left_would_not_take_the_new_key() {
        let mut store = bounded(2 * 65_536);
        let key = |c: u8, len: usize| vec![c; len];
        store.try_consume(&key(b'a', 30_000), 1, 0).unwrap(); // chunk 0; full again at 1 s
        store.try_consume(&key(b'b', 35_000), 5, 0).unwrap(); // chunk 0; full again at 5 s
        store.try_consume(&key(b'c', 35_000), 5, 0).unwrap(); // chunk 1
        store.try_consume(&key(b'd', 30_000), 1, 0).unwrap(); // chunk 1; full again at 1 s

        // At 2 s a and d are expired, 60,000 bytes, but b and c take a chunk each however they
        // are packed: 40,000 would not fit in either tail.
        let refused = store.try_consume(&key(b'n', 40_000), 1, 2 * SEC);
        assert_eq!(refused.unwrap_err().code(), "KEY_SPACE_FULL");
        assert_eq!(store.len(), 4, "nothing changed");
        assert_eq!(store.try_consume(&key(b'd', 30_000), 1, 2 * SEC), Ok(Some(true)), "d is still answered");
        // At 3 s d is full again: without a and d, 30,000 fits in the tail after c.
        assert_eq!(store.try_consume(&key(b'm', 30_000), 1, 3 * SEC), Ok(Some(true)));
        assert!(!store.contains_key(&key(b'a', 30_000)));
    }

    #[test]
    fn removed_keys_are_reclaimed_for_a_new_key_once_they_are_an_eighth_of_the_space_held() {
        let mut store = bounded(65_536);
        let key = |c: u8| vec![c; 8_000];
        for c in b'0'..b'8' {
            store.try_consume(&key(c), 1, 0).unwrap(); // 64,000 bytes
        }
        store.remove(&key(b'0')); // an eighth, fewer bytes than the new key
                                  // 56,000 + 9,000 fit once the removed bytes are reclaimed.
        assert_eq!(store.try_consume(&[b'x'; 9_000], 1, 0), Ok(Some(true)));
    }

    /// The room rule, checked against a model: whether a new key gets in is worked out from the
    /// documented rule before each insertion, and a refusal changes nothing.
    mod room_for_keys {
        use super::*;
        use proptest::prelude::*;

        #[derive(Debug, Clone)]
        enum Op {
            New(usize, i64, i64), // length, tokens, seconds later
            Remove(usize),
        }

        fn op() -> impl Strategy<Value = Op> {
            let len =
                prop_oneof![1usize..40, 8_000usize..40_000, 30_000usize..=MAX_KEY_BYTES, 65_530usize..=MAX_KEY_BYTES];
            prop_oneof![
                4 => (len, prop_oneof![Just(1i64), Just(9i64)], 0i64..3).prop_map(|(l, t, d)| Op::New(l, t, d)),
                1 => any::<usize>().prop_map(Op::Remove),
            ]
        }

        /// What make_room_for_key should decide, worked out from the spec before it runs.
        fn expected_fit(store: &BucketStore, len: usize, now: i64) -> bool {
            if store.keys.has_room(len) {
                return true;
            }
            let hw = store.slots.high_water() as usize;
            let live = store.live_in_arena_order();
            let key_len = |id: &u32| usize::from(store.slots.get(*id).key_len);
            if store.refused_for_room.is_multiple_of(hw / 8 + 1) {
                let (expired, kept): (Vec<u32>, Vec<u32>) = live.iter().partition(|&&id| store.is_expired(id, now));
                let freed = expired.iter().map(key_len).sum();
                if store.keys.worth_compacting_after_release(freed)
                    && store.keys.fits_after_compacting(kept.iter().map(key_len), len)
                {
                    return true;
                }
            }
            store.keys.worth_compacting() && store.keys.fits_after_compacting(live.iter().map(key_len), len)
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(200))]
            #[test]
            fn a_new_key_gets_in_exactly_when_the_rule_says_and_a_refusal_changes_nothing(ops in prop::collection::vec(op(), 1..40), chunks in 2u64..4) {
                let mut store = BucketStore::new(StoreOptions { max_keys: 1000, max_key_bytes: chunks * 65_536, ..StoreOptions::default() }).unwrap();
                store.configure(Some(greedy(10, 1)), 0, TokensInheritanceStrategy::AsIs);
                let (mut held, mut now, mut next): (Vec<Vec<u8>>, i64, u32) = (vec![], 0, 0);
                for op in ops {
                    match op {
                        Op::New(len, tokens, later) => {
                            now += later * SEC;
                            let key: Vec<u8> = next.to_le_bytes().iter().copied().chain(std::iter::repeat(b'x')).take(len).collect();
                            next += 1;
                            if store.contains_key(&key) { continue; }
                            let expect = expected_fit(&store, len, now);
                            let before = store.len();
                            let r = store.try_consume(&key, tokens, now);
                            match r {
                                Ok(Some(_)) => { prop_assert!(expect, "accepted against the rule"); held.push(key); }
                                Err(ref e) if e.code() == "KEY_SPACE_FULL" => {
                                    prop_assert!(!expect, "refused though the rule says it fits");
                                    prop_assert_eq!(store.len(), before, "a refusal changed the store");
                                }
                                other => prop_assert!(false, "{:?}", other),
                            }
                            held.retain(|k| store.contains_key(k));
                        }
                        Op::Remove(i) if !held.is_empty() => {
                            let k = held.remove(i % held.len());
                            store.remove(&k);
                        }
                        Op::Remove(_) => {}
                    }
                    for k in &held { prop_assert!(store.contains_key(k)); }
                    prop_assert_eq!(store.len(), held.len());
                }
            }
        }
    }

    #[test]
    fn expired_keys_dropped_for_a_new_key_make_room_for_it_even_across_several_chunks() {
        let mut store = bounded(3 * 65_536);
        let key = |c: u8, len: usize| vec![c; len];
        // (key, tokens taken at 0: 1 is full again at 1 s, 9 at 9 s)
        let layout = [
            (key(b'a', 2), 9),      // kept, chunk 0
            (key(b'b', 65_534), 1), // expired, fills chunk 0
            (key(b'c', 65_535), 9), // kept, chunk 1
            (key(b'd', 1), 1),      // expired, fills chunk 1
            (key(b'e', 30_003), 1), // expired, chunk 2
            (key(b'f', 20_000), 9), // kept
            (key(b'g', 10_000), 1), // expired; chunk 2 holds 60,003
        ];
        for (k, n) in &layout {
            assert_eq!(store.try_consume(k, *n, 0), Ok(Some(true)));
        }
        // Without b, d, e, g: a+c, then f alone in chunk 2, 45,536 free: 40,000 fits.
        let r = store.try_consume(&key(b'n', 40_000), 1, 2 * SEC);
        let held: Vec<bool> = layout.iter().map(|(k, _)| store.contains_key(k)).collect();
        assert_eq!((r, held), (Ok(Some(true)), vec![true, false, true, false, false, true, false]));
    }

    #[test]
    fn an_expired_key_too_small_for_compaction_to_pay_stays_held() {
        let mut store = bounded(65_536); // ten keys at most
        let key = |c: u8| vec![c; 6_000];
        store.try_consume(&key(b'a'), 1, 0).unwrap(); // full again at 1 s
        for c in b'b'..=b'j' {
            store.try_consume(&key(c), 5, 0).unwrap(); // full again at 5 s
        }
        // At 2 s a's 6,000 bytes are less than an eighth of the space in use.
        assert_eq!(store.try_consume(&key(b'x'), 1, 2 * SEC).unwrap_err().code(), "KEY_SPACE_FULL");
        assert_eq!(store.len(), 10);
        assert_eq!(store.try_consume(&key(b'a'), 1, 2 * SEC), Ok(Some(true)), "a is still answered");
    }

    #[test]
    fn an_expired_outdated_key_is_supplied_in_place_when_the_key_space_is_full() {
        let mut store = bounded(65_536);
        store.configure(None, 0, TokensInheritanceStrategy::AsIs);
        store.supply(b"a", &greedy(5, 1), 0).unwrap();
        assert_eq!(store.try_consume(b"a", 1, 0), Ok(Some(true))); // not full, so not swept next
        let long = vec![b'b'; MAX_KEY_BYTES];
        store.supply(&long, &greedy(5, 1), 0).unwrap(); // the key space is now exactly full
        store.configure(None, 1, TokensInheritanceStrategy::AsIs);
        // Full again, so expired, and outdated: its supplier is asked.
        assert_eq!(store.get_available_tokens(b"a", 10 * SEC), Ok(None));
        store.supply(b"a", &greedy(7, 1), 10 * SEC).unwrap();
        assert_eq!(store.get_available_tokens(b"a", 10 * SEC), Ok(Some(7)), "started afresh");
        assert_eq!(store.len(), 2);
    }

    #[test]
    fn supplying_a_current_key_leaves_it_as_it_is() {
        let mut store = store(10, None);
        store.configure(None, 3, TokensInheritanceStrategy::Reset);
        store.supply(b"a", &greedy(10, 1), 0).unwrap();
        assert_eq!(store.try_consume(b"a", 4, 0), Ok(Some(true)));
        store.supply(b"a", &greedy(10, 1), 0).unwrap(); // as a second caller of the supplier would
        assert_eq!(store.get_available_tokens(b"a", 0), Ok(Some(6)), "not replaced, so not reset");
    }

    #[test]
    fn clear_keeps_the_key_space_limit() {
        let mut store = bounded(65_536);
        store.try_consume(&[b'a'; 60_000], 1, 0).unwrap();
        store.clear();
        store.try_consume(&[b'b'; 60_000], 1, 0).unwrap();
        let refused = store.try_consume(&[b'c'; 60_000], 1, 0);
        assert_eq!(refused, Err(Error::KeySpaceFull { max_bytes: 65_536 }));
    }

    #[test]
    fn compaction_of_a_full_key_space_never_needs_more_chunks() {
        let mut store = bounded(2 << 16);
        let key = |c: u8, n: usize| vec![c; n];
        store.try_consume(&key(b'a', 33_000), 1, 0).unwrap(); // slot 0, chunk 0
        store.try_consume(&key(b'g', 1), 1, 0).unwrap(); // slot 1
        store.try_consume(&key(b'b', 32_535), 1, 0).unwrap(); // slot 2: chunk 0 is full
        assert!(store.remove(&key(b'g', 1))); // one byte of garbage; slot 1 is free
        store.try_consume(&key(b'c', 33_000), 1, 0).unwrap(); // slot 1 again, chunk 1
        store.try_consume(&key(b'd', 32_536), 1, 0).unwrap(); // slot 3: chunk 1 is full

        // Full, with one byte of garbage: too little to compact for a new key.
        let refused = store.try_consume(b"z", 1, 0);
        assert_eq!(refused, Err(Error::KeySpaceFull { max_bytes: 2 << 16 }));
        // In slot order (a, c, b, d) the keys would need a third chunk.
        store.compact_keys();
        assert_eq!(store.try_consume(b"z", 1, 0), Err(Error::KeySpaceFull { max_bytes: 2 << 16 }));
        for (c, n) in [(b'a', 33_000), (b'b', 32_535), (b'c', 33_000), (b'd', 32_536)] {
            assert_eq!(store.get_available_tokens(&key(c, n), 0), Ok(Some(9)), "key {} kept", c as char);
        }
        assert_eq!(store.len(), 4);
    }

    #[test]
    fn compaction_copies_an_empty_key_before_the_key_at_its_position() {
        // An empty key takes no bytes, so the key inserted after it starts where it is. Copied
        // after that key, which fills its chunk, the empty key would need a third chunk.
        let mut store = bounded(2 << 16);
        let key = |c: u8, n: usize| vec![c; n];
        store.try_consume(b"g", 1, 0).unwrap(); // slot 0, chunk 0 at 0
        store.try_consume(&key(b'a', 65_535), 1, 0).unwrap(); // slot 1: chunk 0 is full
        store.try_consume(b"bb", 1, 0).unwrap(); // slot 2, chunk 1 at 0
        store.try_consume(b"", 1, 0).unwrap(); // slot 3, chunk 1 at 2
        assert!(store.remove(b"g")); // one byte of garbage; slot 0 is free
        store.try_consume(&key(b'k', 65_534), 1, 0).unwrap(); // slot 0, chunk 1 at 2: full

        store.compact_keys();
        assert_eq!(store.try_consume(b"z", 1, 0), Err(Error::KeySpaceFull { max_bytes: 2 << 16 }));
        for k in [&key(b'a', 65_535)[..], b"bb", b"", &key(b'k', 65_534)] {
            assert_eq!(store.get_available_tokens(k, 0), Ok(Some(9)), "a key of {} bytes kept", k.len());
        }
    }

    #[test]
    fn a_new_version_replaces_configurations_on_access() {
        let mut store = store(10, Some(greedy(100, 1)));
        store.try_consume(b"k", 60, 0).unwrap();
        store.configure(Some(greedy(200, 1)), 1, TokensInheritanceStrategy::Proportionally);
        assert_eq!(store.get_available_tokens(b"k", 0), Ok(Some(80)));
        assert_eq!(store.configurations.len(), 1, "the old configuration is dropped with its last key");
        // Without a default, the caller supplies the new configuration and it is replaced.
        store.configure(None, 2, TokensInheritanceStrategy::Additive);
        assert_eq!(store.get_available_tokens(b"k", 0), Ok(None));
        store.supply(b"k", &greedy(300, 1), 0).unwrap();
        assert_eq!(store.get_available_tokens(b"k", 0), Ok(Some(180)));
    }

    #[test]
    fn several_bandwidths_are_kept_per_key() {
        let config = BucketConfiguration::builder()
            .add_limit(Bandwidth::builder().capacity(5).refill_greedy(5, Duration::from_secs(1)).build().unwrap())
            .add_limit(Bandwidth::builder().capacity(7).refill_intervally(7, Duration::from_secs(60)).build().unwrap())
            .build()
            .unwrap();
        let mut store = store(10, Some(config.clone()));
        let mut bucket = TokenBucket::new(config, 0);
        for now in [0, 0, 100 * MS, SEC, 2 * SEC, 3 * SEC, 61 * SEC] {
            assert_eq!(store.try_consume(b"x", 3, now).unwrap(), Some(bucket.try_consume(3, now).unwrap()));
            assert_eq!(store.get_available_tokens(b"y", now).unwrap(), Some(5));
        }
        assert!(store.remove(b"x"));
        assert!(!store.remove(b"x"));
    }

    #[test]
    fn a_key_replaced_again_and_again_reuses_its_extra_states() {
        let two = |capacity: i64| {
            // Named, so that AS_IS carries each bandwidth's tokens over (unnamed, two would not match).
            let limit = |c: i64, id| Bandwidth::builder().capacity(c).refill_greedy(1, Duration::from_secs(1)).id(id);
            let config = BucketConfiguration::builder().add_limit(limit(capacity, "a").build().unwrap());
            config.add_limit(limit(capacity * 2, "b").build().unwrap()).build().unwrap()
        };
        let mut store = store(10, Some(two(10)));
        let mut bucket = TokenBucket::new(two(10), 0);
        for version in 1..=50 {
            assert_eq!(store.try_consume(b"k", 1, 0), Ok(Some(bucket.try_consume(1, 0).unwrap())));
            store.configure(Some(two(10 + version)), version as u64, TokensInheritanceStrategy::AsIs);
            bucket.replace_configuration(two(10 + version), TokensInheritanceStrategy::AsIs, 0).unwrap();
        }
        assert_eq!(bucket.get_available_tokens(0), 0, "AS_IS carried the consumptions over: 10 granted, 40 refused");
        assert_eq!(store.get_available_tokens(b"k", 0), Ok(Some(0)), "replaced on access");
        assert_eq!(store.extra.held(), 1, "the second bandwidth's one state, reused by every replacement");
        assert!(store.remove(b"k"));
        store.try_consume(b"other", 1, 0).unwrap();
        assert_eq!(store.extra.held(), 1, "and by the next key after a removal");
        store.clear();
        assert_eq!(store.extra.held(), 0);
    }

    #[test]
    fn removed_keys_bytes_are_reclaimed_and_others_survive() {
        let mut store = store(usize::MAX, Some(greedy(10, 1)));
        let key = |i: u32| format!("{i:0>1000}").into_bytes();
        for i in 0..300 {
            store.try_consume(&key(i), 1, 0).unwrap();
        }
        for i in 0..200 {
            assert!(store.remove(&key(i)));
        }
        assert_eq!(store.key_bytes(), 100_000);
        assert!(!store.is_empty());
        assert!(store.keys.live_bytes() == 100_000 && !store.keys.needs_compaction());
        for i in 200..300 {
            assert_eq!(store.get_available_tokens(&key(i), 0), Ok(Some(9)), "key {i} kept its bucket");
        }
        store.clear();
        assert!(store.is_empty() && store.configurations.len() == 1 && !store.contains_key(&key(250)));
    }
}
