//! From decoded events to join steps (SPEC §2): primary-key sides keep the latest row per key
//! (an insert for a present key becomes an update pair, a delete carrying only key columns deletes
//! the stored row), multiset sides retract one equal stored copy. Deletes of unknown keys,
//! retractions of absent rows and identical updates are dropped here and counted.
//!
//! Normalisation only reads state; the join step that follows writes it. Each incoming row's
//! state keys are computed here once and travel with its step.

use crate::change::{Event, Kind, Row};
use crate::stats::DropReason;

use super::canonical::rows_equal;
use super::plan::SidePlan;
use super::state::{JoinState, StateError};
use super::table::{Keys, Slot, Table};

/// One unit of work for the join.
#[derive(Debug, Clone)]
pub enum Step {
    /// `+I`/`+U` of a new row (or a new copy).
    Accumulate { kind: Kind, row: Row, keys: Keys },
    /// `-U`/`-D` of a stored row.
    Retract { kind: Kind, slot: Slot },
    /// `-U old`, `+U new` of one row (SPEC §3.2); `old` is the stored row.
    Update { old: Slot, new: Row, keys: Keys },
}

fn drop_event<S: JoinState + ?Sized>(t: &mut Table<'_, S>, plan: &SidePlan, reason: DropReason) {
    t.stats.input_dropped(plan.side, reason);
}

/// Insert-or-update of `row` on a primary-key side.
fn upsert<S: JoinState + ?Sized>(
    t: &mut Table<'_, S>,
    plan: &SidePlan,
    kind: Kind,
    row: Row,
    steps: &mut Vec<Step>,
) -> Result<(), StateError> {
    let keys = t.keys(plan, &row);
    match t.find_by_pk(plan, &keys)? {
        None => steps.push(Step::Accumulate { kind, row, keys }),
        Some(old) if rows_equal(&old.entry.row, &row) => {
            drop_event(t, plan, DropReason::IdenticalUpdate)
        }
        Some(old) => steps.push(Step::Update {
            old,
            new: row,
            keys,
        }),
    }
    Ok(())
}

/// Delete of the row stored under the primary key of `row` on a primary-key side.
fn delete_key<S: JoinState + ?Sized>(
    t: &mut Table<'_, S>,
    plan: &SidePlan,
    kind: Kind,
    row: &Row,
    steps: &mut Vec<Step>,
) -> Result<(), StateError> {
    let keys = t.keys(plan, row);
    match t.find_by_pk(plan, &keys)? {
        Some(slot) => steps.push(Step::Retract { kind, slot }),
        None => drop_event(t, plan, DropReason::UnknownKey),
    }
    Ok(())
}

fn normalize_pk<S: JoinState + ?Sized>(
    t: &mut Table<'_, S>,
    plan: &SidePlan,
    event: Event,
    steps: &mut Vec<Step>,
) -> Result<(), StateError> {
    let pk = plan.primary_key.as_deref().unwrap_or_default();
    match event {
        Event::Change(kind, row) if kind.is_accumulate() => upsert(t, plan, kind, row, steps)?,
        Event::Upsert(row) => upsert(t, plan, Kind::Insert, row, steps)?,
        Event::Change(kind, row) => delete_key(t, plan, kind, &row, steps)?,
        Event::DeleteKey(row) => delete_key(t, plan, Kind::Delete, &row, steps)?,
        Event::Update { before, after } => match before {
            // A `u` that changes the primary key: delete of the old key, insert of the new.
            Some(b) if !super::canonical::keys_equal(&b, pk, &after, pk) => {
                delete_key(t, plan, Kind::Delete, &b, steps)?;
                upsert(t, plan, Kind::Insert, after, steps)?;
            }
            // The stored row is the old row, whatever `before` says.
            _ => {
                let keys = t.keys(plan, &after);
                match t.find_by_pk(plan, &keys)? {
                    None => {
                        drop_event(t, plan, DropReason::UnknownKey);
                        steps.push(Step::Accumulate {
                            kind: Kind::UpdateAfter,
                            row: after,
                            keys,
                        });
                    }
                    Some(old) if rows_equal(&old.entry.row, &after) => {
                        drop_event(t, plan, DropReason::IdenticalUpdate)
                    }
                    Some(old) => steps.push(Step::Update {
                        old,
                        new: after,
                        keys,
                    }),
                }
            }
        },
    }
    Ok(())
}

/// The stored copy equal to `row` (multiset sides).
fn find_copy<S: JoinState + ?Sized>(
    t: &mut Table<'_, S>,
    plan: &SidePlan,
    row: &Row,
) -> Result<Option<Slot>, StateError> {
    let keys = t.keys(plan, row);
    t.find_copy(plan, &keys)
}

fn normalize_multiset<S: JoinState + ?Sized>(
    t: &mut Table<'_, S>,
    plan: &SidePlan,
    event: Event,
    steps: &mut Vec<Step>,
) -> Result<(), StateError> {
    let accumulate = |t: &mut Table<'_, S>, kind: Kind, row: Row| {
        let keys = t.keys(plan, &row);
        Step::Accumulate { kind, row, keys }
    };
    match event {
        Event::Change(kind, row) if kind.is_accumulate() => steps.push(accumulate(t, kind, row)),
        Event::Change(kind, row) => match find_copy(t, plan, &row)? {
            Some(slot) => steps.push(Step::Retract { kind, slot }),
            None => drop_event(t, plan, DropReason::NotInState),
        },
        Event::Update { before, after } => {
            let old = match &before {
                Some(b) => find_copy(t, plan, b)?,
                None => None,
            };
            match old {
                None => {
                    drop_event(t, plan, DropReason::NotInState);
                    steps.push(accumulate(t, Kind::UpdateAfter, after));
                }
                Some(old) if rows_equal(&old.entry.row, &after) => {
                    drop_event(t, plan, DropReason::IdenticalUpdate)
                }
                Some(old) => {
                    let keys = t.keys(plan, &after);
                    steps.push(Step::Update {
                        old,
                        new: after,
                        keys,
                    })
                }
            }
        }
        // Configuration guarantees upsert formats only on primary-key sides; treat defensively.
        Event::Upsert(row) => steps.push(accumulate(t, Kind::Insert, row)),
        Event::DeleteKey(row) => match find_copy(t, plan, &row)? {
            Some(slot) => steps.push(Step::Retract {
                kind: Kind::Delete,
                slot,
            }),
            None => drop_event(t, plan, DropReason::NotInState),
        },
    }
    Ok(())
}

/// Turns one event of `plan`'s side into join steps, appended to `steps`.
pub fn normalize<S: JoinState + ?Sized>(
    t: &mut Table<'_, S>,
    plan: &SidePlan,
    event: Event,
    steps: &mut Vec<Step>,
) -> Result<(), StateError> {
    if plan.primary_key.is_some() {
        normalize_pk(t, plan, event, steps)
    } else {
        normalize_multiset(t, plan, event, steps)
    }
}
