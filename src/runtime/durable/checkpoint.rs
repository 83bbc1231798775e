//! Closing a checkpoint: step 1 of the protocol (`durable`'s module doc) here, steps 2–3 in
//! flight (`in_flight`), step 4 when it lands (`settle`).

use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, Consumer, ConsumerContext, ConsumerGroupMetadata};
use rdkafka::{Offset, TopicPartitionList};
use rustc_hash::FxHashMap;
use sidejoin_store::{Checkpoint, Checkpointed};

use crate::config::Guarantee;

use super::super::output::Output;
use super::super::processor::Processor;
use super::super::streams::Stream;
use super::super::RunError;
use super::in_flight::{self, Failed, InFlight, Job, Landed, Sealed};
use super::positions::{self, Offsets};
use super::{Fault, Protocol};

/// How the worker closes a checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Close {
    /// Its commit goes on while the next checkpoint is processed (the run loop).
    Pipelined,
    /// Its commit has landed when `commit` returns (a revocation, the last checkpoint).
    Synchronous,
}

impl<S: Checkpointed> Protocol<S> {
    /// Positions as the state stores them: `(item, task)` → next offset (`Inputs::item`).
    fn offsets(&self, of: &FxHashMap<Stream, i64>) -> Offsets {
        of.iter()
            .map(|(s, o)| ((self.inputs.item(s), s.task), *o))
            .collect()
    }

    /// Positions as the group commits them: `(topic, partition)` → next offset, of the sides
    /// consumed through the group (a broadcast side's positions live in the state only).
    fn group_offsets(&self) -> Offsets {
        (self.positions.iter())
            .filter(|(s, _)| self.inputs.grouped(s.side))
            .map(|(s, o)| ((self.inputs.topic(s.side).to_owned(), s.source), *o))
            .collect()
    }

    /// Closes the open checkpoint: waits for the one in flight to land (`settle`), seals this
    /// one (step 1) and starts its commit (steps 2–3, `in_flight`); `Close::Synchronous` also
    /// waits for it to land. `Err(RunError::Aborted)`: a transaction was aborted; the caller
    /// must `discard` and restore.
    pub(crate) fn commit<C: ConsumerContext, P: Processor<S> + ?Sized>(
        &mut self,
        processor: &mut P,
        output: &Output,
        consumer: &BaseConsumer<C>,
        close: Close,
    ) -> Result<(), RunError> {
        self.settle()?;
        let started = Instant::now();
        self.check_identity(false, super::identity::DESCRIBE)?;
        if self.fault == Fault::HoldCheckpoint {
            hold();
        }
        self.begin()?;
        let moved: FxHashMap<Stream, i64> = (self.positions.iter())
            .filter(|(k, o)| self.written.get(k) != Some(o))
            .map(|(k, o)| (*k, *o))
            .collect();
        let mut at = Instant::now();
        let (checkpoint, mirrored) = self.seal(processor, &moved)?;
        in_flight::phase(&self.metrics, "seal", &mut at);
        let offsets = self.offsets_to_commit(consumer)?;
        let at_least_once = self.guarantee == Guarantee::AtLeastOnce;
        let job = Job {
            txn: self.txn.take().expect("settled above"),
            epoch: self.epoch,
            output: at_least_once.then(|| output.producer().clone()),
            offsets,
            metrics: self.metrics.clone(),
            fault: self.fault,
        };
        let sealed = Sealed {
            checkpoint,
            mirrored,
            moved,
            started,
        };
        self.epoch += 1;
        processor.publish(&self.metrics);
        self.in_flight = Some(InFlight::start(job, sealed));
        match close {
            Close::Pipelined => Ok(()),
            Close::Synchronous => self.settle(),
        }
    }

    /// Waits for the checkpoint in flight, if any, to land; persists it if it committed (step
    /// 4), else aborts. Then a transaction is open and the producer is back here.
    pub(crate) fn settle(&mut self) -> Result<(), RunError> {
        let Some(flight) = self.in_flight.take() else {
            return Ok(());
        };
        let at = Instant::now();
        if !flight.landed() {
            // Blocked on Kafka from here on: the watchdog and readiness see a checkpoint.
            self.metrics.step(crate::metrics::Step::Checkpoint);
        }
        let landed = flight.wait();
        self.landed(landed, at)
    }

    /// Whether a checkpoint is in flight.
    pub(crate) fn in_flight(&self) -> bool {
        self.in_flight.is_some()
    }

    /// Whether the checkpoint in flight has landed (settling would not block).
    pub(crate) fn has_landed(&self) -> bool {
        self.in_flight.as_ref().is_some_and(InFlight::landed)
    }

    /// Whether output must wait: under `exactly_once` it goes into the transaction, which is
    /// away while a checkpoint is in flight.
    pub(crate) fn holds_output(&self) -> bool {
        self.guarantee == Guarantee::ExactlyOnce && self.in_flight.is_some()
    }

    /// A checkpoint landed (waited for since `at`): step 4 if it committed, else an abort.
    fn landed(&mut self, (sealed, landed): (Sealed, Landed), at: Instant) -> Result<(), RunError> {
        // Between its landing and the worker's look at it, the worker was processing.
        let idle = at.saturating_duration_since(landed.at);
        let mut at = at;
        in_flight::phase(&self.metrics, "wait", &mut at);
        self.txn = Some(landed.txn);
        match landed.result {
            Ok(()) => {}
            Err(Failed::Delivery(e)) => return Err(RunError::Delivery(e)),
            Err(Failed::Txn(e)) => return Err(self.abort_on(e)),
        }
        self.metrics.transaction(true);
        self.metrics.mirrored(sealed.mirrored);
        // 4. Only now: the checkpoint is durable locally, with the changelog positions.
        self.state.persist(sealed.checkpoint)?;
        self.record_positions()?;
        in_flight::phase(&self.metrics, "persist", &mut at);
        self.written.extend(sealed.moved);
        let closing = sealed.started.elapsed().saturating_sub(idle);
        (self.metrics).observe_commit(closing.as_secs_f64());
        self.begin()
    }

    /// Step 1: the positions that `moved` and what the processor keeps in memory are written
    /// into the state, whose net change since the last checkpoint is sealed and mirrored to the
    /// changelog inside the transaction. Returns the checkpoint and the records mirrored.
    fn seal<P: Processor<S> + ?Sized>(
        &mut self,
        processor: &mut P,
        moved: &FxHashMap<Stream, i64>,
    ) -> Result<(Checkpoint, u64), RunError> {
        let now_offsets = self.offsets(moved);
        let state_offsets = match self.fault {
            Fault::None | Fault::HoldCheckpoint | Fault::HoldCommit | Fault::PanicOnMarker => {
                now_offsets
            }
            Fault::OffsetsLate => std::mem::replace(&mut self.previous, now_offsets),
        };
        positions::write(&mut self.state, &state_offsets);
        processor.checkpoint(&mut self.state);
        let mut mirrored = 0u64;
        let mut failed = None;
        let checkpoint = {
            let (txn, topics) = (self.txn().producer().clone(), &self.changelog);
            self.state.seal_mirrored(&mut |key, value| {
                if let (Some(topics), None) = (topics, &failed) {
                    mirrored += 1;
                    failed = super::mirror::send(&txn, topics, key, value).err();
                }
            })?
        };
        if let Some(e) = failed {
            return Err(self.abort(format!("a changelog record could not be sent: {e}")));
        }
        Ok((checkpoint, mirrored))
    }

    /// Step 3's input offsets of every grouped partition, with the group's metadata (none when
    /// every side is broadcast).
    fn offsets_to_commit<C: ConsumerContext>(
        &mut self,
        consumer: &BaseConsumer<C>,
    ) -> Result<Option<(TopicPartitionList, ConsumerGroupMetadata)>, RunError> {
        let all = self.group_offsets();
        if all.is_empty() {
            return Ok(None);
        }
        let mut tpl = TopicPartitionList::new();
        for ((topic, p), o) in &all {
            let _ = tpl.add_partition_offset(topic, *p, Offset::Offset(*o));
        }
        match consumer.group_metadata() {
            Some(group) => Ok(Some((tpl, group))),
            None => Err(self.abort("the consumer has no group metadata".into())),
        }
    }

    /// Commits the open transaction here; aborts it when that fails (`mirror_local`).
    pub(super) fn commit_transaction(&mut self) -> Result<(), RunError> {
        match self.txn().commit() {
            Ok(()) => Ok(()),
            Err(e) => Err(self.abort_on(e)),
        }
    }
}

/// `Fault::HoldCheckpoint`: the worker stays in this step for good (the watchdog must see it).
fn hold() {
    loop {
        std::thread::sleep(Duration::from_secs(1));
    }
}
