//! Durable join state: a `JoinState` in RocksDB (`SIDEJOIN_STATE_DIR`).
//!
//! A key is the engine's group followed by its item (groups are prefix-free, so a group's items
//! are one key range, and every group starts with the input partition). Writes collect in an
//! in-memory overlay that reads see at once; `flush` writes the whole overlay in one atomic
//! batch. The runtime calls it only after every output the writes caused is acknowledged, with
//! the input offsets in the same batch, so what is on disk always matches a consistent input
//! position (SPEC §7).
//!
//! A failing disk read is fatal: it panics with a message rather than answer "absent" and
//! produce a wrong join.

mod codec;
pub mod options;

use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::Path;

use rocksdb::{ReadOptions, WriteBatch, WriteOptions, DB};

use crate::changelog::Partition;
use crate::engine::state::{JoinState, StateError, StateValue};

pub use options::StoreOptions;

pub struct RocksState {
    db: DB,
    /// Pending writes, `None` = delete. Reads see them before the database.
    overlay: BTreeMap<Vec<u8>, Option<StateValue>>,
    /// Flush by itself once the overlay holds this many entries (tests); `None` = only on
    /// `flush` (the runtime's protocol).
    auto_flush: Option<usize>,
    key: Vec<u8>,
}

fn key_into(buf: &mut Vec<u8>, group: &[u8], item: &[u8]) {
    buf.clear();
    buf.extend_from_slice(group);
    buf.extend_from_slice(item);
}

/// The smallest key greater than every key starting with `prefix` (`None`: there is none).
fn successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut upper = prefix.to_vec();
    while let Some(last) = upper.pop() {
        if last < u8::MAX {
            upper.push(last + 1);
            return Some(upper);
        }
    }
    None
}

fn fatal(what: &str, e: impl std::fmt::Display) -> ! {
    panic!("RocksDB {what} failed: {e}; the state directory is damaged or unavailable")
}

impl RocksState {
    /// Opens (creating if needed) the state under `path`.
    pub fn open(path: &Path, options: &StoreOptions) -> Result<Self, StateError> {
        std::fs::create_dir_all(path)
            .map_err(|e| StateError(format!("cannot create {}: {e}", path.display())))?;
        let db = DB::open(&options.rocksdb(), path).map_err(|e| {
            StateError(format!(
                "cannot open RocksDB state in {}: {e}",
                path.display()
            ))
        })?;
        Ok(RocksState {
            db,
            overlay: BTreeMap::new(),
            auto_flush: None,
            key: Vec::with_capacity(64),
        })
    }

    /// Flushes by itself whenever `entries` writes are pending (for tests that drive the engine
    /// directly and never call `flush`).
    pub fn with_auto_flush(mut self, entries: usize) -> Self {
        self.auto_flush = Some(entries.max(1));
        self
    }

    fn delete_partition_now(&mut self, partition: Partition) -> Result<(), StateError> {
        let prefix = partition.to_be_bytes();
        self.overlay.retain(|k, _| !k.starts_with(&prefix));
        let end = (u64::from(partition as u32) + 1).to_be_bytes();
        let mut batch = WriteBatch::default();
        batch.delete_range(&prefix[..], &end[4..]);
        self.db
            .write(batch)
            .map_err(|e| StateError(format!("cannot drop partition {partition}: {e}")))
    }

    /// Pending writes (for tests).
    pub fn pending(&self) -> usize {
        self.overlay.len()
    }

    fn maybe_flush(&mut self) {
        if self.auto_flush.is_some_and(|n| self.overlay.len() >= n) {
            if let Err(e) = self.flush() {
                fatal("write", e);
            }
        }
    }

    fn db_get(&self, key: &[u8]) -> Option<StateValue> {
        match self.db.get_pinned(key) {
            Ok(Some(bytes)) => Some(codec::decode(&bytes).unwrap_or_else(|e| fatal("read", e))),
            Ok(None) => None,
            Err(e) => fatal("read", e),
        }
    }
}

impl JoinState for RocksState {
    fn get(&mut self, group: &[u8], item: &[u8]) -> Option<StateValue> {
        key_into(&mut self.key, group, item);
        match self.overlay.get(&self.key) {
            Some(pending) => pending.clone(),
            None => self.db_get(&self.key),
        }
    }

    fn put(&mut self, group: &[u8], item: &[u8], value: StateValue) {
        key_into(&mut self.key, group, item);
        self.overlay.insert(self.key.clone(), Some(value));
        self.maybe_flush();
    }

    fn delete(&mut self, group: &[u8], item: &[u8]) {
        key_into(&mut self.key, group, item);
        self.overlay.insert(self.key.clone(), None);
        self.maybe_flush();
    }

    fn scan_from(
        &mut self,
        group: &[u8],
        from: &[u8],
        visit: &mut dyn FnMut(&[u8], &StateValue) -> bool,
    ) {
        key_into(&mut self.key, group, from);
        let start = self.key.clone();
        let mut pending = self
            .overlay
            .range::<[u8], _>((Bound::Included(start.as_slice()), Bound::Unbounded))
            .take_while(|(k, _)| k.starts_with(group))
            .peekable();
        // A raw iterator bounded to the group: RocksDB stops at the group's end by itself and
        // keys and values are read in place, not copied.
        let mut opts = ReadOptions::default();
        if let Some(upper) = successor(group) {
            opts.set_iterate_upper_bound(upper);
        }
        // Every scan stays in one engine group, the prefix of its keys (`options.rs`), so the
        // group blooms can rule files out.
        opts.set_prefix_same_as_start(true);
        let mut stored = self.db.raw_iterator_opt(opts);
        stored.seek(&start);
        // Merge the two sorted streams; a pending write shadows the stored value of its key.
        loop {
            let stored_key = if stored.valid() { stored.key() } else { None };
            let take_pending = match (pending.peek(), stored_key) {
                (None, None) => break,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (Some((pk, _)), Some(sk)) => pk.as_slice() <= sk,
            };
            if take_pending {
                let (k, v) = pending.next().expect("peeked");
                if stored_key == Some(k.as_slice()) {
                    stored.next();
                }
                if let Some(v) = v {
                    if !visit(&k[group.len()..], v) {
                        return;
                    }
                }
            } else {
                let (k, bytes) = (stored.key().expect("valid"), stored.value().expect("valid"));
                let v = codec::decode(bytes).unwrap_or_else(|e| fatal("read", e));
                if !visit(&k[group.len()..], &v) {
                    return;
                }
                stored.next();
            }
        }
        if let Err(e) = stored.status() {
            fatal("scan", e);
        }
    }

    fn release_partition(&mut self, partition: Partition) {
        // The data stays on disk for a later assignment (checked for staleness then); only
        // pending writes, already flushed by the runtime before a revoke, would be dropped.
        let prefix = partition.to_be_bytes();
        self.overlay.retain(|k, _| !k.starts_with(&prefix));
    }

    fn delete_partition(&mut self, partition: Partition) -> Result<(), StateError> {
        self.delete_partition_now(partition)
    }

    fn flush(&mut self) -> Result<(), StateError> {
        if self.overlay.is_empty() {
            return Ok(());
        }
        let mut batch = WriteBatch::default();
        for (k, v) in std::mem::take(&mut self.overlay) {
            match v {
                Some(v) => batch.put(k, codec::encode(&v)),
                None => batch.delete(k),
            }
        }
        let mut opts = WriteOptions::default();
        // The write-ahead log makes the batch survive a process crash (not fsynced per batch:
        // a machine crash may lose the last batches, and their offsets with them).
        opts.set_sync(false);
        self.db
            .write_opt(batch, &opts)
            .map_err(|e| StateError(format!("RocksDB write failed: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::successor;

    #[test]
    fn successor_bounds_exactly_the_keys_with_the_prefix() {
        assert_eq!(successor(&[1, 2, 3]), Some(vec![1, 2, 4]));
        assert_eq!(successor(&[1, 2, 255]), Some(vec![1, 3]));
        assert_eq!(successor(&[255, 255]), None);
        assert_eq!(successor(&[]), None);
    }
}
