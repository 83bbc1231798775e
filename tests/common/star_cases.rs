//! The random cases of the star-join property suite (`star_props`): a chain of 3 or 4 inputs
//! (the fact and 2–3 dimensions), each dimension `INNER` or `LEFT` and looked up on column `a`
//! or `b` of the fact or of an earlier dimension, each input with or without a primary key, and
//! debezium-json changes (inserts, updates, deletes) on every input, applied to the reference
//! tables as they are made.

use proptest::prelude::*;
use serde_json::{json, Value};
use sidejoin::change::Side;

use super::reference::{Row, Table};

/// How one dimension joins the chain.
#[derive(Debug, Clone)]
pub(crate) struct DimCase {
    pub outer: bool,
    /// The input it is looked up on (an earlier one).
    pub on: usize,
    /// The column of that input it is looked up by: `a` or `b`.
    pub column: &'static str,
}

#[derive(Debug, Clone)]
pub(crate) struct StarOp {
    pub source: usize,
    /// 0 insert, 1 update, 2 delete.
    pub action: u8,
    pub id: u8,
    /// Column values; 4 stands for null.
    pub a: u8,
    pub b: u8,
    pub k: u8,
    pub v: u8,
    pub pick: u8,
    pub known_before: bool,
}

#[derive(Debug, Clone)]
pub(crate) struct StarCase {
    pub dims: Vec<DimCase>,
    /// Per input (the fact first): it has primary key `id`.
    pub pk: Vec<bool>,
    pub ops: Vec<StarOp>,
}

impl StarCase {
    pub(crate) fn inputs(&self) -> usize {
        self.dims.len() + 1
    }
}

fn dim_case(index: usize) -> impl Strategy<Value = DimCase> {
    // Dimension `index` (input index + 1) is looked up on an input before it.
    (any::<bool>(), 0..=index, any::<bool>()).prop_map(|(outer, on, a)| DimCase {
        outer,
        on,
        column: if a { "a" } else { "b" },
    })
}

fn op(inputs: usize) -> impl Strategy<Value = StarOp> {
    (
        0..inputs,
        0u8..3,
        0u8..3,
        (0u8..5, 0u8..5, 0u8..5),
        0u8..2,
        any::<u8>(),
        any::<bool>(),
    )
        .prop_map(
            |(source, action, id, (a, b, k), v, pick, known_before)| StarOp {
                source,
                action,
                id,
                a,
                b,
                k,
                v,
                pick,
                known_before,
            },
        )
}

/// A chain of 3 or 4 inputs and up to 40 changes.
pub(crate) fn star_case() -> impl Strategy<Value = StarCase> {
    (2usize..=3)
        .prop_flat_map(|dims| {
            let dim_cases: Vec<_> = (0..dims).map(dim_case).collect();
            (
                dim_cases,
                proptest::collection::vec(any::<bool>(), dims + 1),
                proptest::collection::vec(op(dims + 1), 1..40),
            )
        })
        .prop_map(|(mut dims, pk, ops)| {
            // The first dimension is looked up on the fact (SPEC §14).
            dims[0].on = 0;
            StarCase { dims, pk, ops }
        })
}

fn value(n: u8) -> Value {
    if n >= 4 {
        Value::Null
    } else {
        json!(n)
    }
}

fn build_row(op: &StarOp, id: u8) -> Row {
    Row::from_iter([
        ("id".to_owned(), json!(id)),
        ("a".to_owned(), value(op.a)),
        ("b".to_owned(), value(op.b)),
        ("k".to_owned(), value(op.k)),
        ("v".to_owned(), json!(op.v)),
    ])
}

/// One input record: its source and debezium-json value.
pub(crate) struct StarRecord {
    pub side: Side,
    pub value: Value,
}

/// Builds the record for `op` and applies its meaning to the reference table of its input.
pub(crate) fn make_star_record(c: &StarCase, op: &StarOp, tables: &mut [Table]) -> StarRecord {
    let side = Side::at(op.source).expect("a case has at most 4 inputs");
    let table = &mut tables[op.source];
    let row = build_row(op, op.id);
    let value = match (c.pk[op.source], op.action) {
        (_, 0) => {
            table.upsert(row.clone());
            json!({"before": null, "after": row, "op": "c"})
        }
        (true, 1) => {
            let before = op.known_before.then(|| build_row(op, op.pick % 3));
            table.update(before.as_ref(), row.clone());
            json!({"before": before, "after": row, "op": "u"})
        }
        (true, _) => {
            let before = Row::from_iter([("id".to_owned(), json!(op.id))]);
            table.delete(&before);
            json!({"before": before, "after": null, "op": "d"})
        }
        (false, action) => {
            let existing = (!table.rows.is_empty() && op.known_before)
                .then(|| table.rows[op.pick as usize % table.rows.len()].clone());
            let before = existing.unwrap_or_else(|| build_row(op, op.pick % 3));
            if action == 1 {
                table.update(Some(&before), row.clone());
                json!({"before": before, "after": row, "op": "u"})
            } else {
                table.delete(&before);
                json!({"before": before, "after": null, "op": "d"})
            }
        }
    };
    StarRecord { side, value }
}
