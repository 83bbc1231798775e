//! What the run loop does with each input record: the join (the same pipeline as replay), or
//! the passthrough that copies keys and values unchanged — the physical limit sidejoin is
//! measured against, run by the very same consumer, producer and commit code.

use tokio_util::sync::CancellationToken;

use crate::avro::output::AvroOutput;
use crate::avro::registry::Registry;
use crate::avro::AvroInput;
use crate::change::{Partition, Side};
use crate::config::{Config, OutputFormat};
use crate::engine::state::{Checkpoint, Mirror};
use crate::engine::JoinState;
use crate::format::{DecodeError, Reading};
use crate::metrics::WorkerMetrics;
use crate::pipeline::{ErrorAction, Offsets, Origin, Pipeline};
use crate::sink::Records;
use crate::stats::Stats;

/// One consumed record, borrowed from the consumer.
#[derive(Clone, Copy)]
pub struct InRecord<'a> {
    pub side: Side,
    pub partition: Partition,
    /// Kafka record timestamp, epoch ms.
    pub timestamp: i64,
    pub key: Option<&'a [u8]>,
    pub value: Option<&'a [u8]>,
}

pub trait Processor: Send {
    /// Before consuming: waits for what processing needs besides Kafka (the schema registry of
    /// Avro formats); `Ok(false)` when `shutdown` came first, `Err` a fatal startup problem.
    fn prepare(&mut self, _shutdown: &CancellationToken) -> Result<bool, String> {
        Ok(true)
    }
    /// Handles one record at processing time `now` (epoch ms), appending what to produce.
    fn process(
        &mut self,
        rec: &InRecord<'_>,
        now: i64,
        out: &mut Records,
    ) -> Result<(), DecodeError>;
    /// What to do with the record `process` could not decode (`SIDEJOIN_ON_ERROR`).
    fn dispatch(&mut self) -> ErrorAction;
    /// From now on, checks that records' keys carry their join key (co-partitioned topics of
    /// more than one partition); `false` when this processor has no join key to check.
    fn check_copartitioning(&mut self) -> bool {
        false
    }
    /// Why the record `process` handled last does not fit co-partitioning, if it does not
    /// (under `SIDEJOIN_ON_COPARTITION_VIOLATION=fail` it was not applied).
    fn take_violation(&mut self) -> Option<String> {
        None
    }
    /// Why `key` does not carry its record's join key (see `check_copartitioning`), the record
    /// decoded but not processed (the start-up probe, `runtime::probe`).
    fn misfit(&mut self, _side: Side, _key: &[u8], _value: Option<&[u8]>) -> Option<String> {
        None
    }
    /// Processing time moved on without a record.
    fn tick(&mut self, now: i64, out: &mut Records);
    /// The input partitions now owned (both sides).
    fn assigned(&mut self, partitions: &[Partition], now: i64);
    /// Input partitions given up: their state is released.
    fn revoked(&mut self, partitions: &[Partition]);
    /// Brings the metrics up to date.
    fn publish(&self, metrics: &WorkerMetrics);
    /// Input records handled so far.
    fn records_in(&self) -> u64;
    /// Closes a checkpoint of the state with the input `offsets` it reflects (those that moved;
    /// captured now, made durable by `persist`), handing its net changes to `mirror`.
    fn seal(&mut self, offsets: &Offsets, mirror: &mut Mirror<'_>) -> Result<Checkpoint, String>;
    /// Makes sealed checkpoints up to `upto` durable: their transaction is committed.
    fn persist(&mut self, upto: Checkpoint) -> Result<(), String>;
    /// Loads a newly assigned partition's state into the engine (row counts, stream time,
    /// watermarks); returns the next offset of each of `topics` already reflected in it, where
    /// recorded.
    fn restore(&mut self, partition: Partition, topics: &[&str], now: i64) -> Vec<Option<i64>>;
    /// Deletes a partition's local state (it is stale, or restored afresh).
    fn delete(&mut self, partition: Partition) -> Result<(), String>;
    /// The durable store the changelog mirrors, if the state is durable (RocksDB).
    fn store(&mut self) -> Option<&mut dyn JoinState>;
    /// Drops every change not yet persisted and forgets every partition (an aborted
    /// transaction: the partitions are restored again from what was committed).
    fn discard(&mut self, partitions: &[Partition]);
}

/// The join, over any state store.
pub struct JoinProcessor<S: JoinState> {
    pipeline: Pipeline<S>,
    /// Decodes the Avro sides' records to JSON before the pipeline; `Err`: it could not be set
    /// up, reported by `prepare`.
    avro: Result<Option<AvroInput>, String>,
    /// `SIDEJOIN_OUTPUT_FORMAT=avro`: set up by `prepare` (its schemas are registered then).
    avro_out: Option<AvroOutput>,
    /// The configuration, for `prepare`.
    config: Config,
    /// How each side's records are read.
    readings: [Reading; 2],
    /// The state is durable and mirrored to the changelog topics.
    durable: bool,
    /// The JSON records of one input, before they are re-encoded as Avro.
    json_out: Records,
}

impl<S: JoinState> JoinProcessor<S> {
    /// The join over a durable store (RocksDB), mirrored to the changelog topics, each side
    /// read as `readings` says (the plan's).
    pub fn new(config: &Config, readings: [Reading; 2], state: S) -> Self {
        JoinProcessor {
            pipeline: Pipeline::reading(config, readings, state),
            // A side read from its repartition topic holds changes, not Avro.
            avro: AvroInput::new(config).map(|a| {
                a.filter(|a| {
                    Side::BOTH
                        .iter()
                        .any(|s| a.is_avro(*s) && readings[s.index()] == Reading::Own)
                })
            }),
            readings,
            avro_out: None,
            config: config.clone(),
            durable: true,
            json_out: Records::default(),
        }
    }

    /// The join over state that is lost when the process stops (benchmarks).
    pub fn volatile(config: &Config, readings: [Reading; 2], state: S) -> Self {
        JoinProcessor {
            durable: false,
            ..Self::new(config, readings, state)
        }
    }

    /// Whether `side`'s records are Avro to decode before the pipeline.
    fn is_avro(&self, side: Side) -> bool {
        self.readings[side.index()] == Reading::Own
            && matches!(&self.avro, Ok(Some(a)) if a.is_avro(side))
    }
}

impl<S: JoinState + Send> Processor for JoinProcessor<S> {
    fn prepare(&mut self, shutdown: &CancellationToken) -> Result<bool, String> {
        let ready = match &self.avro {
            Ok(Some(avro)) => avro.wait_for_registry(shutdown)?,
            Ok(None) => true,
            Err(e) => return Err(e.clone()),
        };
        if !ready || self.config.output.format != OutputFormat::Avro {
            return Ok(ready);
        }
        let spec = self
            .config
            .kafka
            .registry
            .as_ref()
            .ok_or("Avro output needs SIDEJOIN_SCHEMA_REGISTRY_URL")?;
        let registry = Registry::new(spec)?;
        match AvroOutput::prepare(&self.config, &registry, shutdown)? {
            Some(out) => {
                self.avro_out = Some(out);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    fn process(
        &mut self,
        rec: &InRecord<'_>,
        now: i64,
        out: &mut Records,
    ) -> Result<(), DecodeError> {
        let origin = Origin {
            side: rec.side,
            partition: rec.partition,
            timestamp: rec.timestamp,
            processing_time: now,
        };
        let avro_side = self.is_avro(rec.side);
        let error = match &mut self.avro {
            Ok(Some(avro)) if avro_side => match avro.decode(rec.side, rec.key, rec.value) {
                Ok((key, value)) => self.pipeline.process(origin, key, value),
                Err(e) => self.pipeline.process_decoded(origin, Err(e)),
            },
            _ => self.pipeline.process(origin, rec.key, rec.value),
        };
        let encoded = self.records(rec.timestamp, out);
        match (error, encoded) {
            (Some(e), _) | (None, Err(e)) => Err(e),
            (None, Ok(())) => Ok(()),
        }
    }

    fn dispatch(&mut self) -> ErrorAction {
        self.pipeline.dispatch()
    }

    fn check_copartitioning(&mut self) -> bool {
        self.pipeline.check_copartitioning(&self.config);
        true
    }

    fn take_violation(&mut self) -> Option<String> {
        self.pipeline.take_violation()
    }

    fn misfit(&mut self, side: Side, key: &[u8], value: Option<&[u8]>) -> Option<String> {
        let avro_side = self.is_avro(side);
        match &mut self.avro {
            Ok(Some(avro)) if avro_side => match avro.decode(side, Some(key), value) {
                Ok((Some(key), value)) => self.pipeline.misfit(side, key, value),
                _ => None,
            },
            _ => self.pipeline.misfit(side, key, value),
        }
    }

    fn tick(&mut self, now: i64, out: &mut Records) {
        self.pipeline.tick(now);
        if let Err(e) = self.records(now, out) {
            // No input record to dead-letter: what processing time released is lost, loudly.
            tracing::error!("output records released by processing time were not written: {e}");
        }
    }

    fn assigned(&mut self, partitions: &[Partition], now: i64) {
        self.pipeline.set_partitions(partitions, now);
    }

    fn revoked(&mut self, partitions: &[Partition]) {
        for p in partitions {
            self.pipeline.release_partition(*p);
        }
    }

    fn records_in(&self) -> u64 {
        self.pipeline.stats().records_in.iter().sum()
    }

    fn seal(&mut self, offsets: &Offsets, mirror: &mut Mirror<'_>) -> Result<Checkpoint, String> {
        self.pipeline
            .seal(offsets, mirror)
            .map_err(|e| e.to_string())
    }

    fn persist(&mut self, upto: Checkpoint) -> Result<(), String> {
        self.pipeline.persist(upto).map_err(|e| e.to_string())
    }

    fn restore(&mut self, partition: Partition, topics: &[&str], now: i64) -> Vec<Option<i64>> {
        self.pipeline.restore_partition(partition, now);
        topics
            .iter()
            .map(|t| self.pipeline.persisted_offset(t, partition))
            .collect()
    }

    fn delete(&mut self, partition: Partition) -> Result<(), String> {
        self.pipeline
            .delete_partition(partition)
            .map_err(|e| e.to_string())
    }

    fn store(&mut self) -> Option<&mut dyn JoinState> {
        if self.durable {
            Some(self.pipeline.state())
        } else {
            None
        }
    }

    fn discard(&mut self, partitions: &[Partition]) {
        self.pipeline.state().discard_unpersisted();
        for p in partitions {
            self.pipeline.release_partition(*p);
        }
    }

    fn publish(&self, metrics: &WorkerMetrics) {
        metrics.observe_stats(self.pipeline.stats());
        for side in Side::BOTH {
            if let Some(w) = self.pipeline.engine().watermark(side) {
                metrics.set_watermark(side, w);
            }
        }
    }
}

impl<S: JoinState> JoinProcessor<S> {
    /// Appends the output records of the pipeline's last step, as JSON or re-encoded as Avro.
    fn records(&mut self, timestamp: i64, out: &mut Records) -> Result<(), DecodeError> {
        match &mut self.avro_out {
            None => {
                self.pipeline.records(timestamp, out);
                Ok(())
            }
            Some(avro) => {
                self.json_out.clear();
                self.pipeline.records(timestamp, &mut self.json_out);
                avro.convert(&self.json_out, out)
            }
        }
    }
}

/// Copies every record's key and value unchanged.
#[derive(Default)]
pub struct PassthroughProcessor {
    stats: Stats,
}

impl Processor for PassthroughProcessor {
    fn process(
        &mut self,
        rec: &InRecord<'_>,
        _now: i64,
        out: &mut Records,
    ) -> Result<(), DecodeError> {
        self.stats.records_in[rec.side.index()] += 1;
        out.push(rec.key, rec.value, rec.timestamp);
        Ok(())
    }

    fn dispatch(&mut self) -> ErrorAction {
        ErrorAction::Skip
    }

    fn tick(&mut self, _now: i64, _out: &mut Records) {}

    fn assigned(&mut self, _partitions: &[Partition], _now: i64) {}

    fn revoked(&mut self, _partitions: &[Partition]) {}

    fn publish(&self, metrics: &WorkerMetrics) {
        metrics.observe_stats(&self.stats);
    }

    fn records_in(&self) -> u64 {
        self.stats.records_in.iter().sum()
    }

    fn seal(&mut self, _offsets: &Offsets, _mirror: &mut Mirror<'_>) -> Result<Checkpoint, String> {
        Ok(0)
    }

    fn persist(&mut self, _upto: Checkpoint) -> Result<(), String> {
        Ok(())
    }

    fn restore(&mut self, _partition: Partition, topics: &[&str], _now: i64) -> Vec<Option<i64>> {
        vec![None; topics.len()]
    }

    fn delete(&mut self, _partition: Partition) -> Result<(), String> {
        Ok(())
    }

    fn store(&mut self) -> Option<&mut dyn JoinState> {
        None
    }

    fn discard(&mut self, _partitions: &[Partition]) {}
}
