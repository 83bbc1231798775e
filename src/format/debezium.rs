//! `debezium-json` / `debezium-avro`: envelopes `{before, after, op}`, also wrapped in
//! `{schema, payload}`. `c`/`r` insert `after`, `u` updates `before` to `after`, `d` deletes
//! `before`; a tombstone is skipped.

use serde_json::{Map, Value};

use super::{as_row, json_type, DecodeError};
use crate::changelog::{Event, Kind, Row};

fn field(envelope: &mut Map<String, Value>, name: &str) -> Result<Option<Row>, DecodeError> {
    match envelope.remove(name) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => as_row(v, &format!("Debezium `{name}`")).map(Some),
    }
}

/// The envelope object, unwrapped from `{schema, payload}`; `None` for a tombstone.
fn envelope(value: Option<Value>) -> Result<Option<Map<String, Value>>, DecodeError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(mut m)) if m.contains_key("schema") && m.contains_key("payload") => {
            match m.remove("payload") {
                Some(Value::Object(p)) => Ok(Some(p)),
                Some(Value::Null) | None => Ok(None),
                Some(other) => Err(DecodeError::new(format!(
                    "Debezium `payload` is {}, expected an object",
                    json_type(&other)
                ))),
            }
        }
        Some(Value::Object(m)) => Ok(Some(m)),
        Some(other) => Err(DecodeError::new(format!(
            "the record value is not a Debezium envelope (found {})",
            json_type(&other)
        ))),
    }
}

pub fn decode(has_primary_key: bool, value: Option<Value>) -> Result<Option<Event>, DecodeError> {
    let Some(mut envelope) = envelope(value)? else {
        return Ok(None);
    };
    let op = match envelope.remove("op") {
        Some(Value::String(op)) => op,
        Some(other) => {
            return Err(DecodeError::new(format!(
                "Debezium `op` is {}, expected a string",
                json_type(&other)
            )))
        }
        None => {
            return Err(DecodeError::new(
                "the record value is not a Debezium envelope: it has no `op`",
            ))
        }
    };
    let before = field(&mut envelope, "before")?;
    let after = field(&mut envelope, "after")?;
    let need = |row: Option<Row>, name: &str| {
        row.ok_or_else(|| DecodeError::new(format!("Debezium op `{op}` without `{name}`")))
    };
    let event = match op.as_ref() {
        "c" | "r" => Event::Change(Kind::Insert, need(after, "after")?),
        "u" => {
            let after = need(after, "after")?;
            if before.is_none() && !has_primary_key {
                return Err(DecodeError::new(
                    "Debezium op `u` without `before` on a side without primary key (set SIDEJOIN_<SIDE>_PRIMARY_KEY so the old row can come from state)",
                ));
            }
            Event::Update { before, after }
        }
        "d" => Event::Change(Kind::Delete, need(before, "before")?),
        "t" => {
            return Err(DecodeError::new(
                "Debezium op `t` (truncate) is not supported",
            ))
        }
        other => {
            return Err(DecodeError::new(format!(
                "unknown Debezium op `{other}` (expected c, r, u or d)"
            )))
        }
    };
    Ok(Some(event))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn row(v: Value) -> Row {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn ops() {
        let v = json!({"before": null, "after": {"id": 1}, "op": "r"});
        assert_eq!(
            decode(false, Some(v)).unwrap(),
            Some(Event::Change(Kind::Insert, row(json!({"id": 1}))))
        );
        let v = json!({"schema": {}, "payload": {"before": {"id": 1}, "after": null, "op": "d"}});
        assert_eq!(
            decode(false, Some(v)).unwrap(),
            Some(Event::Change(Kind::Delete, row(json!({"id": 1}))))
        );
        let v = json!({"after": {"id": 1}, "op": "u"});
        assert!(decode(false, Some(v.clone())).is_err());
        assert_eq!(
            decode(true, Some(v)).unwrap(),
            Some(Event::Update {
                before: None,
                after: row(json!({"id": 1}))
            })
        );
        assert_eq!(decode(true, None).unwrap(), None);
        assert_eq!(
            decode(true, Some(json!({"schema": {}, "payload": null}))).unwrap(),
            None
        );
    }

    #[test]
    fn errors_name_the_problem() {
        for (v, needle) in [
            (json!({"op": "t"}), "truncate"),
            (json!({"op": "x", "after": {}}), "unknown Debezium op `x`"),
            (json!({"op": "c"}), "without `after`"),
            (json!({"op": "d", "after": {"a": 1}}), "without `before`"),
            (
                json!({"before": 1, "op": "d"}),
                "`before` is not a JSON object",
            ),
            (json!([1]), "not a Debezium envelope"),
            (json!({"after": {}}), "no `op`"),
            (json!({"op": 1}), "`op` is a number"),
        ] {
            let e = decode(true, Some(v.clone())).unwrap_err();
            assert!(e.0.contains(needle), "{v}: {}", e.0);
        }
    }
}
