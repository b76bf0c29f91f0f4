//! The store's key hash: foldhash with every one of its seeds secret.
//!
//! Keys often come from clients, so a store's hash must not let anyone compute in advance keys
//! that collide (they would share one probe chain, and every operation on them would cost time
//! in proportion to their number). foldhash's `FixedState::with_seed` is not enough for that: it
//! makes only the starting value secret, and pairs it with foldhash's public constants. Each of
//! foldhash's multiplications takes an input word XORed with one of those constants, so a key
//! holding the constant at that spot zeroes the product and the secret with it: a 16-byte key
//! ending in the second constant hashes by its length alone, in every store. Deriving the
//! constants from the secret as well (foldhash's `SharedSeed`) closes that; it is the "minimal"
//! HashDoS resistance foldhash claims, which does not hold against an attacker who can time
//! many lookups and work the secret out.

use std::fmt;
use std::hash::{Hash, Hasher};

use foldhash::fast::FoldHasher;
use foldhash::SharedSeed;

/// An odd constant with no pattern (the golden ratio's fraction), XORed into the secret.
const OFFSET: u64 = 0x9e37_79b9_7f4a_7c15;

/// Hashes keys with seeds derived from one secret `u64`.
#[derive(Clone)]
pub(crate) struct KeyHasher {
    start: u64,
    shared: SharedSeed,
}

impl KeyHasher {
    /// A hasher whose every seed comes from `secret`.
    pub(crate) fn new(secret: u64) -> Self {
        // Offset first: `SharedSeed::from_u64` maps 0 to one public constant for every seed,
        // and `u64::MAX` to seeds of all ones, with which every key hashes to `u64::MAX`. Those
        // are seeds a caller might pass; the two inputs that now fall there are not.
        KeyHasher { start: secret, shared: SharedSeed::from_u64(secret ^ OFFSET) }
    }

    /// The hash of `key`.
    #[inline]
    pub(crate) fn hash(&self, key: &[u8]) -> u64 {
        let mut hasher = FoldHasher::with_seed(self.start, &self.shared);
        key.hash(&mut hasher);
        hasher.finish()
    }
}

/// Shows no seed: they are the store's secret.
impl fmt::Debug for KeyHasher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("KeyHasher { .. }")
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;
    use std::hash::BuildHasher;

    use foldhash::fast::FixedState;

    use super::*;

    /// foldhash 0.2.0's first two public constants (`ARBITRARY6`, `ARBITRARY7` in its source),
    /// the `seeds[0]` and `seeds[1]` of `FixedState`.
    const PUBLIC_SEEDS: [u64; 2] = [0xc0ac_29b7_c97c_50dd, 0x3f84_d5b5_b547_0917];

    /// Keys of `len` bytes, a counter first and the public constants in their last bytes.
    fn crafted(len: usize, tail: &[u64]) -> Vec<Vec<u8>> {
        let tail: Vec<u8> = tail.iter().flat_map(|seed| seed.to_le_bytes()).collect();
        (0..1_000u32)
            .map(|i| {
                let mut key = vec![0; len];
                key[..4].copy_from_slice(&i.to_le_bytes());
                key[len - tail.len()..].copy_from_slice(&tail);
                key
            })
            .collect()
    }

    fn distinct(keys: &[Vec<u8>], hash: impl Fn(&[u8]) -> u64) -> usize {
        keys.iter().map(|key| hash(key)).collect::<HashSet<_>>().len()
    }

    #[test]
    fn keys_built_from_the_public_constants_collide_with_a_start_seed_alone() {
        let fixed = FixedState::with_seed(0x5eed);
        assert_eq!(distinct(&crafted(16, &PUBLIC_SEEDS[1..]), |k| fixed.hash_one(k)), 1);
        assert_eq!(distinct(&crafted(31, &[PUBLIC_SEEDS[0]; 2]), |k| fixed.hash_one(k)), 1);
    }

    #[test]
    fn a_secret_for_every_seed_spreads_the_same_keys() {
        for secret in [0, 1, 0x5eed, u64::MAX] {
            let hasher = KeyHasher::new(secret);
            assert_eq!(distinct(&crafted(16, &PUBLIC_SEEDS[1..]), |k| hasher.hash(k)), 1_000, "secret {secret}");
            assert_eq!(distinct(&crafted(31, &[PUBLIC_SEEDS[0]; 2]), |k| hasher.hash(k)), 1_000, "secret {secret}");
        }
    }

    #[test]
    fn the_secret_changes_the_hash_and_stays_out_of_debug_output() {
        assert_ne!(KeyHasher::new(1).hash(b"alice"), KeyHasher::new(2).hash(b"alice"));
        assert_eq!(KeyHasher::new(1).hash(b"alice"), KeyHasher::new(1).hash(b"alice"));
        assert_eq!(format!("{:?}", KeyHasher::new(0x5eed)), "KeyHasher { .. }");
    }
}
