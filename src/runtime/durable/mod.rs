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
//! Steps 2–3 run off the worker's thread while it processes the next checkpoint (`in_flight`:
//! at most one in flight; the next seal, a revocation, an abort and — under `exactly_once` —
//! output wait for it to land); step 4 follows when it lands (`settle`).
//!
//! So the changelog, read `read_committed`, holds whole checkpoints only: a half-written one is
//! an open or aborted transaction, invisible at restore. RocksDB is never ahead of the
//! changelog, and changelog records are whole values, so restoring from any older local
//! position is idempotent (`restore`). A failed transaction is aborted and everything not
//! persisted is dropped; the partitions are restored again from what was committed.
//!
//! The protocol owns the state (`Protocol::state` lends it to the processor for each record)
//! and alone encodes input positions into it (`positions`). Its steps: `checkpoint` (closing a
//! checkpoint), `mirror` (changelog records), `restore` (taking over tasks).
//!
//! Not here: what a record does to the state (the engine) and how records are fetched
//! (the worker).

mod checkpoint;
pub(super) mod identity;
mod in_flight;
mod load;
mod mirror;
mod positions;
mod restore;

use rustc_hash::FxHashMap;
use sidejoin_store::Checkpointed;

use crate::change::Partition;
use crate::config::Guarantee;
use crate::kafka::context::HelperContext;
use crate::kafka::transactions::{Transactions, TxnError};
use crate::metrics::WorkerMetrics;

use super::processor::Processor;
use super::streams::{Inputs, Stream};
use super::RunError;

pub(super) use checkpoint::Close;
pub(super) use positions::Offsets;

pub(super) use super::faults::Fault;

/// The durable state of one worker's tasks and the protocol that keeps it (module doc).
pub(super) struct Protocol<S> {
    /// The tasks' join state.
    state: S,
    guarantee: Guarantee,
    /// The transactions of changelog records and offsets (and, under `exactly_once`, the
    /// output: then its producer is the output's producer too). `None` exactly while a
    /// checkpoint is in flight: its commit has the producer (`in_flight`).
    txn: Option<Transactions>,
    /// The checkpoint whose commit goes on while the next one is processed.
    in_flight: Option<in_flight::InFlight>,
    /// The changelog topic of each input, in input order; `None` when the state is volatile.
    changelog: Option<Vec<String>>,
    inputs: Inputs,
    /// The number outputs are sent under now.
    epoch: u64,
    /// Each stream's next offset to consume, over everything processed.
    positions: FxHashMap<Stream, i64>,
    /// The positions of the last checkpoint persisted (so committed).
    written: FxHashMap<Stream, i64>,
    fault: Fault,
    /// What `Fault::OffsetsLate` writes: the previous checkpoint's positions.
    previous: Offsets,
    /// The consumer that reads changelogs back at restore.
    restorer: rdkafka::consumer::BaseConsumer<HelperContext>,
    /// Checkpoint phases and transactions; the worker's step while it waits for a checkpoint
    /// in flight.
    metrics: WorkerMetrics,
    /// The changelog topics and the IDs the state directory records (`identity`).
    identity: Vec<(String, String)>,
    /// When they were last checked against the cluster.
    identity_checked: Option<std::time::Instant>,
}

/// What a protocol is made of.
pub(super) struct Parts<S> {
    pub state: S,
    pub guarantee: Guarantee,
    pub txn: Transactions,
    pub changelog: Option<Vec<String>>,
    pub inputs: Inputs,
    pub fault: Fault,
    pub restorer: rdkafka::consumer::BaseConsumer<HelperContext>,
    pub identity: Vec<(String, String)>,
}

impl<S: Checkpointed> Protocol<S> {
    pub(super) fn new(parts: Parts<S>, metrics: &WorkerMetrics) -> Self {
        Protocol {
            state: parts.state,
            guarantee: parts.guarantee,
            txn: Some(parts.txn),
            in_flight: None,
            changelog: parts.changelog,
            inputs: parts.inputs,
            epoch: 1,
            positions: FxHashMap::default(),
            written: FxHashMap::default(),
            fault: parts.fault,
            previous: Offsets::new(),
            restorer: parts.restorer,
            metrics: metrics.clone(),
            identity: parts.identity,
            identity_checked: None,
        }
    }

    /// Registers the transactional producer with the brokers (fencing an earlier incarnation
    /// with the same `transactional.id` and aborting what it left open), then opens the first
    /// transaction.
    pub(super) fn start(&mut self) -> Result<(), RunError> {
        Ok(self.txn().start()?)
    }

    fn begin(&mut self) -> Result<(), RunError> {
        Ok(self.txn().begin()?)
    }

    /// The transactional producer's calls; only when no checkpoint is in flight (`settle`).
    fn txn(&mut self) -> &mut Transactions {
        (self.txn.as_mut()).expect("no checkpoint in flight here: the caller settled it")
    }

    /// The positions of the last checkpoint that committed and was persisted.
    pub(super) fn committed(&self, stream: Stream) -> Option<i64> {
        self.written.get(&stream).copied()
    }

    /// The tasks' state, lent to process a record.
    pub(super) fn state(&mut self) -> &mut S {
        &mut self.state
    }

    /// The number outputs are sent under now.
    pub(super) fn epoch(&self) -> u64 {
        self.epoch
    }

    /// The record at `offset` of `stream` is fully handled: the open checkpoint covers it.
    #[inline]
    pub(super) fn consumed(&mut self, stream: Stream, offset: i64) {
        if self.fault == Fault::OffsetsLate {
            // A stream first consumed since the last checkpoint (no restored position): the
            // late position is where it started, so the first checkpoint of a run is late too.
            let item = self.inputs.item(&stream);
            self.previous.entry((item, stream.task)).or_insert(offset);
        }
        self.positions.insert(stream, offset + 1);
    }

    /// The next offset to consume of `stream`, if known.
    pub(super) fn position(&self, stream: Stream) -> Option<i64> {
        self.positions.get(&stream).copied()
    }

    /// A task restored from state that reflects `stream` up to `next` (exclusive).
    pub(super) fn restored(&mut self, stream: Stream, next: i64) {
        self.positions.insert(stream, next);
        self.written.insert(stream, next);
        if self.fault == Fault::OffsetsLate {
            // The checkpoint before the next one is the one restored: any checkpoint committed
            // before a kill then makes the restart re-apply one.
            let item = self.inputs.item(&stream);
            self.previous.insert((item, stream.task), next);
        }
    }

    /// Releases tasks no longer owned: their state and positions (all committed by then).
    pub(super) fn forget<P: Processor<S> + ?Sized>(
        &mut self,
        processor: &mut P,
        gone: &[Partition],
    ) {
        processor.revoked(&mut self.state, gone);
        self.positions.retain(|s, _| !gone.contains(&s.task));
        self.written.retain(|s, _| !gone.contains(&s.task));
    }

    /// Drops every change not committed and forgets `tasks` (an aborted transaction, a lost
    /// assignment): they are restored from what was committed when assigned again.
    pub(super) fn discard<P: Processor<S> + ?Sized>(
        &mut self,
        processor: &mut P,
        tasks: &[Partition],
    ) {
        if let Err(e) = self.settle() {
            // Every caller settled first (an abort does); nothing is lost here either way.
            tracing::warn!("a checkpoint in flight while its work was dropped: {e}");
        }
        self.state.discard_unpersisted();
        self.forget(processor, tasks);
    }

    /// Aborts the open transaction because of `why`; the caller drops what is not persisted.
    /// A changelog topic replaced under this instance fails every checkpoint: then that is
    /// the error, named (`identity`), and nothing is retried.
    pub(super) fn abort(&mut self, why: String) -> RunError {
        // The checkpoint in flight lands first: persisted if it committed, else it aborted.
        if let Err(e) = self.settle() {
            return e;
        }
        if let Err(replaced) = self.check_identity(true, identity::DESCRIBE_ON_ABORT) {
            return replaced;
        }
        if let Err(e) = self.txn().abort(&why) {
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
