//! The regular join step: Flink's `StreamingJoinOperator` (SPEC §3.1), update pairs in one step
//! (SPEC §3.2) and dedup (SPEC §3.4).
//!
//! For a change on side S, the matching rows M of the other side O are read first (with their
//! copies and match counts), then changes are emitted and state is written. Outer sides store a
//! match count per row (RisingWave's "degree"), moved by one per change, so a null-padded row is
//! retracted exactly when it gets its first match and re-emitted when it loses its last.

use crate::change::{Input, JoinedChange, Kind, Partition, Row, Side};
use crate::config::JoinSpec;
use crate::stats::Stats;

use super::canonical::{has_null, rows_equal, rows_equal_on};
use super::clock::StreamClock;
use super::normalize::Step;
use super::plan::{JoinPlan, SidePlan, UsedColumns};
use super::state::{JoinState, RowEntry, StateError};
use super::table::{Keys, Slot, Table};

/// Reusable buffers for one join.
#[derive(Debug, Default)]
pub struct Scratch {
    matches: Vec<Slot>,
    own: Vec<Slot>,
}

fn emit(out: &mut Vec<JoinedChange>, kind: Kind, side: Side, this: &Row, other: Option<&Row>) {
    out.push(JoinedChange::new(
        kind,
        side,
        Some(this.clone()),
        other.cloned(),
    ));
}

/// Reads the rows of O matching `join_key` into `scratch.matches`; none for null keys unless
/// `SIDEJOIN_NULL_KEYS_MATCH` is on. Returns their number, copies counted.
fn find_matches<S: JoinState + ?Sized>(
    t: &mut Table<'_, S>,
    plan: &JoinPlan,
    other: Side,
    join_key: &[u8],
    has_null: bool,
    scratch: &mut Scratch,
) -> Result<u32, StateError> {
    scratch.matches.clear();
    if has_null && !plan.null_keys_match {
        return Ok(0);
    }
    t.rows_of(plan.side(other), join_key, &mut scratch.matches)?;
    Ok(scratch.matches.iter().map(|m| m.entry.copies).sum())
}

pub(super) fn is_duplicate(used: &UsedColumns, a: &Row, b: &Row) -> bool {
    match used {
        UsedColumns::All => rows_equal(a, b),
        UsedColumns::Some(cols) => rows_equal_on(a, b, cols),
    }
}

/// `+I`/`+U` of `row` (state keys `keys`) on side S.
#[allow(clippy::too_many_arguments)]
pub fn accumulate<S: JoinState + ?Sized>(
    t: &mut Table<'_, S>,
    plan: &JoinPlan,
    side: Side,
    kind: Kind,
    row: Row,
    keys: Keys,
    scratch: &mut Scratch,
    out: &mut Vec<JoinedChange>,
) -> Result<(), StateError> {
    let sp = plan.side(side);
    let op = plan.side(side.other());
    if let (Some(used), None) = (&sp.dedup, &sp.primary_key) {
        t.rows_of(sp, &keys.join, &mut scratch.own)?;
        if scratch
            .own
            .iter()
            .any(|s| is_duplicate(used, &s.entry.row, &row))
        {
            t.stats.dedup_dropped[side.index()] += 1;
            return Ok(());
        }
    }
    let total = find_matches(t, plan, side.other(), &keys.join, keys.has_null, scratch)?;
    if sp.outer && total == 0 {
        emit(out, Kind::Insert, side, &row, None);
    }
    if op.outer {
        for m in &scratch.matches {
            if m.entry.matches == 0 {
                for _ in 0..m.entry.copies {
                    let mut c = JoinedChange::new(
                        Kind::Delete,
                        side.other(),
                        Some(m.entry.row.clone()),
                        None,
                    );
                    c.generated = true;
                    out.push(c);
                }
            }
            t.set_matches(op, m, m.entry.matches + 1);
        }
    }
    let out_kind = if sp.outer || op.outer {
        Kind::Insert
    } else {
        kind
    };
    for m in &scratch.matches {
        for _ in 0..m.entry.copies {
            emit(out, out_kind, side, &row, Some(&m.entry.row));
        }
    }
    t.stats.matches += u64::from(total);
    t.add_copy(sp, &keys, row, total)
}

/// `-U`/`-D` of the stored row in `slot` on side S.
pub fn retract<S: JoinState + ?Sized>(
    t: &mut Table<'_, S>,
    plan: &JoinPlan,
    side: Side,
    kind: Kind,
    slot: Slot,
    scratch: &mut Scratch,
    out: &mut Vec<JoinedChange>,
) -> Result<(), StateError> {
    let sp = plan.side(side);
    let op = plan.side(side.other());
    t.remove_copy(sp, &slot);
    let row = &slot.entry.row;
    let null = has_null(&slot.join_key);
    let total = find_matches(t, plan, side.other(), &slot.join_key, null, scratch)?;
    if sp.outer && total == 0 {
        emit(out, Kind::Delete, side, row, None);
    }
    let out_kind = if sp.outer { Kind::Delete } else { kind };
    for m in &scratch.matches {
        for _ in 0..m.entry.copies {
            emit(out, out_kind, side, row, Some(&m.entry.row));
        }
    }
    t.stats.matches += u64::from(total);
    if op.outer {
        for m in &scratch.matches {
            if m.entry.matches == 1 {
                for _ in 0..m.entry.copies {
                    emit(out, Kind::Insert, side.other(), &m.entry.row, None);
                }
            }
            t.set_matches(op, m, m.entry.matches.saturating_sub(1));
        }
    }
    Ok(())
}

/// Replaces the stored `old` row by `new` (state keys `keys`) under the same join key, keeping
/// its match count.
pub(super) fn replace<S: JoinState + ?Sized>(
    t: &mut Table<'_, S>,
    sp: &SidePlan,
    old: &Slot,
    new: Row,
    keys: &Keys,
    stamp: i64,
) -> Result<(), StateError> {
    if sp.primary_key.is_some() {
        let entry = RowEntry {
            row: new,
            copies: 1,
            matches: old.entry.matches,
            stamp,
        };
        t.write(sp, &old.join_key, &old.item, entry, Some(old.entry.stamp));
        return Ok(());
    }
    t.remove_copy(sp, old);
    let saved = t.now;
    t.now = stamp;
    let added = t.add_copy(sp, keys, new, old.entry.matches);
    t.now = saved;
    added
}

/// `-U old`, `+U new` on side S (SPEC §3.2).
#[allow(clippy::too_many_arguments)]
pub fn update<S: JoinState + ?Sized>(
    t: &mut Table<'_, S>,
    plan: &JoinPlan,
    side: Side,
    old: Slot,
    new: Row,
    keys: Keys,
    scratch: &mut Scratch,
    out: &mut Vec<JoinedChange>,
) -> Result<(), StateError> {
    let sp = plan.side(side);
    // Canonical encodings are equal exactly when the values are (null to null included).
    if old.join_key != keys.join {
        retract(t, plan, side, Kind::UpdateBefore, old, scratch, out)?;
        return accumulate(t, plan, side, Kind::UpdateAfter, new, keys, scratch, out);
    }
    if let Some(used) = &sp.dedup {
        if is_duplicate(used, &old.entry.row, &new) {
            // Nothing the query uses changed: replace silently, refreshing nothing (SPEC §3.4).
            t.stats.dedup_dropped[side.index()] += 1;
            return replace(t, sp, &old, new, &keys, old.entry.stamp);
        }
    }
    let total = find_matches(t, plan, side.other(), &old.join_key, keys.has_null, scratch)?;
    let before = &old.entry.row;
    if sp.outer && total == 0 {
        emit(out, Kind::UpdateBefore, side, before, None);
        emit(out, Kind::UpdateAfter, side, &new, None);
    }
    for m in &scratch.matches {
        for _ in 0..m.entry.copies {
            emit(out, Kind::UpdateBefore, side, before, Some(&m.entry.row));
            emit(out, Kind::UpdateAfter, side, &new, Some(&m.entry.row));
        }
    }
    t.stats.matches += u64::from(total);
    let now = t.now;
    replace(t, sp, &old, new, &keys, now)
}

/// Runs one normalised step.
pub fn apply<S: JoinState + ?Sized>(
    t: &mut Table<'_, S>,
    plan: &JoinPlan,
    side: Side,
    step: Step,
    scratch: &mut Scratch,
    out: &mut Vec<JoinedChange>,
) -> Result<(), StateError> {
    match step {
        Step::Accumulate { kind, row, keys } => {
            accumulate(t, plan, side, kind, row, keys, scratch, out)
        }
        Step::Retract { kind, slot } => retract(t, plan, side, kind, slot, scratch, out),
        Step::Update { old, new, keys } => update(t, plan, side, old, new, keys, scratch, out),
    }
}

/// A regular join (SPEC §3) over any `JoinState`.
#[derive(Debug)]
pub struct RegularJoin {
    plan: JoinPlan,
    allow_generated_retracts: bool,
    clock: StreamClock,
    scratch: Scratch,
    steps: Vec<Step>,
    pub stats: Stats,
}

impl RegularJoin {
    pub fn new(spec: &JoinSpec) -> Self {
        RegularJoin {
            plan: JoinPlan::new(spec),
            allow_generated_retracts: spec.allow_generated_retracts,
            clock: StreamClock::default(),
            scratch: Scratch::default(),
            steps: Vec::new(),
            stats: Stats::default(),
        }
    }

    pub fn plan(&self) -> &JoinPlan {
        &self.plan
    }

    /// Drops the stream time of a released partition.
    pub fn forget_partition(&mut self, partition: Partition) {
        self.clock.forget_partition(partition);
    }

    /// Writes each partition's stream time into `state`.
    pub fn checkpoint<S: JoinState + ?Sized>(&self, state: &mut S) {
        self.clock.checkpoint(state);
    }

    /// Reads back the stream time of `partition` (assigned after a restart or a move).
    pub fn restore_partition<S: JoinState + ?Sized>(
        &mut self,
        state: &mut S,
        partition: Partition,
    ) -> Result<(), StateError> {
        self.clock.restore_partition(state, partition)
    }

    /// Processes one arriving record and appends the changes it causes to `out`.
    ///
    /// Every record advances its task's stream time first (tombstones and undecodable records,
    /// passed with `event: None`, included), then expired rows are removed, then the event is
    /// normalised and joined.
    pub fn process<S: JoinState + ?Sized>(
        &mut self,
        state: &mut S,
        input: Input,
        out: &mut Vec<JoinedChange>,
    ) -> Result<(), StateError> {
        let now = self.clock.advance(input.partition, input.timestamp);
        let mut t = Table::new(state, input.partition, now, &mut self.stats);
        self.clock.expire(&mut t, &self.plan.sides)?;
        let Some(event) = input.event else {
            return Ok(());
        };
        let from = out.len();
        let sp = self.plan.side(input.side);
        self.steps.clear();
        super::normalize::normalize(&mut t, sp, event, &mut self.steps)?;
        for step in self.steps.drain(..) {
            apply(&mut t, &self.plan, input.side, step, &mut self.scratch, out)?;
        }
        if !self.allow_generated_retracts {
            super::filter::drop_generated(out, from, &mut self.stats);
        }
        Ok(())
    }
}
