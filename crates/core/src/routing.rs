//! Where the repartition step (`SIDEJOIN_<SIDE>_HASH_BY`, SPEC §6) sends each change of a side,
//! and in what key: pure, from decoded events to `(partition, key, value)`.
//!
//! A change goes to the partition of its row's hashed columns. A changelog update whose hashed
//! columns differ between its old and new row is split: its retraction (`-U old`) to the old
//! key's partition, its accumulation (`+U new`) to the new key's, so every partition holds, in
//! order, all the changes of the keys it owns. An update without its old row can only be routed
//! when the hashed columns are primary-key columns (the row cannot have moved).
//!
//! `Placement` says where a key goes. Routed to meet the other side's records (co-partitioned
//! mode: the columns are the join key), a key must be the bytes the other side's producer would
//! have written for that join key, placed by the same partitioner: `learn` reads them off
//! records of the other topic (a JSON object of its join-key columns, a JSON scalar, or text;
//! Kafka's Java murmur2 or librdkafka's CRC-32). When both sides are repartitioned, or the
//! other side is broadcast, sidejoin chooses both: the engine's canonical join-key bytes, so
//! values SPEC §1 calls equal (`1.0`, `1`) meet, with murmur2.
//!
//! What it does not do: read or write Kafka (`runtime::repartition`), or decode records.

use crate::change::{Event, Kind, Row, Side};
use crate::copartition::show;
use crate::engine::canonical;
use crate::engine::column::Column;
use crate::format::DecodeError;
use crate::partitioner;
use crate::row::scan::{self, Kind as JsonKind};

/// How a key's bytes are made from the hashed columns' values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyForm {
    /// The engine's canonical join-key encoding (sidejoin places both sides).
    Canonical,
    /// A compact JSON object of the other side's join-key columns, in this order, each with the
    /// position of its column in the join key.
    Object(Vec<(String, usize)>),
    /// One column's JSON text (`5`, `"a"`).
    Json,
    /// One column's text (a string's content unquoted).
    Text,
}

/// Which partitioner placed the other side's keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hash {
    /// Kafka's Java producer (Kafka Connect, Debezium, Kafka Streams, Flink).
    Murmur2,
    /// librdkafka's default (`consistent_random`: CRC-32 of keyed records).
    Crc32,
}

impl Hash {
    pub fn partition(self, key: &[u8], partitions: i32) -> i32 {
        match self {
            Hash::Murmur2 => partitioner::partition_for(key, partitions),
            Hash::Crc32 => (crc32fast::hash(key) % partitions.max(1) as u32) as i32,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Hash::Murmur2 => "murmur2 (Kafka's Java producer)",
            Hash::Crc32 => "CRC-32 (librdkafka's default)",
        }
    }
}

/// Where the keys of a repartition topic go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    pub partitions: i32,
    pub form: KeyForm,
    pub hash: Hash,
}

impl Placement {
    /// sidejoin's own placement (both sides repartitioned, or the other side broadcast).
    pub fn own(partitions: i32) -> Placement {
        Placement {
            partitions,
            form: KeyForm::Canonical,
            hash: Hash::Murmur2,
        }
    }

    pub fn describe(&self) -> String {
        let form = match &self.form {
            KeyForm::Canonical => "sidejoin's canonical key".to_owned(),
            KeyForm::Object(names) => {
                let names: Vec<&str> = names.iter().map(|(n, _)| n.as_str()).collect();
                format!("JSON objects of {}", names.join(","))
            }
            KeyForm::Json => "JSON values".to_owned(),
            KeyForm::Text => "text".to_owned(),
        };
        format!(
            "{} partitions, keys as {form}, placed by {}",
            self.partitions,
            self.hash.name()
        )
    }
}

/// One record for the repartition topic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Routed {
    pub partition: i32,
    pub key: Vec<u8>,
    pub value: Vec<u8>,
}

/// The routing of one side. With a mirrored placement (`learn`) the columns are the side's join
/// key in its order, matched by position to the other side's.
pub struct Route {
    side: Side,
    columns: Vec<Column>,
    /// The hashed columns are all primary-key columns: a row never changes partition.
    within_pk: bool,
    placement: Placement,
}

impl Route {
    pub fn new(
        side: Side,
        columns: &[String],
        primary_key: Option<&[String]>,
        placement: Placement,
    ) -> Route {
        let pk = primary_key.unwrap_or_default();
        Route {
            side,
            columns: Column::list(columns),
            within_pk: !pk.is_empty() && columns.iter().all(|c| pk.contains(c)),
            placement,
        }
    }

    pub fn placement(&self) -> &Placement {
        &self.placement
    }

    /// The key of `row` (its hashed columns), or why it has none.
    fn key(&self, row: &Row) -> Result<Vec<u8>, DecodeError> {
        if let Some(c) = self.columns.iter().find(|c| c.get(row).is_none()) {
            return Err(DecodeError::new(format!(
                "the row has no `{}` column, which SIDEJOIN_{}_HASH_BY routes by",
                c.name(),
                self.side.var()
            )));
        }
        let mut key = Vec::new();
        match &self.placement.form {
            KeyForm::Canonical => {
                canonical::encode_key(row, &self.columns, &mut key);
            }
            KeyForm::Object(names) => {
                key.push(b'{');
                for (i, (name, at)) in names.iter().enumerate() {
                    if i > 0 {
                        key.push(b',');
                    }
                    key.extend_from_slice(&serde_json::to_vec(name).expect("strings serialise"));
                    key.push(b':');
                    key.extend_from_slice(self.columns[*at].value(row).as_bytes());
                }
                key.push(b'}');
            }
            KeyForm::Json => key.extend_from_slice(self.columns[0].value(row).as_bytes()),
            KeyForm::Text => {
                let v = self.columns[0].value(row);
                match v.as_str() {
                    Some(s) if v.kind() == JsonKind::String => key.extend_from_slice(s.as_bytes()),
                    _ => key.extend_from_slice(v.as_bytes()),
                }
            }
        }
        Ok(key)
    }

    fn push(&self, key: Vec<u8>, event: &Event, out: &mut Vec<Routed>) {
        let mut value = Vec::new();
        crate::format::changes::encode(event, &mut value);
        out.push(Routed {
            partition: self
                .placement
                .hash
                .partition(&key, self.placement.partitions),
            key,
            value,
        });
    }

    /// The records `event` becomes, appended to `out`; an error names what the row lacks.
    pub fn route(&self, event: Event, out: &mut Vec<Routed>) -> Result<(), DecodeError> {
        match &event {
            Event::Change(_, row) | Event::Upsert(row) | Event::DeleteKey(row) => {
                let key = self.key(row)?;
                self.push(key, &event, out);
            }
            Event::Update {
                before: None,
                after,
            } => {
                if !self.within_pk {
                    return Err(DecodeError::new(format!(
                        "an update without its old row (`before`) cannot be repartitioned by {} \
                         (SIDEJOIN_{}_HASH_BY): the old row may be in another partition; have the \
                         source write old rows (e.g. PostgreSQL REPLICA IDENTITY FULL)",
                        self.names(),
                        self.side.var()
                    )));
                }
                let key = self.key(after)?;
                self.push(key, &event, out);
            }
            Event::Update {
                before: Some(before),
                after,
            } => {
                let (old, new) = (self.key(before)?, self.key(after)?);
                if old == new {
                    self.push(new, &event, out);
                } else {
                    let retract = Event::Change(Kind::UpdateBefore, before.clone());
                    let accumulate = Event::Change(Kind::UpdateAfter, after.clone());
                    self.push(old, &retract, out);
                    self.push(new, &accumulate, out);
                }
            }
        }
        Ok(())
    }

    fn names(&self) -> String {
        let names: Vec<&str> = self.columns.iter().map(Column::name).collect();
        names.join(",")
    }
}

/// A keyed record of the other side: its partition and key bytes.
pub struct Sample<'a> {
    pub partition: i32,
    pub offset: i64,
    pub key: &'a [u8],
}

/// What the other side's records tell of their placement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Learnt {
    Placement(Placement),
    /// Not enough to tell yet (why): wait for more records.
    NotYet(String),
}

/// Fewest distinct keys that must fit one partitioner only before it is taken as the other
/// side's (`(1/n)^8` that the other would fit them by chance).
const DISTINCT_KEYS: usize = 8;

/// The placement of the other side's records (`topic`, `partitions` partitions, join key
/// `columns`) as `samples` show it, or why it cannot be mirrored.
pub fn learn(
    topic: &str,
    partitions: i32,
    columns: &[String],
    samples: &[Sample<'_>],
) -> Result<Learnt, String> {
    let Some(first) = samples.first() else {
        return Ok(Learnt::NotYet(format!("no keyed record in `{topic}` yet")));
    };
    let form = key_form(first.key, columns).ok_or_else(|| {
        format!(
            "the key {} of `{topic}` partition {} offset {} is not its join key ({}) as a compact JSON \
             object, a JSON value or text",
            show(first.key),
            first.partition,
            first.offset,
            columns.join(",")
        )
    })?;
    if let Some(s) = samples
        .iter()
        .find(|s| key_form(s.key, columns).as_ref() != Some(&form))
    {
        return Err(format!(
            "the keys of `{topic}` do not share one form: {} at partition {} offset {}, {} at partition {} offset {}",
            show(first.key),
            first.partition,
            first.offset,
            show(s.key),
            s.partition,
            s.offset
        ));
    }
    let fits = |hash: Hash| {
        samples
            .iter()
            .all(|s| hash.partition(s.key, partitions) == s.partition)
    };
    let placement = |hash| {
        Learnt::Placement(Placement {
            partitions,
            form: form.clone(),
            hash,
        })
    };
    match (fits(Hash::Murmur2), fits(Hash::Crc32)) {
        _ if partitions == 1 => Ok(placement(Hash::Murmur2)),
        (true, true) => {
            let mut keys: Vec<&[u8]> = samples.iter().map(|s| s.key).collect();
            keys.sort_unstable();
            keys.dedup();
            if keys.len() >= DISTINCT_KEYS {
                // Only identical placements of every key could fit both; take Kafka's own.
                Ok(placement(Hash::Murmur2))
            } else {
                Ok(Learnt::NotYet(format!(
                    "the {} distinct keys in `{topic}` fit both murmur2 and CRC-32; {DISTINCT_KEYS} are needed to tell them apart",
                    keys.len()
                )))
            }
        }
        (true, false) => Ok(placement(Hash::Murmur2)),
        (false, true) => Ok(placement(Hash::Crc32)),
        (false, false) => {
            let s = samples
                .iter()
                .find(|s| Hash::Murmur2.partition(s.key, partitions) != s.partition)
                .expect("some sample misfits murmur2");
            Err(format!(
                "the records of `{topic}` are placed by neither Kafka's Java partitioner (murmur2) nor librdkafka's \
                 (CRC-32): the key {} is at partition {} offset {}, murmur2 puts it in {}, CRC-32 in {}",
                show(s.key),
                s.partition,
                s.offset,
                Hash::Murmur2.partition(s.key, partitions),
                Hash::Crc32.partition(s.key, partitions),
            ))
        }
    }
}

/// The form of `key` if it is made of exactly the join key `columns`.
fn key_form(key: &[u8], columns: &[String]) -> Option<KeyForm> {
    let Ok(scanned) = scan::scan(key) else {
        // Not JSON: text made of the one column, judged by where it lands.
        return (columns.len() == 1 && !key.is_empty()).then_some(KeyForm::Text);
    };
    match scanned.kind {
        JsonKind::Object if scanned.compact => {
            let row = Row::parse(key).ok()?;
            let names: Option<Vec<(String, usize)>> = row
                .columns()
                .map(|(n, _)| {
                    let n = String::from_utf8_lossy(n).into_owned();
                    let at = columns.iter().position(|c| *c == n)?;
                    Some((n, at))
                })
                .collect();
            names
                .filter(|n| n.len() == columns.len())
                .map(KeyForm::Object)
        }
        JsonKind::String | JsonKind::Number | JsonKind::Bool if columns.len() == 1 => {
            Some(KeyForm::Json)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(json: &str) -> Row {
        Row::parse(json.as_bytes()).unwrap()
    }

    fn route(columns: &[&str], pk: Option<&[&str]>, placement: Placement) -> Route {
        let cols: Vec<String> = columns.iter().map(|c| c.to_string()).collect();
        let pk: Option<Vec<String>> = pk.map(|p| p.iter().map(|c| c.to_string()).collect());
        Route::new(Side::Left, &cols, pk.as_deref(), placement)
    }

    fn routed(r: &Route, e: Event) -> Vec<Routed> {
        let mut out = Vec::new();
        r.route(e, &mut out).unwrap();
        out
    }

    fn decoded(r: &Routed) -> Event {
        crate::format::changes::decode(Some(&r.value))
            .unwrap()
            .unwrap()
    }

    #[test]
    fn an_update_that_moves_its_row_is_split_between_the_two_keys_partitions() {
        let r = route(&["k"], Some(&["id"]), Placement::own(8));
        let (before, after) = (row(r#"{"id":1,"k":1}"#), row(r#"{"id":1,"k":2}"#));
        let out = routed(
            &r,
            Event::Update {
                before: Some(before.clone()),
                after: after.clone(),
            },
        );
        assert_eq!(out.len(), 2);
        assert_eq!(
            decoded(&out[0]),
            Event::Change(Kind::UpdateBefore, before.clone())
        );
        assert_eq!(
            decoded(&out[1]),
            Event::Change(Kind::UpdateAfter, after.clone())
        );
        // Each half goes where the other changes of its key go.
        let insert_old = routed(&r, Event::Change(Kind::Insert, before));
        let insert_new = routed(&r, Event::Change(Kind::Insert, after));
        assert_eq!(out[0].partition, insert_old[0].partition);
        assert_eq!(out[1].partition, insert_new[0].partition);
        assert_eq!(out[0].key, insert_old[0].key);
    }

    #[test]
    fn an_update_that_stays_is_one_record() {
        let r = route(&["k"], Some(&["id"]), Placement::own(8));
        let e = Event::Update {
            before: Some(row(r#"{"id":1,"k":1,"v":1}"#)),
            after: row(r#"{"id":1,"k":1,"v":2}"#),
        };
        let out = routed(&r, e.clone());
        assert_eq!(out.len(), 1);
        assert_eq!(decoded(&out[0]), e);
    }

    #[test]
    fn values_spec_calls_equal_get_one_canonical_key() {
        let r = route(&["k"], None, Placement::own(16));
        let a = routed(&r, Event::Change(Kind::Insert, row(r#"{"k":1}"#)));
        let b = routed(&r, Event::Change(Kind::Insert, row(r#"{"k":1.0}"#)));
        assert_eq!(a[0].key, b[0].key);
        assert_eq!(a[0].partition, b[0].partition);
    }

    #[test]
    fn a_row_without_a_hashed_column_and_an_update_without_its_old_row_are_errors() {
        let r = route(&["k"], Some(&["id"]), Placement::own(4));
        let mut out = Vec::new();
        let e = r
            .route(Event::Change(Kind::Insert, row(r#"{"id":1}"#)), &mut out)
            .unwrap_err();
        assert!(
            e.to_string().contains("no `k` column")
                && e.to_string().contains("SIDEJOIN_LEFT_HASH_BY"),
            "{e}"
        );
        let e = r
            .route(
                Event::Update {
                    before: None,
                    after: row(r#"{"id":1,"k":1}"#),
                },
                &mut out,
            )
            .unwrap_err();
        assert!(e.to_string().contains("REPLICA IDENTITY FULL"), "{e}");
        assert!(out.is_empty());
        // By primary-key columns the row cannot have moved: routed by its new row.
        let by_pk = route(&["id"], Some(&["id"]), Placement::own(4));
        let e = Event::Update {
            before: None,
            after: row(r#"{"id":1,"k":1}"#),
        };
        assert_eq!(decoded(&routed(&by_pk, e.clone())[0]), e);
    }

    fn samples<'a>(keys: &'a [(i32, &'a [u8])]) -> Vec<Sample<'a>> {
        keys.iter()
            .enumerate()
            .map(|(i, (p, k))| Sample {
                partition: *p,
                offset: i as i64,
                key: k,
            })
            .collect()
    }

    /// Keys placed by `hash` among `n` partitions, as a producer would.
    fn placed(keys: &[&'static [u8]], hash: Hash, n: i32) -> Vec<(i32, &'static [u8])> {
        keys.iter().map(|k| (hash.partition(k, n), *k)).collect()
    }

    #[test]
    fn the_other_sides_key_form_and_partitioner_are_learnt_and_mirrored() {
        let cols = ["user_id".to_owned()];
        let keys: Vec<&'static [u8]> = vec![
            br#"{"user_id":1}"#,
            br#"{"user_id":2}"#,
            br#"{"user_id":3}"#,
            br#"{"user_id":40}"#,
            br#"{"user_id":5}"#,
            br#"{"user_id":6}"#,
            br#"{"user_id":7}"#,
            br#"{"user_id":8}"#,
            br#"{"user_id":9}"#,
            br#"{"user_id":10}"#,
            br#"{"user_id":11}"#,
            br#"{"user_id":12}"#,
        ];
        let Learnt::Placement(p) =
            learn("t", 6, &cols, &samples(&placed(&keys, Hash::Murmur2, 6))).unwrap()
        else {
            panic!("not learnt")
        };
        assert_eq!(p.hash, Hash::Murmur2);
        assert_eq!(p.form, KeyForm::Object(vec![("user_id".to_owned(), 0)]));
        // This side's column is named differently: its values, the other side's key bytes.
        let r = Route::new(Side::Left, &["uid".to_owned()], None, p);
        let out = routed(&r, Event::Change(Kind::Insert, row(r#"{"uid":40,"x":1}"#)));
        assert_eq!(out[0].key, br#"{"user_id":40}"#);
        assert_eq!(
            out[0].partition,
            Hash::Murmur2.partition(br#"{"user_id":40}"#, 6)
        );

        let scalars: Vec<&'static [u8]> = vec![
            b"1", b"2", b"17", b"33", b"4", b"5", b"6", b"7", b"8", b"9", b"10", b"11",
        ];
        let Learnt::Placement(p) =
            learn("t", 3, &cols, &samples(&placed(&scalars, Hash::Crc32, 3))).unwrap()
        else {
            panic!("not learnt")
        };
        assert_eq!((p.form.clone(), p.hash), (KeyForm::Json, Hash::Crc32));
        let text: Vec<&'static [u8]> = vec![
            b"user-1", b"user-2", b"user-3", b"user-4", b"user-5", b"user-6", b"user-7", b"user-8",
            b"user-9", b"user-10", b"user-11",
        ];
        let Learnt::Placement(p) =
            learn("t", 3, &cols, &samples(&placed(&text, Hash::Murmur2, 3))).unwrap()
        else {
            panic!("not learnt")
        };
        assert_eq!(p.form, KeyForm::Text);
        let r = Route::new(Side::Left, &["uid".to_owned()], None, p);
        let out = routed(&r, Event::Change(Kind::Insert, row(r#"{"uid":"user-2"}"#)));
        assert_eq!(out[0].key, b"user-2");
        assert!(matches!(learn("t", 3, &cols, &[]), Ok(Learnt::NotYet(_))));
        // One key fits both partitioners in some partition count: not enough to tell.
        let both = (2..64)
            .find_map(|n| {
                let k: &'static [u8] = b"42";
                (Hash::Murmur2.partition(k, n) == Hash::Crc32.partition(k, n)).then_some((n, k))
            })
            .expect("some count where the two agree");
        let why = learn(
            "t",
            both.0,
            &cols,
            &samples(&[(Hash::Crc32.partition(both.1, both.0), both.1)]),
        );
        assert!(
            matches!(&why, Ok(Learnt::NotYet(w)) if w.contains("fit both")),
            "{why:?}"
        );
    }

    #[test]
    fn keys_that_cannot_be_mirrored_are_named() {
        let cols = ["user_id".to_owned()];
        let e = learn("t", 3, &cols, &samples(&[(0, br#"{"id":1}"#)])).unwrap_err();
        assert!(
            e.contains(r#"the key {"id":1} of `t` partition 0 offset 0"#),
            "{e}"
        );
        let e = learn(
            "t",
            3,
            &cols,
            &samples(&[(0, b"1"), (1, br#"{"user_id":2}"#)]),
        )
        .unwrap_err();
        assert!(e.contains("do not share one form"), "{e}");
        // Placed by neither partitioner: every key in a partition neither hash gives.
        let keys: Vec<(i32, &[u8])> = [&b"1"[..], b"2", b"3", b"4", b"5", b"6"]
            .iter()
            .map(|k| {
                let (m, c) = (Hash::Murmur2.partition(k, 4), Hash::Crc32.partition(k, 4));
                ((0..4).find(|p| *p != m && *p != c).unwrap(), *k)
            })
            .collect();
        let e = learn("t", 4, &cols, &samples(&keys)).unwrap_err();
        assert!(e.contains("placed by neither"), "{e}");
    }
}
