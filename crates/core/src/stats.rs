//! Counters of SPEC §11, kept as plain numbers so the pure engine can update them; the metrics
//! edge exports them to Prometheus and replay prints them as its final `{"stats":…}` line.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use crate::change::{Kind, Partition, Side};

/// Why an input change was dropped before the join (`sidejoin_input_dropped_total{reason}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DropReason {
    /// A null value on a `json` or `debezium-json` side.
    Tombstone,
    /// A delete (or update) of a primary key that is not in state.
    UnknownKey,
    /// A retraction of a row that is not in state (multiset side).
    NotInState,
    /// An update whose new row equals the stored row.
    IdenticalUpdate,
    /// A csv line that could not be parsed on a side with `csv.ignore-parse-errors`.
    ParseError,
}

impl DropReason {
    pub const ALL: [DropReason; 5] = [
        DropReason::Tombstone,
        DropReason::UnknownKey,
        DropReason::NotInState,
        DropReason::IdenticalUpdate,
        DropReason::ParseError,
    ];

    pub fn name(self) -> &'static str {
        match self {
            DropReason::Tombstone => "tombstone",
            DropReason::UnknownKey => "unknown_key",
            DropReason::NotInState => "not_in_state",
            DropReason::IdenticalUpdate => "identical_update",
            DropReason::ParseError => "parse_error",
        }
    }
}

/// Why an unmatched outer row was emitted null-padded by an interval join.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnmatchedReason {
    Watermark,
    Late,
    MaxWait,
}

impl UnmatchedReason {
    pub const ALL: [UnmatchedReason; 3] = [
        UnmatchedReason::Watermark,
        UnmatchedReason::Late,
        UnmatchedReason::MaxWait,
    ];

    pub fn name(self) -> &'static str {
        match self {
            UnmatchedReason::Watermark => "watermark",
            UnmatchedReason::Late => "late",
            UnmatchedReason::MaxWait => "max_wait",
        }
    }
}

/// Counters by input have a slot for every input a join can have (a two-way join uses two).
const N: usize = crate::config::MAX_SOURCES;

/// Every counter, by side where SPEC labels it so.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Stats {
    pub records_in: [u64; N],
    pub records_out: [u64; 4],
    pub generated_retracts_filtered: u64,
    pub dedup_dropped: [u64; N],
    pub input_dropped: [[u64; 5]; N],
    pub decode_errors: [u64; N],
    pub dlq_records: u64,
    pub matches: u64,
    pub unmatched_emitted: [[u64; 3]; N],
    pub late_records: [u64; N],
    pub late_matches: u64,
    /// Rows in state now (copies counted), a gauge.
    pub state_rows: [i64; N],
    /// The same per input partition, so a released partition's rows leave the gauge.
    pub state_rows_by_partition: BTreeMap<Partition, [i64; N]>,
    pub state_expired: [u64; N],
    /// Records whose Kafka key does not carry their join key (run mode only; not in replay's
    /// stats line).
    pub copartition_violations: [u64; N],
}

impl Stats {
    pub fn input_dropped(&mut self, side: Side, reason: DropReason) {
        let r = DropReason::ALL
            .iter()
            .position(|x| *x == reason)
            .unwrap_or(0);
        self.input_dropped[side.index()][r] += 1;
    }

    pub fn unmatched(&mut self, side: Side, reason: UnmatchedReason) {
        let r = UnmatchedReason::ALL
            .iter()
            .position(|x| *x == reason)
            .unwrap_or(0);
        self.unmatched_emitted[side.index()][r] += 1;
    }

    /// `delta` rows of `side` entered (or, negative, left) the state of `partition`.
    pub fn rows(&mut self, partition: Partition, side: Side, delta: i64) {
        self.state_rows[side.index()] += delta;
        self.state_rows_by_partition.entry(partition).or_default()[side.index()] += delta;
    }

    /// The state of `partition` was released (SPEC §6: it moved to another instance).
    pub fn release_partition(&mut self, partition: Partition) {
        if let Some(rows) = self.state_rows_by_partition.remove(&partition) {
            for (total, gone) in self.state_rows.iter_mut().zip(rows) {
                *total -= gone;
            }
        }
    }

    pub fn record_out(&mut self, kind: Kind) {
        self.records_out[kind.index()] += 1;
    }

    /// How many inputs the counters cover: two, or as many as a star join's counters reach.
    pub fn inputs(&self) -> usize {
        (2..N)
            .filter(|&i| self.records_in[i] > 0 || self.state_rows[i] != 0)
            .max()
            .map_or(2, |i| i + 1)
    }

    /// The counters as JSON, labels as nested objects (replay's stats line).
    pub fn to_json(&self) -> Value {
        let n = self.inputs();
        let per_side = |f: &dyn Fn(usize) -> Value| {
            let m: Map<String, Value> = Side::first(n)
                .map(|s| (s.name().to_owned(), f(s.index())))
                .collect();
            Value::Object(m)
        };
        let by_side = |a: &[u64; N]| per_side(&|i| json!(a[i]));
        let reasons = |row: &[u64; 5]| {
            let m: Map<String, Value> = DropReason::ALL
                .iter()
                .zip(row)
                .map(|(r, n)| (r.name().to_owned(), json!(n)))
                .collect();
            Value::Object(m)
        };
        let unmatched = |row: &[u64; 3]| {
            let m: Map<String, Value> = UnmatchedReason::ALL
                .iter()
                .zip(row)
                .map(|(r, n)| (r.name().to_owned(), json!(n)))
                .collect();
            Value::Object(m)
        };
        let out: Map<String, Value> = Kind::ALL
            .iter()
            .map(|k| (k.short().to_owned(), json!(self.records_out[k.index()])))
            .collect();
        json!({
            "records_in": by_side(&self.records_in),
            "records_out": out,
            "generated_retracts_filtered": self.generated_retracts_filtered,
            "dedup_dropped": by_side(&self.dedup_dropped),
            "input_dropped": per_side(&|i| reasons(&self.input_dropped[i])),
            "decode_errors": by_side(&self.decode_errors),
            "dlq_records": self.dlq_records,
            "matches": self.matches,
            "unmatched_emitted": {"left": unmatched(&self.unmatched_emitted[0]), "right": unmatched(&self.unmatched_emitted[1])},
            "late_records": by_side(&self.late_records),
            "late_matches": self.late_matches,
            "state_rows": per_side(&|i| json!(self.state_rows[i])),
            "state_expired": by_side(&self.state_expired),
        })
    }
}
