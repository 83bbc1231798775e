//! One record through a worker: the processor (panics caught, outputs checked against the
//! producer's size limit: `poison`), then what `SIDEJOIN_ON_ERROR` and
//! `SIDEJOIN_ON_COPARTITION_VIOLATION` say about it; its offset counts as consumed.

use crate::config::OnViolation;
use crate::pipeline::ErrorAction;

use super::super::dead_letter::{abbreviate, Dead};
use super::super::input::Record;
use super::super::processor::{InRecord, RecordError};
use super::super::streams::Stream;
use super::super::RunError;
use super::poison::Poison;
use super::Worker;
use sidejoin_store::Checkpointed;

/// Most output records held while a checkpoint is in flight under exactly-once; more wait
/// for it to land.
const HELD: usize = 100_000;

impl<S: Checkpointed> Worker<'_, S> {
    /// Sends what the processor appended to `self.out` — under exactly-once, once the
    /// checkpoint in flight has landed (held until then, `HELD` records at most).
    pub(super) fn send_outputs(&mut self) -> Result<(), RunError> {
        if self.protocol.in_flight() {
            let must = self.protocol.holds_output() && self.out.len() >= HELD;
            if (self.protocol.has_landed() || must) && !self.settle()? {
                return Ok(()); // aborted: what was held is dropped
            }
            if self.protocol.holds_output() {
                return Ok(());
            }
        }
        self.output.send_all(&self.out, self.protocol.epoch())?;
        self.out.clear();
        Ok(())
    }

    /// Handles one record at processing time `now` (epoch ms); a poison record (`poison`)
    /// rewinds the worker to its last checkpoint.
    pub(super) fn handle(&mut self, msg: &Record, now: i64) -> Result<(), RunError> {
        let stream = Stream {
            side: msg.side,
            task: msg.task,
            source: msg.source,
        };
        if let Some(why) = self.poisoned.get(stream, msg.offset) {
            // Met again after the rewind its poison caused: not processed again.
            self.undecodable(msg, &why)?;
            self.protocol.consumed(stream, msg.offset);
            return Ok(());
        }
        let rec = InRecord {
            side: msg.side,
            partition: msg.task,
            timestamp: msg.timestamp,
            key: msg.key.as_deref(),
            value: msg.value.as_deref(),
        };
        let before = self.out.len();
        let processed = match self.process_caught(&rec, now) {
            Ok(processed) => processed,
            Err(message) => return self.rewind(msg, Poison::Panic(message)),
        };
        if let Some(size) = self.output.oversized(&self.out, before) {
            let limit = self.output.max_bytes();
            return self.rewind(msg, Poison::Oversized { size, limit });
        }
        if let Some(why) = self.processor.take_violation() {
            self.copartition_violation(msg, why)?;
        }
        match processed {
            Ok(()) => {}
            Err(RecordError::Decode(e)) => self.undecodable(msg, &e.to_string())?,
            Err(RecordError::State(e)) => return Err(e.into()),
        }
        self.protocol.consumed(stream, msg.offset);
        Ok(())
    }

    /// `SIDEJOIN_ON_ERROR` for a record that could not be processed, for `why`.
    fn undecodable(&mut self, msg: &Record, why: &str) -> Result<(), RunError> {
        let (side, partition, offset) = (msg.side, msg.task, msg.offset);
        let topic = self.inputs.topic(side);
        match self.processor.dispatch() {
            ErrorAction::Fail => Err(RunError::Failed {
                topic: topic.to_owned(),
                partition,
                offset,
                side,
                error: abbreviate(why).into_owned(),
            }),
            ErrorAction::DeadLetter => {
                if self.protocol.holds_output() {
                    // Into the transaction, which a checkpoint in flight has: it lands first
                    // (an abort is handled by the run loop: this record is consumed again).
                    self.protocol.settle()?;
                }
                tracing::debug!(topic, partition, "dead-lettering: {}", abbreviate(why));
                let dead = Dead {
                    msg,
                    topic,
                    reason: why,
                };
                self.output.dead_letter(&dead, self.protocol.epoch())
            }
            ErrorAction::Skip => {
                self.skipped_logged += 1;
                if self.skipped_logged.is_power_of_two() {
                    tracing::warn!(
                        topic,
                        partition,
                        offset,
                        "skipping undecodable record ({} so far): {}",
                        self.skipped_logged,
                        abbreviate(why)
                    );
                }
                Ok(())
            }
        }
    }

    /// A record whose key does not carry its join key: logged once per partition, or the end
    /// of the run (`SIDEJOIN_ON_COPARTITION_VIOLATION=fail`, the record not applied).
    fn copartition_violation(&mut self, msg: &Record, why: String) -> Result<(), RunError> {
        let side = msg.side;
        let warn = self.cfg.process.on_copartition_violation == OnViolation::Warn;
        if warn && !self.violations_logged.insert((side, msg.task)) {
            // Counted already (the pipeline did); logged once per partition.
            return Ok(());
        }
        let topic = self.inputs.topic(side);
        let other = self.inputs.topic(side.other());
        let fix = crate::copartition::fix(self.cfg, side);
        if !warn {
            return Err(RunError::Copartition {
                topic: topic.to_owned(),
                partition: msg.task,
                offset: msg.offset,
                side,
                why,
                fix,
            });
        }
        tracing::warn!(
            topic,
            partition = msg.task,
            offset = msg.offset,
            "the {side} topic `{topic}` is not co-partitioned with `{other}` by the join key: {why}; rows of one join key \
             on different partitions join against part of the other side only (counted in \
             sidejoin_copartition_violations_total, logged once per partition): {fix}"
        );
        Ok(())
    }
}
