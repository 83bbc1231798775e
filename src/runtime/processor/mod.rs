//! What a worker does with each input record, between its consumer and its producer: the join
//! (`join`: the same pipeline as replay) or the passthrough that copies keys and values
//! unchanged — the physical limit sidejoin is measured against, run by the very same consumer,
//! producer and commit code. A processor keeps no rows: the state it joins against is the
//! durable protocol's, lent to each call (`S`).

mod join;

use tokio_util::sync::CancellationToken;

use crate::change::{Partition, Side};
use crate::engine::state::StateError;
use crate::format::DecodeError;
use crate::metrics::WorkerMetrics;
use crate::pipeline::ErrorAction;
use crate::sink::Records;
use crate::stats::Stats;

use super::StartupError;

pub use join::JoinProcessor;

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

/// Why one record could not be processed.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The record: `SIDEJOIN_ON_ERROR` decides.
    #[error(transparent)]
    Decode(#[from] DecodeError),
    /// The state: the run stops (the record is processed again after a restart).
    #[error(transparent)]
    State(#[from] StateError),
}

pub trait Processor<S: ?Sized>: Send {
    /// Before consuming: waits for what processing needs besides Kafka (the schema registry of
    /// Avro formats); `Ok(false)` when `shutdown` came first.
    fn prepare(&mut self, _shutdown: &CancellationToken) -> Result<bool, StartupError> {
        Ok(true)
    }
    /// Handles one record at processing time `now` (epoch ms) against `state`, appending what
    /// to produce.
    fn process(
        &mut self,
        state: &mut S,
        rec: &InRecord<'_>,
        now: i64,
        out: &mut Records,
    ) -> Result<(), RecordError>;
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
    fn misfit(
        &mut self,
        _side: Side,
        _key: Option<&[u8]>,
        _value: Option<&[u8]>,
    ) -> Option<String> {
        None
    }
    /// Processing time moved on without a record.
    fn tick(&mut self, state: &mut S, now: i64, out: &mut Records) -> Result<(), StateError>;
    /// The tasks now owned (`new` of them just restored into `state`).
    fn assigned(
        &mut self,
        state: &mut S,
        tasks: &[Partition],
        new: &[Partition],
        now: i64,
    ) -> Result<(), StateError>;
    /// Tasks given up: what `state` and the processor hold of them is released.
    fn revoked(&mut self, state: &mut S, tasks: &[Partition]);
    /// Forgets what it keeps in memory besides its counters, as if new (a panic may have left
    /// it half-updated); the caller has released every task and assigns them again.
    fn reset(&mut self) {}
    /// Writes what the processor keeps in memory into `state`, before a checkpoint seals it.
    fn checkpoint(&mut self, state: &mut S);
    /// Brings the metrics up to date.
    fn publish(&self, metrics: &WorkerMetrics);
    /// Input records handled so far.
    fn records_in(&self) -> u64;
}

/// Copies every record's key and value unchanged.
#[derive(Default)]
pub struct PassthroughProcessor {
    stats: Stats,
}

impl<S: ?Sized> Processor<S> for PassthroughProcessor {
    fn process(
        &mut self,
        _state: &mut S,
        rec: &InRecord<'_>,
        _now: i64,
        out: &mut Records,
    ) -> Result<(), RecordError> {
        self.stats.records_in[rec.side.index()] += 1;
        out.push(rec.key, rec.value, rec.timestamp);
        Ok(())
    }

    fn dispatch(&mut self) -> ErrorAction {
        ErrorAction::Skip
    }

    fn tick(&mut self, _state: &mut S, _now: i64, _out: &mut Records) -> Result<(), StateError> {
        Ok(())
    }

    fn assigned(
        &mut self,
        _state: &mut S,
        _tasks: &[Partition],
        _new: &[Partition],
        _now: i64,
    ) -> Result<(), StateError> {
        Ok(())
    }

    fn revoked(&mut self, _state: &mut S, _tasks: &[Partition]) {}

    fn checkpoint(&mut self, _state: &mut S) {}

    fn publish(&self, metrics: &WorkerMetrics) {
        metrics.observe_stats(&self.stats);
    }

    fn records_in(&self) -> u64 {
        self.stats.records_in.iter().sum()
    }
}
