//! What the engine needs to know about a join, derived once from the validated configuration.

use crate::change::Side;
use crate::config::{JoinSpec, JoinType, SideSpec};

use super::column::Column;
use super::project::Projection;

/// The columns dedup compares (SPEC §3.4, "used columns").
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UsedColumns {
    /// SELECT is defaulted or uses `side.*`: whole rows.
    All,
    Some(Vec<Column>),
}

/// One side of the join, as the engine sees it.
#[derive(Debug, Clone)]
pub struct SidePlan {
    pub side: Side,
    pub key: Vec<Column>,
    pub primary_key: Option<Vec<Column>>,
    /// Every join-key column is a primary-key column, so a row's join key follows from its
    /// primary key and no primary-key index is needed.
    pub key_in_pk: bool,
    /// The primary key is exactly the join key (as a set of columns): a join key holds at most
    /// one row, found by a point lookup. For each primary-key column, its position in the key.
    pub pk_from_key: Option<Vec<usize>>,
    /// Unmatched rows of this side are emitted null-padded.
    pub outer: bool,
    /// State TTL in stream-time milliseconds; 0 = forever.
    pub ttl_ms: i64,
    /// `Some` when dedup is on for this side.
    pub dedup: Option<UsedColumns>,
}

/// The whole join as the engine sees it.
#[derive(Debug, Clone)]
pub struct JoinPlan {
    pub join_type: JoinType,
    pub sides: [SidePlan; 2],
    pub null_keys_match: bool,
    pub projection: Projection,
}

impl SidePlan {
    /// The engine's view of input `s`: `outer` when its unmatched rows are emitted null-padded,
    /// `used` the columns dedup compares (SPEC §3.4).
    pub fn new(s: &SideSpec, outer: bool, used: UsedColumns) -> Self {
        let pk_from_key = s.primary_key.as_ref().and_then(|pk| {
            let positions: Option<Vec<usize>> = pk
                .iter()
                .map(|c| s.key.iter().position(|k| k == c))
                .collect();
            positions.filter(|p| p.len() == s.key.len() && s.key.iter().all(|k| pk.contains(k)))
        });
        SidePlan {
            side: s.side,
            pk_from_key,
            key: Column::list(&s.key),
            key_in_pk: s
                .primary_key
                .as_ref()
                .is_some_and(|pk| s.key.iter().all(|c| pk.contains(c))),
            primary_key: s.primary_key.as_deref().map(Column::list),
            outer,
            ttl_ms: s.ttl_ms,
            dedup: s.dedup.then_some(used),
        }
    }
}

impl UsedColumns {
    /// What `side` contributes to the output: whole rows when SELECT takes `side.*`, else its
    /// join key, the columns in `also` (other inputs' lookups) and its selected columns.
    pub fn of(projection: &Projection, side: Side, key: &[String], also: &[String]) -> Self {
        if projection.select().selects_all_of(side) {
            return UsedColumns::All;
        }
        let mut cols = key.to_vec();
        let selected = projection.select().columns_of(side);
        for c in also.iter().chain(&selected) {
            if !cols.contains(c) {
                cols.push(c.clone());
            }
        }
        UsedColumns::Some(Column::list(&cols))
    }
}

impl JoinPlan {
    pub fn new(spec: &JoinSpec) -> Self {
        let projection = Projection::new(spec.select.clone());
        let side = |side: Side| {
            let s = spec.side(side);
            let used = UsedColumns::of(&projection, side, &s.key, &[]);
            SidePlan::new(s, spec.join_type.is_outer(side), used)
        };
        JoinPlan {
            join_type: spec.join_type,
            sides: [side(Side::Left), side(Side::Right)],
            null_keys_match: spec.null_keys_match,
            projection,
        }
    }

    pub fn side(&self, side: Side) -> &SidePlan {
        &self.sides[side.index()]
    }
}
