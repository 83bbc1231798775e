//! Does a record's Kafka key carry its row's join key? The co-partitioned mode (SPEC §6) needs
//! partition *i* of both topics to hold the same join keys, which holds when both are keyed by
//! the join key (and have the same partition count). A topic keyed by something else — typically
//! a Debezium or upsert topic keyed by its primary key while the join is on another column —
//! spreads the rows of one join key over partitions, and each then joins against a part of the
//! other side only: wrong output, with nothing failing. This check is what can be seen of that
//! from one record.
//!
//! A key fits when it is the join key and nothing else: a JSON object with exactly the join-key
//! columns holding the row's values (SPEC §1 equality; a Kafka Connect `{schema, payload}`
//! envelope is looked through), or, for a one-column join key, a JSON scalar whose text is the
//! value's (`5` and `"5"` both carry 5). A key that is not JSON (`user-5`) cannot be judged: it
//! may well be made from the join key. A row whose join key holds a null is not checked (it joins nothing
//! wherever it lands, unless `SIDEJOIN_NULL_KEYS_MATCH`), nor a delete by key alone. A record without a key
//! does not fit: producers spread keyless records over the partitions. An update is checked
//! with its old and its new row: a key cannot carry two different join keys.
//!
//! What it does not do: look at partitions or partition counts (the runtime does, at start),
//! count or log (the pipeline counts; the run loop logs and stops, at start
//! after `runtime::probe`; `fix` words what to do), or check formats whose keys
//! are not JSON (Avro keys reach it already decoded to JSON).

use crate::change::{Event, Side};
use crate::config::{Config, JoinSpec};
use crate::engine::column::Column;
use crate::format::Reading;
use crate::row::scan::{self, JsonKind};
use crate::row::value::Json;
use crate::row::Row;

/// What to do about a topic of `side` that is not keyed by its join key, for error messages.
pub fn fix(cfg: &Config, side: Side) -> String {
    let (topic, other) = (cfg.join.topic(side), cfg.join.topic(side.other()));
    let key = cfg.join.side(side).key.join(",");
    format!(
        "key the records of `{topic}` by the join key ({key}) as those of `{other}` are, or, if one side is a small \
         table, broadcast it (SIDEJOIN_BROADCAST=left|right: no co-partitioning needed; see \
         docs/src/operations/broadcast.md), or let sidejoin re-key it by the join key \
         (SIDEJOIN_{}_HASH_BY=$join_key: an internal repartition topic; see docs/src/operations/repartition.md)",
        side.var()
    )
}

/// The join-key columns of every input.
pub struct KeyCheck {
    join_key: Vec<Vec<Column>>,
    /// `SIDEJOIN_NULL_KEYS_MATCH`: null join keys join, so their partition matters too.
    null_keys_match: bool,
    /// The side reads its repartition topic (`SIDEJOIN_<SIDE>_HASH_BY`).
    repartitioned: Vec<bool>,
}

/// What a key was read as.
enum Key {
    Object(Row),
    /// A JSON scalar, compact.
    Scalar(Vec<u8>),
}

impl KeyCheck {
    /// The check of `join`'s sides, read as `readings` says (a side read as changes from its
    /// repartition topic was keyed by sidejoin and is not checked).
    pub fn new(join: &JoinSpec, readings: &[Reading]) -> KeyCheck {
        KeyCheck {
            join_key: join.sources().map(|s| Column::list(&s.key)).collect(),
            null_keys_match: join.null_keys_match,
            repartitioned: readings.iter().map(|r| *r == Reading::Changes).collect(),
        }
    }

    /// `None` when `key` fits every row of `event` (or cannot be judged), else why not. A record
    /// without a key is judged too: producers spread keyless records over the partitions.
    pub fn check(&self, side: Side, key: Option<&[u8]>, event: &Event) -> Option<String> {
        if self.repartitioned[side.index()] {
            // Keyed by sidejoin's repartition step, in the form the other side's keys have.
            return None;
        }
        let rows: [Option<&Row>; 2] = match event {
            Event::Change(_, row) | Event::Upsert(row) => [Some(row), None],
            Event::Update { before, after } => [before.as_ref(), Some(after)],
            Event::DeleteKey(_) => return None,
        };
        let columns = &self.join_key[side.index()];
        let Some(key) = key else {
            return rows.into_iter().flatten().find_map(|row| {
                let placed = self.null_keys_match || !columns.iter().any(|c| c.value(row).is_null());
                placed.then(|| {
                    "the record has no key (a producer spreads keyless records over the partitions, so the rows \
                     of one join key land in several)"
                        .to_owned()
                })
            });
        };
        let key = read_key(key)?;
        rows.into_iter()
            .flatten()
            .find_map(|row| misfit(columns, &key, row, self.null_keys_match))
    }
}

/// The key as JSON; `None` when it is not JSON, or an array or null.
fn read_key(bytes: &[u8]) -> Option<Key> {
    let scanned = scan::scan(bytes).ok()?;
    match scanned.kind {
        JsonKind::Object => {
            let row = Row::parse(bytes).ok()?;
            // Kafka Connect's JsonConverter with schemas: the key is the payload.
            Some(
                match (row.width(), row.get(b"schema"), row.get(b"payload")) {
                    (2, Some(_), Some(p)) if p.kind() == JsonKind::Object => {
                        Row::parse(p.as_bytes()).map_or(Key::Object(row), Key::Object)
                    }
                    _ => Key::Object(row),
                },
            )
        }
        JsonKind::String | JsonKind::Number | JsonKind::Bool => Some(Key::Scalar(compact(bytes))),
        JsonKind::Array | JsonKind::Null => None,
    }
}

/// The compact form of one valid JSON value (keys may carry whitespace).
fn compact(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    scan::compact_into(bytes, &mut out);
    out
}

/// A scalar's text: a string's content, any other value's JSON text.
fn text_of(v: Json<'_>) -> Vec<u8> {
    match (v.kind(), v.as_str()) {
        (JsonKind::String, Some(s)) => s.as_bytes().to_vec(),
        _ => v.as_bytes().to_vec(),
    }
}

/// Why `key` does not carry the join key `columns` of `row`, if it does not.
fn misfit(columns: &[Column], key: &Key, row: &Row, null_keys_match: bool) -> Option<String> {
    if !null_keys_match && columns.iter().any(|c| c.value(row).is_null()) {
        return None;
    }
    match key {
        Key::Object(k) => {
            for c in columns {
                let want = c.value(row);
                match c.get(k) {
                    None => {
                        return Some(format!(
                            "the key {} does not hold the join-key column `{}` (the row's is {})",
                            show(k.json()),
                            c.name(),
                            show(want.as_bytes())
                        ))
                    }
                    Some(got) if !got.equals(&want) => {
                        return Some(format!(
                            "the key's `{}` is {} but the row's is {}",
                            c.name(),
                            show(got.as_bytes()),
                            show(want.as_bytes())
                        ))
                    }
                    Some(_) => {}
                }
            }
            (k.width() != columns.len()).then(|| {
                format!(
                    "the key {} holds columns besides the join key ({}), so the partition depends on them",
                    show(k.json()),
                    names(columns)
                )
            })
        }
        Key::Scalar(scalar) => match columns {
            [c] => {
                let (want, got) = (c.value(row), Json::new_unchecked(scalar));
                let fits = got.equals(&want) || text_of(got) == text_of(want);
                (!fits).then(|| {
                    format!(
                        "the key {} is not the row's join-key value `{}` = {}",
                        show(scalar),
                        c.name(),
                        show(want.as_bytes())
                    )
                })
            }
            _ => Some(format!(
                "the key {} is one value but the join key has the columns {}",
                show(scalar),
                names(columns)
            )),
        },
    }
}

fn names(columns: &[Column]) -> String {
    columns
        .iter()
        .map(|c| format!("`{}`", c.name()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// At most 80 bytes of a key or value, lossy UTF-8.
/// A key or value for a message: its text, cut at 80 bytes.
pub(crate) fn show(bytes: &[u8]) -> String {
    let s = String::from_utf8_lossy(&bytes[..bytes.len().min(80)]);
    if bytes.len() > 80 {
        format!("{s}…")
    } else {
        s.into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::change::Kind as ChangeKind;

    fn check(join_key: &[&str], key: &str, row: &str) -> Option<String> {
        let columns: Vec<String> = join_key.iter().map(|s| s.to_string()).collect();
        let check = KeyCheck {
            join_key: vec![Column::list(&columns), Column::list(&columns)],
            null_keys_match: false,
            repartitioned: vec![false; 2],
        };
        let event = Event::Change(ChangeKind::Insert, Row::parse(row.as_bytes()).unwrap());
        check.check(Side::Left, Some(key.as_bytes()), &event)
    }

    #[test]
    fn a_record_without_a_key_does_not_fit_unless_its_join_key_is_null() {
        let columns = vec!["u".to_owned()];
        let check = KeyCheck {
            join_key: vec![Column::list(&columns), Column::list(&columns)],
            null_keys_match: false,
            repartitioned: vec![false, true],
        };
        let row = |r: &str| Event::Change(ChangeKind::Insert, Row::parse(r.as_bytes()).unwrap());
        let why = check.check(Side::Left, None, &row(r#"{"u":5}"#)).unwrap();
        assert!(why.contains("the record has no key"), "{why}");
        assert_eq!(check.check(Side::Left, None, &row(r#"{"u":null}"#)), None);
        // A side re-keyed by sidejoin is not judged.
        assert_eq!(check.check(Side::Right, None, &row(r#"{"u":5}"#)), None);
    }

    #[test]
    fn a_key_that_is_the_join_key_fits() {
        assert_eq!(check(&["u"], r#"{"u":5}"#, r#"{"id":1,"u":5}"#), None);
        assert_eq!(check(&["u"], r#"{"u":5.0}"#, r#"{"id":1,"u":5}"#), None);
        assert_eq!(check(&["u"], "5.0", r#"{"u":5}"#), None);
        assert_eq!(
            check(&["a", "b"], r#"{"b":"x","a":1}"#, r#"{"a":1,"b":"x"}"#),
            None
        );
        assert_eq!(check(&["u"], "5", r#"{"u":5}"#), None);
        assert_eq!(check(&["u"], r#""abc""#, r#"{"u":"abc"}"#), None);
        assert_eq!(check(&["u"], " 5 ", r#"{"u":"5"}"#), None);
        // Not JSON: it may be made from the join key; not judged.
        assert_eq!(check(&["u"], "user-5", r#"{"u":5}"#), None);
        assert_eq!(
            check(
                &["u"],
                r#"{"schema":{"type":"struct"},"payload":{"u":5}}"#,
                r#"{"u":5}"#
            ),
            None
        );
    }

    #[test]
    fn a_primary_key_that_is_not_the_join_key_is_named() {
        let why = check(&["u"], r#"{"id":1}"#, r#"{"id":1,"u":5}"#).unwrap();
        assert!(
            why.contains("does not hold the join-key column `u`"),
            "{why}"
        );
        let why = check(&["u"], r#"{"id":1,"u":5}"#, r#"{"id":1,"u":5}"#).unwrap();
        assert!(why.contains("besides the join key (`u`)"), "{why}");
        let why = check(&["u"], r#"{"u":4}"#, r#"{"u":5}"#).unwrap();
        assert!(why.contains("key's `u` is 4 but the row's is 5"), "{why}");
        let why = check(&["u"], "7", r#"{"id":7,"u":5}"#).unwrap();
        assert!(why.contains("is not the row's join-key value"), "{why}");
        let why = check(&["a", "b"], "7", r#"{"a":7,"b":1}"#).unwrap();
        assert!(
            why.contains("one value but the join key has the columns `a`, `b`"),
            "{why}"
        );
    }

    #[test]
    fn rows_with_a_null_join_key_and_deletes_by_key_are_not_judged() {
        assert_eq!(check(&["u"], r#"{"id":1}"#, r#"{"id":1,"u":null}"#), None);
        assert_eq!(check(&["u"], r#"{"id":1}"#, r#"{"id":1}"#), None);
        let check = KeyCheck {
            join_key: vec![Column::list(&["u".into()]), Column::list(&["u".into()])],
            null_keys_match: false,
            repartitioned: vec![false; 2],
        };
        let event = Event::DeleteKey(Row::parse(br#"{"id":1}"#).unwrap());
        assert_eq!(check.check(Side::Right, Some(br#"{"id":1}"#), &event), None);
    }

    #[test]
    fn an_update_must_fit_with_its_old_and_its_new_row() {
        let check = KeyCheck {
            join_key: vec![Column::list(&["u".into()]), Column::list(&["u".into()])],
            null_keys_match: false,
            repartitioned: vec![false; 2],
        };
        let event = Event::Update {
            before: Some(Row::parse(br#"{"u":5}"#).unwrap()),
            after: Row::parse(br#"{"u":6}"#).unwrap(),
        };
        let why = check
            .check(Side::Left, Some(br#"{"u":6}"#), &event)
            .unwrap();
        assert!(why.contains("key's `u` is 6 but the row's is 5"), "{why}");
    }
}
