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

/// Receives the net changes of a checkpoint: stored key, encoded value (`None`: deleted).
pub type Mirror<'a> = dyn FnMut(&[u8], Option<&[u8]>) + 'a;

/// A sealed checkpoint of a store: its number, increasing from 1.
pub type Checkpoint = u64;

/// A store that cannot persist what it was given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct StateError(pub String);

/// Join state as a blind map. Groups handed to a store are prefix-free (no group is a proper
/// prefix of another), and every group begins with the 4-byte input partition. Reads take `&mut self` so a store may keep caches or overlays.
pub trait JoinState {
    /// The value stored under `(group, item)`.
    fn get(&mut self, group: &[u8], item: &[u8]) -> Option<StateValue>;

    /// Stores `value` under `(group, item)`, replacing what was there.
    fn put(&mut self, group: &[u8], item: &[u8], value: StateValue);

    /// Removes `(group, item)`; removing what is absent is a no-op.
    fn delete(&mut self, group: &[u8], item: &[u8]);

    /// Visits the items of `group` in ascending byte order of `item` while `visit` returns true.
    fn scan(&mut self, group: &[u8], visit: &mut dyn FnMut(&[u8], &StateValue) -> bool) {
        self.scan_from(group, &[], visit)
    }

    /// Forgets every group of `partition` (its groups start with the partition's 4 bytes); the
    /// partition moved to another instance or will be restored afresh.
    fn release_partition(&mut self, partition: Partition);

    /// Deletes `partition`'s state for good, durable copies included (its local state is stale).
    fn delete_partition(&mut self, partition: Partition) -> Result<(), StateError> {
        self.release_partition(partition);
        Ok(())
    }

    /// Closes a checkpoint: the writes since the last one, as they are now, become one unit
    /// that `persist` makes durable atomically; later writes belong to the next checkpoint.
    /// Stores that keep nothing durable return 0.
    fn seal(&mut self) -> Result<Checkpoint, StateError> {
        Ok(0)
    }

    /// Like `seal`, and hands every net change of the checkpoint to `mirror` (the changelog):
    /// the stored key (group followed by item) and the encoded value, `None` when deleted.
    /// Stores that keep nothing durable mirror nothing.
    fn seal_mirrored(&mut self, _mirror: &mut Mirror<'_>) -> Result<Checkpoint, StateError> {
        self.seal()
    }

    /// Makes every sealed checkpoint up to `upto` durable, in order.
    fn persist(&mut self, _upto: Checkpoint) -> Result<(), StateError> {
        Ok(())
    }

    /// Drops every write not yet persisted, sealed or open (their transaction was aborted).
    fn discard_unpersisted(&mut self) {}

    /// Writes one changelog record (a stored key and encoded value, `None`: deleted) straight
    /// into the durable state, bypassing checkpoints (restore); `loaded` makes them durable.
    fn load(&mut self, _key: &[u8], _value: Option<&[u8]>) -> Result<(), StateError> {
        Err(StateError(
            "this state store cannot be restored from a changelog".into(),
        ))
    }

    /// Makes every `load`ed record durable.
    fn loaded(&mut self) -> Result<(), StateError> {
        Ok(())
    }

    /// Visits `partition`'s durable entries as stored keys and encoded values (to mirror a local
    /// copy into an empty changelog).
    fn entries(&mut self, _partition: Partition, _visit: &mut dyn FnMut(&[u8], &[u8])) {}

    /// A local-only number of `partition` (the changelog positions its state reflects): kept
    /// beside the state, never mirrored, deleted with the partition.
    fn local(&mut self, _partition: Partition, _name: &[u8]) -> Option<i64> {
        None
    }

    /// Sets a local-only number of `partition`, durably.
    fn set_local(
        &mut self,
        _partition: Partition,
        _name: &[u8],
        _value: i64,
    ) -> Result<(), StateError> {
        Ok(())
    }

    /// Makes every write so far durable, atomically.
    fn flush(&mut self) -> Result<(), StateError> {
        let checkpoint = self.seal()?;
        self.persist(checkpoint)
    }

    /// Like `scan`, starting at the first item not below `from`.
    fn scan_from(
        &mut self,
        group: &[u8],
        from: &[u8],
        visit: &mut dyn FnMut(&[u8], &StateValue) -> bool,
    );
}

impl<S: JoinState + ?Sized> JoinState for Box<S> {
    fn get(&mut self, group: &[u8], item: &[u8]) -> Option<StateValue> {
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
    ) {
        (**self).scan_from(group, from, visit)
    }
    fn release_partition(&mut self, partition: Partition) {
        (**self).release_partition(partition)
    }
    fn seal(&mut self) -> Result<Checkpoint, StateError> {
        (**self).seal()
    }
    fn persist(&mut self, upto: Checkpoint) -> Result<(), StateError> {
        (**self).persist(upto)
    }
    fn delete_partition(&mut self, partition: Partition) -> Result<(), StateError> {
        (**self).delete_partition(partition)
    }
    fn seal_mirrored(&mut self, mirror: &mut Mirror<'_>) -> Result<Checkpoint, StateError> {
        (**self).seal_mirrored(mirror)
    }
    fn discard_unpersisted(&mut self) {
        (**self).discard_unpersisted()
    }
    fn load(&mut self, key: &[u8], value: Option<&[u8]>) -> Result<(), StateError> {
        (**self).load(key, value)
    }
    fn loaded(&mut self) -> Result<(), StateError> {
        (**self).loaded()
    }
    fn entries(&mut self, partition: Partition, visit: &mut dyn FnMut(&[u8], &[u8])) {
        (**self).entries(partition, visit)
    }
    fn local(&mut self, partition: Partition, name: &[u8]) -> Option<i64> {
        (**self).local(partition, name)
    }
    fn set_local(
        &mut self,
        partition: Partition,
        name: &[u8],
        value: i64,
    ) -> Result<(), StateError> {
        (**self).set_local(partition, name, value)
    }
}
