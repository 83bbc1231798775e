//! `upsert-json` / `upsert-avro`: the key holds the primary key (a JSON object of its columns, or
//! a bare scalar for a one-column key; a key that is not JSON is read as text); a value is an
//! upsert whose missing primary-key columns are taken from the key; a null value deletes the key.

use super::{not_an_object, scan_json, DecodeError};
use crate::change::{Event, Row};
use crate::engine::column::Column;
use crate::row::scan::{self, JsonKind};
use crate::row::RowBuilder;

fn names(pk: &[Column]) -> String {
    pk.iter().map(Column::name).collect::<Vec<_>>().join(", ")
}

/// The primary-key columns held by the record key, or why the key is unusable.
fn key_row(pk: &[Column], key: Option<&[u8]>) -> Result<Option<Row>, DecodeError> {
    let Some(bytes) = key else {
        return Ok(None);
    };
    let text: Vec<u8>;
    let (bytes, scanned) = match scan::scan(bytes) {
        Ok(s) => (bytes, s),
        Err(_) => {
            // A `StringSerializer` key of a one-column primary key: the text itself.
            let s = std::str::from_utf8(bytes)
                .map_err(|_| DecodeError::new("the record key is neither JSON nor UTF-8 text"))?;
            text = serde_json::to_vec(s).expect("strings serialise");
            let scanned = scan::scan(&text).expect("a serialised string is valid JSON");
            (&text[..], scanned)
        }
    };
    match scanned.kind {
        JsonKind::Null => Ok(None),
        JsonKind::Object => {
            let key = Row::from_scanned(bytes, &scanned.members, scanned.compact);
            let missing: Vec<&str> = pk
                .iter()
                .filter(|c| c.get(&key).is_none())
                .map(Column::name)
                .collect();
            if !missing.is_empty() {
                return Err(DecodeError::new(format!(
                    "the record key lacks primary-key column(s) {} (key: {})",
                    missing.join(", "),
                    String::from_utf8_lossy(key.json())
                )));
            }
            let mut b = RowBuilder::new();
            for c in pk {
                b.set_raw(c.escaped(), c.value(&key).as_bytes());
            }
            Ok(Some(b.finish()))
        }
        JsonKind::String | JsonKind::Number | JsonKind::Bool if pk.len() == 1 => {
            let mut b = RowBuilder::new();
            b.set_raw(pk[0].escaped(), bytes.trim_ascii());
            Ok(Some(b.finish()))
        }
        other => Err(DecodeError::new(format!(
            "the record key is {} but the primary key ({}) needs {}",
            other.described(),
            names(pk),
            if pk.len() == 1 {
                "an object or a scalar"
            } else {
                "an object of its columns"
            }
        ))),
    }
}

pub(super) fn decode(
    pk: &[Column],
    key: Option<&[u8]>,
    value: Option<&[u8]>,
) -> Result<Option<Event>, DecodeError> {
    let key = key_row(pk, key)?;
    let value = match value {
        None => None,
        Some(bytes) => {
            let scanned = scan_json(bytes, "the record value")?;
            match scanned.kind {
                JsonKind::Null => None,
                JsonKind::Object => {
                    Some(Row::from_scanned(bytes, &scanned.members, scanned.compact))
                }
                other => return Err(not_an_object("the record value", other)),
            }
        }
    };
    match value {
        None => match key {
            Some(k) => Ok(Some(Event::DeleteKey(k))),
            None => Err(DecodeError::new(
                "a tombstone (null value) without a record key: no key to delete",
            )),
        },
        Some(row) => Ok(Some(Event::Upsert(match key {
            Some(k) if pk.iter().any(|c| c.get(&row).is_none()) => fill(&row, &k),
            _ => row,
        }))),
    }
}

/// `row` with the columns of `key` it lacks.
fn fill(row: &Row, key: &Row) -> Row {
    let mut b = RowBuilder::from_row(row);
    for (name, value) in key.columns() {
        b.set_if_absent(name, value.as_bytes());
    }
    b.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn pk(cols: &[&str]) -> Vec<Column> {
        cols.iter().map(|c| Column::new(*c)).collect()
    }

    fn row(v: Value) -> Row {
        Row::from_value(&v).unwrap()
    }

    fn bytes(v: Option<Value>) -> Option<Vec<u8>> {
        v.map(|v| serde_json::to_vec(&v).unwrap())
    }

    fn dec(
        cols: &[&str],
        k: Option<Value>,
        v: Option<Value>,
    ) -> Result<Option<Event>, DecodeError> {
        let (k, v) = (bytes(k), bytes(v));
        decode(&pk(cols), k.as_deref(), v.as_deref())
    }

    #[test]
    fn key_columns_fill_the_value() {
        let e = dec(&["id"], Some(json!(7)), Some(json!({"v": 1}))).unwrap();
        assert_eq!(e, Some(Event::Upsert(row(json!({"v": 1, "id": 7})))));
        let e = dec(&["id"], Some(json!({"id": 7})), Some(json!({"id": 8}))).unwrap();
        assert_eq!(e, Some(Event::Upsert(row(json!({"id": 8})))));
        let e = decode(&pk(&["id"]), Some(b"k-7"), Some(b"{\"v\":1}")).unwrap();
        assert_eq!(e, Some(Event::Upsert(row(json!({"v": 1, "id": "k-7"})))));
    }

    #[test]
    fn tombstones_delete_keys() {
        let e = dec(&["a", "b"], Some(json!({"a": 1, "b": 2, "c": 3})), None).unwrap();
        assert_eq!(e, Some(Event::DeleteKey(row(json!({"a": 1, "b": 2})))));
        let e = dec(&["a"], Some(json!(1)), Some(Value::Null)).unwrap();
        assert_eq!(e, Some(Event::DeleteKey(row(json!({"a": 1})))));
        let err =
            |k: Option<Value>, v: Option<Value>, cols: &[&str]| dec(cols, k, v).unwrap_err().0;
        assert!(err(None, None, &["a"]).contains("without a record key"));
        assert!(err(Some(json!(1)), None, &["a", "b"]).contains("needs an object"));
        assert!(err(Some(json!({"a": 1})), None, &["a", "b"]).contains("lacks"));
        assert!(err(Some(json!([1])), Some(json!({})), &["a"]).contains("is an array"));
        assert!(decode(&pk(&["a"]), Some(&[0xff]), None)
            .unwrap_err()
            .0
            .contains("neither JSON nor UTF-8"));
    }
}
