//! Checkpoints of the state, as the runtime's durable protocol drives them (SPEC §7): writes
//! since the last checkpoint are sealed into one batch (their net change handed to the
//! changelog mirror), persisted once their transaction committed, or discarded when it aborted;
//! a partition's entries are loaded from its changelog at restore, listed to mirror a local copy
//! into an empty changelog, or deleted when stale; local-only numbers (changelog positions)
//! live beside the state and are never mirrored.

use rocksdb::{ReadOptions, WriteBatch, WriteOptions};

use crate::change::Partition;
use crate::engine::groups::Groups;
use crate::engine::state::{JoinState, StateError};
use crate::engine::MemoryState;
use crate::{codec, key_into, successor, RocksState, Sealed, LOAD_BATCH};

/// A sealed checkpoint of a store: its number, increasing from 1.
pub type Checkpoint = u64;

/// Receives the net changes of a checkpoint: stored key, encoded value (`None`: deleted).
pub type Mirror<'a> = dyn FnMut(&[u8], Option<&[u8]>) + 'a;

/// A state store with checkpoints. Stores that keep nothing durable (memory) seal checkpoint 0
/// and mirror nothing.
pub trait Checkpointed: JoinState {
    /// Deletes `partition`'s state for good, durable copies included (its local state is stale).
    fn delete_partition(&mut self, partition: Partition) -> Result<(), StateError>;

    /// Closes a checkpoint: the writes since the last one, as they are now, become one unit
    /// that `persist` makes durable atomically, and every net change is handed to `mirror` (the
    /// stored key, group followed by item, and the encoded value; `None` when deleted).
    fn seal_mirrored(&mut self, mirror: &mut Mirror<'_>) -> Result<Checkpoint, StateError>;

    /// `seal_mirrored` without a mirror.
    fn seal(&mut self) -> Result<Checkpoint, StateError> {
        self.seal_mirrored(&mut |_, _| {})
    }

    /// Makes every sealed checkpoint up to `upto` durable, in order.
    fn persist(&mut self, upto: Checkpoint) -> Result<(), StateError>;

    /// Drops every write not yet persisted, sealed or open (their transaction was aborted).
    fn discard_unpersisted(&mut self);

    /// Writes one changelog record (a stored key and encoded value, `None`: deleted) straight
    /// into the durable state, bypassing checkpoints (restore); `loaded` makes them durable.
    fn load(&mut self, key: &[u8], value: Option<&[u8]>) -> Result<(), StateError>;

    /// Makes every `load`ed record durable.
    fn loaded(&mut self) -> Result<(), StateError>;

    /// Visits `partition`'s durable entries as stored keys and encoded values.
    fn entries(
        &mut self,
        partition: Partition,
        visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<(), StateError>;

    /// A local-only number of `partition` (the changelog positions its state reflects): kept
    /// beside the state, never mirrored, deleted with the partition.
    fn local(&mut self, partition: Partition, name: &[u8]) -> Result<Option<i64>, StateError>;

    /// Sets a local-only number of `partition`, durably.
    fn set_local(
        &mut self,
        partition: Partition,
        name: &[u8],
        value: i64,
    ) -> Result<(), StateError>;

    /// Seals and persists at once: every write so far is durable.
    fn flush(&mut self) -> Result<(), StateError> {
        let checkpoint = self.seal()?;
        self.persist(checkpoint)
    }
}

/// State in memory is volatile: nothing to persist, restore or mirror.
impl Checkpointed for MemoryState {
    fn delete_partition(&mut self, partition: Partition) -> Result<(), StateError> {
        self.release_partition(partition);
        Ok(())
    }
    fn seal_mirrored(&mut self, _mirror: &mut Mirror<'_>) -> Result<Checkpoint, StateError> {
        Ok(0)
    }
    fn persist(&mut self, _upto: Checkpoint) -> Result<(), StateError> {
        Ok(())
    }
    fn discard_unpersisted(&mut self) {}
    fn load(&mut self, _key: &[u8], _value: Option<&[u8]>) -> Result<(), StateError> {
        Err(StateError::Store(
            "state in memory cannot be restored from a changelog".into(),
        ))
    }
    fn loaded(&mut self) -> Result<(), StateError> {
        Ok(())
    }
    fn entries(
        &mut self,
        _partition: Partition,
        _visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<(), StateError> {
        Ok(())
    }
    fn local(&mut self, _partition: Partition, _name: &[u8]) -> Result<Option<i64>, StateError> {
        Ok(None)
    }
    fn set_local(&mut self, _p: Partition, _name: &[u8], _value: i64) -> Result<(), StateError> {
        Ok(())
    }
}

impl RocksState {
    /// Puts the key of `partition`'s local-only number `name` into `self.key`.
    fn local_key(&mut self, partition: Partition, name: &[u8]) {
        crate::engine::layout::local_group(&mut self.key, partition);
        self.key.extend_from_slice(name);
    }

    fn write_loading(&mut self) -> Result<(), StateError> {
        let batch = std::mem::take(&mut self.loading);
        if batch.is_empty() {
            return Ok(());
        }
        let mut opts = WriteOptions::default();
        opts.disable_wal(true);
        self.db
            .write_opt(batch, &opts)
            .map_err(|e| StateError::Store(format!("RocksDB write failed while restoring: {e}")))
    }

    fn delete_partition_now(&mut self, partition: Partition) -> Result<(), StateError> {
        if !self.sealed.is_empty() {
            return Err(StateError::Store(format!(
                "cannot drop partition {partition} while {} checkpoint(s) wait to be persisted",
                self.sealed.len()
            )));
        }
        self.open.release_partition(partition);
        self.cache.release_partition(partition);
        let prefix = partition.to_be_bytes();
        let end = successor(&prefix).expect("an input partition is not the last prefix");
        let mut batch = WriteBatch::default();
        batch.delete_range(&prefix[..], &end[..]);
        self.db
            .write(batch)
            .map_err(|e| StateError::Store(format!("cannot drop partition {partition}: {e}")))
    }
}

impl Checkpointed for RocksState {
    fn delete_partition(&mut self, partition: Partition) -> Result<(), StateError> {
        self.delete_partition_now(partition)
    }

    fn seal_mirrored(&mut self, mirror: &mut Mirror<'_>) -> Result<Checkpoint, StateError> {
        let id = self.next;
        self.next += 1;
        let fresh = Groups::with_hasher(self.open.hasher().clone());
        let writes = std::mem::replace(&mut self.open, fresh);
        self.open_writes = 0;
        // In key order: RocksDB's memtable inserts a sorted batch next to the previous key
        // instead of searching its skip list from the top for each. Groups are prefix-free and
        // a group's items are in order, so sorting the groups sorts the keys.
        let mut groups: Vec<_> = writes.iter().collect();
        groups.sort_unstable_by(|a, b| a.0.cmp(b.0));
        let mut batch = WriteBatch::default();
        for (group, items) in groups {
            for (item, value) in items.iter() {
                key_into(&mut self.key, group, item);
                match value {
                    Some(v) => {
                        let bytes = codec::encode(v);
                        mirror(&self.key, Some(&bytes));
                        batch.put(&self.key, bytes);
                    }
                    None => {
                        mirror(&self.key, None);
                        batch.delete(&self.key);
                    }
                }
            }
        }
        self.sealed.push_back(Sealed { id, writes, batch });
        Ok(id)
    }

    fn persist(&mut self, upto: Checkpoint) -> Result<(), StateError> {
        let mut opts = WriteOptions::default();
        // The write-ahead log makes the batch survive a process crash (not fsynced per batch:
        // a machine crash may lose the last batches, and their offsets with them).
        opts.set_sync(false);
        while self.sealed.front().is_some_and(|s| s.id <= upto) {
            let s = self.sealed.pop_front().expect("checked");
            self.db
                .write_opt(s.batch, &opts)
                .map_err(|e| StateError::Store(format!("RocksDB write failed: {e}")))?;
            // What was just written is likely read again soon: keep it decoded.
            for (group, items) in s.writes.iter() {
                for (item, value) in items.iter() {
                    self.cache.note(group, item, value.clone());
                }
            }
        }
        self.cache.evict();
        Ok(())
    }

    fn discard_unpersisted(&mut self) {
        // The cache holds only what RocksDB holds (reads and persisted writes), so it stays.
        self.open = Groups::with_hasher(self.open.hasher().clone());
        self.open_writes = 0;
        self.sealed.clear();
    }

    fn load(&mut self, key: &[u8], value: Option<&[u8]>) -> Result<(), StateError> {
        if let Some(p) = crate::engine::layout::partition_of(key) {
            if self.loaded_partitions.last() != Some(&p) && !self.loaded_partitions.contains(&p) {
                self.loaded_partitions.push(p);
            }
        }
        match value {
            Some(v) => {
                codec::decode(v).map_err(|e| {
                    StateError::Store(format!(
                        "a changelog record does not hold a state value: {e}"
                    ))
                })?;
                self.loading.put(key, v);
            }
            None => self.loading.delete(key),
        }
        if self.loading.len() >= LOAD_BATCH {
            self.write_loading()?;
        }
        Ok(())
    }

    fn loaded(&mut self) -> Result<(), StateError> {
        self.write_loading()?;
        // Restored records go to RocksDB past the cache: what it holds of these partitions
        // (read before the restore, e.g. the offsets a restore looks at to pick its start)
        // is older than what is on disk now.
        for p in std::mem::take(&mut self.loaded_partitions) {
            self.cache.release_partition(p);
        }
        // Restored batches skip the write-ahead log: they are durable once flushed. A crash
        // before that loses part of the restore, never its order (changelog records are whole
        // values, so restoring again from the older position is idempotent).
        self.db
            .flush()
            .map_err(|e| StateError::Store(format!("RocksDB flush failed while restoring: {e}")))
    }

    fn entries(
        &mut self,
        partition: Partition,
        visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<(), StateError> {
        let prefix = partition.to_be_bytes();
        let mut opts = ReadOptions::default();
        if let Some(end) = successor(&prefix) {
            opts.set_iterate_upper_bound(end);
        }
        let mut it = self.db.raw_iterator_opt(opts);
        it.seek(prefix);
        while it.valid() {
            let (k, v) = (it.key().expect("valid"), it.value().expect("valid"));
            if !crate::engine::layout::is_local(k) {
                visit(k, v);
            }
            it.next();
        }
        it.status()
            .map_err(|e| StateError::Store(format!("RocksDB scan failed: {e}")))
    }

    fn local(&mut self, partition: Partition, name: &[u8]) -> Result<Option<i64>, StateError> {
        self.local_key(partition, name);
        let v = (self.db.get_pinned(&self.key))
            .map_err(|e| StateError::Store(format!("RocksDB read failed: {e}")))?;
        Ok(v.and_then(|b| b[..].try_into().ok())
            .map(i64::from_be_bytes))
    }

    fn set_local(
        &mut self,
        partition: Partition,
        name: &[u8],
        value: i64,
    ) -> Result<(), StateError> {
        self.local_key(partition, name);
        self.db
            .put(&self.key, value.to_be_bytes())
            .map_err(|e| StateError::Store(format!("RocksDB write failed: {e}")))
    }
}
