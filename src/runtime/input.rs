//! The run loop's input: one librdkafka queue per assigned `(topic, partition)`, their records
//! copied into the timestamp merge (`merge`) and released in its deterministic order.
//!
//! Each assigned partition of both topics gets its own queue (`split_partition_queue`) right
//! after `assign`, so end-of-partition events arrive per topic and per partition: that is what
//! "caught up" means to the merge. A queue is polled only while fewer than `PER_QUEUE` of its
//! records are buffered, which bounds memory without ever blocking the other side of a
//! partition. The consumer's own queue is still polled by the loop for callbacks (rebalances,
//! statistics, errors); a record that arrives there joins the merge like any other. One can:
//! librdkafka forwards a partition's fetch queue to the consumer's queue when its fetch starts,
//! and that start may come after the split. Left so, every later record of that partition
//! would arrive there, without its end-of-partition events (the merge would hold the other side
//! `SIDEJOIN_MAX_TASK_IDLE` per record: a partition crawling at a record a second), so the
//! loop drains the consumer's queue and splits such a partition's queue again (`resplit`).
//!
//! What it does not do: decide offsets (the loop records what it processed), commit, or
//! process records.

use std::sync::Arc;
use std::time::Duration;

use rdkafka::consumer::base_consumer::PartitionQueue;
use rdkafka::consumer::BaseConsumer;
use rdkafka::error::KafkaError;
use rdkafka::message::{BorrowedMessage, Headers, Message};

use crate::change::{Partition, Side};
use crate::kafka::context::JoinContext;

use super::merge::{Buffered, Merge};

/// Records buffered per `(side, partition)` before its queue is left alone for a while.
pub const PER_QUEUE: usize = 2_048;

/// How long a partition queue may stay silent — polled, yet neither a record nor its end of
/// partition — before it is split again. librdkafka reports the end of a partition within a
/// fetch wait, so a silent queue means the broker is unreachable or its records go elsewhere
/// (see `resplit`).
const SILENT_MS: i64 = 10_000;

/// One assigned `(topic, partition)` and its queue.
struct Lane {
    side: Side,
    topic: String,
    partition: Partition,
    queue: PartitionQueue<JoinContext>,
    /// The last record or end of partition it delivered, or when it was split.
    heard_at: i64,
    /// It reported the end of the partition, and no record came since.
    at_end: bool,
}

impl Lane {
    /// Splits its queue again (see `resplit`).
    fn split_again(&mut self, consumer: &Arc<BaseConsumer<JoinContext>>) -> bool {
        match consumer.split_partition_queue(&self.topic, self.partition) {
            Some(q) => {
                self.queue = q;
                true
            }
            None => false,
        }
    }
}

pub struct Input {
    lanes: Vec<Lane>,
    merge: Merge,
}

/// A consumed record, copied out of librdkafka's message; `now` stands in for a missing
/// timestamp.
pub fn copy(msg: &BorrowedMessage<'_>, side: Side, now: i64) -> Buffered {
    let headers = msg
        .headers()
        .map(|h| {
            h.iter()
                .map(|hd| (hd.key.to_owned(), hd.value.map(<[u8]>::to_vec)))
                .collect()
        })
        .unwrap_or_default();
    Buffered {
        side,
        partition: msg.partition(),
        source: msg.partition(),
        offset: msg.offset(),
        timestamp: msg.timestamp().to_millis().unwrap_or(now),
        key: msg.key().map(<[u8]>::to_vec),
        value: msg.payload().map(<[u8]>::to_vec),
        headers,
    }
}

impl Input {
    pub fn new(max_task_idle_ms: i64) -> Self {
        Input {
            lanes: Vec::new(),
            merge: Merge::new(max_task_idle_ms),
        }
    }

    /// The consumer was just assigned `list` (`(side, topic, partition)`): every partition gets
    /// its own queue, and nothing buffered from before is kept (the assignment set the
    /// positions anew).
    pub fn assigned(
        &mut self,
        consumer: &Arc<BaseConsumer<JoinContext>>,
        list: &[(Side, String, Partition)],
        now: i64,
    ) {
        self.clear();
        for (side, topic, p) in list {
            if let Some(queue) = consumer.split_partition_queue(topic, *p) {
                self.lanes.push(Lane {
                    side: *side,
                    topic: topic.clone(),
                    partition: *p,
                    queue,
                    heard_at: now,
                    at_end: false,
                });
            }
        }
    }

    /// A record of `side`'s `topic`/`partition` arrived on the consumer's own queue: if the
    /// partition has a queue of its own, splits it again so that its next records arrive there
    /// (the records already on the consumer's queue come first: the loop drains it before it
    /// fills from the partition queues). Returns whether it did.
    pub fn resplit(
        &mut self,
        consumer: &Arc<BaseConsumer<JoinContext>>,
        side: Side,
        topic: &str,
        partition: Partition,
    ) -> bool {
        self.lanes
            .iter_mut()
            .find(|l| l.side == side && l.partition == partition && l.topic == topic)
            .is_some_and(|lane| lane.split_again(consumer))
    }

    /// Drops every queue and buffered record (before an unassign or a new assignment).
    pub fn clear(&mut self) {
        self.lanes.clear();
        self.merge.clear();
    }

    /// A record that arrived on the consumer's own queue.
    pub fn push(&mut self, rec: Buffered, now: i64) {
        self.merge.push(rec, now);
    }

    /// Polls every queue below its limit without waiting; returns how many records arrived.
    /// A queue silent for `SILENT_MS` is split again (logged).
    pub fn fill(&mut self, consumer: &Arc<BaseConsumer<JoinContext>>, now: i64) -> usize {
        let mut n = 0;
        for lane in &mut self.lanes {
            let (side, p) = (lane.side, lane.partition);
            let mut polled = false;
            while self.merge.buffered(side, p) < PER_QUEUE {
                polled = true;
                match lane.queue.poll(Duration::ZERO) {
                    Some(Ok(msg)) => {
                        self.merge.push(copy(&msg, side, now), now);
                        (lane.heard_at, lane.at_end) = (now, false);
                        n += 1;
                    }
                    Some(Err(KafkaError::PartitionEOF(_))) => {
                        self.merge.caught_up(side, p, now);
                        (lane.heard_at, lane.at_end) = (now, true);
                    }
                    Some(Err(e)) => {
                        tracing::warn!("consume error on partition {p} ({}): {e}", side.name());
                        break;
                    }
                    None => break,
                }
            }
            if polled && !lane.at_end && now - lane.heard_at >= SILENT_MS {
                tracing::warn!(
                    topic = lane.topic,
                    partition = p,
                    "no record and no end of partition for {} s (no broker reachable, or its records delivered elsewhere): splitting its queue again",
                    SILENT_MS / 1_000
                );
                lane.split_again(consumer);
                lane.heard_at = now;
            }
        }
        n
    }

    /// Records buffered of `(side, task)`.
    pub fn buffered(&self, side: Side, task: Partition) -> usize {
        self.merge.buffered(side, task)
    }

    /// The end of `side`'s input of `task` was reached (a broadcast side: of all its partitions).
    pub fn caught_up(&mut self, side: Side, task: Partition, now: i64) {
        self.merge.caught_up(side, task, now);
    }

    /// The next record in merge order, if one may go now.
    pub fn next(&mut self, now: i64) -> Option<Buffered> {
        self.merge.pop(now)
    }
}
