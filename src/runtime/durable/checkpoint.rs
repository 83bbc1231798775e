//! Closing a checkpoint: steps 1–4 of the protocol (`durable`'s module doc), each a function.

use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, Consumer, ConsumerContext};
use rdkafka::{Offset, TopicPartitionList};
use rustc_hash::FxHashMap;
use sidejoin_store::{Checkpoint, Checkpointed};

use crate::config::Guarantee;
use crate::metrics::Step;

use super::super::output::Output;
use super::super::processor::Processor;
use super::super::streams::Stream;
use super::super::RunError;
use super::positions::{self, Offsets};
use super::{Fault, Protocol};

/// Waiting longer than this for output acknowledgements makes the instance not ready.
const STALLED: Duration = Duration::from_secs(2);

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

    /// Closes the open checkpoint (steps 1–4 of the module doc). `Err(RunError::Aborted)`:
    /// the transaction was aborted; the caller must `discard` and restore.
    pub(crate) fn commit<C: ConsumerContext, P: Processor<S> + ?Sized>(
        &mut self,
        processor: &mut P,
        output: &Output,
        consumer: &BaseConsumer<C>,
    ) -> Result<(), RunError> {
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
        self.phase("seal", &mut at);
        self.await_output(output)?;
        self.phase("output", &mut at);
        self.commit_offsets(consumer)?;
        self.phase("offsets", &mut at);
        self.commit_transaction()?;
        self.phase("commit", &mut at);
        if let Some(e) = self.txn.deliveries().failure() {
            return Err(RunError::Delivery(e));
        }
        self.metrics.transaction(true);
        self.metrics.mirrored(mirrored);
        // 4. Only now: the checkpoint is durable locally, with the changelog positions.
        self.state.persist(checkpoint)?;
        self.record_positions()?;
        self.phase("persist", &mut at);
        self.written.extend(moved);
        self.epoch += 1;
        self.metrics.observe_commit(started.elapsed().as_secs_f64());
        processor.publish(&self.metrics);
        self.begin()
    }

    /// `phase` of closing a checkpoint ended now: its time since `at` is observed, and `at`
    /// becomes now.
    fn phase(&self, phase: &str, at: &mut Instant) {
        let now = Instant::now();
        (self.metrics).observe_checkpoint_phase(phase, (now - *at).as_secs_f64());
        *at = now;
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
            Fault::None | Fault::HoldCheckpoint | Fault::PanicOnMarker => now_offsets,
            Fault::OffsetsLate => std::mem::replace(&mut self.previous, now_offsets),
        };
        positions::write(&mut self.state, &state_offsets);
        processor.checkpoint(&mut self.state);
        let mut mirrored = 0u64;
        let mut failed = None;
        let checkpoint = {
            let (txn, topics) = (self.txn.producer(), &self.changelog);
            self.state.seal_mirrored(&mut |key, value| {
                if let (Some(topics), None) = (topics, &failed) {
                    mirrored += 1;
                    failed = super::mirror::send(txn, topics, key, value).err();
                }
            })?
        };
        if let Some(e) = failed {
            return Err(self.abort(format!("a changelog record could not be sent: {e}")));
        }
        Ok((checkpoint, mirrored))
    }

    /// Step 2, at least once: the checkpoint's output is acknowledged before it commits (the
    /// instance is not ready while that takes long).
    fn await_output(&mut self, output: &Output) -> Result<(), RunError> {
        if self.guarantee == Guarantee::AtLeastOnce {
            let waiting = Instant::now();
            let mut stalled = false;
            while output.deliveries().outstanding_through(self.epoch) > 0 {
                if let Some(e) = output.deliveries().failure() {
                    return Err(RunError::Delivery(e));
                }
                output.poll(crate::kafka::flush::STEP);
                if stalled {
                    self.metrics.step(Step::WaitingForKafka);
                }
                if !stalled && waiting.elapsed() > STALLED {
                    tracing::warn!("output not acknowledged for {STALLED:?}: not ready; waiting");
                    self.metrics.set_ready(false);
                    stalled = true;
                }
            }
            if stalled {
                tracing::info!("output acknowledged again");
                self.metrics.set_ready(true);
            }
        }
        match output.deliveries().failure() {
            Some(e) => Err(RunError::Delivery(e)),
            None => Ok(()),
        }
    }

    /// Step 3: the input offsets of every grouped partition into the transaction.
    fn commit_offsets<C: ConsumerContext>(
        &mut self,
        consumer: &BaseConsumer<C>,
    ) -> Result<(), RunError> {
        let all = self.group_offsets();
        if all.is_empty() {
            return Ok(());
        }
        let mut tpl = TopicPartitionList::new();
        for ((topic, p), o) in &all {
            let _ = tpl.add_partition_offset(topic, *p, Offset::Offset(*o));
        }
        let Some(group) = consumer.group_metadata() else {
            return Err(self.abort("the consumer has no group metadata".into()));
        };
        match self.txn.send_offsets(&tpl, group) {
            Ok(()) => Ok(()),
            Err(e) => Err(self.abort_on(e)),
        }
    }

    /// Step 4: commits the open transaction; aborts it when that fails.
    pub(super) fn commit_transaction(&mut self) -> Result<(), RunError> {
        match self.txn.commit() {
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
