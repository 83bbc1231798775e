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
//! Records go into the merge (`input`) under each task's lane: against the other side they are
//! ordered by timestamp like any co-partitioned pair. Across the broadcast topic's own
//! partitions they come in arrival order (a one-partition broadcast topic is fully ordered).
//!
//! What it does not do: commit (positions go into the task's state with its checkpoint),
//! decide what a record does, or join the group.

use std::collections::BTreeMap;
use std::time::Duration;

use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::{Offset, TopicPartitionList};

use crate::changelog::{Partition, Side};
use crate::kafka::context::BroadcastContext;

use super::input::{self, Input, PER_QUEUE};
use super::streams::Stream;

/// Most records taken from the broadcast consumer per `fill`.
const FILL: usize = 4_096;

pub struct Broadcast {
    consumer: BaseConsumer<BroadcastContext>,
    side: Side,
    topic: String,
    partitions: i32,
    /// Task → the next offset of each broadcast partition it is to be handed.
    next: BTreeMap<Partition, Vec<i64>>,
    /// Per broadcast partition: its end was reported and no record came since.
    at_end: Vec<bool>,
}

impl Broadcast {
    pub fn new(
        consumer: BaseConsumer<BroadcastContext>,
        side: Side,
        topic: &str,
        partitions: i32,
    ) -> Self {
        Broadcast {
            consumer,
            side,
            topic: topic.to_owned(),
            partitions,
            next: BTreeMap::new(),
            at_end: vec![false; partitions as usize],
        }
    }

    /// The owned tasks are now `tasks`; `position` gives the next offset of a stream its state
    /// reflects. Assigns the consumer at the lowest position of each partition.
    pub fn assign(
        &mut self,
        tasks: &[Partition],
        position: impl Fn(Stream) -> Option<i64>,
    ) -> Result<(), KafkaError> {
        self.next.clear();
        self.at_end = vec![false; self.partitions as usize];
        if tasks.is_empty() {
            return self.consumer.unassign();
        }
        for &task in tasks {
            let next = (0..self.partitions)
                .map(|source| {
                    position(Stream {
                        side: self.side,
                        task,
                        source,
                    })
                    .unwrap_or(0)
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
        self.consumer.assign(&tpl)
    }

    /// Forgets every task (before an unassign or a new assignment).
    pub fn clear(&mut self) -> Result<(), KafkaError> {
        self.next.clear();
        self.consumer.unassign()
    }

    /// Hands what the consumer holds to the tasks' lanes in `input`, while every task has room;
    /// returns how many records it handed.
    pub fn fill(&mut self, input: &mut Input, now: i64) -> usize {
        let mut n = 0;
        for _ in 0..FILL {
            let full = self
                .next
                .keys()
                .any(|t| input.buffered(self.side, *t) >= PER_QUEUE);
            if full || self.next.is_empty() {
                break;
            }
            match self.consumer.poll(Duration::ZERO) {
                Some(Ok(msg)) => {
                    let b = rdkafka::Message::partition(&msg);
                    let offset = rdkafka::Message::offset(&msg);
                    self.at_end[b as usize] = false;
                    let rec = input::copy(&msg, self.side, now);
                    for (task, next) in &mut self.next {
                        let next = &mut next[b as usize];
                        if offset >= *next {
                            *next = offset + 1;
                            let mut r = rec.clone();
                            r.partition = *task;
                            input.push(r, now);
                            n += 1;
                        }
                    }
                }
                Some(Err(KafkaError::PartitionEOF(b))) => {
                    if let Some(end) = self.at_end.get_mut(b as usize) {
                        *end = true;
                    }
                    if self.at_end.iter().all(|e| *e) {
                        for task in self.next.keys() {
                            input.caught_up(self.side, *task, now);
                        }
                    }
                }
                Some(Err(e)) => {
                    tracing::warn!("consume error on broadcast topic `{}`: {e}", self.topic);
                    break;
                }
                None => break,
            }
        }
        n
    }
}
