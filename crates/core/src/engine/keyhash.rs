//! The hasher of the maps keyed by join keys and state groups — bytes from records, so chosen by
//! whoever writes the input topics. FxHash (fast, unkeyed) lets such a writer make every key
//! collide and turn each lookup into a scan (hash flooding); SipHash-1-3 under a secret key
//! does not.
//!
//! The engine draws no randomness: the key is given from outside. The runtime gives each store
//! std's `RandomState` (a random key per process); replay, tests and benchmarks use the default,
//! SipHash-1-3 under a fixed zero key. Output never depends on a map's order (every ordered walk
//! of a map sorts first), so the key changes only what a lookup costs.

use std::hash::{BuildHasher, DefaultHasher, RandomState};

/// SipHash-1-3, keyed at random (`KeyHasher::random`) or by zero (`default`).
#[derive(Clone, Debug, Default)]
pub struct KeyHasher(Option<RandomState>);

impl KeyHasher {
    /// Hashing under `state`'s random key (the runtime makes it: `RandomState::new()`).
    pub fn random(state: RandomState) -> Self {
        KeyHasher(Some(state))
    }
}

impl BuildHasher for KeyHasher {
    type Hasher = DefaultHasher;

    #[inline]
    fn build_hasher(&self) -> DefaultHasher {
        match &self.0 {
            Some(s) => s.build_hasher(),
            None => DefaultHasher::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_change_hashes_and_the_default_is_fixed() {
        let a = KeyHasher::random(RandomState::new());
        let b = KeyHasher::random(RandomState::new());
        let keys: Vec<[u8; 8]> = (0u64..64).map(u64::to_be_bytes).collect();
        let differ = keys
            .iter()
            .filter(|k| a.hash_one(k) != b.hash_one(k))
            .count();
        assert!(differ > 60, "two random keys hash alike");
        let (d1, d2) = (KeyHasher::default(), KeyHasher::default());
        assert!(keys.iter().all(|k| d1.hash_one(k) == d2.hash_one(k)));
    }
}
