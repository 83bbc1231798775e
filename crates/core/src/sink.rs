//! Output modes (SPEC §5): the projected changes one input record caused → the Kafka records the
//! output topic gets, written as bytes into one buffer (no tree, no allocation per record).
//!
//! - `changelog`: Debezium envelopes; an adjacent `-U`/`+U` pair with the same key is one `u`.
//! - `upsert`: folded per key (last wins, in order of each key's first change); retractions are
//!   tombstones.
//! - `append`: the rows (configuration guarantees the join is insert-only).

use std::ops::Range;

use crate::change::{Kind, Row};
use crate::config::OutputMode;
use crate::engine::output_key::OutputKey;
use crate::engine::project::{OutCol, Projection};

/// A projected output change: its row and key are ranges of `Projected::bytes`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutChange {
    pub kind: Kind,
    pub key: Option<Range<usize>>,
    pub row: Range<usize>,
}

/// The projected changes of one input record (or one tick), in emission order.
#[derive(Debug, Default)]
pub struct Projected {
    pub bytes: Vec<u8>,
    pub changes: Vec<OutChange>,
    cols: Vec<OutCol>,
}

impl Projected {
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.changes.clear();
    }

    /// Projects one joined change and its output key; `rows` are its input rows in order
    /// (left, right, a star join's further dimensions; `None` null-padded).
    pub fn push(
        &mut self,
        kind: Kind,
        projection: &Projection,
        key: &OutputKey,
        rows: &[Option<&Row>],
    ) {
        let start = self.bytes.len();
        let cols = key.needs_columns().then_some(&mut self.cols);
        projection.project_rows_into(rows, &mut self.bytes, cols);
        let row = start..self.bytes.len();
        let key = (!key.is_empty()).then(|| {
            let start = self.bytes.len();
            key.write(&mut self.bytes, &self.cols, rows);
            start..self.bytes.len()
        });
        self.changes.push(OutChange { kind, key, row });
    }

    pub fn row(&self, c: &OutChange) -> &[u8] {
        &self.bytes[c.row.clone()]
    }

    pub fn key(&self, c: &OutChange) -> Option<&[u8]> {
        c.key.clone().map(|k| &self.bytes[k])
    }

    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }
}

/// One record for the output topic: key and value are ranges of `Records::bytes`; `value:
/// None` is a tombstone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutRecord {
    pub key: Option<Range<usize>>,
    pub value: Option<Range<usize>>,
    /// The timestamp of the input record that caused it (epoch ms).
    pub timestamp: i64,
}

/// Output records, their bytes in one buffer.
#[derive(Debug, Default)]
pub struct Records {
    pub bytes: Vec<u8>,
    pub records: Vec<OutRecord>,
}

impl Records {
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.records.clear();
    }

    pub fn len(&self) -> usize {
        self.records.len()
    }

    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    pub fn key(&self, r: &OutRecord) -> Option<&[u8]> {
        r.key.clone().map(|k| &self.bytes[k])
    }

    pub fn value(&self, r: &OutRecord) -> Option<&[u8]> {
        r.value.clone().map(|v| &self.bytes[v])
    }

    fn put(&mut self, bytes: &[u8]) -> Range<usize> {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(bytes);
        start..self.bytes.len()
    }

    /// Appends a record with the given key and value bytes.
    pub fn push(&mut self, key: Option<&[u8]>, value: Option<&[u8]>, timestamp: i64) {
        let key = key.map(|k| self.put(k));
        let value = value.map(|v| self.put(v));
        self.records.push(OutRecord {
            key,
            value,
            timestamp,
        });
    }
}

/// Writes a Debezium envelope `{"before":…,"after":…,"op":…}`.
fn envelope(
    out: &mut Records,
    before: Option<&[u8]>,
    after: Option<&[u8]>,
    op: &str,
) -> Range<usize> {
    let start = out.bytes.len();
    let b = &mut out.bytes;
    b.extend_from_slice(b"{\"before\":");
    b.extend_from_slice(before.unwrap_or(b"null"));
    b.extend_from_slice(b",\"after\":");
    b.extend_from_slice(after.unwrap_or(b"null"));
    b.extend_from_slice(b",\"op\":\"");
    b.extend_from_slice(op.as_bytes());
    b.extend_from_slice(b"\"}");
    start..b.len()
}

fn changelog(p: &Projected, timestamp: i64, out: &mut Records) {
    let mut i = 0;
    while i < p.changes.len() {
        let c = &p.changes[i];
        let key = p.key(c);
        let next = p.changes.get(i + 1);
        let (before, after, op) = match c.kind {
            Kind::UpdateBefore
                if next.is_some_and(|n| n.kind == Kind::UpdateAfter && p.key(n) == key) =>
            {
                i += 1;
                (Some(p.row(c)), next.map(|n| p.row(n)), "u")
            }
            Kind::Insert | Kind::UpdateAfter => (None, Some(p.row(c)), "c"),
            Kind::UpdateBefore | Kind::Delete => (Some(p.row(c)), None, "d"),
        };
        let key = key.map(|k| out.put(k));
        let value = envelope(out, before, after, op);
        out.records.push(OutRecord {
            key,
            value: Some(value),
            timestamp,
        });
        i += 1;
    }
}

fn upsert(p: &Projected, timestamp: i64, out: &mut Records) {
    let first = out.records.len();
    for c in &p.changes {
        let key = p.key(c).unwrap_or_default();
        let value = c.kind.is_accumulate().then(|| p.row(c));
        // The changes of one record are few: a linear search over this record's outputs.
        let existing = (first..out.records.len())
            .find(|&i| out.key(&out.records[i]).unwrap_or_default() == key);
        match existing {
            Some(i) => out.records[i].value = value.map(|v| out.put(v)),
            None => {
                let key = p.key(c).map(|k| out.put(k));
                let value = value.map(|v| out.put(v));
                out.records.push(OutRecord {
                    key,
                    value,
                    timestamp,
                });
            }
        }
    }
}

fn append(p: &Projected, timestamp: i64, out: &mut Records) {
    for c in &p.changes {
        // Configuration refuses `append` unless the join is insert-only (SPEC §5).
        debug_assert!(c.kind.is_accumulate(), "append output got {}", c.kind);
        if c.kind.is_accumulate() {
            out.push(p.key(c), Some(p.row(c)), timestamp);
        }
    }
}

/// Encodes the changes caused by one input record, appending records stamped `timestamp`.
pub fn encode(mode: OutputMode, p: &Projected, timestamp: i64, out: &mut Records) {
    match mode {
        OutputMode::Changelog => changelog(p, timestamp, out),
        OutputMode::Upsert => upsert(p, timestamp, out),
        OutputMode::Append => append(p, timestamp, out),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::change::Side;
    use crate::config::select::SelectItem;
    use crate::config::{KeyColumn, KeySource};
    use serde_json::{json, Value};

    fn projected(changes: &[(Kind, i64, &str)]) -> Projected {
        let projection = Projection::new(vec![SelectItem::All(Side::Left)]);
        let key = OutputKey::new(
            &[KeyColumn {
                name: "k".into(),
                source: KeySource::Output,
            }],
            &projection,
        );
        let mut p = Projected::default();
        for (kind, k, v) in changes {
            let row = Row::from_value(&json!({"k": k, "v": v})).unwrap();
            p.push(*kind, &projection, &key, &[Some(&row), None]);
        }
        p
    }

    fn values(out: &Records) -> Vec<Value> {
        out.records
            .iter()
            .map(|r| {
                out.value(r)
                    .map_or(Value::Null, |v| serde_json::from_slice(v).unwrap())
            })
            .collect()
    }

    #[test]
    fn changelog_merges_adjacent_pairs_with_one_key() {
        let mut out = Records::default();
        let p = projected(&[
            (Kind::UpdateBefore, 1, "a"),
            (Kind::UpdateAfter, 1, "b"),
            (Kind::UpdateBefore, 1, "b"),
            (Kind::UpdateAfter, 2, "c"),
        ]);
        encode(OutputMode::Changelog, &p, 7, &mut out);
        let v = values(&out);
        let ops: Vec<Value> = v.iter().map(|r| r["op"].clone()).collect();
        assert_eq!(ops, ["u", "d", "c"]);
        assert_eq!(v[0]["after"]["v"], "b");
        assert_eq!(v[2]["before"], Value::Null);
        assert_eq!(out.records[0].timestamp, 7);
        assert_eq!(
            out.value(&out.records[2]).unwrap(),
            br#"{"before":null,"after":{"k":2,"v":"c"},"op":"c"}"#
        );
    }

    #[test]
    fn upsert_folds_per_key_in_first_seen_order() {
        let mut out = Records::default();
        let p = projected(&[
            (Kind::Delete, 1, "a"),
            (Kind::Insert, 2, "x"),
            (Kind::Insert, 1, "b"),
        ]);
        encode(OutputMode::Upsert, &p, 0, &mut out);
        assert_eq!(out.len(), 2);
        assert_eq!(out.key(&out.records[0]), Some(&br#"{"k":1}"#[..]));
        assert_eq!(values(&out)[0]["v"], "b");
        let p = projected(&[(Kind::Insert, 3, "a"), (Kind::Delete, 3, "a")]);
        encode(OutputMode::Upsert, &p, 0, &mut out);
        assert_eq!(out.records[2].value, None);
        // Each record folds on its own: key 1 again is a new record.
        let p = projected(&[(Kind::Insert, 1, "c")]);
        encode(OutputMode::Upsert, &p, 0, &mut out);
        assert_eq!(out.len(), 4);
    }
}
