//! The star join (SPEC §14): one fact input enriched by several dimension inputs, `((F ⋈ D1) ⋈
//! D2) …`, each join `INNER` or `LEFT`, each dimension looked up on columns of the fact or of a
//! dimension joined before it.
//!
//! The state holds the inputs only (each input's rows, stored as the regular join stores a side,
//! and the lookup indexes a chained key needs), never an intermediate join result. A change on
//! any input finds the fact rows it affects (`chain::reaching`), computes their chained rows
//! before and after it (`chain::expand`) and emits the difference (`diff`): the materialised
//! output equals that of Flink SQL's chained binary joins. Which retractions are generated, for
//! `SIDEJOIN_ALLOW_GENERATED_RETRACTS=false`, is decided for the chain as a whole: those a
//! dimension's accumulate causes (a chained row null-padded from that dimension on got its first
//! match), as seed 000 has it for each dimension.

pub mod chain;
mod diff;
pub mod plan;

use crate::change::{Input, JoinedChange, Kind, Partition, Row, Side};
use crate::config::JoinSpec;
use crate::stats::Stats;

use super::clock::StreamClock;
use super::normalize::Step;
use super::regular::{is_duplicate, replace};
use super::state::{JoinState, StateError};
use super::table::{Keys, Slot, Table};
use chain::{expand, index_row, reaching, Chain};
use diff::Emit;
use plan::StarPlan;

/// A star join over any `JoinState`.
#[derive(Debug)]
pub struct StarJoin {
    plan: StarPlan,
    allow_generated_retracts: bool,
    clock: StreamClock,
    steps: Vec<Step>,
    pub stats: Stats,
}

impl StarJoin {
    pub fn new(spec: &JoinSpec) -> Self {
        StarJoin {
            plan: StarPlan::new(spec),
            allow_generated_retracts: spec.allow_generated_retracts,
            clock: StreamClock::default(),
            steps: Vec::new(),
            stats: Stats::default(),
        }
    }

    pub fn plan(&self) -> &StarPlan {
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

    /// Processes one arriving record and appends the changes it causes to `out`: stream time
    /// first, then expiry, then the normalised steps of its event (SPEC §2, §3.5), as the
    /// regular join does.
    pub fn process<S: JoinState + ?Sized>(
        &mut self,
        state: &mut S,
        input: Input,
        out: &mut Vec<JoinedChange>,
    ) -> Result<(), StateError> {
        let now = self.clock.advance(input.partition, input.timestamp);
        let mut t = Table::new(state, input.partition, now, &mut self.stats);
        self.clock.expire(&mut t, &self.plan.sources)?;
        let Some(event) = input.event else {
            return Ok(());
        };
        let from = out.len();
        self.steps.clear();
        let sp = self.plan.source(input.side);
        super::normalize::normalize(&mut t, sp, event, &mut self.steps)?;
        for step in self.steps.drain(..) {
            let mut emit = Emit::new(out);
            apply(&mut t, &self.plan, input.side, step, &mut emit)?;
        }
        // Joined rows emitted: chained rows added with a row of some dimension in them.
        self.stats.matches += out[from..]
            .iter()
            .filter(|c| {
                c.kind.is_accumulate() && (c.right.is_some() || c.more.iter().any(Option::is_some))
            })
            .count() as u64;
        if !self.allow_generated_retracts {
            super::filter::drop_generated(out, from, &mut self.stats);
        }
        Ok(())
    }
}

/// Whether an accumulate of `row` on `side` is a duplicate that dedup drops (SPEC §3.4: a side
/// without primary key already stores a row equal on the used columns under the same key).
fn dedup_drops<S: JoinState + ?Sized>(
    t: &mut Table<'_, S>,
    plan: &StarPlan,
    side: Side,
    row: &Row,
    keys: &Keys,
) -> Result<bool, StateError> {
    let sp = plan.source(side);
    let (Some(used), None) = (&sp.dedup, &sp.primary_key) else {
        return Ok(false);
    };
    let mut own = Vec::new();
    t.rows_of(sp, &keys.join, &mut own)?;
    if own.iter().any(|s| is_duplicate(used, &s.entry.row, row)) {
        t.stats.dedup_dropped[side.index()] += 1;
        return Ok(true);
    }
    Ok(false)
}

/// The fact rows a change of `side` under join key `key` affects: one, the row itself, for the
/// fact; for a dimension, every fact row whose chain looks it up with that key.
fn affected<S: JoinState + ?Sized>(
    t: &mut Table<'_, S>,
    plan: &StarPlan,
    side: Side,
    key: &[u8],
    has_null: bool,
) -> Result<Vec<Slot>, StateError> {
    let mut facts = Vec::new();
    if !has_null {
        reaching(t, plan, side, key, &mut facts)?;
    }
    Ok(facts)
}

/// A change of a dimension row of `side` under join key `key`: the chains of the fact rows it
/// reaches before and after `change` (which writes the state) go to `emit`, with each fact row's
/// copies.
fn around<S: JoinState + ?Sized>(
    t: &mut Table<'_, S>,
    plan: &StarPlan,
    (side, key, has_null): (Side, &[u8], bool),
    change: impl FnOnce(&mut Table<'_, S>) -> Result<(), StateError>,
    mut emit: impl FnMut(Vec<Chain>, Vec<Chain>, u32),
) -> Result<(), StateError> {
    let facts = affected(t, plan, side, key, has_null)?;
    let chains = |t: &mut Table<'_, S>| -> Result<Vec<Vec<Chain>>, StateError> {
        facts
            .iter()
            .map(|f| expand(t, plan, &f.entry.row))
            .collect()
    };
    let before = chains(t)?;
    change(t)?;
    let after = chains(t)?;
    for ((f, old), new) in facts.iter().zip(before).zip(after) {
        emit(old, new, f.entry.copies);
    }
    Ok(())
}

/// Stores one copy of `row` of `side` with its lookup index entries.
fn store<S: JoinState + ?Sized>(
    t: &mut Table<'_, S>,
    plan: &StarPlan,
    side: Side,
    keys: &Keys,
    row: &Row,
) -> Result<(), StateError> {
    t.add_copy(plan.source(side), keys, row.clone(), 0)?;
    index_row(t, plan, side, (&keys.join, &keys.item, row), true);
    Ok(())
}

/// Removes one copy of the stored row in `slot`, and its lookup index entries with the last.
fn unstore<S: JoinState + ?Sized>(t: &mut Table<'_, S>, plan: &StarPlan, side: Side, slot: &Slot) {
    t.remove_copy(plan.source(side), slot);
    if slot.entry.copies == 1 {
        let entry = (&slot.join_key[..], &slot.item[..], &slot.entry.row);
        index_row(t, plan, side, entry, false);
    }
}

/// Runs one normalised step of `side`.
fn apply<S: JoinState + ?Sized>(
    t: &mut Table<'_, S>,
    plan: &StarPlan,
    side: Side,
    step: Step,
    emit: &mut Emit<'_>,
) -> Result<(), StateError> {
    match step {
        Step::Accumulate { kind, row, keys } => accumulate(t, plan, side, kind, row, keys, emit),
        Step::Retract { kind, slot } => retract(t, plan, side, kind, slot, emit),
        Step::Update { old, new, keys } => update(t, plan, side, old, new, keys, emit),
    }
}

/// `+I`/`+U` of a new row (or copy) of `side`.
fn accumulate<S: JoinState + ?Sized>(
    t: &mut Table<'_, S>,
    plan: &StarPlan,
    side: Side,
    kind: Kind,
    row: Row,
    keys: Keys,
    emit: &mut Emit<'_>,
) -> Result<(), StateError> {
    if dedup_drops(t, plan, side, &row, &keys)? {
        return Ok(());
    }
    if side == Side::Left {
        let chains = expand(t, plan, &row)?;
        emit.all(kind, &chains, 1);
        return store(t, plan, side, &keys, &row);
    }
    around(
        t,
        plan,
        (side, &keys.join, keys.has_null),
        |t| store(t, plan, side, &keys, &row),
        |old, new, copies| emit.difference(old, new, kind, copies),
    )
}

/// `-U`/`-D` of the stored row in `slot` on `side`.
fn retract<S: JoinState + ?Sized>(
    t: &mut Table<'_, S>,
    plan: &StarPlan,
    side: Side,
    kind: Kind,
    slot: Slot,
    emit: &mut Emit<'_>,
) -> Result<(), StateError> {
    if side == Side::Left {
        unstore(t, plan, side, &slot);
        let chains = expand(t, plan, &slot.entry.row)?;
        emit.all(kind, &chains, 1);
        return Ok(());
    }
    let has_null = super::canonical::has_null(&slot.join_key);
    around(
        t,
        plan,
        (side, &slot.join_key, has_null),
        |t| {
            unstore(t, plan, side, &slot);
            Ok(())
        },
        |old, new, copies| emit.difference(old, new, kind, copies),
    )
}

/// `-U old`, `+U new` of one row of `side` (SPEC §3.2): the chains it is part of change in place.
fn update<S: JoinState + ?Sized>(
    t: &mut Table<'_, S>,
    plan: &StarPlan,
    side: Side,
    old: Slot,
    new: Row,
    keys: Keys,
    emit: &mut Emit<'_>,
) -> Result<(), StateError> {
    let sp = plan.source(side);
    if old.join_key != keys.join {
        retract(t, plan, side, Kind::UpdateBefore, old, emit)?;
        return accumulate(t, plan, side, Kind::UpdateAfter, new, keys, emit);
    }
    if let Some(used) = &sp.dedup {
        if is_duplicate(used, &old.entry.row, &new) {
            // Nothing the query uses changed: replace silently, refreshing nothing (SPEC §3.4).
            t.stats.dedup_dropped[side.index()] += 1;
            return swap(t, plan, side, &old, new, &keys, old.entry.stamp);
        }
    }
    let now = t.now;
    if side == Side::Left {
        let before = expand(t, plan, &old.entry.row)?;
        let after = expand(t, plan, &new)?;
        swap(t, plan, side, &old, new, &keys, now)?;
        emit.pairs(before, after, 1);
        return Ok(());
    }
    around(
        t,
        plan,
        (side, &keys.join, keys.has_null),
        |t| swap(t, plan, side, &old, new, &keys, now),
        |old, new, copies| emit.pairs(old, new, copies),
    )
}

/// Replaces the stored `old` row of `side` by `new` under the same join key, with its lookup
/// index entries.
fn swap<S: JoinState + ?Sized>(
    t: &mut Table<'_, S>,
    plan: &StarPlan,
    side: Side,
    old: &Slot,
    new: Row,
    keys: &Keys,
    stamp: i64,
) -> Result<(), StateError> {
    let indexed = plan.indexed_children(side).next().is_some();
    if indexed && (old.entry.copies == 1 || plan.source(side).primary_key.is_some()) {
        index_row(
            t,
            plan,
            side,
            (&old.join_key, &old.item, &old.entry.row),
            false,
        );
    }
    if indexed {
        index_row(t, plan, side, (&keys.join, &keys.item, &new), true);
    }
    replace(t, plan.source(side), old, new, keys, stamp)
}
