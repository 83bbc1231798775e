//! Poison records: one whose processing panics (decoding, joining or encoding it), or whose
//! output holds a record over the producer's `message.max.bytes`. Either is handled as a decode
//! error under `SIDEJOIN_ON_ERROR` (the panic message or the size as its reason), and the process
//! goes on.
//!
//! **What is guaranteed.** A poison record has no effect: not on the state, the changelog, the
//! output or the processor's memory. A panic can stop the engine half-way through a record —
//! some of its state writes made, stream times, row counts or interval buffers half-updated —
//! and the store's open write buffer holds every write since the last checkpoint, the record's
//! among them, with nothing to tell them apart. So the record's effects cannot be peeled off;
//! the worker drops everything since its last checkpoint instead, as for an aborted transaction
//! (`rewind`): the open transaction is aborted (with it, under `exactly_once`, the output and
//! dead letters sent since), the store's unpersisted writes are discarded and each task's cache
//! of decoded groups released (`Checkpointed::discard_unpersisted`, `Processor::revoked`), the
//! processor is rebuilt (`Processor::reset`), and the tasks are loaded again from what is
//! persisted locally — exactly the last committed checkpoint (`Protocol::rewound`) — and
//! consumed again from the offsets it records. The poison record is remembered by its stream
//! and offset until a commit covers it: met again, it is not processed but handled under
//! `SIDEJOIN_ON_ERROR` at once, so
//! its dead letter and its offset go in the same checkpoint (the same transaction under
//! `exactly_once`). The records around it are processed again as if it never existed; under
//! `at_least_once` the outputs they had already written are written again (duplicates, as after
//! a crash).
//!
//! Its cost: up to one `SIDEJOIN_COMMIT_INTERVAL` of the worker's records processed again per
//! poison record. What is not caught: a panic outside a record (a checkpoint, processing time),
//! and an abort (a stack overflow, memory exhausted) — bounded decoders keep input from causing
//! those. A record remembered as poison is processed afresh after a restart (and found poison
//! again).
//!
//! The in-memory run mode of benchmarks (`RunMode::JoinInMemory`) has nothing persisted to go
//! back to: a rewind there empties its tasks' state, as an aborted transaction does.
//!
//! What a rewind does not undo: the counters (`sidejoin_records_in_total` counts the records
//! processed again once more, as after an aborted transaction).

use std::panic::{catch_unwind, AssertUnwindSafe};

use rustc_hash::FxHashMap;

use crate::change::Partition;

use super::super::dead_letter::panic_message;
use super::super::input::Record;
use super::super::processor::{InRecord, RecordError};
use super::super::streams::Stream;
use super::super::RunError;
use super::assignment::Restore;
use super::Worker;
use sidejoin_store::Checkpointed;

/// Records found poison whose offsets are not committed yet: (stream, offset) → why. An entry
/// stays until a checkpoint covers it: another rewind before that meets the record again.
#[derive(Default)]
pub(super) struct Poisoned(FxHashMap<(Stream, i64), String>);

impl Poisoned {
    /// Why the record at `offset` of `stream` is poison, if it is.
    #[inline]
    pub(super) fn get(&self, stream: Stream, offset: i64) -> Option<String> {
        if self.0.is_empty() {
            return None;
        }
        self.0.get(&(stream, offset)).cloned()
    }

    /// Forgets the records a commit covered: those below their stream's next offset (`next`;
    /// `None` while nothing of it is consumed), and those of tasks no longer `owned` (a next
    /// owner meets them afresh).
    pub(super) fn committed(
        &mut self,
        next: impl Fn(Stream) -> Option<i64>,
        owned: impl Fn(Partition) -> bool,
    ) {
        self.0.retain(|(stream, offset), _| {
            owned(stream.task) && next(*stream).is_none_or(|n| *offset >= n)
        });
    }
}

/// Why a record is poison.
pub(super) enum Poison {
    /// Processing it panicked with this message.
    Panic(String),
    /// It caused an output record of `size` bytes, over the producer's `limit`.
    Oversized { size: usize, limit: usize },
}

impl Poison {
    /// The `reason` label of `sidejoin_poison_records_total`.
    fn label(&self) -> &'static str {
        match self {
            Poison::Panic(_) => "panic",
            Poison::Oversized { .. } => "oversized_output",
        }
    }

    /// The reason its dead letter and log lines give.
    fn reason(&self) -> String {
        match self {
            Poison::Panic(message) => format!("processing the record panicked: {message}"),
            Poison::Oversized { size, limit } => format!(
                "the record causes an output record of {size} bytes, over the producer's message.max.bytes ({limit})"
            ),
        }
    }
}

impl<S: Checkpointed> Worker<'_, S> {
    /// Runs the processor on `rec`, appending to `self.out`; `Err` with the panic's message
    /// when it panicked (then the worker must `rewind`: what it did is half done).
    pub(super) fn process_caught(
        &mut self,
        rec: &InRecord<'_>,
        now: i64,
    ) -> Result<Result<(), RecordError>, String> {
        let fault = self.fault;
        let state = self.protocol.state();
        let (processor, out) = (&mut *self.processor, &mut self.out);
        // Unwind safety: after a panic nothing the closure touched is used before `rewind`
        // drops or rebuilds it.
        catch_unwind(AssertUnwindSafe(|| {
            let processed = processor.process(state, rec, now, out);
            fault.panic_on_marker(rec.value);
            processed
        }))
        .map_err(|payload| panic_message(payload.as_ref()))
    }

    /// Marks `msg` poison and drops everything since the last checkpoint: the open transaction,
    /// the unpersisted state, the processor's memory and the outputs not sent; then restores the
    /// assigned tasks and consumes them again from their committed offsets (module doc).
    pub(super) fn rewind(&mut self, msg: &Record, poison: Poison) -> Result<(), RunError> {
        let topic = self.inputs.topic(msg.side).to_owned();
        let why = super::super::dead_letter::abbreviate(&poison.reason()).into_owned();
        tracing::error!(
            topic,
            partition = msg.source,
            offset = msg.offset,
            "poison record: {why}; the worker's tasks go back to their last checkpoint, and the record follows SIDEJOIN_ON_ERROR"
        );
        self.metrics.poison(poison.label());
        let stream = Stream {
            side: msg.side,
            task: msg.task,
            source: msg.source,
        };
        self.poisoned.0.insert((stream, msg.offset), why);
        let at = format!(
            "a poison record at `{topic}` partition {} offset {}",
            msg.source, msg.offset
        );
        match self.protocol.abort(at) {
            RunError::Aborted(_) => self.metrics.transaction(false),
            fatal => return Err(fatal),
        }
        self.discard();
        self.processor.reset();
        let list: Vec<(String, Partition)> = self.assigned.iter().cloned().collect();
        self.take_over(list, Restore::Local)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::change::Side;

    #[test]
    fn a_commit_forgets_the_poison_records_it_covered() {
        let stream = |side| Stream {
            side,
            task: 0,
            source: 0,
        };
        let mut p = Poisoned::default();
        for (side, offset) in [(Side::Left, 4), (Side::Left, 9), (Side::Right, 4)] {
            p.0.insert((stream(side), offset), format!("{side:?} {offset}"));
        }
        // The left stream committed up to offset 5; nothing of the right one is consumed yet.
        p.committed(|s| (s.side == Side::Left).then_some(5), |task| task == 0);
        assert_eq!(p.get(stream(Side::Left), 4), None);
        assert_eq!(p.get(stream(Side::Left), 9).as_deref(), Some("Left 9"));
        assert_eq!(p.get(stream(Side::Right), 4).as_deref(), Some("Right 4"));
        // Task 0 was given up.
        p.committed(|_| None, |_| false);
        assert_eq!(p.get(stream(Side::Left), 9), None);
    }
}
