//! One task's stored rows, per side, on top of the blind `JoinState`: finding a row by primary
//! key or by value, scanning the rows of a join key, and writing or removing a row together with
//! its primary-key and TTL index entries and the `state_rows` gauge.
//!
//! This is bookkeeping only; which rows to write and what to emit is decided in `regular`.

use std::sync::Arc;

use crate::changelog::{Row, Side};
use crate::stats::Stats;

use super::canonical::{encode_key, encode_row};
use super::layout;
use super::plan::SidePlan;
use super::state::{JoinState, RowEntry, StateValue};

/// A stored row and where it lives.
#[derive(Debug, Clone)]
pub struct Slot {
    pub join_key: Vec<u8>,
    pub item: Vec<u8>,
    pub entry: RowEntry,
}

/// The state of one task (one input partition) as the regular join sees it while it processes one
/// record: the store, the partition, the stream time and the counters.
pub struct Table<'a, S: JoinState + ?Sized> {
    pub state: &'a mut S,
    pub partition: u32,
    /// Stream time: stamps every write (SPEC §3.5).
    pub now: i64,
    pub stats: &'a mut Stats,
    group: Vec<u8>,
    aux: Vec<u8>,
}

impl<'a, S: JoinState + ?Sized> Table<'a, S> {
    pub fn new(state: &'a mut S, partition: u32, now: i64, stats: &'a mut Stats) -> Self {
        Table {
            state,
            partition,
            now,
            stats,
            group: Vec::with_capacity(64),
            aux: Vec::with_capacity(64),
        }
    }

    /// The encoded join key of `row` and whether one of its columns is null.
    pub fn join_key(plan: &SidePlan, row: &Row) -> (Vec<u8>, bool) {
        let mut jk = Vec::with_capacity(16);
        let has_null = encode_key(row, &plan.key, &mut jk);
        (jk, has_null)
    }

    /// The item a row is stored under: its primary key, or the whole row on multiset sides.
    pub fn item_of(plan: &SidePlan, row: &Row) -> Vec<u8> {
        let mut item = Vec::with_capacity(32);
        match &plan.primary_key {
            Some(pk) => {
                encode_key(row, pk, &mut item);
            }
            None => encode_row(row, &mut item),
        }
        item
    }

    fn get(&mut self, side: Side, join_key: &[u8], item: &[u8]) -> Option<RowEntry> {
        layout::rows_group(&mut self.group, self.partition, side, join_key);
        self.state.get(&self.group, item)?.into_row()
    }

    /// The stored row with the primary key of `row` (primary-key sides).
    pub fn find_by_pk(&mut self, plan: &SidePlan, row: &Row) -> Option<Slot> {
        let pk_item = Self::item_of(plan, row);
        let join_key = if plan.key_in_pk {
            Self::join_key(plan, row).0
        } else {
            layout::pk_group(&mut self.aux, self.partition, plan.side, &pk_item);
            self.state.get(&self.aux, &[])?.as_bytes()?.to_vec()
        };
        let entry = self.get(plan.side, &join_key, &pk_item)?;
        Some(Slot {
            join_key,
            item: pk_item,
            entry,
        })
    }

    /// A stored copy equal to `row` (multiset sides).
    pub fn find_copy(&mut self, plan: &SidePlan, row: &Row) -> Option<Slot> {
        let join_key = Self::join_key(plan, row).0;
        let item = Self::item_of(plan, row);
        let entry = self.get(plan.side, &join_key, &item)?;
        Some(Slot {
            join_key,
            item,
            entry,
        })
    }

    /// Every stored row of `side` under `join_key`, in item order.
    pub fn scan(&mut self, side: Side, join_key: &[u8], out: &mut Vec<Slot>) {
        out.clear();
        layout::rows_group(&mut self.group, self.partition, side, join_key);
        self.state.scan(&self.group, &mut |item, value| {
            if let StateValue::Row(entry) = value {
                out.push(Slot {
                    join_key: join_key.to_vec(),
                    item: item.to_vec(),
                    entry: entry.clone(),
                });
            }
            true
        });
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

    /// Rewrites a stored entry stamped now (a write in the sense of SPEC §3.5).
    pub fn touch(&mut self, plan: &SidePlan, slot: &Slot) {
        let mut entry = slot.entry.clone();
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

    /// Adds one copy of `row` with match count `matches`, stamped now.
    ///
    /// On a primary-key side the key is known to be absent (normalisation turned an insert of a
    /// present key into an update), so nothing is read first.
    pub fn add_copy(&mut self, plan: &SidePlan, join_key: &[u8], row: Arc<Row>, matches: u32) {
        let item = Self::item_of(plan, &row);
        let existing = if plan.primary_key.is_some() {
            debug_assert!(self.get(plan.side, join_key, &item).is_none());
            None
        } else {
            self.get(plan.side, join_key, &item)
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
        self.write(plan, join_key, &item, entry, old_stamp);
        self.stats.rows(self.partition, plan.side, 1);
    }

    /// Removes one copy of a stored row.
    pub fn remove_copy(&mut self, plan: &SidePlan, slot: &Slot) {
        if slot.entry.copies > 1 {
            let mut entry = slot.entry.clone();
            entry.copies -= 1;
            entry.stamp = self.now;
            self.write(
                plan,
                &slot.join_key,
                &slot.item,
                entry,
                Some(slot.entry.stamp),
            );
        } else {
            self.remove(plan, &slot.join_key, &slot.item, slot.entry.stamp);
        }
        self.stats.rows(self.partition, plan.side, -1);
    }
}
