//! One record through sidejoin: decode → (interval joins: row time) → engine → generated-
//! retraction filter → projection → output key. Replay and the Kafka runtime both drive this, so
//! they cannot disagree.
//!
//! The pipeline does not decide what happens to an undecodable record (`SIDEJOIN_ON_ERROR`): it
//! counts it, lets it advance stream time, and returns the error to its caller.

use serde_json::Value;

use crate::changelog::{Event, Input, JoinedChange, Side};
use crate::config::{Config, OutputSpec, SideSpec, TimeSource};
use crate::engine::project::Projection;
use crate::engine::{Engine, JoinState};
use crate::format::{self, DecodeError};
use crate::sink::{self, OutChange, OutRecord};
use crate::stats::{DropReason, Stats};

/// Where a record came from: its side, input partition, Kafka timestamp (epoch ms) and the
/// processing time it arrived at (epoch ms; 0 in replay).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Origin {
    pub side: Side,
    pub partition: u32,
    pub timestamp: i64,
    pub processing_time: i64,
}

/// What one input record produced: its changes, and the decode error if it could not be
/// decoded (the record still advanced time, which may have produced changes of other rows).
#[derive(Debug, Default)]
pub struct Processed {
    pub changes: Vec<OutChange>,
    pub error: Option<DecodeError>,
}

/// The join of one configuration over one state store.
pub struct Pipeline<S: JoinState> {
    sides: [SideSpec; 2],
    interval: bool,
    output: OutputSpec,
    engine: Engine,
    projection: Projection,
    state: S,
    joined: Vec<JoinedChange>,
}

impl<S: JoinState> Pipeline<S> {
    pub fn new(config: &Config, state: S) -> Self {
        let engine = Engine::new(&config.join);
        Pipeline {
            sides: [config.join.left.clone(), config.join.right.clone()],
            interval: config.join.interval.is_some(),
            output: config.output.clone(),
            projection: engine.plan().projection.clone(),
            engine,
            state,
            joined: Vec::new(),
        }
    }

    pub fn stats(&self) -> &Stats {
        self.engine.stats()
    }

    pub fn stats_mut(&mut self) -> &mut Stats {
        self.engine.stats_mut()
    }

    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    pub fn state(&mut self) -> &mut S {
        &mut self.state
    }

    /// The input partitions this pipeline processes (the interval join's watermark waits for
    /// every one of them).
    pub fn set_partitions(&mut self, partitions: &[u32], processing_time: i64) {
        self.engine.set_partitions(partitions, processing_time);
    }

    /// Makes the state durable together with `offsets` (`(topic, partition)` → next offset), in
    /// one atomic write for durable stores.
    pub fn checkpoint(
        &mut self,
        offsets: &std::collections::BTreeMap<(String, i32), i64>,
    ) -> Result<(), crate::engine::state::StateError> {
        let mut group = Vec::new();
        for ((topic, partition), offset) in offsets {
            crate::engine::layout::meta_group(&mut group, (*partition).max(0) as u32);
            self.state.put(
                &group,
                &crate::engine::layout::offset_item(topic),
                crate::engine::state::StateValue::Bytes(offset.to_be_bytes().to_vec()),
            );
        }
        self.engine.checkpoint(&mut self.state);
        self.state.flush()
    }

    /// The next offset of `topic`/`partition` already reflected in the state, if recorded.
    pub fn persisted_offset(&mut self, topic: &str, partition: u32) -> Option<i64> {
        let mut group = Vec::new();
        crate::engine::layout::meta_group(&mut group, partition);
        self.state
            .get(&group, &crate::engine::layout::offset_item(topic))
            .and_then(|v| v.as_i64())
    }

    /// Loads what the state holds about `partition` (row counts, watermarks) after an assignment.
    pub fn restore_partition(&mut self, partition: u32, processing_time: i64) {
        self.engine
            .restore_partition(&mut self.state, partition, processing_time);
    }

    /// Deletes `partition`'s state for good (stale: another instance moved past it).
    pub fn delete_partition(
        &mut self,
        partition: u32,
    ) -> Result<(), crate::engine::state::StateError> {
        self.engine.release_partition(&mut self.state, partition);
        self.state.delete_partition(partition)
    }

    /// Forgets a revoked partition's state.
    pub fn release_partition(&mut self, partition: u32) {
        self.engine.release_partition(&mut self.state, partition);
    }

    /// Processes one record whose key and value are already parsed (`None` = absent/null).
    pub fn process(
        &mut self,
        origin: Origin,
        key: Option<Value>,
        value: Option<Value>,
    ) -> Processed {
        let decoded = format::decode(&self.sides[origin.side.index()], key, value);
        self.process_decoded(origin, decoded)
    }

    /// The row time of an interval-join event (SPEC §4).
    fn row_time(&self, origin: Origin, event: &Event) -> Result<i64, DecodeError> {
        match (&self.sides[origin.side.index()].time, event) {
            (TimeSource::RecordTimestamp, _) => Ok(origin.timestamp),
            (TimeSource::Column(c), Event::Change(_, row)) => format::parse_time(row.get(c), c),
            (TimeSource::Column(_), _) => Err(DecodeError::new(
                "an interval join needs insert-only records",
            )),
        }
    }

    /// Processes one record given the outcome of decoding it.
    pub fn process_decoded(
        &mut self,
        origin: Origin,
        decoded: Result<Option<Event>, DecodeError>,
    ) -> Processed {
        let side = origin.side.index();
        self.engine.stats_mut().records_in[side] += 1;
        let decoded = decoded.and_then(|event| match event {
            Some(e) if self.interval => self.row_time(origin, &e).map(|t| Some((e, Some(t)))),
            Some(e) => Ok(Some((e, None))),
            None => Ok(None),
        });
        let (event, time, error) = match decoded {
            Ok(Some((event, time))) => (Some(event), time, None),
            Ok(None) => {
                self.engine
                    .stats_mut()
                    .input_dropped(origin.side, DropReason::Tombstone);
                (None, None, None)
            }
            Err(e) => {
                self.engine.stats_mut().decode_errors[side] += 1;
                (None, None, Some(e))
            }
        };
        let input = Input {
            side: origin.side,
            partition: origin.partition,
            timestamp: origin.timestamp,
            time,
            processing_time: origin.processing_time,
            event,
        };
        self.joined.clear();
        self.engine
            .process(&mut self.state, input, &mut self.joined);
        Processed {
            changes: self.project(),
            error,
        }
    }

    /// Processing time moved on (run mode): what `SIDEJOIN_MAX_WAIT` and idle partitions release.
    pub fn tick(&mut self, processing_time: i64) -> Vec<OutChange> {
        self.joined.clear();
        self.engine
            .tick(&mut self.state, processing_time, &mut self.joined);
        self.project()
    }

    /// End of a finite input (replay): what the interval join still holds back.
    pub fn flush(&mut self) -> Vec<OutChange> {
        self.joined.clear();
        self.engine.flush(&mut self.state, &mut self.joined);
        self.project()
    }

    /// The output records for the changes of one input record, in the configured output mode.
    pub fn records(&self, changes: Vec<OutChange>) -> Vec<OutRecord> {
        let mut records = Vec::with_capacity(changes.len());
        sink::encode(self.output.mode, changes, &mut records);
        records
    }

    /// Projects what the engine emitted for the current record.
    fn project(&mut self) -> Vec<OutChange> {
        let mut changes = Vec::with_capacity(self.joined.len());
        for c in self.joined.drain(..) {
            let (l, r) = (c.left.as_deref(), c.right.as_deref());
            let row = self.projection.project(l, r);
            let key = sink::output_key(&self.output.key, &row, l, r);
            self.engine.stats_mut().record_out(c.kind);
            changes.push(OutChange {
                kind: c.kind,
                key,
                row,
            });
        }
        changes
    }
}
