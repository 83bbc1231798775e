//! One consumer's assigned partitions, each with its own librdkafka queue, feeding a `Merge`.
//! Every reader of partitions in timestamp order uses it: the group's tasks, the broadcast
//! consumer and the repartition router.
//!
//! Each assigned `(topic, partition)` gets its own queue (`split_partition_queue`) right after
//! `assign`, so end-of-partition events arrive per partition: that is what "caught up" means to
//! the merge. A queue is polled only while fewer than `per_lane` of its records are buffered in
//! the merge, which bounds memory without ever blocking another stream. The consumer's own
//! queue still carries callbacks (rebalances, statistics, errors) and is polled by `serve`; a
//! record that arrives there joins the merge like any other. One can: librdkafka forwards a
//! partition's fetch queue to the consumer's queue when its fetch starts, and that start may
//! come after the split. Left so, every later record of that partition would arrive there,
//! without its end-of-partition events (the merge would hold the other streams
//! `SIDEJOIN_MAX_TASK_IDLE` per record), so `serve` splits such a partition's queue again; a
//! queue silent for `SILENT_MS` is split again too.
//!
//! **Invariant:** each partition's records reach the merge in offset order — the positions a
//! checkpoint commits (and so exactly once) rely on it. Records left on the consumer's queue
//! are older than any on the partition's queue after the new split, so that queue is not
//! polled until the consumer's queue is drained (`Lane::strays`). (Polling it meanwhile took
//! later records first: a checkpoint then committed a position past records not yet
//! processed, and a kill lost them — or, moving the position back, applied records twice.)
//!
//! What it does not do: decide offsets or assignments (the owner assigns the consumer, then
//! calls `assigned`), commit, or process records.

use std::sync::Arc;
use std::time::Duration;

use rdkafka::consumer::base_consumer::PartitionQueue;
use rdkafka::consumer::{BaseConsumer, ConsumerContext};
use rdkafka::error::KafkaError;
use rdkafka::message::Message;

use super::merge::Merge;
use super::record::Record;
use crate::change::{Partition, Side};

/// How long a partition queue may stay silent — polled, yet neither a record nor its end of
/// partition — before it is split again. librdkafka reports the end of a partition within a
/// fetch wait, so a silent queue means the broker is unreachable or its records go elsewhere.
const SILENT_MS: i64 = 10_000;

/// Most records taken from the consumer's own queue per `serve` (a partition with records
/// left there is not read from its own queue meanwhile: `Lane::strays`).
const STRAY_DRAIN: usize = 4_096;

/// Where one assigned partition's records go: a task's stream of the merge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LaneSpec {
    pub side: Side,
    pub topic: String,
    pub partition: Partition,
    pub task: Partition,
    pub stream: usize,
}

struct Lane<C: ConsumerContext + 'static> {
    spec: LaneSpec,
    queue: Option<PartitionQueue<C>>,
    /// The last record or end of partition it delivered, or when it was split.
    heard_at: i64,
    /// It reported the end of the partition, and no record came since.
    at_end: bool,
    /// Records of it came on the consumer's own queue, and more may wait there: its own queue
    /// (holding later records) is not polled until that queue is drained, so that its records
    /// reach the merge in offset order.
    strays: bool,
}

/// What `serve` found on the consumer's own queue besides records.
pub(crate) enum Served {
    /// Nothing more there now.
    Idle,
    /// An error event (not end of partition): the owner decides whether it is fatal.
    Error(KafkaError),
}

pub(crate) struct Lanes<C: ConsumerContext + 'static> {
    consumer: Arc<BaseConsumer<C>>,
    lanes: Vec<Lane<C>>,
    per_lane: usize,
}

impl<C: ConsumerContext + 'static> Lanes<C> {
    /// Lanes of `consumer`, each polled while fewer than `per_lane` of its records wait.
    pub(crate) fn new(consumer: BaseConsumer<C>, per_lane: usize) -> Self {
        Lanes {
            consumer: Arc::new(consumer),
            lanes: Vec::new(),
            per_lane,
        }
    }

    pub(crate) fn consumer(&self) -> &Arc<BaseConsumer<C>> {
        &self.consumer
    }

    /// The consumer was just assigned `specs`: every partition gets its own queue. Nothing
    /// buffered from before is kept by the owner (the assignment set the positions anew).
    pub(crate) fn assigned(&mut self, specs: Vec<LaneSpec>, now: i64) {
        self.lanes = specs
            .into_iter()
            .map(|spec| Lane {
                queue: self
                    .consumer
                    .split_partition_queue(&spec.topic, spec.partition),
                spec,
                heard_at: now,
                at_end: false,
                strays: false,
            })
            .collect();
    }

    /// Drops every queue (before an unassign or a new assignment).
    pub(crate) fn clear(&mut self) {
        self.lanes.clear();
    }

    /// Polls every queue below its limit without waiting; returns how many records arrived.
    pub(crate) fn fill(&mut self, merge: &mut Merge, now: i64) -> usize {
        let mut n = 0;
        for lane in &mut self.lanes {
            if lane.strays {
                continue;
            }
            let (task, stream) = (lane.spec.task, lane.spec.stream);
            let mut polled = false;
            while merge.buffered(task, stream) < self.per_lane {
                let Some(queue) = &lane.queue else { break };
                polled = true;
                match queue.poll(Duration::ZERO) {
                    Some(Ok(msg)) => {
                        let mut rec = Record::copy(&msg, lane.spec.side, now);
                        rec.task = task;
                        merge.push(task, stream, rec, now);
                        (lane.heard_at, lane.at_end) = (now, false);
                        n += 1;
                    }
                    Some(Err(KafkaError::PartitionEOF(_))) => {
                        merge.caught_up(task, stream, now);
                        (lane.heard_at, lane.at_end) = (now, true);
                    }
                    Some(Err(e)) => {
                        tracing::warn!(
                            "consume error on `{}` partition {}: {e}",
                            lane.spec.topic,
                            lane.spec.partition
                        );
                        break;
                    }
                    None => break,
                }
            }
            if polled && !lane.at_end && now - lane.heard_at >= SILENT_MS {
                tracing::warn!(
                    topic = lane.spec.topic,
                    partition = lane.spec.partition,
                    "no record and no end of partition for {} s (no broker reachable, or its records delivered elsewhere): splitting its queue again",
                    SILENT_MS / 1_000
                );
                lane.queue = split(&self.consumer, &lane.spec);
                lane.heard_at = now;
            }
        }
        n
    }

    /// Serves the consumer's own queue, waiting up to `wait` for its first event (callbacks
    /// run meanwhile); records found there join the merge and their partition's queue is
    /// split again. Returns the first error event, if any, after the records before it.
    pub(crate) fn serve(&mut self, merge: &mut Merge, wait: Duration, now: i64) -> Served {
        let mut wait = wait;
        for _ in 0..STRAY_DRAIN {
            match self.consumer.poll(wait) {
                Some(Ok(msg)) => {
                    let (topic, partition) = (msg.topic(), msg.partition());
                    let Some(lane) = self
                        .lanes
                        .iter_mut()
                        .find(|l| l.spec.partition == partition && l.spec.topic == topic)
                    else {
                        continue;
                    };
                    let mut rec = Record::copy(&msg, lane.spec.side, now);
                    drop(msg);
                    rec.task = lane.spec.task;
                    merge.push(lane.spec.task, lane.spec.stream, rec, now);
                    (lane.heard_at, lane.at_end, lane.strays) = (now, false, true);
                    lane.queue = split(&self.consumer, &lane.spec);
                    tracing::debug!(
                        topic = lane.spec.topic,
                        partition,
                        "a record came on the consumer's queue (its fetch started after the split): the partition's queue is split again"
                    );
                    wait = Duration::ZERO;
                }
                Some(Err(KafkaError::PartitionEOF(p))) => {
                    // The event names no topic: it is taken only when one lane has that
                    // partition (a consumer of one topic); a group consumer of two topics gets
                    // its ends on the partition queues.
                    let mut matching = self.lanes.iter_mut().filter(|l| l.spec.partition == p);
                    if let (Some(lane), None) = (matching.next(), matching.next()) {
                        merge.caught_up(lane.spec.task, lane.spec.stream, now);
                        lane.at_end = true;
                    }
                    wait = Duration::ZERO;
                }
                Some(Err(e)) => return Served::Error(e),
                None => {
                    // Drained: every stray record is in the merge, before any later record of
                    // its partition (those are on the partition's queue since the new split).
                    for lane in &mut self.lanes {
                        lane.strays = false;
                    }
                    return Served::Idle;
                }
            }
        }
        Served::Idle
    }
}

fn split<C: ConsumerContext + 'static>(
    consumer: &Arc<BaseConsumer<C>>,
    spec: &LaneSpec,
) -> Option<PartitionQueue<C>> {
    consumer.split_partition_queue(&spec.topic, spec.partition)
}
