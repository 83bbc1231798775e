//! `debezium-json` / `debezium-avro`: envelopes `{before, after, op}`, also wrapped in
//! `{schema, payload}`. `c`/`r` insert `after`, `u` updates `before` to `after`, `d` deletes
//! `before`; a tombstone is skipped. The envelope is validated once and read in place; only
//! `before` and `after` become rows.

use super::{described, member, scan_json, DecodeError};
use crate::change::{Event, Kind, Row};
use smallvec::SmallVec;

use crate::row::scan::{self, JsonKind, Member};
use crate::row::Json;

fn field(v: Option<Json<'_>>, name: &str) -> Result<Option<Row>, DecodeError> {
    match v {
        None => Ok(None),
        Some(v) if v.is_null() => Ok(None),
        Some(v) if v.kind() == JsonKind::Object => Ok(Some(Row::from_valid(v.as_bytes()))),
        Some(v) => Err(DecodeError::new(format!(
            "Debezium `{name}` is not a JSON object (found {})",
            described(v)
        ))),
    }
}

/// An envelope's top-level members.
type Members = SmallVec<[Member; 16]>;

/// The envelope's text and top-level members, unwrapped from `{schema, payload}` when it is
/// wrapped; `None` for a tombstone (a null value or payload).
fn envelope(bytes: &[u8]) -> Result<Option<(&[u8], Members)>, DecodeError> {
    let scanned = scan_json(bytes, "the record value")?;
    let members = match scanned.kind {
        JsonKind::Null => return Ok(None),
        JsonKind::Object => scanned.members,
        other => {
            return Err(DecodeError::new(format!(
                "the record value is not a Debezium envelope (found {})",
                other.described()
            )))
        }
    };
    let (Some(_), Some(payload)) = (
        member(bytes, &members, "schema"),
        member(bytes, &members, "payload"),
    ) else {
        return Ok(Some((bytes, members)));
    };
    match payload.kind() {
        JsonKind::Null => Ok(None),
        JsonKind::Object => {
            let text = payload.as_bytes();
            Ok(Some((text, scan::members(text).0)))
        }
        other => Err(DecodeError::new(format!(
            "Debezium `payload` is {}, expected an object",
            other.described()
        ))),
    }
}

/// The envelope's `op`.
fn op(text: &[u8], members: &[Member]) -> Result<String, DecodeError> {
    match member(text, members, "op") {
        Some(v) if v.kind() == JsonKind::String => Ok(v.as_str().unwrap_or_default().into_owned()),
        Some(v) => Err(DecodeError::new(format!(
            "Debezium `op` is {}, expected a string",
            described(v)
        ))),
        None => Err(DecodeError::new(
            "the record value is not a Debezium envelope: it has no `op`",
        )),
    }
}

pub(super) fn decode(
    has_primary_key: bool,
    value: Option<&[u8]>,
) -> Result<Option<Event>, DecodeError> {
    let Some(bytes) = value else {
        return Ok(None);
    };
    let Some((text, members)) = envelope(bytes)? else {
        return Ok(None);
    };
    let op = op(text, &members)?;
    let before = field(member(text, &members, "before"), "before")?;
    let after = field(member(text, &members, "after"), "after")?;
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
    use serde_json::{json, Value};

    fn row(v: Value) -> Row {
        Row::from_value(&v).unwrap()
    }

    fn dec(pk: bool, v: Value) -> Result<Option<Event>, DecodeError> {
        decode(pk, Some(&serde_json::to_vec(&v).unwrap()))
    }

    #[test]
    fn ops() {
        let v = json!({"before": null, "after": {"id": 1}, "op": "r"});
        assert_eq!(
            dec(false, v).unwrap(),
            Some(Event::Change(Kind::Insert, row(json!({"id": 1}))))
        );
        let v = json!({"schema": {}, "payload": {"before": {"id": 1}, "after": null, "op": "d"}});
        assert_eq!(
            dec(false, v).unwrap(),
            Some(Event::Change(Kind::Delete, row(json!({"id": 1}))))
        );
        let v = json!({"after": {"id": 1}, "op": "u"});
        assert!(dec(false, v.clone()).is_err());
        assert_eq!(
            dec(true, v).unwrap(),
            Some(Event::Update {
                before: None,
                after: row(json!({"id": 1}))
            })
        );
        assert_eq!(decode(true, None).unwrap(), None);
        assert_eq!(decode(true, Some(b"null")).unwrap(), None);
        assert_eq!(
            dec(true, json!({"schema": {}, "payload": null})).unwrap(),
            None
        );
        // Whitespace inside the envelope does not reach the rows.
        let e = decode(
            false,
            Some(b"{ \"op\" : \"c\", \"after\" : { \"id\" : [1, 2] } }"),
        )
        .unwrap()
        .unwrap();
        assert_eq!(e, Event::Change(Kind::Insert, row(json!({"id": [1, 2]}))));
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
            let e = dec(true, v.clone()).unwrap_err();
            assert!(e.0.contains(needle), "{v}: {}", e.0);
        }
        assert!(decode(true, Some(b"{\"op\":"))
            .unwrap_err()
            .0
            .contains("not valid JSON"));
    }
}
