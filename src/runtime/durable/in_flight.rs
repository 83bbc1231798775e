//! A checkpoint in flight: steps 2–3 of the protocol (`durable`'s module doc) — its output
//! acknowledged (at least once), its input offsets added to its transaction and the transaction
//! committed — on a thread of their own, while the worker processes the next checkpoint.
//!
//! At most one checkpoint is in flight. The transactional producer goes with it to that thread
//! (`Job::txn`) and comes back when it lands (`Landed`): while it is away the worker cannot
//! send anything into a transaction — the type says so. The worker waits for it to land
//! (`Protocol::settle`) before it seals the next checkpoint, before a revocation is acknowledged,
//! before any abort or discard, and under `exactly_once` before it sends output again (output
//! goes into the transaction; librdkafka refuses records while one commits). Only a checkpoint
//! that landed committed is persisted to RocksDB, so RocksDB is never ahead of what committed.
//!
//! What a crash costs: the checkpoint in flight and the one being processed are consumed again —
//! at most two commit intervals of processing, however slow the commit (the worker processes one
//! interval past a checkpoint in flight, then waits); at least once, their output repeats.

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rdkafka::consumer::ConsumerGroupMetadata;
use rdkafka::producer::{BaseProducer, Producer};
use rdkafka::TopicPartitionList;
use rustc_hash::FxHashMap;
use sidejoin_store::Checkpoint;

use crate::kafka::deliveries::Deliveries;
use crate::kafka::transactions::{Transactions, TxnError};
use crate::metrics::{Step, WorkerMetrics};

use super::super::streams::Stream;
use super::Fault;

/// Waiting longer than this for output acknowledgements makes the instance not ready.
const STALLED: Duration = Duration::from_secs(2);

/// How often a stalled wait reports that it is alive (the watchdog's progress).
const REPORT: Duration = Duration::from_millis(100);

/// What a sealed checkpoint hands to its commit.
pub(super) struct Job {
    /// The transactional producer, its changelog records sent into the open transaction.
    pub txn: Transactions,
    /// The checkpoint's number: outputs are sent under it.
    pub epoch: u64,
    /// At least once: the output producer, whose records of `epoch` and before are
    /// acknowledged before the transaction commits.
    pub output: Option<Arc<BaseProducer<Deliveries>>>,
    /// The consumer group's input offsets (none when every side is broadcast).
    pub offsets: Option<(TopicPartitionList, ConsumerGroupMetadata)>,
    pub metrics: WorkerMetrics,
    pub fault: Fault,
}

/// What the worker keeps of a checkpoint in flight, to persist it when it lands.
pub(super) struct Sealed {
    pub checkpoint: Checkpoint,
    /// Changelog records it mirrored.
    pub mirrored: u64,
    /// The input positions it wrote into the state.
    pub moved: FxHashMap<Stream, i64>,
    /// When closing it began.
    pub started: Instant,
}

/// Why a checkpoint did not commit.
pub(super) enum Failed {
    /// An output record could not be delivered (fatal: the producer gave up on it).
    Delivery(String),
    /// A transactional call failed (abortable unless `fatal`).
    Txn(TxnError),
}

/// A checkpoint that landed: the producer back, and whether its transaction committed.
pub(super) struct Landed {
    pub txn: Transactions,
    pub result: Result<(), Failed>,
    /// When its commit ended.
    pub at: Instant,
}

pub(super) struct InFlight {
    sealed: Sealed,
    commit: Commit,
}

/// Where a checkpoint's commit runs.
enum Commit {
    Thread(Joined),
    /// No thread could be had: it ran on the worker's, and has landed.
    Done(Box<Landed>),
}

/// The commit's thread, joined when dropped: a worker that stops with a checkpoint in flight
/// (an error) waits for it to land, so nothing goes on behind its back (the commit is bounded
/// by the transactional calls' own limits).
struct Joined(Option<JoinHandle<Landed>>);

impl Drop for Joined {
    fn drop(&mut self) {
        if let Some(thread) = self.0.take() {
            let _ = thread.join();
        }
    }
}

impl InFlight {
    /// Commits `job` on a thread of its own (or here, when no thread can be had).
    pub(super) fn start(job: Job, sealed: Sealed) -> Self {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let spawned = std::thread::Builder::new()
            .name("checkpoint-commit".into())
            .spawn(move || {
                let job: Job = rx.recv().expect("sent below");
                land(job)
            });
        let commit = match spawned {
            Ok(thread) => {
                tx.send(job).expect("the thread waits for it");
                Commit::Thread(Joined(Some(thread)))
            }
            Err(e) => {
                tracing::debug!("no thread for the checkpoint's commit ({e}): committing here");
                Commit::Done(Box::new(land(job)))
            }
        };
        InFlight { sealed, commit }
    }

    /// Whether it has landed (waiting would not block).
    pub(super) fn landed(&self) -> bool {
        match &self.commit {
            Commit::Thread(Joined(Some(thread))) => thread.is_finished(),
            Commit::Thread(Joined(None)) | Commit::Done(_) => true,
        }
    }

    /// Waits until it lands.
    pub(super) fn wait(self) -> (Sealed, Landed) {
        let landed = match self.commit {
            Commit::Thread(mut joined) => {
                match joined.0.take().expect("joined once").join() {
                    Ok(landed) => landed,
                    // The commit's thread only calls librdkafka and counts: a panic there is a
                    // bug.
                    Err(panic) => std::panic::resume_unwind(panic),
                }
            }
            Commit::Done(landed) => *landed,
        };
        (self.sealed, landed)
    }
}

/// Steps 2–3 for `job`: its output acknowledged (at least once), its offsets and commit.
fn land(mut job: Job) -> Landed {
    let result = commit(&mut job);
    Landed {
        txn: job.txn,
        result,
        at: Instant::now(),
    }
}

fn commit(job: &mut Job) -> Result<(), Failed> {
    let mut at = Instant::now();
    if let Some(output) = &job.output {
        await_output(output, job.epoch, &job.metrics)?;
    }
    phase(&job.metrics, "output", &mut at);
    if let Some((offsets, group)) = job.offsets.take() {
        job.txn.send_offsets(&offsets, group).map_err(Failed::Txn)?;
    }
    phase(&job.metrics, "offsets", &mut at);
    if job.fault == Fault::HoldCommit && job.epoch == 2 {
        tracing::warn!("SJ_TEST_FAULT=hold_commit: checkpoint 2's transaction is held open");
        loop {
            std::thread::sleep(Duration::from_secs(1));
        }
    }
    job.txn.commit().map_err(Failed::Txn)?;
    phase(&job.metrics, "commit", &mut at);
    match job.txn.deliveries().failure() {
        Some(e) => Err(Failed::Delivery(e)),
        None => Ok(()),
    }
}

/// `phase` of closing a checkpoint ended now: its time since `at` is observed, and `at`
/// becomes now.
pub(super) fn phase(metrics: &WorkerMetrics, phase: &str, at: &mut Instant) {
    let now = Instant::now();
    metrics.observe_checkpoint_phase(phase, (now - *at).as_secs_f64());
    *at = now;
}

/// Step 2, at least once: every output record sent under `epoch` or before is acknowledged
/// (the instance is not ready while that takes long).
fn await_output(
    output: &BaseProducer<Deliveries>,
    epoch: u64,
    metrics: &WorkerMetrics,
) -> Result<(), Failed> {
    let deliveries = output.context();
    let waiting = Instant::now();
    let mut stalled = false;
    let mut reported = waiting;
    while deliveries.outstanding_through(epoch) > 0 {
        if let Some(e) = deliveries.failure() {
            return Err(Failed::Delivery(e));
        }
        crate::kafka::flush::serve(output);
        if stalled && reported.elapsed() >= REPORT {
            metrics.step(Step::WaitingForKafka);
            reported = Instant::now();
        }
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
    match deliveries.failure() {
        Some(e) => Err(Failed::Delivery(e)),
        None => Ok(()),
    }
}
