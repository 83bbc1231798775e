//! The durability protocol (SPEC §7): join state, input offsets and changelog topics, owned
//! here and nowhere else.
//!
//! **Invariant.** Every task's state — in RocksDB and in the changelog topics — always
//! corresponds exactly to an input position: the next offset of each of its input streams
//! (both topics' partition of the task, or with a broadcast side every partition of that topic:
//! `streams`), stored in the state itself. No input record's effect is ever applied twice or lost, whatever
//! crashed when.
//!
//! How it holds. Processing runs in checkpoints (`SIDEJOIN_COMMIT_INTERVAL`). Closing one
//! (`commit`), in this order:
//! 1. the input positions that moved are written into the state, and the state's net change
//!    since the last checkpoint is sealed and mirrored to the changelog topics — inside a Kafka
//!    transaction of this instance's transactional producer;
//! 2. `at_least_once`: every output record sent under the checkpoint is acknowledged (output is
//!    not transactional; a crash repeats it). `exactly_once`: the output and dead letters are in
//!    the same transaction;
//! 3. the input offsets are added to the transaction (`send_offsets_to_transaction`, KIP-447:
//!    a member of an older group generation — a zombie — cannot commit), and it commits;
//! 4. only then is the sealed checkpoint written to RocksDB, with the changelog positions it
//!    reflects (local-only numbers, never mirrored).
//!
//! So the changelog, read `read_committed`, holds whole checkpoints only: a half-written one is
//! an open or aborted transaction, invisible at restore. RocksDB is never ahead of the
//! changelog, and changelog records are whole values, so restoring from any older local
//! position is idempotent (`restore`). A failed transaction is aborted and everything not
//! persisted is dropped; the partitions are restored again from what was committed.
//!
//! Not here: what a record does to the state (the engine) and how records are fetched
//! (the run loop).

pub mod restore;

use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, Consumer, ConsumerContext};
use rdkafka::error::KafkaError;
use rdkafka::producer::{BaseProducer, BaseRecord};
use rdkafka::{Offset, TopicPartitionList};
use rustc_hash::FxHashMap;

use crate::change::{Partition, Side};
use crate::config::Guarantee;
use crate::engine::layout;
use crate::kafka::deliveries::{changelog_opaque, Deliveries};
use crate::kafka::transactions::{Transactions, TxnError};
use crate::metrics::WorkerMetrics;
use crate::pipeline::Offsets;

use super::output::Output;
use super::processor::Processor;
use super::streams::{Inputs, Stream};
use super::RunError;

/// Waiting longer than this for output acknowledgements makes the instance not ready.
const STALLED: Duration = Duration::from_secs(2);

/// How long one wait for acknowledgements blocks before the loop looks around again.
const ACK_WAIT: Duration = Duration::from_millis(10);

/// The local-only name under which a partition's state records the changelog position of
/// `side` it reflects.
pub fn position_name(side: Side) -> &'static [u8] {
    match side {
        Side::Left => b"changelog/left",
        Side::Right => b"changelog/right",
    }
}

/// A fault the kill tests inject to prove they catch it: the input offsets written into the
/// state are those of the previous checkpoint (`SIDEJOIN_TEST_FAULT=offsets_late`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    None,
    OffsetsLate,
}

pub struct Protocol {
    guarantee: Guarantee,
    /// The transactions of changelog records and offsets (and, under `exactly_once`, the
    /// output: then its producer is the output's producer too).
    txn: Transactions,
    /// The changelog topic of each side; `None` when the state is volatile.
    changelog: Option<[String; 2]>,
    inputs: Inputs,
    /// The number outputs are sent under now.
    epoch: u64,
    /// Each stream's next offset to consume, over everything processed.
    positions: FxHashMap<Stream, i64>,
    /// The positions last written into the state.
    written: FxHashMap<Stream, i64>,
    fault: Fault,
    /// What `Fault::OffsetsLate` writes: the previous checkpoint's positions.
    previous: Offsets,
    /// Readiness while acknowledgements are awaited.
    metrics: WorkerMetrics,
}

/// A changelog record of `key` (a stored state key) is sent to its side's topic, to the
/// partition the key belongs to.
fn mirror_to(
    producer: &BaseProducer<Deliveries>,
    topics: &[String; 2],
    key: &[u8],
    value: Option<&[u8]>,
) -> Result<(), KafkaError> {
    let side = layout::mirror_side(key);
    let partition = layout::partition_of(key).unwrap_or(0);
    let mut record: BaseRecord<'_, [u8], [u8], usize> =
        BaseRecord::with_opaque_to(&topics[side.index()], changelog_opaque(side))
            .key(key)
            .partition(partition);
    if let Some(v) = value {
        record = record.payload(v);
    }
    super::output::send_when_room(producer, record, "changelog")
}

impl Protocol {
    pub fn new(
        guarantee: Guarantee,
        txn: Transactions,
        changelog: Option<[String; 2]>,
        inputs: Inputs,
        fault: Fault,
        metrics: &WorkerMetrics,
    ) -> Self {
        Protocol {
            guarantee,
            txn,
            changelog,
            inputs,
            epoch: 1,
            positions: FxHashMap::default(),
            written: FxHashMap::default(),
            fault,
            previous: Offsets::new(),
            metrics: metrics.clone(),
        }
    }

    /// Registers the transactional producer with the brokers (fencing an earlier incarnation
    /// with the same `transactional.id` and aborting what it left open), then opens the first
    /// transaction.
    pub fn start(&mut self) -> Result<(), RunError> {
        Ok(self.txn.start()?)
    }

    fn begin(&mut self) -> Result<(), RunError> {
        Ok(self.txn.begin()?)
    }

    /// The changelog topics, when the state is mirrored.
    pub fn changelog(&self) -> Option<&[String; 2]> {
        self.changelog.as_ref()
    }

    /// The number outputs are sent under now.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// The record at `offset` of `stream` is fully handled: the open checkpoint covers it.
    #[inline]
    pub fn consumed(&mut self, stream: Stream, offset: i64) {
        self.positions.insert(stream, offset + 1);
    }

    /// The next offset to consume of `stream`, if known.
    pub fn position(&self, stream: Stream) -> Option<i64> {
        self.positions.get(&stream).copied()
    }

    /// A task restored from state that reflects `stream` up to `next` (exclusive).
    pub fn restored(&mut self, stream: Stream, next: i64) {
        self.positions.insert(stream, next);
        self.written.insert(stream, next);
    }

    /// Forgets tasks no longer owned.
    pub fn forget(&mut self, gone: &[Partition]) {
        self.positions.retain(|s, _| !gone.contains(&s.task));
        self.written.retain(|s, _| !gone.contains(&s.task));
    }

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
    pub fn commit<C: ConsumerContext>(
        &mut self,
        processor: &mut dyn Processor,
        output: &Output,
        consumer: &BaseConsumer<C>,
    ) -> Result<(), RunError> {
        let started = Instant::now();
        // A handle (not a borrow of self): the steps below mutate the protocol.
        let metrics = self.metrics.clone();
        self.begin()?;
        // 1. Positions that moved, and the state's net change, into the transaction.
        let moved: FxHashMap<Stream, i64> = (self.positions.iter())
            .filter(|(k, o)| self.written.get(k) != Some(o))
            .map(|(k, o)| (*k, *o))
            .collect();
        let now_offsets = self.offsets(&moved);
        let state_offsets = match self.fault {
            Fault::None => now_offsets.clone(),
            Fault::OffsetsLate => std::mem::replace(&mut self.previous, now_offsets.clone()),
        };
        let mut mirrored = 0u64;
        let mut failed: Option<KafkaError> = None;
        let checkpoint = {
            let (txn, topics) = (self.txn.producer(), &self.changelog);
            processor
                .seal(&state_offsets, &mut |key, value| {
                    if let (Some(topics), None) = (topics, &failed) {
                        mirrored += 1;
                        if let Err(e) = mirror_to(txn, topics, key, value) {
                            failed = Some(e);
                        }
                    }
                })
                .map_err(RunError::State)?
        };
        if let Some(e) = failed {
            return Err(self.abort(format!("a changelog record could not be sent: {e}")));
        }
        // 2. At least once: the checkpoint's output is acknowledged before it commits.
        if self.guarantee == Guarantee::AtLeastOnce {
            let waiting = Instant::now();
            let mut stalled = false;
            while output.deliveries().outstanding_through(self.epoch) > 0 {
                if let Some(e) = output.deliveries().failure() {
                    return Err(RunError::Delivery(e));
                }
                output.poll(ACK_WAIT);
                if !stalled && waiting.elapsed() > STALLED {
                    tracing::warn!("output not acknowledged for {STALLED:?}: not ready; waiting");
                    metrics.set_ready(false);
                    stalled = true;
                }
            }
            if stalled {
                tracing::info!("output acknowledged again");
                metrics.set_ready(true);
            }
        }
        if let Some(e) = output.deliveries().failure() {
            return Err(RunError::Delivery(e));
        }
        // 3. The input offsets of every partition into the transaction; commit.
        let all = self.group_offsets();
        if !all.is_empty() {
            let mut tpl = TopicPartitionList::new();
            for ((topic, p), o) in &all {
                let _ = tpl.add_partition_offset(topic, *p, Offset::Offset(*o));
            }
            let Some(group) = consumer.group_metadata() else {
                return Err(self.abort("the consumer has no group metadata".into()));
            };
            if let Err(e) = self.txn.send_offsets(&tpl, &group) {
                return Err(self.abort_on(e));
            }
        }
        self.commit_transaction()?;
        if let Some(e) = self.txn.deliveries().failure() {
            return Err(RunError::Delivery(e));
        }
        metrics.transaction(true);
        metrics.mirrored(mirrored);
        // 4. Only now: the checkpoint is durable locally, with the changelog positions.
        processor.persist(checkpoint).map_err(RunError::State)?;
        self.record_positions(processor)?;
        self.written.extend(moved);
        self.epoch += 1;
        metrics.observe_commit(started.elapsed().as_secs_f64());
        processor.publish(&metrics);
        self.begin()
    }

    /// Mirrors a partition's local entries into its (empty) changelog topics in one committed
    /// transaction (a state directory older than its changelog), and records the positions.
    pub fn mirror_local(
        &mut self,
        processor: &mut dyn Processor,
        partition: Partition,
    ) -> Result<u64, RunError> {
        let Some(topics) = self.changelog.clone() else {
            return Ok(0);
        };
        self.begin()?;
        let mut n = 0u64;
        let mut failed = None;
        if let Some(store) = processor.store() {
            store.entries(partition, &mut |k, v| {
                if failed.is_none() {
                    n += 1;
                    failed = mirror_to(self.txn.producer(), &topics, k, Some(v)).err();
                }
            });
        }
        if let Some(e) = failed {
            return Err(self.abort(format!("a changelog record could not be sent: {e}")));
        }
        self.commit_transaction()?;
        self.record_positions(processor)?;
        self.begin()?;
        Ok(n)
    }

    /// Commits the open transaction; aborts it when that fails.
    fn commit_transaction(&mut self) -> Result<(), RunError> {
        if let Err(e) = self.txn.commit() {
            return Err(self.abort_on(e));
        }
        Ok(())
    }

    /// Records, beside the local state, the changelog positions the committed transaction
    /// reached (after its checkpoint is persisted: a position never runs ahead of the state).
    fn record_positions(&self, processor: &mut dyn Processor) -> Result<(), RunError> {
        let positions = self.txn.deliveries().take_changelog_positions();
        if let Some(store) = processor.store() {
            for ((side, partition), next) in positions {
                store.set_local(partition, position_name(Side::BOTH[side]), next)?;
            }
        }
        Ok(())
    }

    /// Aborts the open transaction because of `why`; the caller drops what is not persisted.
    pub fn abort(&mut self, why: String) -> RunError {
        if let Err(e) = self.txn.abort(&why) {
            return e.into();
        }
        self.written.clear();
        self.positions.clear();
        RunError::Aborted(why)
    }

    /// A failed call: fatal ones end the run, others abort the checkpoint.
    fn abort_on(&mut self, e: TxnError) -> RunError {
        if e.fatal {
            return e.into();
        }
        self.abort(e.to_string())
    }
}
