//! One worker of `sidejoin run` (SPEC §6–8), on one blocking thread that owns its state: poll a
//! batch of records (up to `POLL_BATCH`, or `POLL_TIME`) in timestamp order (`input`) →
//! process each → send what the batch caused; every commit interval close a checkpoint
//! (`durable`: state, offsets and changelog in one transaction). Rebalance events arrive from
//! the consumer context over a channel and are handled here, before librdkafka moves on (a
//! rendezvous: revoked partitions are committed, new ones restored and assigned at the offsets
//! their state reflects; `assignment`). Undecodable records follow `SIDEJOIN_ON_ERROR`
//! (`records`), and so do poison records — a panic while processing one, or an output record
//! over the producer's size limit — after the worker's tasks are rewound to their last
//! checkpoint (`poison`).
//!
//! What it does not do: decide the topology (the plan), check topics or probe keys
//! (`startup`, before any worker starts), or route (`router`).

mod assignment;
mod batch;
mod poison;
mod records;
mod start;

use std::collections::{BTreeSet, HashSet};
use std::sync::mpsc::Receiver;
use std::sync::Arc;

use rdkafka::consumer::BaseConsumer;
use tokio_util::sync::CancellationToken;

use crate::change::{Partition, Side};
use crate::config::Config;
use crate::kafka::context::{Assignment, JoinContext};
use crate::metrics::WorkerMetrics;
use crate::sink::Records;

use super::broadcast::Broadcast;
use super::durable::Protocol;
use super::faults::Fault;
use super::input::{Lanes, Merge};
use super::output::Output;
use super::processor::Processor;
use super::streams::Inputs;
use poison::Poisoned;

pub(super) use start::{run_blocking, Job};

/// The group consumer of the grouped inputs (shared with its partition queues).
type Group = Arc<BaseConsumer<JoinContext>>;

/// Wall-clock time, epoch ms: processing time, for max-wait and idle timeouts only.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// A worker's loop and everything it owns; `S` is its state store.
struct Worker<'a, S> {
    cfg: &'a Config,
    output: Output,
    events: Receiver<Assignment>,
    processor: &'a mut dyn Processor<S>,
    metrics: &'a WorkerMetrics,
    shutdown: &'a CancellationToken,
    inputs: Inputs,
    /// A consumer per broadcast input (`SIDEJOIN_BROADCAST`; a star join may broadcast several).
    broadcast: Vec<Broadcast>,
    /// `(topic, partition)` pairs currently assigned by the group.
    assigned: HashSet<(String, Partition)>,
    /// The tasks whose state this worker holds.
    owned: BTreeSet<Partition>,
    /// The state and its checkpoint protocol.
    protocol: Protocol<S>,
    /// The group consumer's partition queues.
    lanes: Lanes<JoinContext>,
    /// The assigned partitions' records, merged by timestamp per task (stream = side).
    merge: Merge,
    out: Records,
    skipped_logged: u64,
    /// The (side, partition)s whose co-partitioning violation was logged.
    violations_logged: HashSet<(Side, Partition)>,
    /// Records found poison, handled under `SIDEJOIN_ON_ERROR` when consumed again.
    poisoned: Poisoned,
    /// `SJ_TEST_FAULT`.
    fault: Fault,
}

impl<S> Worker<'_, S> {
    fn consumer(&self) -> &Group {
        self.lanes.consumer()
    }

    fn side_of(&self, topic: &str) -> Option<Side> {
        self.inputs.side_of(topic)
    }
}
