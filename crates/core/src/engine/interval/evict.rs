//! Eviction: the rows the watermark made final leave the state, in row-time order, an outer row
//! that never matched being padded with nulls on its way out.

use crate::change::{JoinedChange, Partition, Side};
use crate::stats::UnmatchedReason;

use super::super::layout;
use super::super::state::{JoinState, StateError, StateValue};
use super::{emit, IntervalJoin};

/// A stored row that became final, with what is needed to order and remove it.
struct Final {
    time: i64,
    side: Side,
    seq: u64,
    partition: Partition,
    item: Vec<u8>,
    join_key: Vec<u8>,
}

impl IntervalJoin {
    /// Removes every cached row that W made final, padding unmatched outer rows, in ascending
    /// row time, left before right at equal times, then in arrival order.
    pub(super) fn evict<S: JoinState + ?Sized>(
        &mut self,
        state: &mut S,
        out: &mut Vec<JoinedChange>,
    ) -> Result<(), StateError> {
        let w = self.marks.current();
        let mut due: Vec<Final> = Vec::new();
        let mut group = Vec::new();
        for partition in self.marks.partitions() {
            for side in Side::BOTH {
                self.collect_final(state, &mut group, partition, side, w, &mut due)?;
            }
        }
        due.sort_by_key(|f| (f.time, f.side, f.seq));
        for f in due {
            self.remove_final(state, &mut group, f, out)?;
        }
        Ok(())
    }

    /// Adds to `due` the rows of `side` in `partition` that W = `w` made final, scanning the
    /// time index from where the last eviction stopped, and notes where the next one starts.
    fn collect_final<S: JoinState + ?Sized>(
        &mut self,
        state: &mut S,
        group: &mut Vec<u8>,
        partition: Partition,
        side: Side,
        w: i64,
        due: &mut Vec<Final>,
    ) -> Result<(), StateError> {
        if self
            .due_from
            .get(&(side, partition))
            .is_some_and(|&t| !self.is_final(side, t, w))
        {
            return Ok(());
        }
        layout::interval_time_group(group, partition, side);
        let from = self.evicted_to.get(&(side, partition)).copied();
        let mut next_due = i64::MAX;
        let start = from.map(layout::time_bytes);
        let mut last = from;
        state.scan_from(
            group,
            start.as_ref().map_or(&[][..], |s| &s[..]),
            &mut |item, value| {
                let Some(time) = layout::time_from_bytes(item) else {
                    return false;
                };
                if !self.is_final(side, time, w) {
                    next_due = time;
                    return false;
                }
                last = Some(time);
                due.push(Final {
                    time,
                    side,
                    seq: layout::interval_item_seq(item),
                    partition,
                    item: item.to_vec(),
                    join_key: value.as_bytes().unwrap_or_default().to_vec(),
                });
                true
            },
        )?;
        // Rows arrive final or are stored: none is stored below what was evicted.
        if let Some(t) = last {
            self.evicted_to.insert((side, partition), t);
        }
        self.due_from.insert((side, partition), next_due);
        Ok(())
    }

    /// Deletes a final row from both indexes, first padding it if it is an outer row that
    /// never matched and was not padded already (by `SIDEJOIN_MAX_WAIT`).
    fn remove_final<S: JoinState + ?Sized>(
        &mut self,
        state: &mut S,
        group: &mut Vec<u8>,
        f: Final,
        out: &mut Vec<JoinedChange>,
    ) -> Result<(), StateError> {
        layout::interval_rows_group(group, f.partition, f.side, &f.join_key);
        if let Some(entry) = state.get(group, &f.item)?.and_then(StateValue::into_timed) {
            if self.plan.side(f.side).outer && !entry.matched && !entry.padded {
                emit(out, f.side, &entry.row, None);
                self.stats.unmatched(f.side, UnmatchedReason::Watermark);
            }
        }
        state.delete(group, &f.item);
        layout::interval_time_group(group, f.partition, f.side);
        state.delete(group, &f.item);
        self.stats.rows(f.partition, f.side, -1);
        Ok(())
    }
}
