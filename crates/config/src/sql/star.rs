//! A chain of joins as a star join (SPEC §14): the fact is the first table not broadcast
//! (`BROADCAST(…)` hints), the inputs are reordered fact first, and each dimension gets the
//! input its lookup reads — the fact or a dimension placed before it. Refused here: every table
//! broadcast, a LEFT join whose preserved side would not be the fact (one before or bringing in
//! the fact), and a dimension neither broadcast nor joined on exactly the fact's key columns.
//!
//! The reordering keeps the chain's meaning: the joins up to the one that brings in the fact are
//! INNER (so they commute), the tables after it keep their FROM order, and each reads a table
//! before it.

use super::chain::{link_keys, LinkKeys};
use super::error::{At, Result, SqlError};
use super::hints::{Hint, HintArg};
use super::query::{refuse, Input, Join};
use crate::Side;

/// One dimension, as placed: `key` its own join columns, looked up by `lookup` of `on`.
pub(super) struct Dim {
    pub side: Side,
    /// `inner` or `left`.
    pub kind: &'static str,
    pub on: Side,
    pub lookup: Vec<String>,
    pub key: Vec<String>,
    /// The join of the chain (an index of `Join::links`) whose ON it came from.
    pub link: usize,
}

/// The chain as a star join.
pub(super) struct Star<'a> {
    /// The inputs in side order: the fact, the first dimension, `dim2`, …
    pub inputs: Vec<Input<'a>>,
    /// The side of each table, in FROM order.
    pub from_order: Vec<Side>,
    /// The dimensions in side order (`right`, `dim2`, …).
    pub dims: Vec<Dim>,
    /// The broadcast dimensions, in side order, and the hint that said so.
    pub broadcast: Vec<Side>,
    pub broadcast_hint: HintAt,
}

/// A hint's position and text.
type HintAt = Option<(At, String)>;

/// The tables `BROADCAST(…)` hints name (their FROM indices), and the first such hint.
fn broadcast_tables(hints: &[Hint], inputs: &[Input]) -> Result<(Vec<usize>, HintAt)> {
    let mut out = Vec::new();
    let mut first = None;
    for h in hints.iter().filter(|h| h.name == "BROADCAST") {
        first.get_or_insert((h.at, h.text()));
        for (arg, at) in &h.args {
            let HintArg::Name(n) = arg else {
                return Err(SqlError::new(h.at, h.text(), "BROADCAST takes table names"));
            };
            let Some(i) = inputs.iter().position(|i| i.is_called(n)) else {
                return Err(SqlError::new(
                    *at,
                    h.text(),
                    format!("`{n}` is not a table or alias of the join"),
                ));
            };
            out.push(i);
        }
    }
    Ok((out, first))
}

/// Reads a chain (`join.links` not empty) as a star join.
pub(super) fn star<'a>(join: &Join<'_, 'a>, hints: &[Hint]) -> Result<Star<'a>> {
    let keys: Vec<LinkKeys> = join
        .links
        .iter()
        .enumerate()
        .map(|(k, l)| link_keys(l, &join.inputs[..k + 2], k + 1))
        .collect::<Result<_>>()?;
    let (broadcast, hint) = broadcast_tables(hints, &join.inputs)?;
    let Some(fact) = (0..join.inputs.len()).find(|t| !broadcast.contains(t)) else {
        let (at, text) = hint.expect("every table is broadcast by some hint");
        return Err(SqlError::new(
            at,
            text,
            "every table of the chain is broadcast: the fact, the one table read partitioned, must not be",
        ));
    };
    inner_up_to_fact(join, fact)?;
    let placed = placement(&keys, fact);
    let mut from_order = vec![Side::Left; join.inputs.len()];
    for (side, (t, _)) in placed.iter().enumerate() {
        from_order[*t] = Side::at(side).expect("at most MAX_SOURCES tables");
    }
    let mut dims: Vec<Dim> = placed[1..]
        .iter()
        .map(|(t, via)| dim(join, &keys, &from_order, fact, *t, *via))
        .collect();
    let fact_key = dims[0].lookup.clone();
    for d in dims.iter_mut().skip(1) {
        let t = placed[d.side.index()].0;
        if !broadcast.contains(&t) {
            copartitioned(join, d, &fact_key, &join.inputs[fact], &join.inputs[t])?;
        }
    }
    let mut sides: Vec<Side> = broadcast.iter().map(|t| from_order[*t]).collect();
    sides.sort();
    sides.dedup();
    Ok(Star {
        inputs: placed
            .iter()
            .map(|(t, _)| join.inputs[*t].clone())
            .collect(),
        from_order,
        dims,
        broadcast: sides,
        broadcast_hint: hint,
    })
}

/// The joins before and including the one that brings in the fact must be INNER: a LEFT join
/// there would preserve a dimension's rows.
fn inner_up_to_fact(join: &Join, fact: usize) -> Result<()> {
    let fact_name = &join.inputs[fact].table.name;
    for (k, link) in join.links.iter().enumerate().take(fact) {
        if link.kind != "left" {
            continue;
        }
        let why = if k + 1 == fact {
            format!(
                "the preserved side of a LEFT join in a star join must be the fact: `{fact_name}` (the first table not \
                 broadcast) is this LEFT JOIN's right operand, so the rows of the tables before it would be preserved; \
                 make it INNER JOIN, or start FROM the fact"
            )
        } else {
            format!(
                "the preserved side of a LEFT join in a star join must be the fact: this LEFT JOIN comes before the fact \
                 `{fact_name}` (the first table not broadcast) is joined, so it would preserve dimension rows; make it \
                 INNER JOIN, or start FROM the fact"
            )
        };
        return refuse(link.relation, &why);
    }
    Ok(())
}

/// How a table is reached when placed: through its own join (to the table it reads) or through
/// the join of a table placed before it that reads it.
#[derive(Clone, Copy)]
enum Via {
    Fact,
    Own,
    Reader(usize),
}

/// The tables (FROM indices) in side order with how each is reached: the fact, then the
/// tables up to the fact as each becomes reachable from those placed (first in FROM order
/// first), then the tables after the fact in FROM order.
fn placement(keys: &[LinkKeys], fact: usize) -> Vec<(usize, Via)> {
    let parent = |t: usize| keys[t - 1].earlier;
    let mut placed: Vec<(usize, Via)> = vec![(fact, Via::Fact)];
    let is_placed = |p: &[(usize, Via)], t: usize| p.iter().any(|(x, _)| *x == t);
    while placed.len() <= fact {
        let next = (0..=fact)
            .filter(|t| !is_placed(&placed, *t))
            .find_map(|t| {
                if t >= 1 && is_placed(&placed, parent(t)) {
                    return Some((t, Via::Own));
                }
                (1..=fact)
                    .find(|c| is_placed(&placed, *c) && parent(*c) == t)
                    .map(|c| (t, Via::Reader(c)))
            });
        placed.push(next.expect("the tables up to the fact are connected by their joins"));
    }
    placed.extend((fact + 1..=keys.len()).map(|t| (t, Via::Own)));
    placed
}

/// The dimension that table `t` becomes.
fn dim(join: &Join, keys: &[LinkKeys], side_of: &[Side], fact: usize, t: usize, via: Via) -> Dim {
    let own = |k: &LinkKeys, i: usize| {
        k.pairs
            .iter()
            .map(|p| if i == 0 { p.0.clone() } else { p.1.clone() })
            .collect::<Vec<_>>()
    };
    let (on, lookup, key, link) = match via {
        Via::Reader(c) => (
            side_of[c],
            own(&keys[c - 1], 1),
            own(&keys[c - 1], 0),
            c - 1,
        ),
        Via::Own | Via::Fact => {
            let k = &keys[t - 1];
            (side_of[k.earlier], own(k, 0), own(k, 1), t - 1)
        }
    };
    Dim {
        side: side_of[t],
        kind: if t <= fact {
            "inner"
        } else {
            join.links[t - 1].kind
        },
        on,
        lookup,
        key,
        link,
    }
}

/// A dimension not broadcast is co-partitioned with the fact: looked up on exactly the fact's
/// key columns, which its pairs are put in the order of.
fn copartitioned(
    join: &Join,
    d: &mut Dim,
    fact_key: &[String],
    fact: &Input,
    t: &Input,
) -> Result<()> {
    let same = d.on == Side::Left
        && d.lookup.len() == fact_key.len()
        && fact_key.iter().all(|c| d.lookup.contains(c));
    if !same {
        return refuse(
            join.links[d.link].condition,
            &format!(
                "`{}` is not broadcast, so it is co-partitioned with the fact `{}` and must be joined on exactly the \
                 fact's key columns ({}); list it in BROADCAST(…) to look it up on other columns",
                t.table.name,
                fact.table.name,
                fact_key.join(", ")
            ),
        );
    }
    let key: Vec<String> = fact_key
        .iter()
        .map(|c| {
            let i = d.lookup.iter().position(|l| l == c).expect("same columns");
            d.key[i].clone()
        })
        .collect();
    d.lookup = fact_key.to_vec();
    d.key = key;
    Ok(())
}
