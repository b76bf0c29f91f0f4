//! The bytes of every key of a store, packed into fixed-size chunks.
//!
//! One allocation per key would cost a pointer, a length and the allocator's header (about 24
//! bytes on wasm32) before the key itself; here a key costs its bytes. Chunks have a fixed size
//! and never grow, so filling the arena never copies it (a growing `Vec` would leave freed
//! copies behind in wasm memory, which never shrinks). Removed keys leave garbage that
//! compaction reclaims by sliding the live keys toward the front, in place, so it never holds
//! two copies of the keys.

/// Bytes per chunk; also the longest key, so a key never spans two chunks.
const CHUNK_BYTES: usize = 1 << 16;

/// The longest key a store accepts, in bytes.
pub const MAX_KEY_BYTES: usize = CHUNK_BYTES - 1;

/// Where a key lives: chunk index in the high 16 bits, offset in the low 16.
pub(crate) type KeyRef = u32;

/// The chunks a [`KeyRef`] can address.
const MAX_CHUNKS: usize = 1 << 16;

/// The bytes of keys an arena can hold (4 GiB), removed keys' included until compaction.
pub const KEY_SPACE_BYTES: u64 = MAX_CHUNKS as u64 * CHUNK_BYTES as u64;

#[derive(Debug)]
pub(crate) struct KeyArena {
    chunks: Vec<Vec<u8>>,
    live: usize,
    garbage: usize,
    /// [`MAX_CHUNKS`]; lower in tests, which cannot fill 4 GiB.
    max_chunks: usize,
}

#[cfg(test)]
impl Default for KeyArena {
    fn default() -> Self {
        KeyArena::with_max_chunks(MAX_CHUNKS)
    }
}

impl KeyArena {
    /// An empty arena that holds at most `max_chunks` chunks (at most [`MAX_CHUNKS`]).
    pub(crate) fn with_max_chunks(max_chunks: usize) -> Self {
        KeyArena { chunks: Vec::new(), live: 0, garbage: 0, max_chunks: max_chunks.min(MAX_CHUNKS) }
    }

    /// An empty arena of at most `max_bytes`, rounded up to whole chunks; `None` outside one
    /// chunk to [`KEY_SPACE_BYTES`].
    pub(crate) fn with_max_bytes(max_bytes: u64) -> Option<Self> {
        let chunks = max_bytes.div_ceil(CHUNK_BYTES as u64);
        (max_bytes >= CHUNK_BYTES as u64 && max_bytes <= KEY_SPACE_BYTES)
            .then(|| KeyArena::with_max_chunks(chunks as usize))
    }

    /// The bytes it can hold.
    pub(crate) fn max_bytes(&self) -> u64 {
        self.max_chunks as u64 * CHUNK_BYTES as u64
    }

    /// An empty arena with the same limit.
    pub(crate) fn emptied(&self) -> Self {
        KeyArena::with_max_chunks(self.max_chunks)
    }

    /// Whether a key of `len` bytes can be inserted.
    pub(crate) fn has_room(&self, len: usize) -> bool {
        self.last_fits(len) || self.chunks.len() < self.max_chunks
    }

    fn last_fits(&self, len: usize) -> bool {
        self.chunks.last().is_some_and(|c| fits_at(c.len(), len))
    }

    /// Copies `key` (at most [`MAX_KEY_BYTES`]) in and returns where it went. The caller checks
    /// [`KeyArena::has_room`] first: past [`MAX_CHUNKS`] a reference would wrap to chunk 0.
    pub(crate) fn insert(&mut self, key: &[u8]) -> KeyRef {
        debug_assert!(key.len() <= MAX_KEY_BYTES);
        assert!(self.has_room(key.len()), "the key arena is full; the store checks has_room first");
        if !self.last_fits(key.len()) {
            self.chunks.push(Vec::with_capacity(CHUNK_BYTES));
        }
        let index = self.chunks.len() - 1;
        let chunk = &mut self.chunks[index];
        let offset = chunk.len();
        chunk.extend_from_slice(key);
        self.live += key.len();
        ((index as u32) << 16) | offset as u32
    }

    #[inline]
    pub(crate) fn get(&self, at: KeyRef, len: u16) -> &[u8] {
        let offset = (at & 0xffff) as usize;
        &self.chunks[(at >> 16) as usize][offset..offset + len as usize]
    }

    /// Marks `len` bytes as no longer used.
    pub(crate) fn release(&mut self, len: u16) {
        self.live -= len as usize;
        self.garbage += len as usize;
    }

    /// True when compacting would at least halve the arena.
    pub(crate) fn needs_compaction(&self) -> bool {
        self.garbage > CHUNK_BYTES && self.garbage > self.live
    }

    /// Whether compacting a full arena is worth its cost: the garbage is at least an eighth of
    /// the bytes used. Compaction copies every live key, so a full arena must not compact for
    /// every byte freed: with this bound each byte removed pays for at most eight bytes copied.
    /// Whether the key that found the arena full then fits is not asked: that depends on the
    /// chunk tails the compacted keys leave, and the compaction is paid for either way.
    pub(crate) fn worth_compacting(&self) -> bool {
        self.worth_compacting_after_release(0)
    }

    /// [`KeyArena::worth_compacting`] once `freed` more live bytes are released.
    pub(crate) fn worth_compacting_after_release(&self, freed: usize) -> bool {
        let garbage = self.garbage + freed;
        garbage > 0 && garbage >= (self.live + self.garbage) / 8
    }

    /// Whether a key of `len` bytes would fit once the live keys of `lens` (in arena order,
    /// each one's length) alone are compacted: the layout [`Compaction`] would leave, worked out
    /// without moving a byte.
    pub(crate) fn fits_after_compacting(&self, lens: impl Iterator<Item = usize>, len: usize) -> bool {
        let (mut chunks, mut offset) = (0, CHUNK_BYTES); // no chunk yet: the first key opens one
        for key_len in lens {
            if !fits_at(offset, key_len) {
                chunks += 1;
                offset = 0;
            }
            offset += key_len;
        }
        (chunks > 0 && fits_at(offset, len)) || chunks < self.max_chunks
    }

    /// Starts compacting: the caller passes every live key to [`Compaction::relocate`] in
    /// arena order (by position, then length) and stores the position it returns.
    pub(crate) fn compaction(&mut self) -> Compaction<'_> {
        Compaction { arena: self, chunk: 0, offset: 0, moved_any: false }
    }

    /// Bytes of live keys.
    pub(crate) fn live_bytes(&self) -> usize {
        self.live
    }
}

/// A compaction in progress: a write cursor that live keys, visited in arena order, slide to.
///
/// In that order a key never moves later: by induction, if the previous key ends no later than
/// it did, this key fits wherever it fitted before (or earlier). So the keys not yet moved are
/// never overwritten, the copy never needs more chunks than the keys had (which a full arena
/// relies on), and no second arena is needed. Dropping it truncates the arena after the last
/// key moved.
pub(crate) struct Compaction<'a> {
    arena: &'a mut KeyArena,
    chunk: usize,
    offset: usize,
    moved_any: bool,
}

impl Compaction<'_> {
    /// Moves the key of `len` bytes at `at` to the cursor and returns its new position.
    pub(crate) fn relocate(&mut self, at: KeyRef, len: u16) -> KeyRef {
        let len = len as usize;
        if !fits_at(self.offset, len) {
            self.arena.chunks[self.chunk].truncate(self.offset);
            self.chunk += 1;
            self.offset = 0;
        }
        let (from_chunk, from) = ((at >> 16) as usize, (at & 0xffff) as usize);
        debug_assert!((self.chunk, self.offset) <= (from_chunk, from), "a key never moves later");
        if from_chunk == self.chunk {
            self.arena.chunks[from_chunk].copy_within(from..from + len, self.offset);
        } else {
            let (front, back) = self.arena.chunks.split_at_mut(from_chunk);
            // Beyond the cursor this chunk holds only keys already moved.
            let to = &mut front[self.chunk];
            to.truncate(self.offset);
            to.extend_from_slice(&back[0][from..from + len]); // within the chunk's capacity
        }
        let moved = ((self.chunk as u32) << 16) | self.offset as u32;
        self.offset += len;
        self.moved_any = true;
        moved
    }
}

impl Drop for Compaction<'_> {
    fn drop(&mut self) {
        let arena = &mut *self.arena;
        if self.moved_any {
            arena.chunks[self.chunk].truncate(self.offset);
            arena.chunks.truncate(self.chunk + 1);
        } else {
            arena.chunks.clear();
        }
        arena.garbage = 0;
    }
}

/// The insertion rule: whether a key of `len` bytes goes at `offset` of a chunk. The offset must
/// fit in 16 bits: a chunk that is exactly full takes no key, not even an empty one (its offset
/// would be CHUNK_BYTES, which reads as the next chunk).
fn fits_at(offset: usize, len: usize) -> bool {
    offset < CHUNK_BYTES && offset + len <= CHUNK_BYTES
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn keys_round_trip_and_never_span_chunks() {
        let mut arena = KeyArena::default();
        let long = vec![7u8; MAX_KEY_BYTES];
        let a = arena.insert(b"alpha");
        let b = arena.insert(&long);
        let c = arena.insert(b"");
        assert_eq!(arena.get(a, 5), b"alpha");
        assert_eq!(arena.get(b, MAX_KEY_BYTES as u16), &long[..]);
        assert_eq!(arena.get(c, 0), b"");
        assert_eq!(b >> 16, 1, "the long key starts a new chunk");
        assert_eq!(arena.live_bytes(), 5 + MAX_KEY_BYTES);
    }

    #[test]
    fn an_empty_key_after_an_exactly_full_chunk_starts_a_new_one() {
        let mut arena = KeyArena::default();
        let a = arena.insert(&vec![1u8; MAX_KEY_BYTES]);
        let b = arena.insert(b"z"); // fills the first chunk to exactly CHUNK_BYTES
        let empty = arena.insert(b"");
        let after = arena.insert(b"next");
        assert_eq!((a >> 16, b >> 16), (0, 0));
        assert_eq!(empty >> 16, 1, "an offset of CHUNK_BYTES would read as chunk 1, offset 0");
        assert_eq!(arena.get(empty, 0), b"");
        assert_eq!(arena.get(b, 1), b"z");
        assert_eq!(arena.get(after, 4), b"next");
    }

    impl KeyArena {
        fn chunk_count(&self) -> usize {
            self.chunks.len()
        }
    }

    #[test]
    fn a_full_arena_compacts_only_when_an_eighth_is_garbage() {
        let mut arena = KeyArena::with_max_chunks(2);
        for _ in 0..4 {
            arena.insert(&[1u8; 32_000]);
        }
        arena.release(100);
        assert!(!arena.worth_compacting(), "100 bytes of 128,000: copying them all is not worth it");
        assert!(!arena.worth_compacting_after_release(15_899));
        assert!(arena.worth_compacting_after_release(15_900), "an eighth of the bytes used");
    }

    #[test]
    fn the_layout_after_compacting_counts_chunk_tails() {
        let two = KeyArena::with_max_chunks(2);
        let (apart, together) = ([35_000, 35_000], [35_000, 30_536]);
        assert!(!two.fits_after_compacting(apart.into_iter(), 30_537), "35,000 and 35,000 take a chunk each");
        assert!(two.fits_after_compacting(apart.into_iter(), 30_536), "in the second chunk's tail");
        assert!(two.fits_after_compacting(together.into_iter(), MAX_KEY_BYTES), "in a second chunk");
        assert!(two.fits_after_compacting([35_000, 30_000, 40_000].into_iter(), 25_536), "in the last chunk's tail");
        assert!(!two.fits_after_compacting([35_000, 30_000, 40_000].into_iter(), 25_537));
        let one = KeyArena::with_max_chunks(1);
        assert!(!one.fits_after_compacting([30_000, 35_536].into_iter(), 0), "a full chunk takes no key");
        assert!(one.fits_after_compacting([].into_iter(), MAX_KEY_BYTES), "an empty arena takes any key");
    }

    #[derive(Debug, Clone)]
    enum Step {
        Insert(usize),
        Remove(usize),
        Compact,
    }

    /// Key lengths whose room after a compaction is foreseen.
    const PROBES: [usize; 6] = [0, 1, 1_000, 30_000, 40_000, MAX_KEY_BYTES];

    fn step() -> impl Strategy<Value = Step> {
        let len = prop_oneof![0usize..4, 1usize..40_000, 30_000..=MAX_KEY_BYTES];
        prop_oneof![3 => len.prop_map(Step::Insert), 2 => any::<usize>().prop_map(Step::Remove), 1 => Just(Step::Compact)]
    }

    proptest! {
        /// Compaction in place keeps every live key's bytes, never needs more chunks, and
        /// leaves an arena that takes keys as a fresh one would.
        #[test]
        fn compaction_keeps_every_key(steps in proptest::collection::vec(step(), 1..60)) {
            let mut arena = KeyArena::with_max_chunks(4);
            let mut live: Vec<(KeyRef, u16, u8)> = Vec::new();
            let content = |len: u16, fill: u8| vec![fill; len as usize];
            for (n, step) in steps.into_iter().enumerate() {
                match step {
                    Step::Insert(len) if arena.has_room(len) => {
                        let fill = (n % 251) as u8 + 1;
                        live.push((arena.insert(&content(len as u16, fill)), len as u16, fill));
                    }
                    Step::Insert(_) => {}
                    Step::Remove(i) if !live.is_empty() => {
                        let (_, len, _) = live.swap_remove(i % live.len());
                        arena.release(len);
                    }
                    Step::Remove(_) => {}
                    Step::Compact => {
                        let chunks = arena.chunk_count();
                        live.sort_unstable_by_key(|&(at, len, _)| (at, len));
                        let lens = || live.iter().map(|k| usize::from(k.1));
                        let foreseen: Vec<bool> =
                            PROBES.iter().map(|&len| arena.fits_after_compacting(lens(), len)).collect();
                        // The reference: the same keys inserted in that order into an empty arena.
                        let mut fresh = arena.emptied();
                        let expected: Vec<KeyRef> = live.iter().map(|&(_, len, fill)| fresh.insert(&content(len, fill))).collect();
                        let mut compaction = arena.compaction();
                        for key in &mut live {
                            key.0 = compaction.relocate(key.0, key.1);
                        }
                        drop(compaction);
                        prop_assert_eq!(live.iter().map(|k| k.0).collect::<Vec<_>>(), expected);
                        prop_assert_eq!(arena.chunk_count(), fresh.chunk_count());
                        prop_assert!(arena.chunk_count() <= chunks);
                        prop_assert_eq!(arena.garbage, 0);
                        prop_assert_eq!(PROBES.iter().map(|&len| arena.has_room(len)).collect::<Vec<_>>(), foreseen);
                    }
                }
                for &(at, len, fill) in &live {
                    prop_assert_eq!(arena.get(at, len), &content(len, fill)[..]);
                }
                prop_assert_eq!(arena.live_bytes(), live.iter().map(|k| k.1 as usize).sum::<usize>());
            }
        }
    }

    #[test]
    fn compaction_is_due_when_garbage_dominates() {
        let mut arena = KeyArena::default();
        let key = vec![1u8; 1000];
        for _ in 0..200 {
            arena.insert(&key);
        }
        for _ in 0..100 {
            arena.release(1000);
        }
        assert!(!arena.needs_compaction(), "garbage equals live");
        arena.release(1000);
        assert!(arena.needs_compaction());
    }

    #[test]
    fn compaction_is_due_only_past_a_chunk_of_garbage() {
        let mut arena = KeyArena::default();
        for len in [32_768, 32_768, 1, 1000] {
            arena.insert(&vec![1u8; len]);
        }
        arena.release(32_768);
        arena.release(32_768);
        assert!(!arena.needs_compaction(), "a chunk of garbage, though the live keys are far fewer");
        arena.release(1);
        assert!(arena.needs_compaction());
    }
}
