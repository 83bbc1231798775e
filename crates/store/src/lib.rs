//! Durable join state: a `JoinState` in RocksDB (`SIDEJOIN_STATE_DIR`), cache first.
//!
//! A key is the engine's group followed by its item (groups are prefix-free, so a group's items
//! are one key range, and every group starts with the input partition). Layers, newest first:
//!
//! 1. the open write buffer: every write since the last `seal`;
//! 2. sealed checkpoints: the writes of one checkpoint each, already encoded as one RocksDB batch,
//!    waiting for `persist` (the runtime persists a checkpoint once its transaction — changelog
//!    records and input offsets — is committed, so what is on disk always matches a consistent
//!    input position, SPEC §7; `runtime::durable`);
//! 3. the cache (`cache`): decoded values RocksDB holds, hot groups first, bounded;
//! 4. RocksDB itself.
//!
//! Reads take the newest layer that knows the key; writes touch only the write buffer, so a
//! value written many times within a checkpoint reaches RocksDB once (write-behind), and a
//! count change costs no re-encoding until then.
//!
//! A failing disk read is fatal: it panics with a message rather than answer "absent" and
//! produce a wrong join. A state directory written by an older format is refused at open.

// The core's modules this store builds on, under their own names.
use sidejoin_core::{change, engine};

mod cache;
mod codec;
mod layers;
pub mod options;

use std::collections::VecDeque;
use std::path::Path;

use rocksdb::{ReadOptions, WriteBatch, WriteOptions, DB};
use rustc_hash::FxHashSet;

use crate::change::Partition;
use crate::engine::groups::{Groups, Key};
use crate::engine::state::{Checkpoint, JoinState, Mirror, StateError, StateValue};

pub use options::StoreOptions;

/// The format of what this version writes; a directory holding another is refused.
const FORMAT: &[u8] = b"2";

/// Where the format is recorded: under partition -1, which no input partition is.
const FORMAT_KEY: &[u8] = b"\xff\xff\xff\xffsidejoin.format";

/// Scans that read a whole group of at most this many items from RocksDB cache it.
const CACHE_SCANNED: usize = 1024;

/// Restored records written to RocksDB per batch.
const LOAD_BATCH: usize = 10_000;

/// How many too-big groups are remembered (then forgotten all at once).
const TOO_BIG_KEPT: usize = 10_000;

/// One checkpoint's writes, waiting for `persist`.
struct Sealed {
    id: Checkpoint,
    writes: Groups<Option<StateValue>>,
    batch: WriteBatch,
}

pub struct RocksState {
    db: DB,
    open: Groups<Option<StateValue>>,
    sealed: VecDeque<Sealed>,
    cache: cache::Cache,
    next: Checkpoint,
    /// Flush by itself once the open buffer holds this many entries (tests); `None` = only on
    /// `seal`/`persist` (the runtime's protocol).
    auto_flush: Option<usize>,
    open_writes: usize,
    /// Groups found too big to cache whole (time and TTL indexes, hot keys).
    too_big: FxHashSet<Key>,
    key: Vec<u8>,
    /// Restored records not yet written (`load`).
    loading: WriteBatch,
    /// The partitions `load` wrote to since the last `loaded`: their cached reads are stale then.
    loaded_partitions: Vec<Partition>,
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

/// Checks (or, in a new directory, writes) the format marker.
fn check_format(db: &DB, path: &Path) -> Result<(), StateError> {
    let io = |e: rocksdb::Error| StateError(format!("cannot read {}: {e}", path.display()));
    match db.get(FORMAT_KEY).map_err(io)? {
        Some(f) if f == FORMAT => Ok(()),
        Some(f) => Err(StateError(format!(
            "{} holds state in format {} but this sidejoin reads format {}: delete the directory to rebuild the state",
            path.display(),
            String::from_utf8_lossy(&f),
            String::from_utf8_lossy(FORMAT)
        ))),
        None => {
            let mut it = db.raw_iterator();
            it.seek_to_first();
            if it.valid() {
                return Err(StateError(format!(
                    "{} holds state written by an older sidejoin (format 1, before compact rows): delete the directory to rebuild the state",
                    path.display()
                )));
            }
            db.put(FORMAT_KEY, FORMAT)
                .map_err(|e| StateError(format!("cannot write {}: {e}", path.display())))
        }
    }
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
        check_format(&db, path)?;
        Ok(RocksState {
            db,
            open: Groups::default(),
            sealed: VecDeque::new(),
            cache: cache::Cache::new(cache::budget(options.cache_mb)),
            next: 1,
            auto_flush: None,
            open_writes: 0,
            too_big: FxHashSet::default(),
            key: Vec::with_capacity(64),
            loading: WriteBatch::default(),
            loaded_partitions: Vec::new(),
        })
    }

    /// Flushes by itself whenever `entries` writes are buffered (for tests that drive the
    /// engine directly and never call `flush`).
    pub fn with_auto_flush(mut self, entries: usize) -> Self {
        self.auto_flush = Some(entries.max(1));
        self
    }

    /// Writes buffered and not yet persisted (for tests).
    pub fn pending(&self) -> usize {
        self.open.len() + self.sealed.iter().map(|s| s.writes.len()).sum::<usize>()
    }

    /// Cache hits and misses so far (for metrics and benchmarks).
    pub fn cache_stats(&self) -> (u64, u64, usize) {
        (self.cache.hits, self.cache.misses, self.cache.weight())
    }

    fn maybe_flush(&mut self) {
        self.open_writes += 1;
        if self.auto_flush.is_some_and(|n| self.open_writes >= n) {
            if let Err(e) = self.flush() {
                fatal("write", e);
            }
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

    fn db_get(&self, key: &[u8]) -> Option<StateValue> {
        match self.db.get_pinned(key) {
            Ok(Some(bytes)) => Some(codec::decode(&bytes).unwrap_or_else(|e| fatal("read", e))),
            Ok(None) => None,
            Err(e) => fatal("read", e),
        }
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
    ) -> Option<Vec<(Key, StateValue)>> {
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
                        let old = codec::decode(bytes).unwrap_or_else(|e| fatal("read", e));
                        seen.push((Key::from_slice(k), old));
                    }
                    stored.next();
                }
                if let Some(v) = v {
                    if !visit(k, v) {
                        return None;
                    }
                }
            } else {
                let (k, bytes) = (stored.key().expect("valid"), stored.value().expect("valid"));
                let v = codec::decode(bytes).unwrap_or_else(|e| fatal("read", e));
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
                    return None;
                }
                stored.next();
            }
        }
        if let Err(e) = stored.status() {
            fatal("scan", e);
        }
        seen
    }

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
            .map_err(|e| StateError(format!("RocksDB write failed while restoring: {e}")))
    }

    fn delete_partition_now(&mut self, partition: Partition) -> Result<(), StateError> {
        if !self.sealed.is_empty() {
            return Err(StateError(format!(
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
            .map_err(|e| StateError(format!("cannot drop partition {partition}: {e}")))
    }
}

impl JoinState for RocksState {
    fn get(&mut self, group: &[u8], item: &[u8]) -> Option<StateValue> {
        if let Some(v) = self.buffered(group, item) {
            return v;
        }
        if let Some(v) = self.cache.get(group, item) {
            return v;
        }
        key_into(&mut self.key, group, item);
        let v = self.db_get(&self.key);
        self.cache.note(group, item, v.clone());
        v
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
    ) {
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
            return;
        }
        // A group not cached is read whole once (when small), so later scans of it, from any
        // item, are served from memory; groups known to be big are read from `from` on.
        if !from.is_empty() && !too_big.contains(group) {
            let none = layers::Buffered::new(std::iter::empty(), group, from);
            match Self::scan_disk(db, key, group, &[], none, &mut |_, _| true) {
                Some(items) => {
                    cache.fill(group, items);
                    let items = cache.complete(group).expect("just filled");
                    let over = layers::Buffered::new(newest_first(), group, from);
                    layers::overlay_cached(over, items, from, visit);
                    cache.evict();
                    return;
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
        if let Some(items) = Self::scan_disk(db, key, group, from, over, visit) {
            cache.fill(group, items);
            cache.evict();
        }
    }

    fn release_partition(&mut self, partition: Partition) {
        // The data stays on disk for a later assignment (checked for staleness then); the
        // runtime persists everything of a partition before it gives it up.
        self.open.release_partition(partition);
        self.cache.release_partition(partition);
    }

    fn delete_partition(&mut self, partition: Partition) -> Result<(), StateError> {
        self.delete_partition_now(partition)
    }

    fn seal(&mut self) -> Result<Checkpoint, StateError> {
        self.seal_mirrored(&mut |_, _| {})
    }

    fn seal_mirrored(&mut self, mirror: &mut Mirror<'_>) -> Result<Checkpoint, StateError> {
        let id = self.next;
        self.next += 1;
        let writes = std::mem::take(&mut self.open);
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
                .map_err(|e| StateError(format!("RocksDB write failed: {e}")))?;
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
        self.open = Groups::default();
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
                    StateError(format!(
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
            .map_err(|e| StateError(format!("RocksDB flush failed while restoring: {e}")))
    }

    fn entries(&mut self, partition: Partition, visit: &mut dyn FnMut(&[u8], &[u8])) {
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
        if let Err(e) = it.status() {
            fatal("scan", e);
        }
    }

    fn local(&mut self, partition: Partition, name: &[u8]) -> Option<i64> {
        self.local_key(partition, name);
        match self.db.get_pinned(&self.key) {
            Ok(v) => v
                .and_then(|b| b[..].try_into().ok())
                .map(i64::from_be_bytes),
            Err(e) => fatal("read", e),
        }
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
            .map_err(|e| StateError(format!("RocksDB write failed: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::change::Row;
    use crate::engine::state::RowEntry;

    #[test]
    fn successor_bounds_exactly_the_keys_with_the_prefix() {
        assert_eq!(successor(&[1, 2, 3]), Some(vec![1, 2, 4]));
        assert_eq!(successor(&[1, 2, 255]), Some(vec![1, 3]));
        assert_eq!(successor(&[255, 255]), None);
        assert_eq!(successor(&[]), None);
    }

    fn row(n: i64) -> StateValue {
        StateValue::Row(RowEntry {
            row: Row::parse(format!("{{\"n\":{n}}}").as_bytes()).unwrap(),
            copies: 1,
            matches: 0,
            stamp: 0,
        })
    }

    fn items(s: &mut RocksState, group: &[u8]) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        s.scan(group, &mut |k, _| {
            out.push(k.to_vec());
            true
        });
        out
    }

    #[test]
    fn layers_shadow_older_ones_until_persisted() {
        let dir = tempfile::tempdir().unwrap();
        let opts = StoreOptions::default();
        let mut s = RocksState::open(dir.path(), &opts).unwrap();
        let mut group = Vec::new();
        crate::engine::layout::rows_group(&mut group, 1, crate::change::Side::Left, b"k");
        let g = &group[..];
        s.put(g, b"a", row(1));
        s.put(g, b"b", row(2));
        let first = s.seal().unwrap();
        s.delete(g, b"a");
        s.put(g, b"c", row(3));
        assert_eq!(items(&mut s, g), [b"b".to_vec(), b"c".to_vec()]);
        assert_eq!(
            s.get(g, b"a"),
            None,
            "the open delete shadows the sealed put"
        );
        s.persist(first).unwrap();
        let second = s.seal().unwrap();
        assert_eq!(items(&mut s, g), [b"b".to_vec(), b"c".to_vec()]);
        s.persist(second).unwrap();
        assert_eq!(s.pending(), 0);
        drop(s);
        // Reopened: everything persisted is there, read through a cold cache.
        let mut s = RocksState::open(dir.path(), &opts).unwrap();
        assert_eq!(items(&mut s, g), [b"b".to_vec(), b"c".to_vec()]);
        assert_eq!(s.get(g, b"c"), Some(row(3)));
        assert_eq!(s.get(g, b"a"), None);
    }

    /// An item read (and cached) before a restore loads a newer value of it reads the newer
    /// value after: a restore that continues a local copy from the changelog once left the
    /// offsets it had looked at stale (the state then reflected more input than it said, and
    /// that input was applied twice).
    #[test]
    fn what_a_restore_loads_replaces_what_was_read_before() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = RocksState::open(dir.path(), &StoreOptions::default()).unwrap();
        let mut meta = Vec::new();
        crate::engine::layout::meta_group(&mut meta, 0);
        let item = crate::engine::layout::offset_item("left");
        s.put(
            &meta,
            &item,
            StateValue::Bytes(571i64.to_be_bytes().to_vec()),
        );
        let c = s.seal().unwrap();
        s.persist(c).unwrap();
        assert!(s.get(&meta, &item).is_some(), "read, and cached");
        let mut key = meta.clone();
        key.extend_from_slice(&item);
        let newer = codec::encode(&StateValue::Bytes(5731i64.to_be_bytes().to_vec()));
        s.load(&key, Some(&newer)).unwrap();
        s.loaded().unwrap();
        assert_eq!(
            s.get(&meta, &item),
            Some(StateValue::Bytes(5731i64.to_be_bytes().to_vec()))
        );
    }

    #[test]
    fn a_sealed_checkpoint_is_not_on_disk_until_persisted() {
        let dir = tempfile::tempdir().unwrap();
        let opts = StoreOptions::default();
        let mut s = RocksState::open(dir.path(), &opts).unwrap();
        s.put(b"\0\0\0\x01g", b"a", row(1));
        s.seal().unwrap();
        drop(s);
        let mut s = RocksState::open(dir.path(), &opts).unwrap();
        assert_eq!(s.get(b"\0\0\0\x01g", b"a"), None);
    }

    #[test]
    fn older_state_directories_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        {
            let db = DB::open_default(dir.path()).unwrap();
            db.put(b"\0\0\0\x01old", b"x").unwrap();
        }
        let err = RocksState::open(dir.path(), &StoreOptions::default())
            .err()
            .expect("refused");
        assert!(err.0.contains("older sidejoin"), "{}", err.0);
    }
}
