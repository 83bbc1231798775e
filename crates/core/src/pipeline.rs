//! One record through sidejoin: bytes → decode → (interval joins: row time) → engine →
//! generated-retraction filter → projection and output key, as bytes. Replay and the Kafka
//! runtime both drive this, from the record's key and value bytes, so they cannot disagree.
//!
//! The pipeline does not execute `SIDEJOIN_ON_ERROR`: it counts an undecodable record, lets it
//! advance stream time, returns the error, and `dispatch` says (and counts) what the caller must
//! do with it — the one place that reads the setting.

use std::collections::BTreeMap;

use crate::change::{Event, Input, JoinedChange, Partition, Side};
use crate::config::{Config, OnError, OnViolation, OutputMode, TimeSource};
use crate::copartition::KeyCheck;
use crate::engine::column::Column;
use crate::engine::project::{OutputKey, Projection};
use crate::engine::state::{Checkpoint, Mirror, StateError, StateValue};
use crate::engine::{layout, Engine, JoinState};
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

/// `(topic, partition)` → the next offset to consume there.
pub type Offsets = BTreeMap<(String, Partition), i64>;

/// The join of one configuration over one state store.
pub struct Pipeline<S: JoinState> {
    decoders: [Decoder; 2],
    readings: [Reading; 2],
    /// The interval join's time column per side (`None`: the Kafka timestamp).
    time: Option<[Option<Column>; 2]>,
    mode: OutputMode,
    on_error: OnError,
    engine: Engine,
    projection: Projection,
    key: OutputKey,
    state: S,
    joined: Vec<JoinedChange>,
    projected: Projected,
    /// Run mode on co-partitioned topics: records' keys are checked against their join key.
    copartition: Option<(KeyCheck, OnViolation)>,
    /// Why the last processed record's key does not carry its join key.
    violation: Option<String>,
}

impl<S: JoinState> Pipeline<S> {
    /// The join of `config`, each side read in its own format (replay, tests).
    pub fn new(config: &Config, state: S) -> Self {
        Self::reading(config, [Reading::Own; 2], state)
    }

    /// The join of `config`, each side read as `readings` says (a repartitioned side reads the
    /// changes its router wrote).
    pub fn reading(config: &Config, readings: [Reading; 2], state: S) -> Self {
        let engine = Engine::new(&config.join);
        let projection = engine.plan().projection.clone();
        let time_column = |side: Side| match &config.join.side(side).time {
            TimeSource::RecordTimestamp => None,
            TimeSource::Column(c) => Some(Column::new(c.as_str())),
        };
        Pipeline {
            decoders: [
                Decoder::reading(&config.join.left, readings[0]),
                Decoder::reading(&config.join.right, readings[1]),
            ],
            readings,
            time: config
                .join
                .interval
                .map(|_| [time_column(Side::Left), time_column(Side::Right)]),
            mode: config.output.mode,
            on_error: config.process.on_error,
            key: OutputKey::new(&config.output.key, &projection),
            projection,
            engine,
            state,
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
            KeyCheck::new(&config.join, self.readings),
            config.process.on_copartition_violation,
        ));
    }

    /// Why `key` does not carry the join key of the record it keys (once `check_copartitioning`
    /// was called), the record decoded but not processed: the start-up probe. `None` when it
    /// fits, cannot be judged, or the value does not decode (processing reports that).
    pub fn misfit(&self, side: Side, key: &[u8], value: Option<&[u8]>) -> Option<String> {
        let (check, _) = self.copartition.as_ref()?;
        let event = self.decoders[side.index()]
            .decode(Some(key), value)
            .ok()??;
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

    pub fn state(&mut self) -> &mut S {
        &mut self.state
    }

    /// The input partitions this pipeline processes (the interval join's watermark waits for
    /// every one of them).
    pub fn set_partitions(&mut self, partitions: &[Partition], processing_time: i64) {
        self.engine.set_partitions(partitions, processing_time);
    }

    /// Closes a checkpoint: the state as it is now, with the input `offsets` it reflects (those
    /// that moved since the last checkpoint) and what the engine keeps in memory, captured to be
    /// made durable atomically by `persist`; its net changes go to `mirror` (the changelog).
    pub fn seal(
        &mut self,
        offsets: &Offsets,
        mirror: &mut Mirror<'_>,
    ) -> Result<Checkpoint, StateError> {
        let mut group = Vec::new();
        for ((topic, partition), offset) in offsets {
            layout::meta_group(&mut group, *partition);
            self.state.put(
                &group,
                &layout::offset_item(topic),
                StateValue::Bytes(offset.to_be_bytes().to_vec()),
            );
        }
        self.engine.checkpoint(&mut self.state);
        self.state.seal_mirrored(mirror)
    }

    /// Makes sealed checkpoints up to `upto` durable.
    pub fn persist(&mut self, upto: Checkpoint) -> Result<(), StateError> {
        self.state.persist(upto)
    }

    /// Seals and persists at once (tests and tools without outputs to wait for).
    pub fn checkpoint(&mut self, offsets: &Offsets) -> Result<(), StateError> {
        let checkpoint = self.seal(offsets, &mut |_, _| {})?;
        self.persist(checkpoint)
    }

    /// The next offset of `topic`/`partition` already reflected in the state, if recorded.
    pub fn persisted_offset(&mut self, topic: &str, partition: Partition) -> Option<i64> {
        let mut group = Vec::new();
        layout::meta_group(&mut group, partition);
        self.state
            .get(&group, &layout::offset_item(topic))
            .and_then(|v| v.as_i64())
    }

    /// Loads what the state holds about `partition` (row counts, stream time, watermarks) after
    /// an assignment.
    pub fn restore_partition(&mut self, partition: Partition, processing_time: i64) {
        self.engine
            .restore_partition(&mut self.state, partition, processing_time);
    }

    /// Deletes `partition`'s state for good (stale: another instance moved past it).
    pub fn delete_partition(&mut self, partition: Partition) -> Result<(), StateError> {
        self.engine.release_partition(&mut self.state, partition);
        self.state.delete_partition(partition)
    }

    /// Forgets a revoked partition's state.
    pub fn release_partition(&mut self, partition: Partition) {
        self.engine.release_partition(&mut self.state, partition);
    }

    /// Processes one record from its key and value bytes (`None` = absent). Its changes are in
    /// `changes()` until the next call; the error, if it could not be decoded, is returned (the
    /// record still advanced time, which may have produced changes of other rows).
    pub fn process(
        &mut self,
        origin: Origin,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
    ) -> Option<DecodeError> {
        let side = origin.side.index();
        let decoded = self.decoders[side].decode(key, value);
        if let (Some((check, action)), Ok(Some(event)), Some(key)) =
            (&self.copartition, &decoded, key)
        {
            if let Some(why) = check.check(origin.side, key, event) {
                self.engine.stats_mut().copartition_violations[side] += 1;
                self.violation = Some(why);
                if *action == OnViolation::Fail {
                    // Not applied: the run stops before it, and a restart resumes at it.
                    self.projected.clear();
                    return None;
                }
            }
        }
        if decoded.is_err() && self.decoders[side].skips_parse_errors() {
            // `csv.ignore-parse-errors`: dropped and counted; it still advances time.
            let stats = self.engine.stats_mut();
            stats.records_in[side] += 1;
            stats.input_dropped(origin.side, DropReason::ParseError);
            self.step(origin, None, None);
            return None;
        }
        self.process_decoded(origin, decoded)
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
    pub fn process_decoded(
        &mut self,
        origin: Origin,
        decoded: Result<Option<Event>, DecodeError>,
    ) -> Option<DecodeError> {
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
        self.step(origin, event, time);
        error
    }

    /// Runs the engine on one decoded record (or on none: it still advances time).
    fn step(&mut self, origin: Origin, event: Option<Event>, time: Option<i64>) {
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
        self.project();
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
    pub fn tick(&mut self, processing_time: i64) {
        self.joined.clear();
        self.engine
            .tick(&mut self.state, processing_time, &mut self.joined);
        self.project();
    }

    /// End of a finite input (replay): what the interval join still holds back, in `changes()`.
    pub fn flush(&mut self) {
        self.joined.clear();
        self.engine.flush(&mut self.state, &mut self.joined);
        self.project();
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
        for c in &self.joined {
            self.projected.push(
                c.kind,
                &self.projection,
                &self.key,
                c.left.as_ref(),
                c.right.as_ref(),
            );
            self.engine.stats_mut().record_out(c.kind);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{self, Mode};
    use crate::engine::memory::MemoryState;

    fn config() -> Config {
        let env = [
            ("SIDEJOIN_LEFT_KEY", "user_id"),
            ("SIDEJOIN_RIGHT_KEY", "user_id"),
            ("SIDEJOIN_LEFT_FORMAT", "debezium-json"),
        ];
        let vars = env.iter().map(|(k, v)| (k.to_string(), v.to_string()));
        config::load(vars, Mode::Check).expect("valid configuration")
    }

    fn pipeline() -> Pipeline<MemoryState> {
        let cfg = config();
        let mut p = Pipeline::new(&cfg, MemoryState::new());
        p.check_copartitioning(&cfg);
        p
    }

    const ORDER: &[u8] = br#"{"op":"c","before":null,"after":{"id":7,"user_id":3}}"#;

    #[test]
    fn misfit_judges_a_key_without_processing_the_record() {
        let p = pipeline();
        let why = p.misfit(Side::Left, br#"{"id":7}"#, Some(ORDER));
        assert!(
            why.as_deref()
                .is_some_and(|w| w.contains("does not hold the join-key column `user_id`")),
            "{why:?}"
        );
        assert_eq!(p.misfit(Side::Left, br#"{"user_id":3}"#, Some(ORDER)), None);
        assert_eq!(p.misfit(Side::Left, b"3", Some(ORDER)), None);
    }

    #[test]
    fn misfit_judges_nothing_before_the_check_is_on() {
        let p = Pipeline::new(&config(), MemoryState::new());
        assert_eq!(p.misfit(Side::Left, br#"{"id":7}"#, Some(ORDER)), None);
    }

    #[test]
    fn misfit_leaves_undecodable_and_unjudgeable_records_to_processing() {
        let p = pipeline();
        assert_eq!(
            p.misfit(Side::Left, br#"{"id":7}"#, Some(b"not json")),
            None
        );
        assert_eq!(p.misfit(Side::Left, b"order-7", Some(ORDER)), None);
    }
}
