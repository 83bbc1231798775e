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
//! A failing disk read is an error (`StateError`), never an answer of "absent" that would
//! produce a wrong join. A state directory written by an older format is refused at open.
//!
//! The engine sees the store through `JoinState` (`read`); the runtime's checkpoint protocol
//! through `Checkpointed` (`checkpoint`).

// The core's modules this store builds on, under their own names.
use sidejoin_core::{change, engine};

mod cache;
mod checkpoint;
mod codec;
mod layers;
pub mod options;
mod read;

use std::collections::VecDeque;
use std::path::Path;

use rocksdb::{WriteBatch, DB};
use rustc_hash::FxHashSet;

use crate::engine::groups::{Groups, Key};
use crate::engine::keyhash::KeyHasher;
use crate::engine::state::StateValue;

pub use checkpoint::{Checkpoint, Checkpointed, Mirror};
pub use options::StoreOptions;

/// Why a state directory cannot be opened: the message names the directory and the fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct OpenError(pub String);

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
    loaded_partitions: Vec<crate::change::Partition>,
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

/// Checks (or, in a new directory, writes) the format marker.
fn check_format(db: &DB, path: &Path) -> Result<(), OpenError> {
    let io = |e: rocksdb::Error| OpenError(format!("cannot read {}: {e}", path.display()));
    match db.get(FORMAT_KEY).map_err(io)? {
        Some(f) if f == FORMAT => Ok(()),
        Some(f) => Err(OpenError(format!(
            "{} holds state in format {} but this sidejoin reads format {}: delete the directory to rebuild the state",
            path.display(),
            String::from_utf8_lossy(&f),
            String::from_utf8_lossy(FORMAT)
        ))),
        None => {
            let mut it = db.raw_iterator();
            it.seek_to_first();
            if it.valid() {
                return Err(OpenError(format!(
                    "{} holds state written by an older sidejoin (format 1, before compact rows): delete the directory to rebuild the state",
                    path.display()
                )));
            }
            db.put(FORMAT_KEY, FORMAT)
                .map_err(|e| OpenError(format!("cannot write {}: {e}", path.display())))
        }
    }
}

impl RocksState {
    /// Opens (creating if needed) the state under `path`.
    pub fn open(path: &Path, options: &StoreOptions) -> Result<Self, OpenError> {
        std::fs::create_dir_all(path)
            .map_err(|e| OpenError(format!("cannot create {}: {e}", path.display())))?;
        let db = DB::open(&options.rocksdb(), path).map_err(|e| {
            OpenError(format!(
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

    /// Hashes the group keys of the buffered writes and the cache with `hasher` (the runtime's
    /// is keyed at random against hash flooding: `engine::keyhash`); before any write.
    pub fn with_key_hasher(mut self, hasher: KeyHasher) -> Self {
        self.open = Groups::with_hasher(hasher.clone());
        self.cache = self.cache.rehashed(hasher);
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
}

#[cfg(test)]
#[path = "store_tests.rs"]
mod tests;
