//! The bytes of every key of a store, packed into fixed-size chunks.
//!
//! One allocation per key would cost a pointer, a length and the allocator's header (about 24
//! bytes on wasm32) before the key itself; here a key costs its bytes. Chunks have a fixed size
//! and never grow, so filling the arena never copies it (a growing `Vec` would leave freed
//! copies behind in wasm memory, which never shrinks). Removed keys leave garbage that
//! compaction (copying the live keys into a fresh arena) reclaims once it outweighs the live bytes.

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

    /// An empty arena with the same limit, for compaction.
    pub(crate) fn emptied(&self) -> Self {
        KeyArena::with_max_chunks(self.max_chunks)
    }

    /// Whether a key of `len` bytes can be inserted.
    pub(crate) fn has_room(&self, len: usize) -> bool {
        self.last_fits(len) || self.chunks.len() < self.max_chunks
    }

    /// Whether removed keys' bytes could be reclaimed by compaction.
    pub(crate) fn has_garbage(&self) -> bool {
        self.garbage > 0
    }

    fn last_fits(&self, len: usize) -> bool {
        // The offset must fit in 16 bits: a chunk that is exactly full takes no key, not even an
        // empty one (its offset would be CHUNK_BYTES, which reads as the next chunk).
        self.chunks.last().is_some_and(|c| c.len() < CHUNK_BYTES && c.len() + len <= CHUNK_BYTES)
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

    /// Bytes of live keys.
    pub(crate) fn live_bytes(&self) -> usize {
        self.live
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
