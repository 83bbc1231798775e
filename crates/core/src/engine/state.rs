//! The join state seen by the engine: a blind, two-level map `(group, item) → value`.
//!
//! A group is a byte string naming a set of items (for example "the left rows of partition 3
//! with join key 42"); items inside a group are kept in byte order and can be scanned. The store
//! knows no join semantics: the engine decides what the bytes mean (see `layout`), stores decide
//! how to keep them (in memory here, RocksDB later). Every store must pass the same test suites.

use crate::change::{Partition, Row};

/// A stored input row: its copies (multiset sides), its match count (outer sides, SPEC §3.1) and
/// the stream time of its last write (state TTL, SPEC §3.5).
#[derive(Debug, Clone, PartialEq)]
pub struct RowEntry {
    pub row: Row,
    pub copies: u32,
    pub matches: u32,
    pub stamp: i64,
}

/// A row cached by the interval join (SPEC §4); its time and arrival order are in its item key.
#[derive(Debug, Clone, PartialEq)]
pub struct TimedRow {
    pub row: Row,
    /// It has been joined at least once.
    pub matched: bool,
    /// It was already emitted null-padded by `SIDEJOIN_MAX_WAIT`.
    pub padded: bool,
}

/// A value in the state: a stored row, or opaque bytes (indexes, stream time, watermarks).
#[derive(Debug, Clone, PartialEq)]
pub enum StateValue {
    Row(RowEntry),
    Timed(TimedRow),
    Bytes(Vec<u8>),
}

impl StateValue {
    pub fn as_row(&self) -> Option<&RowEntry> {
        match self {
            StateValue::Row(e) => Some(e),
            _ => None,
        }
    }

    pub fn into_row(self) -> Option<RowEntry> {
        match self {
            StateValue::Row(e) => Some(e),
            _ => None,
        }
    }

    pub fn into_timed(self) -> Option<TimedRow> {
        match self {
            StateValue::Timed(e) => Some(e),
            _ => None,
        }
    }

    pub fn as_bytes(&self) -> Option<&[u8]> {
        match self {
            StateValue::Bytes(b) => Some(b),
            _ => None,
        }
    }

    /// A number stored as exactly 8 big-endian bytes (offsets, times, sequence numbers).
    pub fn as_i64(&self) -> Option<i64> {
        self.as_bytes()?.try_into().ok().map(i64::from_be_bytes)
    }
}

/// Why a store could not answer (the disk failed, a stored value is corrupt). The engine
/// stops processing on it: the runtime ends the run rather than join against state it cannot
/// read, and the partition is restored from its changelog by the next owner.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StateError {
    /// The store's own error (RocksDB's message).
    #[error("state store: {0}")]
    Store(String),
    /// A stored value that does not decode: the state of input partition `partition` (`None`:
    /// the key names none) cannot be trusted. The message says the fix.
    #[error(
        "corrupt state value of {} under key {key}: {why}; fix: stop sidejoin, delete its state \
         directory (SIDEJOIN_STATE_DIR) and start it again: the partition's state is then restored \
         from its changelog topic",
        partition_text(*.partition)
    )]
    Corrupt {
        partition: Option<i32>,
        key: String,
        why: String,
    },
}

fn partition_text(partition: Option<i32>) -> String {
    partition.map_or_else(
        || "an unknown input partition".to_owned(),
        |p| format!("input partition {p}"),
    )
}

/// Join state as a blind map. Groups handed to a store are prefix-free (no group is a proper
/// prefix of another), and every group begins with the 4-byte input partition. Reads take
/// `&mut self` so a store may keep caches or overlays, and may fail (a store on disk); writes
/// are buffered by durable stores and cannot fail here. Checkpoints, durability and restore are
/// not this interface's business (`sidejoin-store`'s `Checkpointed`, the runtime's `durable`).
pub trait JoinState {
    /// The value stored under `(group, item)`.
    fn get(&mut self, group: &[u8], item: &[u8]) -> Result<Option<StateValue>, StateError>;

    /// Stores `value` under `(group, item)`, replacing what was there.
    fn put(&mut self, group: &[u8], item: &[u8], value: StateValue);

    /// Removes `(group, item)`; removing what is absent is a no-op.
    fn delete(&mut self, group: &[u8], item: &[u8]);

    /// Visits the items of `group` in ascending byte order of `item` while `visit` returns true.
    fn scan(
        &mut self,
        group: &[u8],
        visit: &mut dyn FnMut(&[u8], &StateValue) -> bool,
    ) -> Result<(), StateError> {
        self.scan_from(group, &[], visit)
    }

    /// Like `scan`, starting at the first item not below `from`.
    fn scan_from(
        &mut self,
        group: &[u8],
        from: &[u8],
        visit: &mut dyn FnMut(&[u8], &StateValue) -> bool,
    ) -> Result<(), StateError>;

    /// Forgets every group of `partition` (its groups start with the partition's 4 bytes); the
    /// partition moved to another instance or will be restored afresh.
    fn release_partition(&mut self, partition: Partition);
}

impl<S: JoinState + ?Sized> JoinState for Box<S> {
    fn get(&mut self, group: &[u8], item: &[u8]) -> Result<Option<StateValue>, StateError> {
        (**self).get(group, item)
    }
    fn put(&mut self, group: &[u8], item: &[u8], value: StateValue) {
        (**self).put(group, item, value)
    }
    fn delete(&mut self, group: &[u8], item: &[u8]) {
        (**self).delete(group, item)
    }
    fn scan_from(
        &mut self,
        group: &[u8],
        from: &[u8],
        visit: &mut dyn FnMut(&[u8], &StateValue) -> bool,
    ) -> Result<(), StateError> {
        (**self).scan_from(group, from, visit)
    }
    fn release_partition(&mut self, partition: Partition) {
        (**self).release_partition(partition)
    }
}
