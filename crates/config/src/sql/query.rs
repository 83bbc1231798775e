//! The one `SELECT … FROM a JOIN b ON …` (or `FROM a, b WHERE …`) of a script: its two tables
//! and aliases, join type, key equalities, interval condition and SELECT list, as settings.
//! Everything else a query can hold is refused, quoting the construct and its position.

use sqlparser::ast::{
    Expr, GroupByExpr, JoinConstraint, JoinOperator, Query, Select, SetExpr, Spanned, TableFactor,
    TableWithJoins,
};

use super::ddl::Table;
use super::error::{At, Result, SqlError};
use crate::Side;

/// One input of the join: its table and the names the query may call it by.
#[derive(Debug, Clone)]
pub(super) struct Input<'a> {
    pub table: &'a Table,
    pub alias: Option<String>,
}

impl Input<'_> {
    pub(super) fn is_called(&self, name: &str) -> bool {
        match &self.alias {
            Some(a) => a == name || self.table.name == name,
            None => self.table.name == name,
        }
    }
}

/// The join found in a query: both inputs, the type and the condition, and the SELECT list.
pub(super) struct Join<'q, 'a> {
    pub inputs: [Input<'a>; 2],
    pub join_type: &'static str,
    pub join_at: At,
    pub condition: Option<&'q Expr>,
    pub select: &'q Select,
}

pub(super) fn at(node: &impl Spanned) -> At {
    At::of(node.span())
}

pub(super) fn refuse<T>(node: &(impl Spanned + std::fmt::Display), why: &str) -> Result<T> {
    Err(SqlError::new(at(node), node.to_string(), why))
}

/// Refuses every clause of a query or SELECT beyond a single join.
fn plain_select(q: &Query) -> Result<&Select> {
    refuse_query_clauses(q)?;
    let SetExpr::Select(s) = q.body.as_ref() else {
        return refuse(
            q.body.as_ref(),
            "expected one SELECT (UNION, VALUES and subqueries are not supported)",
        );
    };
    refuse_select_clauses(s)?;
    Ok(s)
}

/// Refuses the clauses around the query's body: WITH, ORDER BY, LIMIT and the rarer ones.
fn refuse_query_clauses(q: &Query) -> Result<()> {
    if let Some(w) = &q.with {
        return Err(SqlError::new(
            at(q),
            w.to_string(),
            "WITH is not supported (one join, no subqueries)",
        ));
    }
    if let Some(o) = &q.order_by {
        return Err(SqlError::new(
            at(q),
            o.to_string(),
            "ORDER BY is not supported by a streaming join",
        ));
    }
    if let Some(l) = &q.limit_clause {
        return Err(SqlError::new(
            at(q),
            l.to_string(),
            "LIMIT is not supported by a streaming join",
        ));
    }
    if q.fetch.is_some()
        || !q.locks.is_empty()
        || q.for_clause.is_some()
        || q.settings.is_some()
        || q.format_clause.is_some()
        || !q.pipe_operators.is_empty()
    {
        return refuse(
            q,
            "this query clause is not supported (one SELECT … FROM a JOIN b ON …)",
        );
    }
    Ok(())
}

/// Refuses the SELECT's clauses beyond its list, FROM and WHERE: DISTINCT, GROUP BY, HAVING,
/// QUALIFY and the other dialects' clauses.
fn refuse_select_clauses(s: &Select) -> Result<()> {
    if let Some(d) = &s.distinct {
        return Err(SqlError::new(
            at(s),
            d.to_string(),
            "DISTINCT is not supported (sidejoin runs one join)",
        ));
    }
    refuse_group_by(s)?;
    if let Some(h) = &s.having {
        return refuse(h, "HAVING is not supported (no aggregation)");
    }
    if let Some(qf) = &s.qualify {
        return refuse(qf, "QUALIFY is not supported");
    }
    if s.top.is_some()
        || s.into.is_some()
        || !s.lateral_views.is_empty()
        || s.prewhere.is_some()
        || !s.cluster_by.is_empty()
        || !s.distribute_by.is_empty()
        || !s.sort_by.is_empty()
        || !s.named_window.is_empty()
        || !s.connect_by.is_empty()
    {
        return refuse(
            s,
            "this SELECT clause is not supported (one SELECT … FROM a JOIN b ON …)",
        );
    }
    Ok(())
}

/// Refuses any GROUP BY (an empty expression list with no modifiers is sqlparser's "none"),
/// at its first expression when it has one.
fn refuse_group_by(s: &Select) -> Result<()> {
    match &s.group_by {
        GroupByExpr::Expressions(e, m) if e.is_empty() && m.is_empty() => Ok(()),
        g => {
            let pos = match g {
                GroupByExpr::Expressions(e, _) if !e.is_empty() => at(&e[0]),
                _ => at(s),
            };
            Err(SqlError::new(
                pos,
                g.to_string(),
                "GROUP BY is not supported (sidejoin runs one join, no aggregation)",
            ))
        }
    }
}

/// The table of a FROM item, with its alias.
fn input<'a>(f: &TableFactor, tables: &'a [Table]) -> Result<Input<'a>> {
    let TableFactor::Table {
        name,
        alias,
        args,
        with_hints,
        ..
    } = f
    else {
        return refuse(
            f,
            "expected a table name (subqueries, UNNEST and table functions are not supported)",
        );
    };
    if args.is_some() || !with_hints.is_empty() {
        return refuse(
            f,
            "table arguments and hints in this form are not supported",
        );
    }
    let n = name.to_string().replace('`', "");
    let Some(table) = tables.iter().find(|t| t.name == n) else {
        return refuse(f, "unknown table: declare it with CREATE TABLE first");
    };
    if let Some(a) = alias {
        if !a.columns.is_empty() {
            return refuse(f, "column aliases on a table are not supported");
        }
    }
    Ok(Input {
        table,
        alias: alias.as_ref().map(|a| a.name.value.clone()),
    })
}

fn join_type(op: &JoinOperator) -> Option<(&'static str, Option<&JoinConstraint>)> {
    use JoinOperator as J;
    Some(match op {
        J::Join(c) | J::Inner(c) => ("inner", Some(c)),
        J::Left(c) | J::LeftOuter(c) => ("left", Some(c)),
        J::Right(c) | J::RightOuter(c) => ("right", Some(c)),
        J::FullOuter(c) => ("full", Some(c)),
        _ => return None,
    })
}

/// Finds the join: `FROM a [type] JOIN b ON …` or `FROM a, b WHERE …`.
pub(super) fn find_join<'q, 'a>(q: &'q Query, tables: &'a [Table]) -> Result<Join<'q, 'a>> {
    let s = plain_select(q)?;
    refuse_second_join(&s.from)?;
    match s.from.as_slice() {
        [twj] if twj.joins.len() == 1 => join_on(s, twj, tables),
        [a, b] if a.joins.is_empty() && b.joins.is_empty() => comma_join(s, a, b, tables),
        [one] if one.joins.is_empty() => refuse(&one.relation, "expected a join of two tables"),
        [_, _, third, ..] => refuse(
            &third.relation,
            "a second join is not supported: sidejoin joins exactly two tables",
        ),
        _ => refuse(s, "expected FROM a JOIN b ON …"),
    }
}

/// Refuses a second `JOIN` anywhere in FROM, at that join's table.
fn refuse_second_join(from: &[TableWithJoins]) -> Result<()> {
    if let Some(extra) = from.iter().flat_map(|t| t.joins.iter()).nth(1) {
        return refuse(
            &extra.relation,
            "a second join is not supported: sidejoin joins exactly two tables",
        );
    }
    Ok(())
}

/// `FROM a [type] JOIN b ON <condition>` (with no WHERE).
fn join_on<'q, 'a>(
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
    let j = &twj.joins[0];
    let Some((kind, constraint)) = join_type(&j.join_operator) else {
        return refuse(
            &j.relation,
            "unsupported join kind (INNER, LEFT, RIGHT and FULL [OUTER] JOIN are)",
        );
    };
    let condition = match constraint {
        Some(JoinConstraint::On(e)) => e,
        _ => {
            return refuse(
                &j.relation,
                "expected ON <equalities> (USING, NATURAL and CROSS joins are not supported)",
            )
        }
    };
    Ok(Join {
        inputs: [input(&twj.relation, tables)?, input(&j.relation, tables)?],
        join_type: kind,
        join_at: at(&j.relation),
        condition: Some(condition),
        select: s,
    })
}

/// `FROM a, b WHERE <condition>`: an inner join.
fn comma_join<'q, 'a>(
    s: &'q Select,
    a: &TableWithJoins,
    b: &TableWithJoins,
    tables: &'a [Table],
) -> Result<Join<'q, 'a>> {
    let Some(w) = &s.selection else {
        return refuse(
            &b.relation,
            "FROM a, b needs WHERE <equalities> (a cross join is not supported)",
        );
    };
    Ok(Join {
        inputs: [input(&a.relation, tables)?, input(&b.relation, tables)?],
        join_type: "inner",
        join_at: at(&b.relation),
        condition: Some(w),
        select: s,
    })
}

/// A column reference resolved to its side.
#[derive(Debug, Clone)]
pub(super) struct ColumnRef {
    pub side: Side,
    pub column: String,
}

/// Resolves `t.col` or `col` against the two inputs; an unqualified name both tables have is
/// ambiguous (as in Flink).
pub(super) fn column(e: &Expr, inputs: &[Input; 2]) -> Result<ColumnRef> {
    let (qualifier, name) = match e {
        Expr::Identifier(i) => (None, i.value.clone()),
        Expr::CompoundIdentifier(parts) if parts.len() == 2 => {
            (Some(parts[0].value.clone()), parts[1].value.clone())
        }
        Expr::Nested(inner) => return column(inner, inputs),
        _ => return refuse(e, "expected a column (`t.col` or `col`); expressions and functions are not supported here"),
    };
    let sides: Vec<Side> = Side::BOTH
        .into_iter()
        .filter(|s| {
            let i = &inputs[s.index()];
            qualifier.as_deref().is_none_or(|q| i.is_called(q))
        })
        .collect();
    if sides.is_empty() {
        return refuse(
            e,
            "unknown table or alias (the join's tables are the ones after FROM and JOIN)",
        );
    }
    let having: Vec<Side> = sides
        .into_iter()
        .filter(|s| inputs[s.index()].table.has_column(&name))
        .collect();
    let side = match having.as_slice() {
        [s] => *s,
        [] => return refuse(e, "unknown column: no table of the join declares it"),
        _ => {
            return refuse(
                e,
                &format!(
                "ambiguous column: both {} and {} have `{name}`; qualify it (as Flink requires)",
                inputs[0].table.name, inputs[1].table.name
            ),
            )
        }
    };
    let declared = inputs[side.index()]
        .table
        .columns
        .iter()
        .find(|c| c.name == name)
        .expect("has_column");
    if declared.ty.is_none() {
        return refuse(
            e,
            "a PROCTIME() column is not materialised by sidejoin and cannot be used",
        );
    }
    Ok(ColumnRef { side, column: name })
}
