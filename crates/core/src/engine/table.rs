//! One task's stored rows, per side, on top of the blind `JoinState`: finding a row by primary
//! key or by value, reading the rows of a join key (a point lookup when the primary key is the
//! join key), and writing or removing a row together with its primary-key and TTL index entries
//! and the `state_rows` gauge.
//!
//! This is bookkeeping only; which rows to write and what to emit is decided in `regular`.

use smallvec::SmallVec;

use crate::change::{Partition, Row, Side};
use crate::stats::Stats;

use super::canonical::{encode_key, encode_row, encoded_len};
use super::layout;
use super::plan::SidePlan;
use super::state::{JoinState, RowEntry, StateError, StateValue};

/// An encoded key (join key, primary key, row item); short ones need no allocation.
pub type KeyBuf = SmallVec<[u8; 32]>;

/// The state keys of a row, computed once per incoming row.
#[derive(Debug, Clone)]
pub struct Keys {
    /// The encoded join key.
    pub join: KeyBuf,
    /// A join-key column is null or missing.
    pub has_null: bool,
    /// The item the row is stored under: its primary key, or the whole row on multiset sides.
    pub item: KeyBuf,
}

/// A stored row and where it lives.
#[derive(Debug, Clone)]
pub struct Slot {
    pub join_key: KeyBuf,
    pub item: KeyBuf,
    pub entry: RowEntry,
}

/// The state of one task (one input partition) as the regular join sees it while it processes one
/// record: the store, the partition, the stream time and the counters.
pub struct Table<'a, S: JoinState + ?Sized> {
    pub state: &'a mut S,
    pub partition: Partition,
    /// Stream time: stamps every write (SPEC §3.5).
    pub now: i64,
    pub stats: &'a mut Stats,
    group: Vec<u8>,
    aux: Vec<u8>,
    buf: Vec<u8>,
}

fn encode_into(buf: &mut Vec<u8>, f: impl FnOnce(&mut Vec<u8>) -> bool) -> (KeyBuf, bool) {
    buf.clear();
    let has_null = f(buf);
    (KeyBuf::from_slice(buf), has_null)
}

impl<'a, S: JoinState + ?Sized> Table<'a, S> {
    pub fn new(state: &'a mut S, partition: Partition, now: i64, stats: &'a mut Stats) -> Self {
        Table {
            state,
            partition,
            now,
            stats,
            group: Vec::with_capacity(64),
            aux: Vec::with_capacity(64),
            buf: Vec::with_capacity(64),
        }
    }

    /// The join key and item of `row` on `plan`'s side.
    pub fn keys(&mut self, plan: &SidePlan, row: &Row) -> Keys {
        let (join, has_null) = encode_into(&mut self.buf, |b| encode_key(row, &plan.key, b));
        let item = match (&plan.primary_key, &plan.pk_from_key) {
            (Some(_), Some(order)) => item_from_join_key(&join, order),
            (Some(pk), None) => encode_into(&mut self.buf, |b| encode_key(row, pk, b)).0,
            (None, _) => {
                encode_into(&mut self.buf, |b| {
                    encode_row(row, b);
                    false
                })
                .0
            }
        };
        Keys {
            join,
            has_null,
            item,
        }
    }

    fn get(
        &mut self,
        side: Side,
        join_key: &[u8],
        item: &[u8],
    ) -> Result<Option<RowEntry>, StateError> {
        layout::rows_group(&mut self.group, self.partition, side, join_key);
        Ok(self
            .state
            .get(&self.group, item)?
            .and_then(StateValue::into_row))
    }

    /// The stored row with the primary key of `keys` (primary-key sides).
    pub fn find_by_pk(&mut self, plan: &SidePlan, keys: &Keys) -> Result<Option<Slot>, StateError> {
        let join_key = if plan.key_in_pk {
            keys.join.clone()
        } else {
            layout::pk_group(&mut self.aux, self.partition, plan.side, &keys.item);
            match self.state.get(&self.aux, &[])? {
                Some(StateValue::Bytes(b)) => KeyBuf::from_slice(&b),
                _ => return Ok(None),
            }
        };
        let Some(entry) = self.get(plan.side, &join_key, &keys.item)? else {
            return Ok(None);
        };
        Ok(Some(Slot {
            join_key,
            item: keys.item.clone(),
            entry,
        }))
    }

    /// A stored copy equal to the row of `keys` (multiset sides).
    pub fn find_copy(&mut self, plan: &SidePlan, keys: &Keys) -> Result<Option<Slot>, StateError> {
        let entry = self.get(plan.side, &keys.join, &keys.item)?;
        Ok(entry.map(|entry| Slot {
            join_key: keys.join.clone(),
            item: keys.item.clone(),
            entry,
        }))
    }

    /// Every stored row of `plan`'s side under `join_key`, in item order: one point lookup when
    /// the side's primary key is its join key, a scan of the group otherwise.
    pub fn rows_of(
        &mut self,
        plan: &SidePlan,
        join_key: &[u8],
        out: &mut Vec<Slot>,
    ) -> Result<(), StateError> {
        out.clear();
        if let (Some(_), Some(order)) = (&plan.primary_key, &plan.pk_from_key) {
            let item = item_from_join_key(join_key, order);
            if let Some(entry) = self.get(plan.side, join_key, &item)? {
                out.push(Slot {
                    join_key: KeyBuf::from_slice(join_key),
                    item,
                    entry,
                });
            }
            return Ok(());
        }
        layout::rows_group(&mut self.group, self.partition, plan.side, join_key);
        self.state.scan(&self.group, &mut |item, value| {
            if let StateValue::Row(entry) = value {
                out.push(Slot {
                    join_key: KeyBuf::from_slice(join_key),
                    item: KeyBuf::from_slice(item),
                    entry: entry.clone(),
                });
            }
            true
        })
    }

    /// Stores `entry` under `(join_key, item)`. `old_stamp` is the stamp of what was stored there
    /// before (`None` when nothing was); the TTL index follows the new stamp.
    pub fn write(
        &mut self,
        plan: &SidePlan,
        join_key: &[u8],
        item: &[u8],
        entry: RowEntry,
        old_stamp: Option<i64>,
    ) {
        if plan.ttl_ms > 0 && old_stamp != Some(entry.stamp) {
            layout::ttl_group(&mut self.group, self.partition, plan.side);
            if let Some(old) = old_stamp {
                layout::ttl_item(&mut self.aux, old, join_key, item);
                self.state.delete(&self.group, &self.aux);
            }
            layout::ttl_item(&mut self.aux, entry.stamp, join_key, item);
            self.state
                .put(&self.group, &self.aux, StateValue::Bytes(Vec::new()));
        }
        if old_stamp.is_none() && plan.primary_key.is_some() && !plan.key_in_pk {
            layout::pk_group(&mut self.group, self.partition, plan.side, item);
            self.state
                .put(&self.group, &[], StateValue::Bytes(join_key.to_vec()));
        }
        layout::rows_group(&mut self.group, self.partition, plan.side, join_key);
        self.state.put(&self.group, item, StateValue::Row(entry));
    }

    /// Rewrites a stored entry with a new match count, stamped now (a write in the sense of
    /// SPEC §3.5).
    pub fn set_matches(&mut self, plan: &SidePlan, slot: &Slot, matches: u32) {
        self.rewrite(plan, slot, |e| e.matches = matches);
    }

    /// Writes `slot`'s entry again, as `change` makes it, stamped now.
    fn rewrite(&mut self, plan: &SidePlan, slot: &Slot, change: impl FnOnce(&mut RowEntry)) {
        let mut entry = slot.entry.clone();
        change(&mut entry);
        entry.stamp = self.now;
        self.write(
            plan,
            &slot.join_key,
            &slot.item,
            entry,
            Some(slot.entry.stamp),
        );
    }

    /// Removes a stored entry (all its copies) with its index entries.
    pub fn remove(&mut self, plan: &SidePlan, join_key: &[u8], item: &[u8], stamp: i64) {
        if plan.ttl_ms > 0 {
            layout::ttl_group(&mut self.group, self.partition, plan.side);
            layout::ttl_item(&mut self.aux, stamp, join_key, item);
            self.state.delete(&self.group, &self.aux);
        }
        if plan.primary_key.is_some() && !plan.key_in_pk {
            layout::pk_group(&mut self.group, self.partition, plan.side, item);
            self.state.delete(&self.group, &[]);
        }
        layout::rows_group(&mut self.group, self.partition, plan.side, join_key);
        self.state.delete(&self.group, item);
    }

    /// Adds one copy of `row` (whose keys are `keys`) with match count `matches`, stamped now.
    ///
    /// On a primary-key side the key is known to be absent (normalisation turned an insert of a
    /// present key into an update), so nothing is read first.
    pub fn add_copy(
        &mut self,
        plan: &SidePlan,
        keys: &Keys,
        row: Row,
        matches: u32,
    ) -> Result<(), StateError> {
        let existing = if plan.primary_key.is_some() {
            debug_assert!(matches!(
                self.get(plan.side, &keys.join, &keys.item),
                Ok(None)
            ));
            None
        } else {
            self.get(plan.side, &keys.join, &keys.item)?
        };
        let (entry, old_stamp) = match existing {
            Some(e) => (
                RowEntry {
                    row: e.row,
                    copies: e.copies + 1,
                    matches,
                    stamp: self.now,
                },
                Some(e.stamp),
            ),
            None => (
                RowEntry {
                    row,
                    copies: 1,
                    matches,
                    stamp: self.now,
                },
                None,
            ),
        };
        self.write(plan, &keys.join, &keys.item, entry, old_stamp);
        self.stats.rows(self.partition, plan.side, 1);
        Ok(())
    }

    /// Removes one copy of a stored row.
    pub fn remove_copy(&mut self, plan: &SidePlan, slot: &Slot) {
        if slot.entry.copies > 1 {
            self.rewrite(plan, slot, |e| e.copies -= 1);
        } else {
            self.remove(plan, &slot.join_key, &slot.item, slot.entry.stamp);
        }
        self.stats.rows(self.partition, plan.side, -1);
    }
}

/// The primary-key item of a row whose primary key is its join key: the join key's column
/// encodings in primary-key order (`order[i]` = position of primary-key column `i` in the key).
pub fn item_from_join_key(join_key: &[u8], order: &[usize]) -> KeyBuf {
    if order.iter().enumerate().all(|(i, p)| i == *p) {
        return KeyBuf::from_slice(join_key);
    }
    let mut pieces: SmallVec<[&[u8]; 4]> = SmallVec::new();
    let mut at = 0;
    while at < join_key.len() {
        let len = encoded_len(&join_key[at..]).unwrap_or(join_key.len() - at);
        pieces.push(&join_key[at..at + len]);
        at += len;
    }
    let mut item = KeyBuf::new();
    for p in order {
        if let Some(piece) = pieces.get(*p) {
            item.extend_from_slice(piece);
        }
    }
    item
}
