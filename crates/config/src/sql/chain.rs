//! A chain of joins, `FROM a JOIN b ON … [LEFT] JOIN c ON … …` (SPEC §14): its tables in FROM
//! order and, for each join, the one earlier table it reads and its key equalities. What is no
//! star join is refused here, quoting it: RIGHT and FULL joins (they would preserve a
//! dimension's rows), conditions that are not equalities (an interval included), conditions
//! that read two earlier tables. Which table is the fact, and the order the inputs take, is
//! `star.rs`'s.

use sqlparser::ast::{BinaryOperator, Expr, Select, TableWithJoins};

use super::condition::conjuncts;
use super::ddl::Table;
use super::error::Result;
use super::query::{at, column, input, join_type, on_condition, refuse, Input, Join, Link};
use crate::MAX_SOURCES;

/// `FROM a JOIN b ON … JOIN c ON …` (with no WHERE): three tables or more.
pub(super) fn chain<'q, 'a>(
    s: &'q Select,
    twj: &'q TableWithJoins,
    tables: &'a [Table],
) -> Result<Join<'q, 'a>> {
    if let Some(w) = &s.selection {
        return refuse(
            w,
            "WHERE filters are not supported with JOIN … ON (put equalities in ON)",
        );
    }
    let mut inputs = vec![input(&twj.relation, tables)?];
    let mut links = Vec::new();
    for (k, j) in twj.joins.iter().enumerate() {
        if k + 2 > MAX_SOURCES {
            return refuse(
                &j.relation,
                "a star join reads at most 8 tables (the fact and seven dimensions)",
            );
        }
        let Some((kind, constraint)) = join_type(&j.join_operator) else {
            return refuse(
                &j.relation,
                "unsupported join kind (INNER and LEFT [OUTER] JOIN are, in a chain of joins)",
            );
        };
        if kind == "right" || kind == "full" {
            return refuse(
                &j.relation,
                &format!(
                    "a {} JOIN in a chain of joins would preserve a dimension's rows; a star join keeps the \
                     fact's rows only: each join of a chain is INNER or LEFT",
                    kind.to_ascii_uppercase()
                ),
            );
        }
        links.push(Link {
            kind,
            relation: &j.relation,
            condition: on_condition(&j.relation, constraint)?,
        });
        inputs.push(input(&j.relation, tables)?);
    }
    Ok(Join {
        inputs,
        join_type: links[0].kind,
        join_at: at(links[0].relation),
        condition: Some(links[0].condition),
        select: s,
        links,
    })
}

/// The key equalities of one join of a chain: the earlier table it reads (its index in FROM
/// order) and `(earlier column, new column)` pairs.
pub(super) struct LinkKeys {
    pub earlier: usize,
    pub pairs: Vec<(String, String)>,
}

/// The keys of the join of `inputs[new]` (`visible` holds it and the tables before it): each
/// conjunct an equality of one of its columns with a column of one earlier table.
pub(super) fn link_keys(link: &Link, visible: &[Input], new: usize) -> Result<LinkKeys> {
    let mut parts = Vec::new();
    conjuncts(link.condition, &mut parts);
    let mut earlier: Option<usize> = None;
    let mut pairs = Vec::new();
    for p in parts {
        let Expr::BinaryOp {
            left,
            op: BinaryOperator::Eq,
            right,
        } = p
        else {
            let why = match p {
                Expr::Between { .. } | Expr::BinaryOp { .. } if is_comparison(p) => {
                    "an interval condition is not supported in a chain of joins: a star join is a regular join"
                }
                _ => "unsupported join condition: expected equalities of a column of the joined table and a column of one earlier table",
            };
            return refuse(p, why);
        };
        let (a, b) = (column(left, visible)?, column(right, visible)?);
        let (old, young) = match (a.side.index() == new, b.side.index() == new) {
            (true, false) => (b, a),
            (false, true) => (a, b),
            (true, true) => {
                return refuse(
                    p,
                    "an equality of two columns of one table is a filter, which is not supported",
                )
            }
            (false, false) => {
                return refuse(
                    p,
                    &format!(
                        "compares two earlier tables: each equality of the join of `{}` reads one of its columns",
                        visible[new].table.name
                    ),
                )
            }
        };
        match earlier {
            Some(e) if e != old.side.index() => {
                return refuse(
                    p,
                    &format!(
                        "reads `{}` and `{}`: in a star join each table is looked up on the columns of one earlier table",
                        visible[e].table.name,
                        visible[old.side.index()].table.name
                    ),
                )
            }
            _ => earlier = Some(old.side.index()),
        }
        pairs.push((old.column, young.column));
    }
    Ok(LinkKeys {
        earlier: earlier.expect("a condition has at least one conjunct"),
        pairs,
    })
}

fn is_comparison(e: &Expr) -> bool {
    match e {
        Expr::Between { .. } => true,
        Expr::BinaryOp { op, .. } => matches!(
            op,
            BinaryOperator::Gt | BinaryOperator::GtEq | BinaryOperator::Lt | BinaryOperator::LtEq
        ),
        _ => false,
    }
}
