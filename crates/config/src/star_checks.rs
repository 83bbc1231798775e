//! What a star join (SPEC §14) refuses that needs only the settings: an interval, a right or
//! full join, the fact broadcast, null keys that match, a dimension looked up on itself or on
//! one joined after it, a lookup of the wrong width, a dimension neither broadcast nor
//! co-partitioned with the fact, and the repartitioning it does not support yet. Each problem
//! names its variable; all are reported at once with the rest (exit 2).

use crate::error::Problems;
use crate::raw::RawConfig;
use crate::star::on_var;
use crate::{DimensionSpec, JoinSpec, JoinType, Side};

/// The checks of a star join's settings; nothing for a two-way join.
pub(crate) fn star(p: &mut Problems, raw: &RawConfig, join: &JoinSpec) {
    if !join.is_star() {
        return;
    }
    whole_join(p, raw, join);
    for d in &join.dimensions {
        let on = raw.dim(d.source.side).and_then(|r| r.on.as_deref());
        dimension(p, join, d, on.unwrap_or_default());
    }
    fact_hash_by(p, join);
}

/// The settings of the join as a whole that a star join cannot take.
fn whole_join(p: &mut Problems, raw: &RawConfig, join: &JoinSpec) {
    if join.interval.is_some() {
        p.add(
            "SIDEJOIN_INTERVAL_LOWER",
            raw.interval_lower.as_deref(),
            "a star join (SIDEJOIN_DIM2_* set) is a regular join: an interval join has two inputs",
        );
    }
    if matches!(join.join_type, JoinType::Right | JoinType::Full) {
        p.add(
            "SIDEJOIN_JOIN_TYPE",
            raw.join_type.as_deref(),
            "a star join keeps the fact's (left) rows only: a right or full join would preserve the first \
             dimension's rows; expected inner or left",
        );
    }
    if join.broadcast == Some(Side::Left) {
        p.add(
            "SIDEJOIN_BROADCAST",
            raw.broadcast.as_deref(),
            "the fact (left) of a star join cannot be broadcast: it is the input read partitioned, \
             the dimensions are broadcast or co-partitioned with it",
        );
    }
    if join.null_keys_match {
        p.add(
            "SIDEJOIN_NULL_KEYS_MATCH",
            Some("true"),
            "not supported by a star join yet: its lookups skip null keys",
        );
    }
}

/// One further dimension, `value` its `SIDEJOIN_DIM<N>_ON` as given.
fn dimension(p: &mut Problems, join: &JoinSpec, d: &DimensionSpec, value: &str) {
    let side = d.source.side;
    let var = on_var(side);
    if d.lookup.is_empty() {
        // Unset or unreadable: already a problem.
    } else if d.on >= side {
        p.add(
            &var,
            Some(value),
            format!(
                "reads {}, which is {side} itself or joined after it: a dimension is looked up on the fact (l) \
                 or on a dimension joined before it",
                d.on
            ),
        );
    } else if d.lookup.len() != d.source.key.len() && !d.source.key.is_empty() {
        p.add(
            &var,
            Some(value),
            format!(
                "has {} column(s) but SIDEJOIN_{}_KEY has {}; they are matched by position",
                d.lookup.len(),
                side.var(),
                d.source.key.len()
            ),
        );
    } else if !d.broadcast && (d.on != Side::Left || d.lookup != join.left.key) {
        let fact: Vec<String> = join.left.key.iter().map(|c| format!("l.{c}")).collect();
        p.add(
            &var,
            Some(value),
            format!(
                "{side} is not broadcast, so it must be co-partitioned with the fact: looked up on exactly the \
                 fact's key columns ({}, in SIDEJOIN_LEFT_KEY's order); otherwise add {side} to SIDEJOIN_BROADCAST",
                fact.join(",")
            ),
        );
    }
    if let Some(cols) = d.source.hash_by.columns() {
        p.add(
            format!("SIDEJOIN_{}_HASH_BY", side.var()),
            Some(&cols.join(",")),
            "repartitioning a star join's dimension is not supported yet: broadcast it, or key its topic by its \
             join columns (co-partitioned with the fact)",
        );
    }
}

/// The fact may be repartitioned by other columns than its key only when nothing is
/// co-partitioned with it: every dimension broadcast.
fn fact_hash_by(p: &mut Problems, join: &JoinSpec) {
    let Some(cols) = join.left.hash_by.columns() else {
        return;
    };
    // Without the first dimension broadcast, `checks::hash_by` already holds the fact to its key.
    let copartitioned =
        join.broadcast == Some(Side::Right) && join.dimensions.iter().any(|d| !d.broadcast);
    let same = cols.len() == join.left.key.len() && cols.iter().all(|c| join.left.key.contains(c));
    if copartitioned && !same {
        p.add(
            "SIDEJOIN_LEFT_HASH_BY",
            Some(&cols.join(",")),
            format!(
                "a dimension of this star join is co-partitioned with the fact (not broadcast), so the fact must be \
                 repartitioned by its join key ({}, or $join_key); other columns need every dimension broadcast",
                join.left.key.join(",")
            ),
        );
    }
}
