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
use crate::row::scan::{self, JsonKind};

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

/// The form every sampled key has (the first one's), or why they do not share one.
fn shared_form(
    topic: &str,
    columns: &[String],
    first: &Sample<'_>,
    samples: &[Sample<'_>],
) -> Result<KeyForm, String> {
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
    Ok(form)
}

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
    let form = shared_form(topic, columns, first, samples)?;
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
#[path = "routing_tests.rs"]
mod tests;
