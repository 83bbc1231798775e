//! The cache of hot state in front of RocksDB (`SIDEJOIN_STATE_CACHE_MB`): decoded values of
//! recently used groups, least recently used evicted first.
//!
//! It holds only what RocksDB holds (persisted data): writes not yet persisted live in the
//! store's write buffers, which reads consult first, so any entry may be evicted at any time. A
//! group is either complete (every item of it is here: a scan needs no disk) or partial (the
//! items looked up, `None` for one known to be absent).

use std::num::NonZeroUsize;

use lru::LruCache;

use crate::change::Partition;
use crate::engine::groups::{Group, Key};
use crate::engine::keyhash::KeyHasher;
use crate::engine::state::StateValue;

/// What one group of the cache holds.
#[derive(Debug, Default)]
pub(crate) struct Cached {
    pub items: Group<Option<StateValue>>,
    pub complete: bool,
    weight: usize,
}

/// Approximate bytes held for an item (key, value, bookkeeping).
fn item_weight(key: &[u8], value: &Option<StateValue>) -> usize {
    let value = match value {
        None => 0,
        Some(StateValue::Row(e)) => e.row.allocated(),
        Some(StateValue::Timed(t)) => t.row.allocated(),
        Some(StateValue::Bytes(b)) => b.len(),
    };
    key.len() + value + 64
}

pub(crate) struct Cache {
    lru: LruCache<Key, Cached, KeyHasher>,
    weight: usize,
    budget: usize,
    pub hits: u64,
    pub misses: u64,
}

impl Cache {
    pub(crate) fn new(budget_bytes: usize) -> Self {
        Cache {
            lru: LruCache::unbounded_with_hasher(KeyHasher::default()),
            weight: 0,
            budget: budget_bytes,
            hits: 0,
            misses: 0,
        }
    }

    /// The same, empty, hashing keys with `hasher`.
    pub(crate) fn rehashed(self, hasher: KeyHasher) -> Self {
        Cache {
            lru: LruCache::unbounded_with_hasher(hasher),
            weight: 0,
            ..self
        }
    }

    /// Bytes held (approximately).
    pub(crate) fn weight(&self) -> usize {
        self.weight
    }

    /// What the cache knows of `(group, item)`: `Some(None)` when it is known to be absent,
    /// `None` when the cache cannot tell.
    pub(crate) fn get(&mut self, group: &[u8], item: &[u8]) -> Option<Option<StateValue>> {
        let known = self.lru.get(group).and_then(|c| match c.items.get(item) {
            Some(v) => Some(v.clone()),
            None if c.complete => Some(None),
            None => None,
        });
        if known.is_some() {
            self.hits += 1;
        } else {
            self.misses += 1;
        }
        known
    }

    /// The items of `group` when all of them are here.
    pub(crate) fn complete(&mut self, group: &[u8]) -> Option<&Group<Option<StateValue>>> {
        match self.lru.get(group) {
            Some(c) if c.complete => {
                self.hits += 1;
                Some(&c.items)
            }
            _ => {
                self.misses += 1;
                None
            }
        }
    }

    /// Records what RocksDB holds for `(group, item)` now (read from it, or just persisted).
    pub(crate) fn note(&mut self, group: &[u8], item: &[u8], value: Option<StateValue>) {
        let c = self
            .lru
            .get_or_insert_mut(Key::from_slice(group), Cached::default);
        let before = c.weight;
        // A new group's own bookkeeping.
        let overhead = if before == 0 { group.len() + 64 } else { 0 };
        let (old, added) = if value.is_none() && c.complete {
            // A complete group says "absent" by not holding the item.
            (c.items.delete(item), 0)
        } else {
            let added = item_weight(item, &value);
            (c.items.put(item, value), added)
        };
        let removed = old.map_or(0, |o| item_weight(item, &o));
        c.weight = (c.weight + overhead + added).saturating_sub(removed);
        self.weight = (self.weight + c.weight).saturating_sub(before);
    }

    /// Records every item of `group` as RocksDB holds them (a scan read the whole group).
    pub(crate) fn fill(&mut self, group: &[u8], items: Vec<(Key, StateValue)>) {
        if let Some(old) = self.lru.pop(group) {
            self.weight -= old.weight.min(self.weight);
        }
        let mut c = Cached {
            complete: true,
            ..Cached::default()
        };
        for (item, value) in items {
            let value = Some(value);
            c.weight += item_weight(&item, &value);
            c.items.put(&item, value);
        }
        c.weight += group.len() + 64;
        self.weight += c.weight;
        self.lru.put(Key::from_slice(group), c);
    }

    /// Drops the groups of `partition`.
    pub(crate) fn release_partition(&mut self, partition: Partition) {
        let prefix = partition.to_be_bytes();
        let gone: Vec<Key> = self
            .lru
            .iter()
            .filter(|(k, _)| k.starts_with(&prefix))
            .map(|(k, _)| k.clone())
            .collect();
        for k in gone {
            if let Some(c) = self.lru.pop(&k) {
                self.weight -= c.weight.min(self.weight);
            }
        }
    }

    /// Evicts least recently used groups until the cache is within its budget.
    pub(crate) fn evict(&mut self) {
        while self.weight > self.budget {
            match self.lru.pop_lru() {
                Some((_, c)) => self.weight -= c.weight.min(self.weight),
                None => {
                    self.weight = 0;
                    break;
                }
            }
        }
    }
}

impl std::fmt::Debug for Cache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cache")
            .field("groups", &self.lru.len())
            .field("weight", &self.weight)
            .field("budget", &self.budget)
            .finish()
    }
}

/// The budget in bytes for `mb` MiB (at least 1 MiB).
pub(crate) fn budget(mb: usize) -> usize {
    NonZeroUsize::new(mb).map_or(1, NonZeroUsize::get) << 20
}
