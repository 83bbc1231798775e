//! A deliberately naive model of the join, written independently of the engine: each side is a
//! plain table (a map by primary key, or a list of rows), and the join result is recomputed from
//! scratch with nested loops, as SQL defines it.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

pub(crate) type Row = Map<String, Value>;

/// SPEC §1 value equality for the values the tests generate (numbers, strings, null).
fn value_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}

fn get<'a>(r: &'a Row, c: &str) -> &'a Value {
    r.get(c).unwrap_or(&Value::Null)
}

/// Whole-row equality: column by column, a missing column equal to null.
pub(crate) fn row_eq(a: &Row, b: &Row) -> bool {
    a.keys()
        .chain(b.keys())
        .all(|c| value_eq(get(a, c), get(b, c)))
}

/// A canonical text for a row compared as SPEC §1 says: nulls dropped, numbers as f64.
pub(crate) fn canon(r: &Row) -> String {
    let m: BTreeMap<&String, String> = r
        .iter()
        .filter(|(_, v)| !v.is_null())
        .map(|(k, v)| {
            let t = match v {
                Value::Number(n) => format!("n{}", n.as_f64().unwrap()),
                other => other.to_string(),
            };
            (k, t)
        })
        .collect();
    format!("{m:?}")
}

/// One side's table.
#[derive(Debug, Clone, Default)]
pub(crate) struct Table {
    /// `Some(pk column)`: a primary-key table.
    pub pk: Option<String>,
    pub rows: Vec<Row>,
}

impl Table {
    fn pk_pos(&self, row: &Row) -> Option<usize> {
        let pk = self.pk.as_ref().unwrap();
        self.rows
            .iter()
            .position(|r| value_eq(get(r, pk), get(row, pk)))
    }

    /// Insert (or, with a primary key, insert-or-replace).
    pub(crate) fn upsert(&mut self, row: Row) {
        if self.pk.is_some() {
            if let Some(i) = self.pk_pos(&row) {
                self.rows[i] = row;
                return;
            }
        }
        self.rows.push(row);
    }

    /// Delete by primary key, or one equal copy.
    pub(crate) fn delete(&mut self, row: &Row) {
        let pos = if self.pk.is_some() {
            self.pk_pos(row)
        } else {
            self.rows.iter().position(|r| row_eq(r, row))
        };
        if let Some(i) = pos {
            self.rows.remove(i);
        }
    }

    /// A Debezium `u`: on a primary-key table a changed key deletes the old key; on a multiset
    /// the old row is removed when present, and the new row added in any case.
    pub(crate) fn update(&mut self, before: Option<&Row>, after: Row) {
        match (&self.pk, before) {
            (Some(pk), Some(b)) if !value_eq(get(b, pk), get(&after, pk)) => {
                self.delete(b);
                self.upsert(after);
            }
            (Some(_), _) => self.upsert(after),
            (None, Some(b)) => {
                self.delete(b);
                self.rows.push(after);
            }
            (None, None) => self.rows.push(after),
        }
    }
}

/// Join keys match: every column non-null and equal, or (null_keys_match) null to null.
fn keys_match(l: &Row, lk: &[String], r: &Row, rk: &[String], null_keys_match: bool) -> bool {
    lk.iter().zip(rk).all(|(a, b)| {
        let (x, y) = (get(l, a), get(r, b));
        if x.is_null() || y.is_null() {
            null_keys_match && x.is_null() && y.is_null()
        } else {
            value_eq(x, y)
        }
    })
}

pub(crate) struct JoinDef<'a> {
    pub left_key: &'a [String],
    pub right_key: &'a [String],
    pub left_outer: bool,
    pub right_outer: bool,
    pub null_keys_match: bool,
}

/// The join of two tables as a multiset of `(left, right)` pairs, padded sides `None`.
pub(crate) fn naive_join<'a>(
    def: &JoinDef,
    left: &'a Table,
    right: &'a Table,
) -> Vec<(Option<&'a Row>, Option<&'a Row>)> {
    let mut out = Vec::new();
    let m = |l: &Row, r: &Row| keys_match(l, def.left_key, r, def.right_key, def.null_keys_match);
    for l in &left.rows {
        let mut matched = false;
        for r in &right.rows {
            if m(l, r) {
                matched = true;
                out.push((Some(l), Some(r)));
            }
        }
        if !matched && def.left_outer {
            out.push((Some(l), None));
        }
    }
    if def.right_outer {
        for r in &right.rows {
            if !left.rows.iter().any(|l| m(l, r)) {
                out.push((None, Some(r)));
            }
        }
    }
    out
}
