//! A star join's further dimensions (SPEC §14) from their `SIDEJOIN_DIM<N>_*` variables: which
//! are configured (numbered without gaps), each one's settings, join type and lookup
//! (`SIDEJOIN_DIM<N>_ON`), and the list form of `SIDEJOIN_BROADCAST`. How the dimensions relate
//! (co-partitioning, lookup order, what a star join refuses) is `star_checks.rs`'s.

use crate::error::{ConfigError, Problems};
use crate::join::side_spec;
use crate::raw::RawConfig;
use crate::raw_dims::{self, FIRST_DIM};
use crate::select::input_named;
use crate::values::is_identifier;
use crate::{DimensionSpec, JoinType, Side};

/// How many inputs are configured: 2, plus every dimension `N` whose variables are set, up to
/// the first gap (a dimension set after a gap is a problem).
pub(crate) fn configured_inputs(p: &mut Problems, raw: &RawConfig) -> usize {
    let set: Vec<bool> = raw.dims.iter().map(|d| d.is_set()).collect();
    let contiguous = set.iter().take_while(|s| **s).count();
    for (i, d) in raw.dims.iter().enumerate().skip(contiguous) {
        let Some((field, _)) = d.all().into_iter().find(|(_, v)| v.is_some()) else {
            continue;
        };
        let (n, missing) = (FIRST_DIM + i, FIRST_DIM + contiguous);
        p.add(
            raw_dims::var_of(n, field),
            None,
            format!(
                "dimensions are numbered without gaps: dim{n} needs dim{missing} \
                 (SIDEJOIN_DIM{missing}_TOPIC, SIDEJOIN_DIM{missing}_KEY, …), which is not set"
            ),
        );
    }
    FIRST_DIM + contiguous
}

/// `SIDEJOIN_BROADCAST`: one side of a two-way join (`left` or `right`), or a comma-separated
/// list of a star join's dimensions (`right,dim2`); `inputs` are configured.
pub(crate) fn broadcast_list(value: &str, inputs: usize) -> Result<Vec<Side>, ConfigError> {
    let err = |m: String| ConfigError::new("SIDEJOIN_BROADCAST", Some(value), m);
    let mut out: Vec<Side> = Vec::new();
    for part in value.split(',').map(str::trim) {
        let Some(side) = Side::named(part) else {
            return Err(err(format!(
                "`{part}`: expected left or right, or for a star join a comma-separated list of its dimensions (right, dim2 … dim7)"
            )));
        };
        if side.index() >= inputs {
            return Err(err(format!(
                "`{part}` is not an input of this join (SIDEJOIN_{}_KEY is not set)",
                side.var()
            )));
        }
        if out.contains(&side) {
            return Err(err(format!("`{part}` is listed twice")));
        }
        out.push(side);
    }
    if inputs == 2 && out.len() > 1 {
        return Err(err(
            "a two-way join broadcasts one side: left or right (a list is for a star join's dimensions)"
                .into(),
        ));
    }
    Ok(out)
}

/// The dimensions after the first (`dim2` … up to `inputs`), each broadcast when `broadcast`
/// lists it.
pub(crate) fn dimensions(
    p: &mut Problems,
    raw: &RawConfig,
    inputs: usize,
    default_ttl: i64,
    broadcast: &[Side],
) -> Vec<DimensionSpec> {
    (FIRST_DIM..inputs)
        .filter_map(Side::at)
        .map(|side| {
            let source = side_spec(p, raw, side, default_ttl);
            let d = raw.dim(side).expect("a configured dimension has variables");
            let (on, lookup) = match &d.on {
                Some(v) => p
                    .take(parse_on(side, v))
                    .unwrap_or((Side::Left, Vec::new())),
                None => {
                    p.add(
                        on_var(side),
                        None,
                        format!(
                            "required: the columns this dimension is looked up by, of the fact (`l.col`) or of one \
                             dimension joined before it (`r.col`, `dim2.col`…), one per SIDEJOIN_{}_KEY column",
                            side.var()
                        ),
                    );
                    (Side::Left, Vec::new())
                }
            };
            DimensionSpec {
                source,
                join_type: join_type(p, side, &d.join_type),
                on,
                lookup,
                broadcast: broadcast.contains(&side),
            }
        })
        .collect()
}

pub(crate) fn on_var(side: Side) -> String {
    format!("SIDEJOIN_{}_ON", side.var())
}

/// `SIDEJOIN_DIM<N>_JOIN_TYPE`: `inner` (the default) or `left`.
fn join_type(p: &mut Problems, side: Side, value: &Option<String>) -> JoinType {
    let Some(v) = value else {
        return JoinType::Inner;
    };
    let var = format!("SIDEJOIN_{}_JOIN_TYPE", side.var());
    match v.trim().to_ascii_lowercase().as_str() {
        "inner" => JoinType::Inner,
        "left" => JoinType::Left,
        "right" | "full" => {
            p.add(
                var,
                Some(v),
                "a star join keeps the fact's rows only: a right or full join would preserve this dimension's rows; \
                 expected inner or left",
            );
            JoinType::Inner
        }
        _ => {
            p.add(var, Some(v), "expected one of inner, left");
            JoinType::Inner
        }
    }
}

/// `SIDEJOIN_DIM<N>_ON`: qualified columns (`l.col`, `r.col`, `dim2.col`…), all of one input.
fn parse_on(side: Side, value: &str) -> Result<(Side, Vec<String>), ConfigError> {
    let err = |m: String| ConfigError::new(on_var(side), Some(value), m);
    let mut on: Option<Side> = None;
    let mut cols: Vec<String> = Vec::new();
    for item in value.split(',').map(str::trim) {
        let Some((prefix, col)) = item.split_once('.') else {
            return Err(err(format!(
                "`{item}`: expected a qualified column such as `l.{item}`, `r.{item}` or `dim2.{item}`"
            )));
        };
        let Some(input) = input_named(prefix) else {
            return Err(err(format!(
                "`{item}`: unknown input `{prefix}` (expected l, r, or dim2 … dim7 / d2 … d7)"
            )));
        };
        if !is_identifier(col) {
            return Err(err(format!(
                "`{item}`: column name `{col}` must match [A-Za-z_][A-Za-z0-9_]*"
            )));
        }
        match on {
            Some(o) if o != input => {
                return Err(err(format!(
                "reads both {o} and {input}: a dimension is looked up on the columns of one input"
            )))
            }
            _ => on = Some(input),
        }
        cols.push(col.to_owned());
    }
    Ok((on.unwrap_or(Side::Left), cols))
}
