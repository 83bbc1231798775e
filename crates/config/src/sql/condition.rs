//! The join condition: key equalities of a column of each table, and at most one time interval
//! (`BETWEEN`, or a pair of comparisons) as `LOWER <= tl - tr <= UPPER`.

use sqlparser::ast::{BinaryOperator, Expr};

use super::error::{At, Result};
use super::query::{at, column, refuse, ColumnRef, Input};
use super::time::interval_ms;
use crate::Side;

/// `t.col`, `t.col ± INTERVAL …` → (column, offset in ms).
fn time_operand(e: &Expr, inputs: &[Input]) -> Result<(ColumnRef, i64)> {
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
pub(super) struct Interval {
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
pub(super) struct Condition {
    pub keys: Vec<(String, String)>,
    pub interval: Interval,
}

/// The `AND`ed parts of a condition, parentheses looked through.
pub(super) fn conjuncts<'e>(e: &'e Expr, out: &mut Vec<&'e Expr>) {
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
pub(super) fn condition(e: &Expr, inputs: &[Input]) -> Result<Condition> {
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
