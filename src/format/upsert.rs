//! `upsert-json` / `upsert-avro`: the key holds the primary key (a JSON object of its columns, or
//! a bare scalar for a one-column key); a value is an upsert whose missing primary-key columns are
//! taken from the key; a null value deletes the key.

use serde_json::Value;

use super::{as_row, json_type, DecodeError};
use crate::changelog::{Event, Row};

/// The primary-key columns held by the record key, or why the key is unusable.
fn key_row(pk: &[String], key: Option<Value>) -> Result<Option<Row>, DecodeError> {
    match key {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(mut m)) => {
            let missing: Vec<&str> = pk
                .iter()
                .filter(|c| !m.contains_key(*c))
                .map(String::as_str)
                .collect();
            if !missing.is_empty() {
                return Err(DecodeError::new(format!(
                    "the record key lacks primary-key column(s) {} (key: {})",
                    missing.join(", "),
                    Value::Object(m)
                )));
            }
            Ok(Some(
                pk.iter()
                    .map(|c| (c.clone(), m.remove(c).unwrap_or(Value::Null)))
                    .collect(),
            ))
        }
        Some(scalar @ (Value::String(_) | Value::Number(_) | Value::Bool(_))) if pk.len() == 1 => {
            Ok(Some(Row::from_iter([(pk[0].clone(), scalar)])))
        }
        Some(other) => Err(DecodeError::new(format!(
            "the record key is {} but the primary key ({}) needs {}",
            json_type(&other),
            pk.join(", "),
            if pk.len() == 1 {
                "an object or a scalar"
            } else {
                "an object of its columns"
            }
        ))),
    }
}

pub fn decode(
    pk: &[String],
    key: Option<Value>,
    value: Option<Value>,
) -> Result<Option<Event>, DecodeError> {
    let key = key_row(pk, key)?;
    match value {
        None | Some(Value::Null) => match key {
            Some(k) => Ok(Some(Event::DeleteKey(k))),
            None => Err(DecodeError::new(
                "a tombstone (null value) without a record key: no key to delete",
            )),
        },
        Some(v) => {
            let mut row = as_row(v, "the record value")?;
            if let Some(k) = key {
                for (c, kv) in k {
                    row.entry(c).or_insert(kv);
                }
            }
            Ok(Some(Event::Upsert(row)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pk(cols: &[&str]) -> Vec<String> {
        cols.iter().map(|c| c.to_string()).collect()
    }

    fn row(v: Value) -> Row {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn key_columns_fill_the_value() {
        let e = decode(&pk(&["id"]), Some(json!(7)), Some(json!({"v": 1}))).unwrap();
        assert_eq!(e, Some(Event::Upsert(row(json!({"v": 1, "id": 7})))));
        let e = decode(&pk(&["id"]), Some(json!({"id": 7})), Some(json!({"id": 8}))).unwrap();
        assert_eq!(e, Some(Event::Upsert(row(json!({"id": 8})))));
    }

    #[test]
    fn tombstones_delete_keys() {
        let e = decode(
            &pk(&["a", "b"]),
            Some(json!({"a": 1, "b": 2, "c": 3})),
            None,
        )
        .unwrap();
        assert_eq!(e, Some(Event::DeleteKey(row(json!({"a": 1, "b": 2})))));
        let err = |k: Option<Value>, v: Option<Value>, cols: &[&str]| {
            decode(&pk(cols), k, v).unwrap_err().0
        };
        assert!(err(None, None, &["a"]).contains("without a record key"));
        assert!(err(Some(json!(1)), None, &["a", "b"]).contains("needs an object"));
        assert!(err(Some(json!({"a": 1})), None, &["a", "b"]).contains("lacks"));
        assert!(err(Some(json!([1])), Some(json!({})), &["a"]).contains("is an array"));
    }
}
