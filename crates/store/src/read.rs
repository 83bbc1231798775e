//! Reading and writing the state as the engine does (`JoinState`): the newest layer that knows
//! a key answers — the open write buffer, sealed checkpoints, the cache, RocksDB — and writes go
//! to the open buffer only.

use rocksdb::{DBRawIterator, ReadOptions, DB};

use crate::change::Partition;
use crate::engine::groups::Key;
use crate::engine::state::{JoinState, StateError, StateValue};
use crate::Checkpointed;
use crate::{codec, key_into, layers, successor, RocksState, CACHE_SCANNED, TOO_BIG_KEPT};

/// RocksDB could not read: the state directory is damaged or unavailable.
fn read_failed(what: &str, e: rocksdb::Error) -> StateError {
    StateError::Store(format!(
        "RocksDB {what} failed: {e}; the state directory is damaged or unavailable"
    ))
}

/// A stored value, decoded; one that does not decode is named by its key.
fn decode(key: &[u8], bytes: &[u8]) -> Result<StateValue, StateError> {
    codec::decode(bytes).map_err(|why| StateError::Corrupt {
        partition: crate::engine::layout::partition_of(key),
        key: format!("{key:02x?}"),
        why,
    })
}

impl RocksState {
    fn maybe_flush(&mut self) {
        self.open_writes += 1;
        if self.auto_flush.is_some_and(|n| self.open_writes >= n) {
            // Only tests ask for this (`with_auto_flush`): a failure there is a failed test.
            self.flush().expect("tests' auto flush: RocksDB write");
        }
    }

    /// The newest buffered write of `(group, item)`: `Some(None)` = deleted.
    fn buffered(&self, group: &[u8], item: &[u8]) -> Option<Option<StateValue>> {
        if let Some(v) = self.open.get(group, item) {
            return Some(v.clone());
        }
        self.sealed
            .iter()
            .rev()
            .find_map(|s| s.writes.get(group, item).cloned())
    }

    fn db_get(&self, key: &[u8]) -> Result<Option<StateValue>, StateError> {
        match self
            .db
            .get_pinned(key)
            .map_err(|e| read_failed("read", e))?
        {
            Some(bytes) => Ok(Some(decode(key, &bytes)?)),
            None => Ok(None),
        }
    }

    /// A RocksDB iterator over `group`'s items, positioned at `from`.
    fn group_iterator<'d>(
        db: &'d DB,
        key: &mut Vec<u8>,
        group: &[u8],
        from: &[u8],
    ) -> DBRawIterator<'d> {
        key_into(key, group, from);
        let mut opts = ReadOptions::default();
        if let Some(upper) = successor(group) {
            opts.set_iterate_upper_bound(upper);
        }
        // Every scan stays in one engine group, the prefix of its keys (`options.rs`), so the
        // group blooms can rule files out.
        opts.set_prefix_same_as_start(true);
        let mut stored = db.raw_iterator_opt(opts);
        stored.seek(&key[..]);
        stored
    }

    /// Visits the RocksDB items of `group` from `from` under the buffered writes `over`;
    /// returns the RocksDB items seen when the scan read a whole small group, for the cache.
    fn scan_disk<'a>(
        db: &DB,
        key: &mut Vec<u8>,
        group: &[u8],
        from: &[u8],
        over: impl Iterator<Item = (&'a [u8], &'a Option<StateValue>)>,
        visit: &mut dyn FnMut(&[u8], &StateValue) -> bool,
    ) -> Result<Option<Vec<(Key, StateValue)>>, StateError> {
        let mut stored = Self::group_iterator(db, key, group, from);
        let mut seen: Option<Vec<(Key, StateValue)>> = from.is_empty().then(Vec::new);
        let mut over = over.peekable();
        loop {
            let stored_item = if stored.valid() {
                stored.key().map(|k| &k[group.len()..])
            } else {
                None
            };
            let take_over = match (over.peek(), stored_item) {
                (None, None) => break,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (Some((b, _)), Some(s)) => *b <= s,
            };
            if take_over {
                let (k, v) = over.next().expect("peeked");
                if stored_item == Some(k) {
                    if let Some(seen) = &mut seen {
                        let bytes = stored.value().expect("valid");
                        let old = decode(stored.key().expect("valid"), bytes)?;
                        seen.push((Key::from_slice(k), old));
                    }
                    stored.next();
                }
                if let Some(v) = v {
                    if !visit(k, v) {
                        return Ok(None);
                    }
                }
            } else {
                let (k, bytes) = (stored.key().expect("valid"), stored.value().expect("valid"));
                let v = decode(k, bytes)?;
                let item = &k[group.len()..];
                let more = visit(item, &v);
                if let Some(s) = &mut seen {
                    if s.len() < CACHE_SCANNED {
                        s.push((Key::from_slice(item), v));
                    } else {
                        seen = None;
                    }
                }
                if !more {
                    return Ok(None);
                }
                stored.next();
            }
        }
        stored.status().map_err(|e| read_failed("scan", e))?;
        Ok(seen)
    }
}

impl JoinState for RocksState {
    fn get(&mut self, group: &[u8], item: &[u8]) -> Result<Option<StateValue>, StateError> {
        if let Some(v) = self.buffered(group, item) {
            return Ok(v);
        }
        if let Some(v) = self.cache.get(group, item) {
            return Ok(v);
        }
        key_into(&mut self.key, group, item);
        let v = self.db_get(&self.key)?;
        self.cache.note(group, item, v.clone());
        Ok(v)
    }

    fn put(&mut self, group: &[u8], item: &[u8], value: StateValue) {
        self.open.put(group, item, Some(value));
        self.maybe_flush();
    }

    fn delete(&mut self, group: &[u8], item: &[u8]) {
        self.open.put(group, item, None);
        self.maybe_flush();
    }

    fn scan_from(
        &mut self,
        group: &[u8],
        from: &[u8],
        visit: &mut dyn FnMut(&[u8], &StateValue) -> bool,
    ) -> Result<(), StateError> {
        let RocksState {
            db,
            open,
            sealed,
            cache,
            key,
            too_big,
            ..
        } = self;
        let newest_first = || std::iter::once(&*open).chain(sealed.iter().rev().map(|s| &s.writes));
        if let Some(items) = cache.complete(group) {
            let over = layers::Buffered::new(newest_first(), group, from);
            layers::overlay_cached(over, items, from, visit);
            return Ok(());
        }
        // A group not cached is read whole once (when small), so later scans of it, from any
        // item, are served from memory; groups known to be big are read from `from` on.
        if !from.is_empty() && !too_big.contains(group) {
            let none = layers::Buffered::new(std::iter::empty(), group, from);
            match Self::scan_disk(db, key, group, &[], none, &mut |_, _| true)? {
                Some(items) => {
                    cache.fill(group, items);
                    let items = cache.complete(group).expect("just filled");
                    let over = layers::Buffered::new(newest_first(), group, from);
                    layers::overlay_cached(over, items, from, visit);
                    cache.evict();
                    return Ok(());
                }
                None => {
                    if too_big.len() >= TOO_BIG_KEPT {
                        too_big.clear();
                    }
                    too_big.insert(Key::from_slice(group));
                }
            }
        }
        let over = layers::Buffered::new(newest_first(), group, from);
        if let Some(items) = Self::scan_disk(db, key, group, from, over, visit)? {
            cache.fill(group, items);
            cache.evict();
        }
        Ok(())
    }

    fn release_partition(&mut self, partition: Partition) {
        // The data stays on disk for a later assignment (checked for staleness then); the
        // runtime persists everything of a partition before it gives it up.
        self.open.release_partition(partition);
        self.cache.release_partition(partition);
    }
}
