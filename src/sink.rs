//! Output modes (SPEC §5): the projected changes one input record caused → the Kafka records the
//! output topic gets, as JSON keys and values (bytes are made by the caller).
//!
//! - `changelog`: Debezium envelopes; an adjacent `-U`/`+U` pair with the same key is one `u`.
//! - `upsert`: folded per key (last wins, in order of each key's first change); retractions are
//!   tombstones.
//! - `append`: the rows (configuration guarantees the join is insert-only).

use std::collections::HashMap;

use serde_json::{json, Map, Number, Value};

use crate::changelog::{Kind, Row, Side};
use crate::config::{KeyColumn, KeySource, OutputMode};

/// A projected output change with its output key.
#[derive(Debug, Clone, PartialEq)]
pub struct OutChange {
    pub kind: Kind,
    pub key: Option<Value>,
    pub row: Row,
}

/// One record for the output topic: `value: None` is a tombstone.
#[derive(Debug, Clone, PartialEq)]
pub struct OutRecord {
    pub key: Option<Value>,
    pub value: Option<Value>,
}

/// Integral numbers without a fraction, so `1` and `1.0` give the same key bytes.
pub fn normalize_number(v: &Value) -> Value {
    match v {
        Value::Number(n) if n.is_f64() => {
            let f = n.as_f64().unwrap_or(f64::NAN);
            if f.fract() == 0.0 && f.abs() < 9.0e15 {
                Value::Number(Number::from(f as i64))
            } else {
                v.clone()
            }
        }
        Value::Array(a) => Value::Array(a.iter().map(normalize_number).collect()),
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| (k.clone(), normalize_number(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The output key of a change: an object of the key columns in `SIDEJOIN_OUTPUT_KEY` order, or
/// `None` when the output has no key.
pub fn output_key(
    key: &[KeyColumn],
    row: &Row,
    left: Option<&Row>,
    right: Option<&Row>,
) -> Option<Value> {
    if key.is_empty() {
        return None;
    }
    let mut out = Map::with_capacity(key.len());
    for k in key {
        let v = match &k.source {
            KeySource::Output => row.get(&k.name),
            KeySource::Input(side, col) => match side {
                Side::Left => left,
                Side::Right => right,
            }
            .and_then(|r| r.get(col)),
        };
        out.insert(
            k.name.clone(),
            v.map(normalize_number).unwrap_or(Value::Null),
        );
    }
    Some(Value::Object(out))
}

fn changelog(changes: Vec<OutChange>, out: &mut Vec<OutRecord>) {
    let mut it = changes.into_iter().peekable();
    while let Some(c) = it.next() {
        let value = match c.kind {
            Kind::UpdateBefore
                if it
                    .peek()
                    .is_some_and(|n| n.kind == Kind::UpdateAfter && n.key == c.key) =>
            {
                let after = it.next().map(|n| n.row);
                json!({"before": c.row, "after": after, "op": "u"})
            }
            Kind::Insert | Kind::UpdateAfter => json!({"before": null, "after": c.row, "op": "c"}),
            Kind::UpdateBefore | Kind::Delete => json!({"before": c.row, "after": null, "op": "d"}),
        };
        out.push(OutRecord {
            key: c.key,
            value: Some(value),
        });
    }
}

fn upsert(changes: Vec<OutChange>, out: &mut Vec<OutRecord>) {
    // Key bytes → index in `out`; the key bytes are what Kafka compacts on.
    let mut seen: HashMap<Vec<u8>, usize> = HashMap::with_capacity(changes.len());
    for c in changes {
        let value = c.kind.is_accumulate().then(|| Value::Object(c.row));
        let bytes = serde_json::to_vec(&c.key).unwrap_or_default();
        match seen.get(&bytes) {
            Some(&i) => out[i].value = value,
            None => {
                seen.insert(bytes, out.len());
                out.push(OutRecord { key: c.key, value });
            }
        }
    }
}

fn append(changes: Vec<OutChange>, out: &mut Vec<OutRecord>) {
    for c in changes {
        // Configuration refuses `append` unless the join is insert-only (SPEC §5).
        debug_assert!(c.kind.is_accumulate(), "append output got {}", c.kind);
        if c.kind.is_accumulate() {
            out.push(OutRecord {
                key: c.key,
                value: Some(Value::Object(c.row)),
            });
        }
    }
}

/// Encodes the changes caused by one input record, appending records to `out`.
pub fn encode(mode: OutputMode, changes: Vec<OutChange>, out: &mut Vec<OutRecord>) {
    match mode {
        OutputMode::Changelog => changelog(changes, out),
        OutputMode::Upsert => upsert(changes, out),
        OutputMode::Append => append(changes, out),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ch(kind: Kind, key: i64, v: &str) -> OutChange {
        OutChange {
            kind,
            key: Some(json!({ "k": key })),
            row: json!({"k": key, "v": v}).as_object().unwrap().clone(),
        }
    }

    #[test]
    fn changelog_merges_adjacent_pairs_with_one_key() {
        let mut out = Vec::new();
        encode(
            OutputMode::Changelog,
            vec![
                ch(Kind::UpdateBefore, 1, "a"),
                ch(Kind::UpdateAfter, 1, "b"),
                ch(Kind::UpdateBefore, 1, "b"),
                ch(Kind::UpdateAfter, 2, "c"),
            ],
            &mut out,
        );
        let ops: Vec<&str> = out
            .iter()
            .map(|r| r.value.as_ref().unwrap()["op"].as_str().unwrap())
            .collect();
        assert_eq!(ops, ["u", "d", "c"]);
        assert_eq!(out[0].value.as_ref().unwrap()["after"]["v"], "b");
    }

    #[test]
    fn upsert_folds_per_key_in_first_seen_order() {
        let mut out = Vec::new();
        encode(
            OutputMode::Upsert,
            vec![
                ch(Kind::Delete, 1, "a"),
                ch(Kind::Insert, 2, "x"),
                ch(Kind::Insert, 1, "b"),
            ],
            &mut out,
        );
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].key, Some(json!({"k": 1})));
        assert_eq!(out[0].value.as_ref().unwrap()["v"], "b");
        encode(
            OutputMode::Upsert,
            vec![ch(Kind::Insert, 3, "a"), ch(Kind::Delete, 3, "a")],
            &mut out,
        );
        assert_eq!(out[2].value, None);
    }

    #[test]
    fn keys_drop_integral_fractions() {
        assert_eq!(
            serde_json::to_string(&normalize_number(&json!({"a": 1.0, "b": [2.0, 2.5]}))).unwrap(),
            r#"{"a":1,"b":[2,2.5]}"#
        );
    }
}
