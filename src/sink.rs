//! Output modes (SPEC §5): the projected changes one input record caused → the Kafka records the
//! output topic gets, as JSON keys and values (bytes are made by the caller).
//!
//! - `changelog`: Debezium envelopes; an adjacent `-U`/`+U` pair with the same key is one `u`.
//! - `upsert`: folded per key (last wins, in order of each key's first change); retractions are
//!   tombstones.
//! - `append`: the rows (configuration guarantees the join is insert-only).

use std::collections::HashMap;

use serde::Serialize;
use serde_json::{Number, Value};

use crate::changelog::{Kind, Row, Side};
use crate::config::{KeyColumn, KeySource, OutputMode};
use crate::engine::project::OutRow;

/// A projected output change with its output key: compact JSON bytes, exactly the Kafka key.
#[derive(Debug, Clone, PartialEq)]
pub struct OutChange {
    pub kind: Kind,
    pub key: Option<Vec<u8>>,
    pub row: OutRow,
}

/// The value of an output record, serialised as JSON.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum RecordValue {
    /// `upsert` and `append`: the row itself.
    Row(OutRow),
    /// `changelog`: a Debezium envelope.
    Envelope {
        before: Option<OutRow>,
        after: Option<OutRow>,
        op: &'static str,
    },
}

/// One record for the output topic: `value: None` is a tombstone.
#[derive(Debug, Clone, PartialEq)]
pub struct OutRecord {
    pub key: Option<Vec<u8>>,
    pub value: Option<RecordValue>,
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

/// Writes a key value: integral numbers without a fraction (`1.0` as `1`).
fn write_key_value(v: &Value, out: &mut Vec<u8>) {
    let written = match v {
        Value::Number(n) if n.is_f64() => match normalize_number(v) {
            Value::Number(m) => serde_json::to_writer(&mut *out, &m),
            other => serde_json::to_writer(&mut *out, &other),
        },
        Value::Array(_) | Value::Object(_) => {
            serde_json::to_writer(&mut *out, &normalize_number(v))
        }
        other => serde_json::to_writer(&mut *out, other),
    };
    // Writing JSON values into a Vec cannot fail.
    debug_assert!(written.is_ok());
}

/// The output key of a change: compact JSON of the key columns in `SIDEJOIN_OUTPUT_KEY` order,
/// e.g. `{"user_id":"1"}`, or `None` when the output has no key.
pub fn output_key(
    key: &[KeyColumn],
    row: &OutRow,
    left: Option<&Row>,
    right: Option<&Row>,
) -> Option<Vec<u8>> {
    if key.is_empty() {
        return None;
    }
    let mut out = Vec::with_capacity(16 * key.len());
    out.push(b'{');
    for (i, k) in key.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        let v = match &k.source {
            KeySource::Output => row.get(&k.name),
            KeySource::Input(side, col) => match side {
                Side::Left => left,
                Side::Right => right,
            }
            .and_then(|r| r.get(col)),
        };
        let name = serde_json::to_writer(&mut out, k.name.as_str());
        debug_assert!(name.is_ok());
        out.push(b':');
        write_key_value(v.unwrap_or(&Value::Null), &mut out);
    }
    out.push(b'}');
    Some(out)
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
                RecordValue::Envelope {
                    before: Some(c.row),
                    after: it.next().map(|n| n.row),
                    op: "u",
                }
            }
            Kind::Insert | Kind::UpdateAfter => RecordValue::Envelope {
                before: None,
                after: Some(c.row),
                op: "c",
            },
            Kind::UpdateBefore | Kind::Delete => RecordValue::Envelope {
                before: Some(c.row),
                after: None,
                op: "d",
            },
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
        let value = c.kind.is_accumulate().then(|| RecordValue::Row(c.row));
        match seen.get(c.key.as_deref().unwrap_or_default()) {
            Some(&i) => out[i].value = value,
            None => {
                seen.insert(c.key.clone().unwrap_or_default(), out.len());
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
                value: Some(RecordValue::Row(c.row)),
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

    use crate::engine::project::{Projection, SelectItem};
    use serde_json::json;

    fn ch(kind: Kind, key: i64, v: &str) -> OutChange {
        let row = json!({"k": key, "v": v}).as_object().unwrap().clone();
        OutChange {
            kind,
            key: Some(format!("{{\"k\":{key}}}").into_bytes()),
            row: Projection::new(vec![SelectItem::All(Side::Left)]).project(Some(&row), None),
        }
    }

    fn value(r: &OutRecord) -> Value {
        serde_json::to_value(&r.value).unwrap()
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
        let ops: Vec<Value> = out.iter().map(|r| value(r)["op"].clone()).collect();
        assert_eq!(ops, ["u", "d", "c"]);
        assert_eq!(value(&out[0])["after"]["v"], "b");
        assert_eq!(value(&out[2])["before"], Value::Null);
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
        assert_eq!(out[0].key.as_deref(), Some(&br#"{"k":1}"#[..]));
        assert_eq!(value(&out[0])["v"], "b");
        encode(
            OutputMode::Upsert,
            vec![ch(Kind::Insert, 3, "a"), ch(Kind::Delete, 3, "a")],
            &mut out,
        );
        assert_eq!(out[2].value, None);
    }

    #[test]
    fn output_keys_are_compact_json_in_key_order() {
        let row = json!({"b": 2.0, "a": "x"}).as_object().unwrap().clone();
        let out = Projection::new(vec![SelectItem::All(Side::Left)]).project(Some(&row), None);
        let key = [
            KeyColumn {
                name: "a".into(),
                source: KeySource::Output,
            },
            KeyColumn {
                name: "b".into(),
                source: KeySource::Output,
            },
            KeyColumn {
                name: "c".into(),
                source: KeySource::Output,
            },
        ];
        assert_eq!(
            output_key(&key, &out, Some(&row), None).unwrap(),
            br#"{"a":"x","b":2,"c":null}"#
        );
        assert_eq!(output_key(&[], &out, Some(&row), None), None);
    }

    #[test]
    fn keys_drop_integral_fractions() {
        assert_eq!(
            serde_json::to_string(&normalize_number(&json!({"a": 1.0, "b": [2.0, 2.5]}))).unwrap(),
            r#"{"a":1,"b":[2,2.5]}"#
        );
    }
}
