//! The one `SELECT … FROM a JOIN b ON …` (or `FROM a, b WHERE …`) of a script: its two tables
//! and aliases, join type, key equalities, interval condition and SELECT list, as settings; or a
//! chain `FROM a JOIN b ON … JOIN c ON …` (a star join, read by `chain.rs`). Everything else a
//! query can hold is refused, quoting the construct and its position.

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

/// The join found in a query: its inputs (in FROM order), the type and the condition of its
/// first join, the SELECT list, and each join of a chain.
pub(super) struct Join<'q, 'a> {
    pub inputs: Vec<Input<'a>>,
    pub join_type: &'static str,
    pub join_at: At,
    pub condition: Option<&'q Expr>,
    pub select: &'q Select,
    /// Every `[type] JOIN t ON …` of a chain of three tables or more (link `k` joins
    /// `inputs[k + 1]`); empty for a join of two tables.
    pub links: Vec<Link<'q>>,
}

/// One `[type] JOIN t ON <condition>` of a chain.
pub(super) struct Link<'q> {
    pub kind: &'static str,
    pub relation: &'q TableFactor,
    pub condition: &'q Expr,
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
pub(super) fn input<'a>(f: &TableFactor, tables: &'a [Table]) -> Result<Input<'a>> {
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

pub(super) fn join_type(op: &JoinOperator) -> Option<(&'static str, Option<&JoinConstraint>)> {
    use JoinOperator as J;
    Some(match op {
        J::Join(c) | J::Inner(c) => ("inner", Some(c)),
        J::Left(c) | J::LeftOuter(c) => ("left", Some(c)),
        J::Right(c) | J::RightOuter(c) => ("right", Some(c)),
        J::FullOuter(c) => ("full", Some(c)),
        _ => return None,
    })
}

/// Finds the join: `FROM a [type] JOIN b ON …`, `FROM a, b WHERE …`, or a chain
/// `FROM a JOIN b ON … JOIN c ON …`.
pub(super) fn find_join<'q, 'a>(q: &'q Query, tables: &'a [Table]) -> Result<Join<'q, 'a>> {
    let s = plain_select(q)?;
    match s.from.as_slice() {
        [twj] if twj.joins.len() == 1 => join_on(s, twj, tables),
        [twj] if twj.joins.len() > 1 => super::chain::chain(s, twj, tables),
        [a, b] if a.joins.is_empty() && b.joins.is_empty() => comma_join(s, a, b, tables),
        [one] => refuse(&one.relation, "expected a join of two tables"),
        [_, _, third, ..] if s.from.iter().all(|t| t.joins.is_empty()) => refuse(
            &third.relation,
            "FROM a, b, c is not supported: write a chain of joins as FROM a JOIN b ON … JOIN c ON …",
        ),
        [_, second, ..] => refuse(
            &second.relation,
            "expected one FROM item: FROM a JOIN b ON … [JOIN c ON …] (or FROM a, b WHERE …)",
        ),
        _ => refuse(s, "expected FROM a JOIN b ON …"),
    }
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
    let condition = on_condition(&j.relation, constraint)?;
    Ok(Join {
        inputs: vec![input(&twj.relation, tables)?, input(&j.relation, tables)?],
        join_type: kind,
        join_at: at(&j.relation),
        condition: Some(condition),
        select: s,
        links: Vec::new(),
    })
}

/// The `ON` condition of the join of `relation`.
pub(super) fn on_condition<'q>(
    relation: &TableFactor,
    constraint: Option<&'q JoinConstraint>,
) -> Result<&'q Expr> {
    match constraint {
        Some(JoinConstraint::On(e)) => Ok(e),
        _ => refuse(
            relation,
            "expected ON <equalities> (USING, NATURAL and CROSS joins are not supported)",
        ),
    }
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
        inputs: vec![input(&a.relation, tables)?, input(&b.relation, tables)?],
        join_type: "inner",
        join_at: at(&b.relation),
        condition: Some(w),
        select: s,
        links: Vec::new(),
    })
}

/// A column reference resolved to its input: `side` is the input's position in the slice it was
/// resolved against.
#[derive(Debug, Clone)]
pub(super) struct ColumnRef {
    pub side: Side,
    pub column: String,
}

/// Resolves `t.col` or `col` against `inputs`; an unqualified name two tables have is ambiguous
/// (as in Flink).
pub(super) fn column(e: &Expr, inputs: &[Input]) -> Result<ColumnRef> {
    let (qualifier, name) = match e {
        Expr::Identifier(i) => (None, i.value.clone()),
        Expr::CompoundIdentifier(parts) if parts.len() == 2 => {
            (Some(parts[0].value.clone()), parts[1].value.clone())
        }
        Expr::Nested(inner) => return column(inner, inputs),
        _ => return refuse(e, "expected a column (`t.col` or `col`); expressions and functions are not supported here"),
    };
    let named: Vec<usize> = (0..inputs.len())
        .filter(|i| qualifier.as_deref().is_none_or(|q| inputs[*i].is_called(q)))
        .collect();
    if named.is_empty() {
        return refuse(
            e,
            "unknown table or alias (the join's tables are the ones after FROM and JOIN)",
        );
    }
    let having: Vec<usize> = named
        .into_iter()
        .filter(|i| inputs[*i].table.has_column(&name))
        .collect();
    let index = match having.as_slice() {
        [i] => *i,
        [] => return refuse(e, "unknown column: no table of the join declares it"),
        many => return ambiguous(e, inputs, many, &name),
    };
    let declared = inputs[index]
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
    Ok(ColumnRef {
        side: Side::at(index).expect("at most MAX_SOURCES inputs"),
        column: name,
    })
}

/// Refuses an unqualified column that the tables `having` (two or more) all declare.
fn ambiguous<T>(e: &Expr, inputs: &[Input], having: &[usize], name: &str) -> Result<T> {
    let names: Vec<&str> = having
        .iter()
        .map(|i| inputs[*i].table.name.as_str())
        .collect();
    let why = match names.as_slice() {
        [a, b] => format!(
            "ambiguous column: both {a} and {b} have `{name}`; qualify it (as Flink requires)"
        ),
        _ => format!(
            "ambiguous column: {} all have `{name}`; qualify it (as Flink requires)",
            names.join(", ")
        ),
    };
    refuse(e, &why)
}
