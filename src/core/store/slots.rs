//! The per-key records of a store: 40 bytes each, in fixed-size chunks.
//!
//! A slot holds the first bandwidth's state inline (24 bytes: the `i128` level split in two
//! `u64` words so the slot needs only 8-byte alignment), where its key lives, its configuration
//! and its flags (live, used since the hand passed, not yet used since created). Configurations
//! with more bandwidths keep the other states in [`ExtraStates`]. Chunks are allocated whole and
//! never move, so growth copies nothing.

use std::collections::HashMap;

use foldhash::fast::FixedState;

use super::super::state::BandwidthState;
use super::key_arena::KeyRef;

const CHUNK_SLOTS: usize = 4096;

/// "No slot" in the free list.
pub(crate) const NONE: u32 = u32::MAX;

/// A state in 24 bytes with 8-byte alignment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct PackedState {
    level_low: u64,
    level_high: i64,
    last_refill_nanos: i64,
}

impl PackedState {
    #[inline]
    pub(crate) fn pack(state: BandwidthState) -> Self {
        PackedState {
            level_low: state.level as u64,
            level_high: (state.level >> 64) as i64,
            last_refill_nanos: state.last_refill_nanos,
        }
    }

    #[inline]
    pub(crate) fn unpack(self) -> BandwidthState {
        let level = ((self.level_high as i128) << 64) | self.level_low as i128;
        BandwidthState::from_parts(level, self.last_refill_nanos)
    }
}

/// One key's record.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Slot {
    pub(crate) first: PackedState,
    /// Where the key lives; for a free slot, the next free slot.
    pub(crate) key: KeyRef,
    pub(crate) key_len: u16,
    flags: u16,
    pub(crate) configuration: u32,
    /// First of the states beyond the first, in [`ExtraStates`] (several bandwidths only).
    pub(crate) extra: u32,
}

const LIVE: u16 = 1;
const REFERENCED: u16 = 2;
/// Created, and not yet used by the operation that created it.
const FRESH: u16 = 4;

impl Slot {
    #[inline]
    pub(crate) fn is_live(&self) -> bool {
        self.flags & LIVE != 0
    }

    #[inline]
    pub(crate) fn is_referenced(&self) -> bool {
        self.flags & REFERENCED != 0
    }

    /// Records a use. The first, the one a key is created for, does not count: a key counts as
    /// used only from its second use on, so a flood of keys used once evicts its own before a
    /// key in steady use (see `BucketStore::evict`).
    #[inline]
    pub(crate) fn mark_used(&mut self) {
        self.flags = if self.flags & FRESH != 0 { self.flags & !FRESH } else { self.flags | REFERENCED };
    }

    #[inline]
    pub(crate) fn clear_referenced(&mut self) {
        self.flags &= !REFERENCED;
    }
}

/// Slots by id, with a free list threaded through the free ones.
#[derive(Debug)]
pub(crate) struct Slots {
    chunks: Vec<Box<[Slot]>>,
    /// Ids below this have been handed out at least once.
    high_water: u32,
    free: u32,
}

impl Default for Slots {
    fn default() -> Self {
        Slots { chunks: Vec::new(), high_water: 0, free: NONE }
    }
}

impl Slots {
    #[inline]
    pub(crate) fn get(&self, id: u32) -> &Slot {
        &self.chunks[id as usize / CHUNK_SLOTS][id as usize % CHUNK_SLOTS]
    }

    #[inline]
    pub(crate) fn get_mut(&mut self, id: u32) -> &mut Slot {
        &mut self.chunks[id as usize / CHUNK_SLOTS][id as usize % CHUNK_SLOTS]
    }

    /// Ids handed out so far (live or free): the range a CLOCK hand sweeps.
    pub(crate) fn high_water(&self) -> u32 {
        self.high_water
    }

    /// Takes a free slot (or a new one), marks it live and returns its id.
    pub(crate) fn allocate(&mut self) -> u32 {
        let id = if self.free != NONE {
            let id = self.free;
            self.free = self.get(id).key;
            id
        } else {
            if self.high_water as usize == self.chunks.len() * CHUNK_SLOTS {
                self.chunks.push(vec![Slot::default(); CHUNK_SLOTS].into_boxed_slice());
            }
            self.high_water += 1;
            self.high_water - 1
        };
        *self.get_mut(id) = Slot { flags: LIVE | FRESH, ..Slot::default() };
        id
    }

    /// Returns slot `id` to the free list.
    pub(crate) fn release(&mut self, id: u32) {
        let next = self.free;
        *self.get_mut(id) = Slot { key: next, ..Slot::default() };
        self.free = id;
    }

    /// Forgets every slot, keeping the chunks for reuse: ids are handed out from 0 again
    /// (`allocate` overwrites what a reused slot held), and the free list is emptied so that it
    /// cannot chain into slots that are live again.
    pub(crate) fn clear(&mut self) {
        self.free = NONE;
        self.high_water = 0;
    }
}

/// States beyond the first, for configurations with several bandwidths, in runs of equal length.
#[derive(Debug, Default)]
pub(crate) struct ExtraStates {
    states: Vec<PackedState>,
    /// Freed runs by length.
    free: HashMap<usize, Vec<u32>, FixedState>,
}

impl ExtraStates {
    /// Room for `len` states; returns the first index.
    pub(crate) fn allocate(&mut self, len: usize) -> u32 {
        if let Some(at) = self.free.get_mut(&len).and_then(Vec::pop) {
            return at;
        }
        let at = self.states.len() as u32;
        self.states.resize(self.states.len() + len, PackedState::default());
        at
    }

    pub(crate) fn release(&mut self, at: u32, len: usize) {
        self.free.entry(len).or_default().push(at);
    }

    pub(crate) fn get(&self, at: u32, len: usize) -> &[PackedState] {
        &self.states[at as usize..at as usize + len]
    }

    pub(crate) fn get_mut(&mut self, at: u32, len: usize) -> &mut [PackedState] {
        &mut self.states[at as usize..at as usize + len]
    }

    pub(crate) fn clear(&mut self) {
        self.states.clear();
        self.free.clear();
    }

    /// States held, in use or free: what the store's memory grows with.
    #[cfg(test)]
    pub(crate) fn held(&self) -> usize {
        self.states.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_takes_40_bytes() {
        assert_eq!(std::mem::size_of::<Slot>(), 40);
        assert_eq!(std::mem::align_of::<Slot>(), 8);
    }

    #[test]
    fn packing_keeps_every_level() {
        for level in [0, 1, -1, i128::from(i64::MAX) * 3, i128::from(i64::MIN) * 5, (1 << 126) - 1, -(1 << 126)] {
            let state = BandwidthState::from_parts(level, -7);
            assert_eq!(PackedState::pack(state).unpack(), state);
        }
    }

    #[test]
    fn freed_slots_are_reused_last_in_first_out() {
        let mut slots = Slots::default();
        let ids: Vec<u32> = (0..5000).map(|_| slots.allocate()).collect();
        assert_eq!(ids, (0..5000).collect::<Vec<_>>());
        slots.release(7);
        slots.release(4100);
        assert!(!slots.get(7).is_live());
        assert_eq!(slots.allocate(), 4100);
        assert_eq!(slots.allocate(), 7);
        assert_eq!(slots.allocate(), 5000);
        assert!(slots.get(7).is_live() && !slots.get(7).is_referenced());
    }

    #[test]
    fn after_clear_every_id_is_handed_out_once() {
        let mut slots = Slots::default();
        for _ in 0..5 {
            slots.allocate();
        }
        slots.release(3); // a free list that clear must not chain into the new ids
        slots.clear();
        let ids: Vec<u32> = (0..6).map(|_| slots.allocate()).collect();
        assert_eq!(ids, [0, 1, 2, 3, 4, 5]);
        assert_eq!(slots.high_water(), 6);
    }

    #[test]
    fn extra_runs_are_reused_by_length() {
        let mut extra = ExtraStates::default();
        let a = extra.allocate(2);
        let b = extra.allocate(3);
        extra.release(a, 2);
        assert_eq!(extra.allocate(3), b + 3);
        assert_eq!(extra.allocate(2), a);
    }
}
