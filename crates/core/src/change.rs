//! The vocabulary shared by every part of sidejoin: sides, change kinds, rows, the events a
//! decoder hands to the engine and the joined changes the engine hands back.
//!
//! Nothing here knows about Kafka, formats or state; these are plain data types.

use std::fmt;

/// One of the two join inputs (defined with the settings, which name sides too).
pub use sidejoin_config::Side;

/// A row: a JSON object, column name → value; a missing column reads as `null` (SPEC §1).
pub use crate::row::Row;

/// A Kafka partition number, as Kafka numbers them (`i32`), from the consumer to the state
/// layout. Input partitions are never negative.
pub type Partition = i32;

/// The kind of a change, as in Flink's `RowKind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// `+I`
    Insert,
    /// `-U`
    UpdateBefore,
    /// `+U`
    UpdateAfter,
    /// `-D`
    Delete,
}

impl Kind {
    pub const ALL: [Kind; 4] = [
        Kind::Insert,
        Kind::UpdateBefore,
        Kind::UpdateAfter,
        Kind::Delete,
    ];

    /// `+I` and `+U` add rows; `-U` and `-D` take them away.
    pub fn is_accumulate(self) -> bool {
        matches!(self, Kind::Insert | Kind::UpdateAfter)
    }

    pub fn short(self) -> &'static str {
        match self {
            Kind::Insert => "+I",
            Kind::UpdateBefore => "-U",
            Kind::UpdateAfter => "+U",
            Kind::Delete => "-D",
        }
    }

    pub fn parse(s: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.short() == s)
    }

    pub fn index(self) -> usize {
        match self {
            Kind::Insert => 0,
            Kind::UpdateBefore => 1,
            Kind::UpdateAfter => 2,
            Kind::Delete => 3,
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.short())
    }
}

/// What one decoded input record asks of its side, before primary-key normalisation.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// A single change: `+I` from `json`, `+I`/`-D` from Debezium `c`/`r`/`d`.
    Change(Kind, Row),
    /// A Debezium `u`: `-U before`, `+U after`. `before` may be absent on a primary-key side.
    Update { before: Option<Row>, after: Row },
    /// An `upsert-json` value: insert, or replace the row with the same primary key.
    Upsert(Row),
    /// An `upsert-json` tombstone: delete the row whose primary key these columns hold.
    DeleteKey(Row),
}

/// One arriving input record as the engine sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Input {
    pub side: Side,
    /// The input partition: the task whose state and stream time the record belongs to.
    pub partition: Partition,
    /// Kafka record timestamp, epoch milliseconds.
    pub timestamp: i64,
    /// The row's event time for interval joins (from `SIDEJOIN_<SIDE>_TIME`), epoch ms.
    pub time: Option<i64>,
    /// Wall-clock time of arrival, epoch ms, passed in by the caller (0 in replay); only
    /// `SIDEJOIN_MAX_WAIT` and `SIDEJOIN_IDLE_TIMEOUT` use it.
    pub processing_time: i64,
    /// `None` for records that only advance time (tombstones, undecodable records).
    pub event: Option<Event>,
}

/// A change of the join result, before projection: the left and right rows it is built from.
/// A missing side is null-padded.
#[derive(Debug, Clone, PartialEq)]
pub struct JoinedChange {
    pub kind: Kind,
    pub left: Option<Row>,
    pub right: Option<Row>,
    /// The `-D` of a null-padded row that just got its first match (SPEC §3.3).
    pub generated: bool,
    /// A star join's further dimensions' rows (`dim2`, …; SPEC §14); empty for a two-way join.
    pub more: Vec<Option<Row>>,
}

impl JoinedChange {
    pub fn new(kind: Kind, side: Side, this: Option<Row>, other: Option<Row>) -> Self {
        let (left, right) = if side == Side::Left {
            (this, other)
        } else {
            (other, this)
        };
        JoinedChange {
            kind,
            left,
            right,
            generated: false,
            more: Vec::new(),
        }
    }
}
