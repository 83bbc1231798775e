//! The broadcast side's input (`SIDEJOIN_BROADCAST`, SPEC §6): one consumer per worker,
//! outside the consumer group, assigned every partition of the broadcast topic, whose records
//! are handed to every task the worker owns — each task keeps the whole broadcast side in its
//! own state and joins it against its partition of the other side, as a Flink broadcast join
//! keeps the small side in every subtask.
//!
//! Each task's state records how far into each broadcast partition it has applied (its
//! `streams`), and tasks arrive with different positions (restored from another instance's
//! checkpoint, or new with none). The consumer is assigned at the lowest position of any task
//! (a task without one: the beginning — the broadcast side is always read whole), and a record
//! is handed to a task only from that task's position on, so every task sees each record of the
//! broadcast topic exactly once after the input position its state reflects.
//!
//! Records are handed out in timestamp order across the broadcast topic's partitions (the
//! merge's rule, n-ary: the smallest head goes once every other partition has a head, is at its
//! end, or has been silent for `SIDEJOIN_MAX_TASK_IDLE`), then go into the run loop's merge under
//! each task's stream, where they are ordered by timestamp against the task's partition of the
//! other side like any co-partitioned pair. So a replay after a crash hands them out in the
//! same order.
//!
//! What it does not do: commit (positions go into the task's state with its checkpoint),
//! decide what a record does, or join the group.

use std::collections::BTreeMap;
use std::time::Duration;

use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::{Offset, TopicPartitionList};

use crate::change::{Partition, Side};
use crate::kafka::context::BroadcastContext;

use super::input::{LaneSpec, Lanes, Merge, Served};
use super::streams::Stream;

/// Most records fetched from one broadcast partition and not yet handed to the tasks. Each
/// partition has its own librdkafka queue (`input::Lanes`), so one partition's big fetches
/// never keep another's records from the timestamp merge.
const PER_PART: usize = 2_048;

/// Most records of a task waiting in the run loop's merge before handing out pauses.
const PER_TASK: usize = 2_048;

pub(super) struct Broadcast {
    lanes: Lanes<BroadcastContext>,
    /// The broadcast topic's partitions merged by timestamp: one task (0), a stream each.
    merge: Merge,
    side: Side,
    topic: String,
    partitions: i32,
    /// Task → the next offset of each broadcast partition it is to be handed.
    next: BTreeMap<Partition, Vec<i64>>,
}

impl Broadcast {
    pub(super) fn new(
        consumer: BaseConsumer<BroadcastContext>,
        side: Side,
        topic: &str,
        partitions: i32,
        max_idle_ms: i64,
    ) -> Self {
        Broadcast {
            lanes: Lanes::new(consumer, PER_PART),
            merge: Merge::new(partitions as usize, max_idle_ms),
            side,
            topic: topic.to_owned(),
            partitions,
            next: BTreeMap::new(),
        }
    }

    /// The owned tasks are now `tasks`; `position` gives the next offset of a stream its state
    /// reflects. Assigns the consumer at the lowest position of each partition.
    pub(super) fn assign(
        &mut self,
        tasks: &[Partition],
        position: impl Fn(Stream) -> Option<i64>,
        now: i64,
    ) -> Result<(), KafkaError> {
        self.clear_buffers();
        if tasks.is_empty() {
            return self.lanes.consumer().unassign();
        }
        for &task in tasks {
            let next = (0..self.partitions)
                .map(|source| {
                    let stream = Stream {
                        side: self.side,
                        task,
                        source,
                    };
                    position(stream).unwrap_or(0)
                })
                .collect();
            self.next.insert(task, next);
        }
        let mut tpl = TopicPartitionList::new();
        for b in 0..self.partitions {
            let lowest = self.next.values().map(|n| n[b as usize]).min().unwrap_or(0);
            let at = match lowest {
                0 => Offset::Beginning,
                o => Offset::Offset(o),
            };
            tpl.add_partition_offset(&self.topic, b, at)?;
        }
        tracing::info!(
            "broadcast topic `{}`: {} partitions read for tasks {tasks:?}",
            self.topic,
            self.partitions
        );
        self.lanes.consumer().assign(&tpl)?;
        let specs = (0..self.partitions)
            .map(|b| LaneSpec {
                side: self.side,
                topic: self.topic.clone(),
                partition: b,
                task: 0,
                stream: b as usize,
            })
            .collect();
        self.lanes.assigned(specs, now);
        Ok(())
    }

    fn clear_buffers(&mut self) {
        self.next.clear();
        self.merge.clear();
        self.lanes.clear();
    }

    /// Forgets every task (before an unassign or a new assignment).
    pub(super) fn clear(&mut self) -> Result<(), KafkaError> {
        self.clear_buffers();
        self.lanes.consumer().unassign()
    }

    /// Fetches what the partitions' queues hold, then hands records to the tasks' streams in
    /// `tasks` (the run loop's merge) in timestamp order across the broadcast partitions,
    /// while every task has room; returns how many records it handed.
    pub(super) fn fill(&mut self, tasks: &mut Merge, now: i64) -> usize {
        if self.next.is_empty() {
            return 0;
        }
        if let Served::Error(e) = self.lanes.serve(&mut self.merge, Duration::ZERO, now) {
            tracing::warn!("consume error on broadcast topic `{}`: {e}", self.topic);
        }
        self.lanes.fill(&mut self.merge, now);
        let stream = self.side.index();
        let mut n = 0;
        while !(self.next.keys()).any(|t| tasks.buffered(*t, stream) >= PER_TASK) {
            let Some((_, b, rec)) = self.merge.pop(now) else {
                break;
            };
            for (task, next) in &mut self.next {
                let next = &mut next[b];
                if rec.offset >= *next {
                    *next = rec.offset + 1;
                    let mut r = rec.clone();
                    r.task = *task;
                    tasks.push(*task, stream, r, now);
                    n += 1;
                }
            }
        }
        if self.merge.drained(0) {
            for task in self.next.keys() {
                tasks.caught_up(*task, stream, now);
            }
        }
        n
    }
}
