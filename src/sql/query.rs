//! The one `SELECT … FROM a JOIN b ON …` (or `FROM a, b WHERE …`) of a script: its two tables
//! and aliases, join type, key equalities, interval condition and SELECT list, as settings.
//! Everything else a query can hold is refused, quoting the construct and its position.

use sqlparser::ast::{
    BinaryOperator, Expr, GroupByExpr, JoinConstraint, JoinOperator, Query, Select, SelectItem,
    SelectItemQualifiedWildcardKind, SetExpr, Spanned, TableFactor, TableWithJoins,
};

use super::ddl::Table;
use super::error::{At, Result, SqlError};
use super::settings::Settings;
use super::time::{env_duration, interval_ms};
use crate::changelog::Side;

/// One input of the join: its table and the names the query may call it by.
#[derive(Debug, Clone)]
pub struct Input<'a> {
    pub table: &'a Table,
    pub alias: Option<String>,
}

impl Input<'_> {
    pub fn is_called(&self, name: &str) -> bool {
        match &self.alias {
            Some(a) => a == name || self.table.name == name,
            None => self.table.name == name,
        }
    }
}

/// The join found in a query: both inputs, the type and the condition, and the SELECT list.
pub struct Join<'q, 'a> {
    pub inputs: [Input<'a>; 2],
    pub join_type: &'static str,
    pub join_at: At,
    pub condition: Option<&'q Expr>,
    pub select: &'q Select,
}

fn at(node: &impl Spanned) -> At {
    At::of(node.span())
}

fn refuse<T>(node: &(impl Spanned + std::fmt::Display), why: &str) -> Result<T> {
    Err(SqlError::new(at(node), node.to_string(), why))
}

/// Refuses every clause of a query or SELECT beyond a single join.
fn plain_select(q: &Query) -> Result<&Select> {
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
    let SetExpr::Select(s) = q.body.as_ref() else {
        return refuse(
            q.body.as_ref(),
            "expected one SELECT (UNION, VALUES and subqueries are not supported)",
        );
    };
    if let Some(d) = &s.distinct {
        return Err(SqlError::new(
            at(s.as_ref()),
            d.to_string(),
            "DISTINCT is not supported (sidejoin runs one join)",
        ));
    }
    match &s.group_by {
        GroupByExpr::Expressions(e, m) if e.is_empty() && m.is_empty() => {}
        g => {
            let pos = match g {
                GroupByExpr::Expressions(e, _) if !e.is_empty() => at(&e[0]),
                _ => at(s.as_ref()),
            };
            return Err(SqlError::new(
                pos,
                g.to_string(),
                "GROUP BY is not supported (sidejoin runs one join, no aggregation)",
            ));
        }
    }
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
            s.as_ref(),
            "this SELECT clause is not supported (one SELECT … FROM a JOIN b ON …)",
        );
    }
    Ok(s)
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
pub fn find_join<'q, 'a>(q: &'q Query, tables: &'a [Table]) -> Result<Join<'q, 'a>> {
    let s = plain_select(q)?;
    let first_two = |from: &[TableWithJoins]| -> Result<()> {
        if let Some(extra) = from.iter().flat_map(|t| t.joins.iter()).nth(1) {
            return refuse(
                &extra.relation,
                "a second join is not supported: sidejoin joins exactly two tables",
            );
        }
        Ok(())
    };
    first_two(&s.from)?;
    match s.from.as_slice() {
        [twj] if twj.joins.len() == 1 => {
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
                _ => return refuse(
                    &j.relation,
                    "expected ON <equalities> (USING, NATURAL and CROSS joins are not supported)",
                ),
            };
            Ok(Join {
                inputs: [input(&twj.relation, tables)?, input(&j.relation, tables)?],
                join_type: kind,
                join_at: at(&j.relation),
                condition: Some(condition),
                select: s,
            })
        }
        [a, b] if a.joins.is_empty() && b.joins.is_empty() => {
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
        [one] if one.joins.is_empty() => refuse(&one.relation, "expected a join of two tables"),
        [_, _, third, ..] => refuse(
            &third.relation,
            "a second join is not supported: sidejoin joins exactly two tables",
        ),
        _ => refuse(s, "expected FROM a JOIN b ON …"),
    }
}

/// A column reference resolved to its side.
#[derive(Debug, Clone)]
pub struct ColumnRef {
    pub side: Side,
    pub column: String,
}

/// Resolves `t.col` or `col` against the two inputs; an unqualified name both tables have is
/// ambiguous (as in Flink).
pub fn column(e: &Expr, inputs: &[Input; 2]) -> Result<ColumnRef> {
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

/// `t.col`, `t.col ± INTERVAL …` → (column, offset in ms).
fn time_operand(e: &Expr, inputs: &[Input; 2]) -> Result<(ColumnRef, i64)> {
    match e {
        Expr::BinaryOp {
            left,
            op: BinaryOperator::Plus,
            right,
        } => Ok((
            column(left, inputs)?,
            interval_ms(right, at(right.as_ref()))?,
        )),
        Expr::BinaryOp {
            left,
            op: BinaryOperator::Minus,
            right,
        } => Ok((
            column(left, inputs)?,
            -interval_ms(right, at(right.as_ref()))?,
        )),
        Expr::Nested(inner) => time_operand(inner, inputs),
        _ => Ok((column(e, inputs)?, 0)),
    }
}

/// The interval condition, collected from its comparisons: `LOWER <= tl - tr <= UPPER`.
#[derive(Debug, Default)]
pub struct Interval {
    /// Time columns `[left, right]`.
    pub time: [Option<String>; 2],
    pub lower_ms: Option<i64>,
    pub upper_ms: Option<i64>,
    pub at: Option<At>,
}

impl Interval {
    /// Records `a op b`, each operand a time column plus an offset: `ta + oa op tb + ob`.
    fn compare(
        &mut self,
        a: (ColumnRef, i64),
        b: (ColumnRef, i64),
        op: &BinaryOperator,
        e: &Expr,
    ) -> Result<()> {
        if a.0.side == b.0.side {
            return refuse(
                e,
                "an interval condition compares a time of one table with a time of the other",
            );
        }
        // With a on the left: tl - tr op ob - oa; with a on the right the comparison mirrors.
        let (greater, strict) = match op {
            BinaryOperator::GtEq => (true, false),
            BinaryOperator::Gt => (true, true),
            BinaryOperator::LtEq => (false, false),
            BinaryOperator::Lt => (false, true),
            _ => return refuse(e, "expected >=, >, <= or < in an interval condition"),
        };
        let (greater, c) = if a.0.side == Side::Left {
            (greater, b.1 - a.1)
        } else {
            (!greater, a.1 - b.1)
        };
        let (l, r) = if a.0.side == Side::Left {
            (&a.0, &b.0)
        } else {
            (&b.0, &a.0)
        };
        for (side, col) in [(Side::Left, l), (Side::Right, r)] {
            let slot = &mut self.time[side.index()];
            if slot.as_ref().is_some_and(|c| c != &col.column) {
                return refuse(
                    e,
                    "the interval condition uses two different time columns of one table",
                );
            }
            *slot = Some(col.column.clone());
        }
        let (slot, value) = if greater {
            (&mut self.lower_ms, c + i64::from(strict))
        } else {
            (&mut self.upper_ms, c - i64::from(strict))
        };
        if slot.is_some() {
            return refuse(e, "the interval condition bounds the same side twice");
        }
        *slot = Some(value);
        self.at.get_or_insert(at(e));
        Ok(())
    }
}

/// The join condition's parts: key pairs `(left column, right column)` and the interval.
#[derive(Debug, Default)]
pub struct Condition {
    pub keys: Vec<(String, String)>,
    pub interval: Interval,
}

fn conjuncts<'e>(e: &'e Expr, out: &mut Vec<&'e Expr>) {
    match e {
        Expr::BinaryOp {
            left,
            op: BinaryOperator::And,
            right,
        } => {
            conjuncts(left, out);
            conjuncts(right, out);
        }
        Expr::Nested(inner) => conjuncts(inner, out),
        _ => out.push(e),
    }
}

/// Splits the ON (or WHERE) condition into key equalities and one interval condition.
pub fn condition(e: &Expr, inputs: &[Input; 2]) -> Result<Condition> {
    let mut parts = Vec::new();
    conjuncts(e, &mut parts);
    let mut c = Condition::default();
    for p in parts {
        match p {
            Expr::BinaryOp { left, op: BinaryOperator::Eq, right } => {
                let (a, b) = (column(left, inputs)?, column(right, inputs)?);
                if a.side == b.side {
                    return refuse(p, "an equality of two columns of one table is a filter, which is not supported");
                }
                let (l, r) = if a.side == Side::Left { (a, b) } else { (b, a) };
                c.keys.push((l.column, r.column));
            }
            Expr::Between { expr, negated: false, low, high } => {
                let x = time_operand(expr, inputs)?;
                c.interval.compare(x.clone(), time_operand(low, inputs)?, &BinaryOperator::GtEq, p)?;
                c.interval.compare(x, time_operand(high, inputs)?, &BinaryOperator::LtEq, p)?;
            }
            Expr::BinaryOp { left, op, right }
                if matches!(op, BinaryOperator::GtEq | BinaryOperator::Gt | BinaryOperator::LtEq | BinaryOperator::Lt) =>
            {
                c.interval.compare(time_operand(left, inputs)?, time_operand(right, inputs)?, op, p)?;
            }
            _ => return refuse(p, "unsupported join condition: expected equalities of columns of both tables, and optionally one time interval (BETWEEN, or >= and <=)"),
        }
    }
    if c.keys.is_empty() {
        return refuse(
            e,
            "the join needs at least one equality of a column of each table (its key)",
        );
    }
    if c.interval.at.is_some() && (c.interval.lower_ms.is_none() || c.interval.upper_ms.is_none()) {
        return refuse(
            e,
            "an interval condition needs both a lower and an upper bound",
        );
    }
    Ok(c)
}

/// One output column: `(side, input column, output name if given)`.
pub type Projected = (Side, String, Option<String>);

/// The SELECT list with `*` and `t.*` expanded into the tables' declared physical columns.
pub fn projection(
    s: &Select,
    inputs: &[Input; 2],
    warnings: &mut Vec<String>,
) -> Result<Vec<Projected>> {
    let mut out = Vec::new();
    let mut all = |side: Side, out: &mut Vec<Projected>| {
        let t = inputs[side.index()].table;
        for c in &t.columns {
            match &c.ty {
                Some(_) => out.push((side, c.name.clone(), None)),
                None => warnings.push(format!(
                    "column `{}` of `{}` is PROCTIME(), which sidejoin does not materialise: `*` leaves it out",
                    c.name, t.name
                )),
            }
        }
    };
    for item in &s.projection {
        match item {
            SelectItem::Wildcard(_) => {
                all(Side::Left, &mut out);
                all(Side::Right, &mut out);
            }
            SelectItem::QualifiedWildcard(SelectItemQualifiedWildcardKind::ObjectName(n), _) => {
                let q = n.to_string().replace('`', "");
                let Some(side) = Side::BOTH
                    .into_iter()
                    .find(|s| inputs[s.index()].is_called(&q))
                else {
                    return refuse(item, "unknown table or alias");
                };
                all(side, &mut out);
            }
            SelectItem::UnnamedExpr(e) => {
                let c = column(e, inputs)?;
                out.push((c.side, c.column, None));
            }
            SelectItem::ExprWithAlias { expr, alias } => {
                let c = column(expr, inputs)?;
                out.push((c.side, c.column, Some(alias.value.clone())));
            }
            _ => {
                return refuse(
                    item,
                    "unsupported SELECT item: expected `t.col [AS name]`, `col`, `t.*` or `*`",
                )
            }
        }
    }
    Ok(out)
}

/// Writes the join's settings: type, keys, interval (with the tables' watermarks) and SELECT.
pub fn settings(
    s: &mut Settings,
    join: &Join,
    cond: &Condition,
    select: &[Projected],
    output_names: Option<&[String]>,
) -> Result<()> {
    let ja = join.join_at;
    let jt = format!("{} JOIN", join.join_type.to_ascii_uppercase());
    s.set("JOIN_TYPE", join.join_type, ja, &jt)?;
    let on = join.condition.map(|c| c.to_string()).unwrap_or_default();
    let on_at = join.condition.map(at).unwrap_or(ja);
    let lk: Vec<&str> = cond.keys.iter().map(|k| k.0.as_str()).collect();
    let rk: Vec<&str> = cond.keys.iter().map(|k| k.1.as_str()).collect();
    s.set("LEFT_KEY", lk.join(","), on_at, &on)?;
    s.set("RIGHT_KEY", rk.join(","), on_at, &on)?;
    let iv = &cond.interval;
    if let (Some(lo), Some(hi), Some(iat)) = (iv.lower_ms, iv.upper_ms, iv.at) {
        s.set("INTERVAL_LOWER", env_duration(lo), iat, &on)?;
        s.set("INTERVAL_UPPER", env_duration(hi), iat, &on)?;
        let mut delays = Vec::new();
        for side in Side::BOTH {
            let t = join.inputs[side.index()].table;
            let col = iv.time[side.index()].clone().unwrap_or_default();
            s.set(&format!("{}_TIME", side.var()), &col, iat, &on)?;
            if let Some((wcol, delay, wat)) = &t.watermark {
                if wcol == &col {
                    delays.push((*delay, *wat, t.name.clone()));
                }
            }
        }
        if let Some((d, wat, name)) = delays.first() {
            if let Some((d2, wat2, name2)) = delays.get(1).filter(|x| x.0 != *d) {
                return Err(SqlError::new(*wat2, format!("WATERMARK of {name2}"), format!(
                    "delays the watermark by {} but the WATERMARK of {name} at {wat} by {}; sidejoin has one SIDEJOIN_WATERMARK_DELAY for both sides",
                    env_duration(*d2), env_duration(*d)
                )));
            }
            s.set(
                "WATERMARK_DELAY",
                env_duration(*d),
                *wat,
                format!("WATERMARK of {name}"),
            )?;
        }
    }
    if let Some(names) = output_names {
        if names.len() != select.len() {
            return Err(SqlError::new(
                at(join.select),
                "SELECT",
                format!(
                    "selects {} column(s) but the sink has {} ({}); INSERT maps them by position",
                    select.len(),
                    names.len(),
                    names.join(", ")
                ),
            ));
        }
    }
    let items: Vec<String> = select
        .iter()
        .enumerate()
        .map(|(i, (side, col, alias))| {
            let p = if *side == Side::Left { "l" } else { "r" };
            match output_names.map(|n| &n[i]).or(alias.as_ref()) {
                Some(name) => format!("{p}.{col} AS {name}"),
                None => format!("{p}.{col}"),
            }
        })
        .collect();
    s.set("SELECT", items.join(", "), at(join.select), "SELECT list")?;
    Ok(())
}
