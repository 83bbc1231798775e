//! At-least-once bookkeeping (SPEC §7): the deliveries of what one stretch of input produced,
//! and the input offsets to commit once every one of them is acknowledged.

use std::collections::{BTreeMap, HashSet};

use futures::future::join_all;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer, ConsumerContext};
use rdkafka::producer::DeliveryFuture;
use rdkafka::{Offset, TopicPartitionList};

use crate::metrics::Metrics;

use super::RunError;

#[derive(Default)]
pub struct Batch {
    /// Each produced record's delivery and the timestamp of the input record that caused it.
    deliveries: Vec<(DeliveryFuture, i64)>,
    /// `(topic, partition)` → the next offset to consume there.
    offsets: BTreeMap<(String, i32), i64>,
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

impl Batch {
    pub fn delivery(&mut self, future: DeliveryFuture, cause_timestamp: i64) {
        self.deliveries.push((future, cause_timestamp));
    }

    /// The record at `offset` is fully handled: commit past it once the batch is acknowledged.
    pub fn consumed(&mut self, topic: &str, partition: i32, offset: i64) {
        self.offsets
            .insert((topic.to_owned(), partition), offset + 1);
    }

    pub fn pending(&self) -> usize {
        self.deliveries.len()
    }

    /// Waits for every delivery; returns the input offsets whose outputs are now all
    /// acknowledged. A failed delivery is fatal and returns nothing to commit (the records will
    /// be consumed again).
    pub fn acknowledge(&mut self, metrics: &Metrics) -> Result<Offsets, RunError> {
        let (futures, causes): (Vec<_>, Vec<_>) =
            std::mem::take(&mut self.deliveries).into_iter().unzip();
        let results = futures::executor::block_on(join_all(futures));
        let acked = now_ms();
        for (result, cause) in results.into_iter().zip(causes) {
            match result {
                Ok(Ok(_)) => metrics.observe_latency((acked - cause) as f64 / 1000.0),
                Ok(Err((e, _))) => return Err(RunError::Delivery(e.to_string())),
                Err(_) => return Err(RunError::Delivery("the producer was dropped".into())),
            }
        }
        Ok(std::mem::take(&mut self.offsets))
    }
}

pub use crate::pipeline::Offsets;

/// Commits `offsets` of the partitions still `assigned` to the consumer group. A failed commit
/// only means those records may be consumed again (at-least-once holds).
pub fn commit<C: ConsumerContext>(
    consumer: &BaseConsumer<C>,
    offsets: &Offsets,
    assigned: &HashSet<(String, i32)>,
    mode: CommitMode,
) -> Result<(), RunError> {
    let mut tpl = TopicPartitionList::new();
    for ((topic, partition), offset) in offsets {
        if assigned.contains(&(topic.clone(), *partition)) {
            tpl.add_partition_offset(topic, *partition, Offset::Offset(*offset))?;
        }
    }
    if tpl.count() > 0 {
        if let Err(e) = consumer.commit(&tpl, mode) {
            tracing::warn!("offset commit failed: {e}");
        }
    }
    Ok(())
}
