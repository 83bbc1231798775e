//! The random cases of the engine property suite (`props`): each side's keys and primary key,
//! the operations on both sides, and the Kafka records they become, applied to the reference
//! tables as they are made.

use proptest::prelude::*;
use serde_json::{json, Map, Value};
use sidejoin::change::Side;

use super::reference::{Row, Table};

/// How one side is configured in a case.
#[derive(Debug, Clone)]
pub(crate) struct SideCase {
    pub pk: bool,
    /// Primary-key sides: upsert-json instead of debezium-json. Others: json instead of debezium-json.
    pub alt_format: bool,
}

#[derive(Debug, Clone)]
pub(crate) struct Op {
    pub left: bool,
    /// 0 insert, 1 update, 2 delete.
    pub action: u8,
    pub id: u8,
    pub k1: u8,
    pub k2: u8,
    pub payload: u8,
    /// Chooses an existing row (deletes/updates on multisets) or the old key (updates on keyed sides).
    pub pick: u8,
    pub known_before: bool,
}

#[derive(Debug, Clone)]
pub(crate) struct Case {
    pub left: SideCase,
    pub right: SideCase,
    pub two_column_keys: bool,
    pub null_keys_match: bool,
    pub ops: Vec<Op>,
}

fn side_case() -> impl Strategy<Value = SideCase> {
    (any::<bool>(), any::<bool>()).prop_map(|(pk, alt_format)| SideCase { pk, alt_format })
}

fn op() -> impl Strategy<Value = Op> {
    (
        any::<bool>(),
        0u8..3,
        0u8..3,
        0u8..10,
        0u8..10,
        0u8..2,
        any::<u8>(),
        any::<bool>(),
    )
        .prop_map(
            |(left, action, id, k1, k2, payload, pick, known_before)| Op {
                left,
                action,
                id,
                k1,
                k2,
                payload,
                pick,
                known_before,
            },
        )
}

pub(crate) fn case() -> impl Strategy<Value = Case> {
    (
        side_case(),
        side_case(),
        any::<bool>(),
        any::<bool>(),
        prop::collection::vec(op(), 1..=50),
    )
        .prop_map(
            |(left, right, two_column_keys, null_keys_match, ops)| Case {
                left,
                right,
                two_column_keys,
                null_keys_match,
                ops,
            },
        )
}

/// Key values that collide on purpose: `1` and `1.0` are equal, `"1"` is not, null never matches
/// (unless null keys match); `None` is a missing column.
fn key_value(i: u8) -> Option<Value> {
    match i {
        0..=2 => Some(json!(1)),
        3 => Some(json!(1.0)),
        4 | 5 => Some(json!(2)),
        6 => Some(json!("1")),
        7 => Some(Value::Null),
        8 => None,
        _ => Some(json!(3)),
    }
}

fn build_row(c: &Case, side: Side, op: &Op, id: u8) -> Row {
    let mut r = Map::new();
    if c.side(side).pk {
        r.insert("id".into(), json!(id));
    }
    if let Some(v) = key_value(op.k1) {
        r.insert("k1".into(), v);
    }
    if c.two_column_keys {
        if let Some(v) = key_value(op.k2) {
            r.insert("k2".into(), v);
        }
    }
    let payload = if side == Side::Left { "v" } else { "w" };
    r.insert(payload.into(), json!(op.payload));
    r
}

impl Case {
    fn side(&self, side: Side) -> &SideCase {
        match side {
            Side::Left => &self.left,
            _ => &self.right,
        }
    }

    pub(super) fn keys(&self) -> Vec<String> {
        if self.two_column_keys {
            vec!["k1".into(), "k2".into()]
        } else {
            vec!["k1".into()]
        }
    }

    pub(crate) fn env(
        &self,
        join_type: &str,
        allow_generated_retracts: bool,
    ) -> Vec<(String, String)> {
        let keys = self.keys().join(",");
        let mut env = vec![
            ("SIDEJOIN_JOIN_TYPE", join_type.to_owned()),
            ("SIDEJOIN_LEFT_KEY", keys.clone()),
            ("SIDEJOIN_RIGHT_KEY", keys),
            ("SIDEJOIN_NULL_KEYS_MATCH", self.null_keys_match.to_string()),
            ("SIDEJOIN_ALLOW_GENERATED_RETRACTS", allow_generated_retracts.to_string()),
            (
                "SIDEJOIN_SELECT",
                "l.id AS lid, l.k1 AS lk1, l.k2 AS lk2, l.v AS v, r.id AS rid, r.k1 AS rk1, r.k2 AS rk2, r.w AS w".to_owned(),
            ),
        ];
        for side in Side::BOTH {
            let s = self.side(side);
            let format = match (s.pk, s.alt_format) {
                (true, true) => "upsert-json",
                (false, true) => "json",
                _ => "debezium-json",
            };
            let v = side.var();
            env.push((
                if v == "LEFT" {
                    "SIDEJOIN_LEFT_FORMAT"
                } else {
                    "SIDEJOIN_RIGHT_FORMAT"
                },
                format.to_owned(),
            ));
            if s.pk {
                env.push((
                    if v == "LEFT" {
                        "SIDEJOIN_LEFT_PRIMARY_KEY"
                    } else {
                        "SIDEJOIN_RIGHT_PRIMARY_KEY"
                    },
                    "id".to_owned(),
                ));
            }
        }
        env.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
    }
}

/// One input record: its Kafka key and value, and what it does to the reference tables.
pub(super) struct Record {
    pub(super) side: Side,
    pub(super) key: Option<Value>,
    pub(super) value: Option<Value>,
}

/// Builds the record for `op` and applies its meaning to the reference table of its side.
pub(super) fn make_record(c: &Case, op: &Op, tables: &mut [Table; 2]) -> Record {
    let side = if op.left { Side::Left } else { Side::Right };
    let s = c.side(side);
    let table = &mut tables[side.index()];
    let row = build_row(c, side, op, op.id);
    let (key, value) = match (s.pk, s.alt_format, op.action) {
        // upsert-json: the key carries the id; values sometimes leave it to the key.
        (true, true, 2) => {
            table.delete(&Row::from_iter([("id".to_owned(), json!(op.id))]));
            (Some(json!({ "id": op.id })), None)
        }
        (true, true, _) => {
            table.upsert(row.clone());
            let mut v = row;
            if op.known_before {
                v.remove("id");
            }
            (Some(json!({ "id": op.id })), Some(Value::Object(v)))
        }
        // json: inserts only.
        (false, true, _) => {
            table.upsert(row.clone());
            (None, Some(Value::Object(row)))
        }
        // debezium-json.
        (_, false, 0) => {
            table.upsert(row.clone());
            (None, Some(json!({"before": null, "after": row, "op": "c"})))
        }
        (true, false, 1) => {
            let before = op.known_before.then(|| build_row(c, side, op, op.pick % 3));
            table.update(before.as_ref(), row.clone());
            (
                None,
                Some(json!({"before": before, "after": row, "op": "u"})),
            )
        }
        (true, false, _) => {
            let before = Row::from_iter([("id".to_owned(), json!(op.id))]);
            table.delete(&before);
            (
                None,
                Some(json!({"before": before, "after": null, "op": "d"})),
            )
        }
        (false, false, action) => multiset_change(c, side, op, action, table),
    };
    Record { side, key, value }
}

/// A debezium update (`action` 1) or delete of a side without a primary key: of a row the
/// table holds when `op.known_before`, else of one that is usually, but not always, absent.
fn multiset_change(
    c: &Case,
    side: Side,
    op: &Op,
    action: u8,
    table: &mut Table,
) -> (Option<Value>, Option<Value>) {
    let row = build_row(c, side, op, op.id);
    let existing = (!table.rows.is_empty() && op.known_before)
        .then(|| table.rows[op.pick as usize % table.rows.len()].clone());
    let random = Op {
        payload: op.pick % 2,
        ..op.clone()
    };
    let before = existing.unwrap_or_else(|| build_row(c, side, &random, 0));
    if action == 1 {
        table.update(Some(&before), row.clone());
        (
            None,
            Some(json!({"before": before, "after": row, "op": "u"})),
        )
    } else {
        table.delete(&before);
        (
            None,
            Some(json!({"before": before, "after": null, "op": "d"})),
        )
    }
}
