//! The run loop's input: one librdkafka queue per assigned `(topic, partition)`, their records
//! copied into the timestamp merge (`merge`) and released in its deterministic order.
//!
//! Each assigned partition of both topics gets its own queue (`split_partition_queue`) right
//! after `assign`, so end-of-partition events arrive per topic and per partition: that is what
//! "caught up" means to the merge. A queue is polled only while fewer than `PER_QUEUE` of its
//! records are buffered, which bounds memory without ever blocking the other side of a
//! partition. The consumer's own queue is still polled by the loop for callbacks (rebalances,
//! statistics, errors); a record that arrives there (fetched before its queue was split) joins
//! the merge like any other.
//!
//! What it does not do: decide offsets (the loop records what it processed), commit, or
//! process records.

use std::sync::Arc;
use std::time::Duration;

use rdkafka::consumer::base_consumer::PartitionQueue;
use rdkafka::consumer::BaseConsumer;
use rdkafka::error::KafkaError;
use rdkafka::message::{BorrowedMessage, Headers, Message};

use crate::changelog::{Partition, Side};
use crate::kafka::context::JoinContext;

use super::merge::{Buffered, Merge};

/// Records buffered per `(side, partition)` before its queue is left alone for a while.
const PER_QUEUE: usize = 2_048;

pub struct Input {
    queues: Vec<(Side, Partition, PartitionQueue<JoinContext>)>,
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
            queues: Vec::new(),
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
    ) {
        self.clear();
        for (side, topic, p) in list {
            if let Some(q) = consumer.split_partition_queue(topic, *p) {
                self.queues.push((*side, *p, q));
            }
        }
    }

    /// Drops every queue and buffered record (before an unassign or a new assignment).
    pub fn clear(&mut self) {
        self.queues.clear();
        self.merge.clear();
    }

    /// A record that arrived on the consumer's own queue.
    pub fn push(&mut self, rec: Buffered, now: i64) {
        self.merge.push(rec, now);
    }

    /// Polls every queue below its limit without waiting; returns how many records arrived.
    pub fn fill(&mut self, now: i64) -> usize {
        let mut n = 0;
        for (side, p, q) in &self.queues {
            let (side, p) = (*side, *p);
            while self.merge.buffered(side, p) < PER_QUEUE {
                match q.poll(Duration::ZERO) {
                    Some(Ok(msg)) => {
                        self.merge.push(copy(&msg, side, now), now);
                        n += 1;
                    }
                    Some(Err(KafkaError::PartitionEOF(_))) => {
                        self.merge.caught_up(side, p, now);
                    }
                    Some(Err(e)) => {
                        tracing::warn!("consume error on partition {p} ({}): {e}", side.name());
                        break;
                    }
                    None => break,
                }
            }
        }
        n
    }

    /// The next record in merge order, if one may go now.
    pub fn next(&mut self, now: i64) -> Option<Buffered> {
        self.merge.pop(now)
    }
}
