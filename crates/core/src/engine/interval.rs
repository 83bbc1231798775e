//! The event-time interval join (SPEC §4), after Flink's `RowTimeIntervalJoin` with
//! `minCleanUpInterval = 0`: a left row at `tl` joins a right row at `tr` when their keys match
//! and `tr + LOWER <= tl <= tr + UPPER`. Rows wait in state until the watermark W makes them final
//! (left: `W > tl - LOWER + lateness`, right: `W > tr + UPPER + lateness`); an outer row that never
//! matched is then emitted null-padded, once. The output is insert-only.
//!
//! Beyond Flink, `SIDEJOIN_MAX_WAIT` pads an unmatched outer row at most that long (processing
//! time, passed in by the caller) after it arrived; the row stays until final and a later match
//! is still emitted. The pending max-wait deadlines live in memory only.

use std::collections::hash_map::Entry;
use std::collections::VecDeque;

use rustc_hash::FxHashMap;

use crate::change::{Event, Input, JoinedChange, Kind, Partition, Row, Side};
use crate::config::{IntervalSpec, JoinSpec};
use crate::stats::{Stats, UnmatchedReason};

use super::canonical::encode_key;
use super::layout;
use super::plan::JoinPlan;
use super::state::{JoinState, StateError, StateValue, TimedRow};
use super::watermark::Watermarks;

mod evict;
mod restart;

/// An unmatched outer row waiting for `SIDEJOIN_MAX_WAIT`.
#[derive(Debug, Clone)]
struct Waiting {
    due: i64,
    partition: Partition,
    side: Side,
    join_key: Vec<u8>,
    item: Vec<u8>,
}

#[derive(Debug)]
pub struct IntervalJoin {
    plan: JoinPlan,
    spec: IntervalSpec,
    marks: Watermarks,
    /// The last arrival sequence number per partition (written to its state at checkpoints).
    seq: FxHashMap<Partition, u64>,
    waiting: VecDeque<Waiting>,
    /// Per side and partition, a time below which the time index holds nothing any more
    /// (everything there was evicted): eviction scans start there instead of walking over what
    /// earlier evictions deleted.
    evicted_to: FxHashMap<(Side, Partition), i64>,
    /// Per side and partition, a time no row in the time index is below (`None` in the map:
    /// unknown): eviction reads the index only once that time can be final.
    due_from: FxHashMap<(Side, Partition), i64>,
    pub stats: Stats,
}

fn emit(out: &mut Vec<JoinedChange>, side: Side, this: &Row, other: Option<&Row>) {
    out.push(JoinedChange::new(
        Kind::Insert,
        side,
        Some(this.clone()),
        other.cloned(),
    ));
}

impl IntervalJoin {
    pub fn new(spec: &JoinSpec, interval: IntervalSpec) -> Self {
        IntervalJoin {
            plan: JoinPlan::new(spec),
            marks: Watermarks::new(interval.watermark_delay_ms, interval.idle_timeout_ms),
            spec: interval,
            seq: FxHashMap::default(),
            waiting: VecDeque::new(),
            evicted_to: FxHashMap::default(),
            due_from: FxHashMap::default(),
            stats: Stats::default(),
        }
    }

    pub fn plan(&self) -> &JoinPlan {
        &self.plan
    }

    /// The join's watermark W (`i64::MIN` = −∞).
    pub fn watermark(&self) -> i64 {
        self.marks.current()
    }

    pub fn side_watermark(&self, side: Side) -> Option<i64> {
        self.marks.side_watermark(side)
    }

    pub fn set_partitions(&mut self, partitions: &[Partition], now: i64) {
        self.marks.set_partitions(partitions, now);
    }

    /// Whether a row of `side` at `time` is final under watermark `w`.
    fn is_final(&self, side: Side, time: i64, w: i64) -> bool {
        let bound = if side == Side::Left {
            i128::from(time) - i128::from(self.spec.lower_ms)
        } else {
            i128::from(time) + i128::from(self.spec.upper_ms)
        };
        i128::from(w) > bound + i128::from(self.spec.allowed_lateness_ms)
    }

    fn next_seq<S: JoinState + ?Sized>(
        &mut self,
        state: &mut S,
        partition: Partition,
    ) -> Result<u64, StateError> {
        let last = match self.seq.entry(partition) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) => {
                let mut group = Vec::new();
                layout::meta_group(&mut group, partition);
                let stored = state.get(&group, layout::INTERVAL_SEQ)?;
                e.insert(stored.and_then(|v| v.as_i64()).map_or(0, |seq| seq as u64))
            }
        };
        *last += 1;
        Ok(*last)
    }

    /// Processes one record: joins its row with the other side's cached rows, caches it unless
    /// it is late, then advances W and emits what became final.
    pub fn process<S: JoinState + ?Sized>(
        &mut self,
        state: &mut S,
        input: Input,
        out: &mut Vec<JoinedChange>,
    ) -> Result<(), StateError> {
        let now = input.processing_time;
        let time = match (input.event, input.time) {
            (Some(Event::Change(Kind::Insert, row)), Some(t)) => {
                self.arrive(state, input.side, input.partition, row, t, now, out)?;
                Some(t)
            }
            // Configuration admits only insert-only inputs; anything else carries no row.
            _ => None,
        };
        self.marks.observe(input.side, input.partition, time, now);
        if self.marks.advance(now) {
            self.evict(state, out)?;
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn arrive<S: JoinState + ?Sized>(
        &mut self,
        state: &mut S,
        side: Side,
        partition: Partition,
        row: Row,
        t: i64,
        now: i64,
        out: &mut Vec<JoinedChange>,
    ) -> Result<(), StateError> {
        let sp = self.plan.side(side);
        let outer = sp.outer;
        let mut join_key = Vec::with_capacity(16);
        let has_null = encode_key(&row, &sp.key, &mut join_key);
        let late = self.is_final(side, t, self.marks.current());
        let matched = if has_null && !self.plan.null_keys_match {
            false
        } else {
            self.join_cached(state, side, partition, &join_key, &row, t, out)?
        };
        if late {
            self.stats.late_records[side.index()] += 1;
            if outer && !matched {
                emit(out, side, &row, None);
                self.stats.unmatched(side, UnmatchedReason::Late);
            }
            return Ok(());
        }
        let item = layout::interval_item(t, self.next_seq(state, partition)?);
        let mut group = Vec::new();
        layout::interval_rows_group(&mut group, partition, side, &join_key);
        state.put(
            &group,
            &item,
            StateValue::Timed(TimedRow {
                row,
                matched,
                padded: false,
            }),
        );
        layout::interval_time_group(&mut group, partition, side);
        state.put(&group, &item, StateValue::Bytes(join_key.clone()));
        if let Some(due) = self.due_from.get_mut(&(side, partition)) {
            *due = (*due).min(t);
        }
        self.stats.rows(partition, side, 1);
        if outer && !matched && self.spec.max_wait_ms > 0 {
            self.waiting.push_back(Waiting {
                due: now.saturating_add(self.spec.max_wait_ms),
                partition,
                side,
                join_key,
                item,
            });
        }
        Ok(())
    }

    /// Joins a new row of `side` with the cached rows of the other side in its time range;
    /// returns whether it matched any.
    #[allow(clippy::too_many_arguments)]
    fn join_cached<S: JoinState + ?Sized>(
        &mut self,
        state: &mut S,
        side: Side,
        partition: Partition,
        join_key: &[u8],
        row: &Row,
        t: i64,
        out: &mut Vec<JoinedChange>,
    ) -> Result<bool, StateError> {
        let (lower, upper) = (self.spec.lower_ms, self.spec.upper_ms);
        // tr + LOWER <= tl <= tr + UPPER, solved for the other side's time.
        let (lo, hi) = if side == Side::Left {
            (t.saturating_sub(upper), t.saturating_sub(lower))
        } else {
            (t.saturating_add(lower), t.saturating_add(upper))
        };
        let other = side.other();
        let mut group = Vec::new();
        layout::interval_rows_group(&mut group, partition, other, join_key);
        let mut found: Vec<(Vec<u8>, TimedRow)> = Vec::new();
        state.scan_from(&group, &layout::time_bytes(lo), &mut |item, value| match (
            layout::time_from_bytes(item),
            value,
        ) {
            (Some(tt), StateValue::Timed(e)) if tt <= hi => {
                found.push((item.to_vec(), e.clone()));
                true
            }
            _ => false,
        })?;
        let matched = !found.is_empty();
        for (item, mut entry) in found {
            emit(out, side, row, Some(&entry.row));
            self.stats.matches += 1;
            if entry.padded {
                self.stats.late_matches += 1;
            }
            if !entry.matched {
                entry.matched = true;
                state.put(&group, &item, StateValue::Timed(entry));
            }
        }
        Ok(matched)
    }

    /// Processing time moved to `now`: pads rows whose `SIDEJOIN_MAX_WAIT` ran out, and lets W
    /// advance past partitions that went idle.
    pub fn tick<S: JoinState + ?Sized>(
        &mut self,
        state: &mut S,
        now: i64,
        out: &mut Vec<JoinedChange>,
    ) -> Result<(), StateError> {
        let mut group = Vec::new();
        while self.waiting.front().is_some_and(|w| w.due <= now) {
            let Some(w) = self.waiting.pop_front() else {
                break;
            };
            layout::interval_rows_group(&mut group, w.partition, w.side, &w.join_key);
            let Some(mut entry) = state.get(&group, &w.item)?.and_then(StateValue::into_timed)
            else {
                continue;
            };
            if entry.matched || entry.padded {
                continue;
            }
            emit(out, w.side, &entry.row, None);
            self.stats.unmatched(w.side, UnmatchedReason::MaxWait);
            entry.padded = true;
            state.put(&group, &w.item, StateValue::Timed(entry));
        }
        if self.marks.advance(now) {
            self.evict(state, out)?;
        }
        Ok(())
    }

    /// End of a finite input: W becomes +∞ and every cached row is final.
    pub fn flush<S: JoinState + ?Sized>(
        &mut self,
        state: &mut S,
        out: &mut Vec<JoinedChange>,
    ) -> Result<(), StateError> {
        self.marks.finish();
        self.evict(state, out)
    }
}
