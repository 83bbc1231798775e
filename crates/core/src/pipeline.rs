//! One record through sidejoin: bytes → decode → (interval joins: row time) → engine →
//! generated-retraction filter → projection and output key, as bytes. Replay and the Kafka
//! runtime both drive this, from the record's key and value bytes, so they cannot disagree.
//!
//! The pipeline does not execute `SIDEJOIN_ON_ERROR`: it counts an undecodable record, lets it
//! advance stream time, returns the error, and `dispatch` says (and counts) what the caller must
//! do with it — the one place that reads the setting.

use smallvec::SmallVec;

use crate::change::{Event, Input, JoinedChange, Partition, Row, Side};
use crate::config::{Config, OnError, OnViolation, OutputMode, TimeSource};
use crate::copartition::KeyCheck;
use crate::engine::column::Column;
use crate::engine::output_key::OutputKey;
use crate::engine::project::Projection;
use crate::engine::state::StateError;
use crate::engine::{Engine, JoinState};
use crate::format::{DecodeError, Decoder, Reading};
use crate::sink::{self, Projected, Records};
use crate::stats::{DropReason, Stats};

/// Where a record came from: its side, input partition, Kafka timestamp (epoch ms) and the
/// processing time it arrived at (epoch ms; 0 in replay).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Origin {
    pub side: Side,
    pub partition: Partition,
    pub timestamp: i64,
    pub processing_time: i64,
}

/// What to do with a record that could not be decoded (`SIDEJOIN_ON_ERROR`, SPEC §8).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorAction {
    /// Stop; the record and everything after it stay unprocessed.
    Fail,
    /// Write the original record to the dead-letter topic.
    DeadLetter,
    /// Count and drop it.
    Skip,
}

/// The join of one configuration. It keeps no rows: every call that reads or writes them takes
/// the state store (the caller owns it: replay's memory, the runtime's durable store).
pub struct Pipeline {
    /// One per input (two, or a star join's fact and dimensions), by `Side::index()`.
    decoders: Vec<Decoder>,
    readings: Vec<Reading>,
    /// The interval join's time column per side (`None`: the Kafka timestamp).
    time: Option<[Option<Column>; 2]>,
    mode: OutputMode,
    on_error: OnError,
    engine: Engine,
    projection: Projection,
    key: OutputKey,
    joined: Vec<JoinedChange>,
    projected: Projected,
    /// Run mode on co-partitioned topics: records' keys are checked against their join key.
    copartition: Option<(KeyCheck, OnViolation)>,
    /// Why the last processed record's key does not carry its join key.
    violation: Option<String>,
}

impl Pipeline {
    /// The join of `config`, each side read in its own format (replay, tests).
    pub fn new(config: &Config) -> Self {
        Self::reading(config, &vec![Reading::Own; config.join.inputs().count()])
    }

    /// The join of `config`, each side read as `readings` says (a repartitioned side reads the
    /// changes its router wrote).
    pub fn reading(config: &Config, readings: &[Reading]) -> Self {
        let engine = Engine::new(&config.join);
        let projection = engine.projection().clone();
        let time_column = |side: Side| match &config.join.side(side).time {
            TimeSource::RecordTimestamp => None,
            TimeSource::Column(c) => Some(Column::new(c.as_str())),
        };
        Pipeline {
            decoders: config
                .join
                .sources()
                .zip(readings)
                .map(|(s, r)| Decoder::reading(s, *r))
                .collect(),
            readings: readings.to_vec(),
            time: config
                .join
                .interval
                .map(|_| [time_column(Side::Left), time_column(Side::Right)]),
            mode: config.output.mode,
            on_error: config.process.on_error,
            key: OutputKey::new(&config.output.key, &projection),
            projection,
            engine,
            joined: Vec::new(),
            projected: Projected::default(),
            copartition: None,
            violation: None,
        }
    }

    /// Checks every record's Kafka key against its join key from now on (`copartition`): a
    /// misfit is counted and kept for `take_violation`; with `OnViolation::Fail` the record is
    /// not applied.
    pub fn check_copartitioning(&mut self, config: &Config) {
        self.copartition = Some((
            KeyCheck::new(&config.join, &self.readings),
            config.process.on_copartition_violation,
        ));
    }

    /// Why `key` does not carry the join key of the record it keys (once `check_copartitioning`
    /// was called), the record decoded but not processed: the start-up probe. `None` when it
    /// fits, cannot be judged, or the value does not decode (processing reports that).
    pub fn misfit(&self, side: Side, key: Option<&[u8]>, value: Option<&[u8]>) -> Option<String> {
        let (check, _) = self.copartition.as_ref()?;
        let event = self.decoders[side.index()].decode(key, value).ok()??;
        check.check(side, key, &event)
    }

    /// Why the record `process` handled last does not fit co-partitioning, if it does not.
    pub fn take_violation(&mut self) -> Option<String> {
        self.violation.take()
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

    /// The input partitions this pipeline processes (the interval join's watermark waits for
    /// every one of them).
    pub fn set_partitions(&mut self, partitions: &[Partition], processing_time: i64) {
        self.engine.set_partitions(partitions, processing_time);
    }

    /// Writes what the engine keeps in memory (row counts, stream times, watermarks) into
    /// `state`, before a checkpoint seals it.
    pub fn checkpoint<S: JoinState + ?Sized>(&mut self, state: &mut S) {
        self.engine.checkpoint(state);
    }

    /// Loads what `state` holds about `partition` (row counts, stream time, watermarks) after
    /// an assignment.
    pub fn restore_partition<S: JoinState + ?Sized>(
        &mut self,
        state: &mut S,
        partition: Partition,
        processing_time: i64,
    ) -> Result<(), StateError> {
        self.engine
            .restore_partition(state, partition, processing_time)
    }

    /// Forgets a revoked partition's state.
    pub fn release_partition<S: JoinState + ?Sized>(
        &mut self,
        state: &mut S,
        partition: Partition,
    ) {
        self.engine.release_partition(state, partition);
    }

    /// Processes one record from its key and value bytes (`None` = absent). Its changes are in
    /// `changes()` until the next call; the error, if it could not be decoded, is returned (the
    /// record still advanced time, which may have produced changes of other rows).
    pub fn process<S: JoinState + ?Sized>(
        &mut self,
        state: &mut S,
        origin: Origin,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
    ) -> Result<Option<DecodeError>, StateError> {
        let side = origin.side.index();
        let decoded = self.decoders[side].decode(key, value);
        if let (Some((check, action)), Ok(Some(event))) = (&self.copartition, &decoded) {
            if let Some(why) = check.check(origin.side, key, event) {
                self.engine.stats_mut().copartition_violations[side] += 1;
                self.violation = Some(why);
                if *action == OnViolation::Fail {
                    // Not applied: the run stops before it, and a restart resumes at it.
                    self.projected.clear();
                    return Ok(None);
                }
            }
        }
        if decoded.is_err() && self.decoders[side].skips_parse_errors() {
            // `csv.ignore-parse-errors`: dropped and counted; it still advances time.
            let stats = self.engine.stats_mut();
            stats.records_in[side] += 1;
            stats.input_dropped(origin.side, DropReason::ParseError);
            self.step(state, origin, None, None)?;
            return Ok(None);
        }
        self.process_decoded(state, origin, decoded)
    }

    /// Whether `side`'s record values are text lines (replay reads them from JSON strings).
    pub fn reads_text(&self, side: Side) -> bool {
        self.decoders[side.index()].reads_text()
    }

    /// The row time of an interval-join event (SPEC §4).
    fn row_time(&self, origin: Origin, event: &Event) -> Result<i64, DecodeError> {
        let column = self
            .time
            .as_ref()
            .and_then(|t| t[origin.side.index()].as_ref());
        match (column, event) {
            (None, _) => Ok(origin.timestamp),
            (Some(c), Event::Change(_, row)) => crate::format::parse_time(c.get(row), c.name()),
            (Some(_), _) => Err(DecodeError::new(
                "an interval join needs insert-only records",
            )),
        }
    }

    /// Processes one record given the outcome of decoding it.
    pub fn process_decoded<S: JoinState + ?Sized>(
        &mut self,
        state: &mut S,
        origin: Origin,
        decoded: Result<Option<Event>, DecodeError>,
    ) -> Result<Option<DecodeError>, StateError> {
        let side = origin.side.index();
        self.engine.stats_mut().records_in[side] += 1;
        let decoded = decoded.and_then(|event| match event {
            Some(e) if self.time.is_some() => self.row_time(origin, &e).map(|t| Some((e, Some(t)))),
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
        self.step(state, origin, event, time)?;
        Ok(error)
    }

    /// Runs the engine on one decoded record (or on none: it still advances time).
    fn step<S: JoinState + ?Sized>(
        &mut self,
        state: &mut S,
        origin: Origin,
        event: Option<Event>,
        time: Option<i64>,
    ) -> Result<(), StateError> {
        let input = Input {
            side: origin.side,
            partition: origin.partition,
            timestamp: origin.timestamp,
            time,
            processing_time: origin.processing_time,
            event,
        };
        self.joined.clear();
        self.engine.process(state, input, &mut self.joined)?;
        self.project();
        Ok(())
    }

    /// What `SIDEJOIN_ON_ERROR` says to do with a record `process` could not decode; counts a
    /// dead-lettered record.
    pub fn dispatch(&mut self) -> ErrorAction {
        match self.on_error {
            OnError::Fail => ErrorAction::Fail,
            OnError::Dlq => {
                self.engine.stats_mut().dlq_records += 1;
                ErrorAction::DeadLetter
            }
            OnError::Skip => ErrorAction::Skip,
        }
    }

    /// Processing time moved on (run mode): what `SIDEJOIN_MAX_WAIT` and idle partitions release,
    /// in `changes()`.
    pub fn tick<S: JoinState + ?Sized>(
        &mut self,
        state: &mut S,
        processing_time: i64,
    ) -> Result<(), StateError> {
        self.joined.clear();
        self.engine.tick(state, processing_time, &mut self.joined)?;
        self.project();
        Ok(())
    }

    /// End of a finite input (replay): what the interval join still holds back, in `changes()`.
    pub fn flush<S: JoinState + ?Sized>(&mut self, state: &mut S) -> Result<(), StateError> {
        self.joined.clear();
        self.engine.flush(state, &mut self.joined)?;
        self.project();
        Ok(())
    }

    /// The projected changes of the last `process`, `tick` or `flush`.
    pub fn changes(&self) -> &Projected {
        &self.projected
    }

    /// Appends the output records for `changes()`, in the configured output mode, stamped
    /// `timestamp`.
    pub fn records(&self, timestamp: i64, out: &mut Records) {
        sink::encode(self.mode, &self.projected, timestamp, out);
    }

    /// Projects what the engine emitted.
    fn project(&mut self) {
        self.projected.clear();
        // Input rows of one change: left, right, a star join's further dimensions (no
        // allocation below eight inputs, the most a join has).
        let mut rows: SmallVec<[Option<&Row>; 8]> = SmallVec::new();
        for c in &self.joined {
            rows.clear();
            rows.extend([c.left.as_ref(), c.right.as_ref()]);
            rows.extend(c.more.iter().map(Option::as_ref));
            self.projected
                .push(c.kind, &self.projection, &self.key, &rows);
            self.engine.stats_mut().record_out(c.kind);
        }
    }
}

#[cfg(test)]
#[path = "pipeline_tests.rs"]
mod tests;
