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
//! end, or has been silent for `SIDEJOIN_MAX_TASK_IDLE`), then go into the merge (`input`) under
//! each task's lane, where they are ordered by timestamp against the task's partition of the
//! other side like any co-partitioned pair. So a replay after a crash hands them out in the
//! same order.
//!
//! What it does not do: commit (positions go into the task's state with its checkpoint),
//! decide what a record does, or join the group.

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use std::sync::Arc;

use rdkafka::consumer::base_consumer::PartitionQueue;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::{Offset, TopicPartitionList};

use crate::change::{Partition, Side};
use crate::kafka::context::BroadcastContext;

use super::input::{self, Input, PER_QUEUE};
use super::merge::{next_head, Buffered, Head};
use super::streams::Stream;

/// Most records fetched from one broadcast partition and not yet handed to the tasks. Each
/// partition has its own librdkafka queue (as the group's partitions in `input`), so one
/// partition's big fetches never keep another's records from the timestamp merge.
const PER_PART: usize = 2_048;

/// Most records taken from the consumer's own queue per `fill` (callbacks, and records of a
/// partition whose fetch started before its queue was split; see `input`).
const STRAY: usize = 1_024;

pub struct Broadcast {
    consumer: Arc<BaseConsumer<BroadcastContext>>,
    side: Side,
    topic: String,
    partitions: i32,
    /// Task → the next offset of each broadcast partition it is to be handed.
    next: BTreeMap<Partition, Vec<i64>>,
    /// Per broadcast partition, by number.
    parts: Vec<Part>,
    /// Records waiting in `parts`.
    waiting: usize,
    max_idle_ms: i64,
}

/// One partition of the broadcast topic: records fetched and not handed out yet.
struct Part {
    /// Its own librdkafka queue (split when assigned).
    source: Option<PartitionQueue<BroadcastContext>>,
    /// Records with the time they were fetched, in offset order.
    queue: VecDeque<(Buffered, i64)>,
    /// Its end was reported and no record came since.
    at_end: bool,
    /// When `queue` last became empty (or the partition was assigned).
    empty_since: i64,
}

impl Part {
    fn new(now: i64) -> Self {
        Part {
            source: None,
            queue: VecDeque::new(),
            at_end: false,
            empty_since: now,
        }
    }
}

impl Broadcast {
    pub fn new(
        consumer: BaseConsumer<BroadcastContext>,
        side: Side,
        topic: &str,
        partitions: i32,
        max_idle_ms: i64,
    ) -> Self {
        Broadcast {
            consumer: Arc::new(consumer),
            side,
            topic: topic.to_owned(),
            partitions,
            next: BTreeMap::new(),
            parts: Vec::new(),
            waiting: 0,
            max_idle_ms,
        }
    }

    /// The owned tasks are now `tasks`; `position` gives the next offset of a stream its state
    /// reflects. Assigns the consumer at the lowest position of each partition.
    pub fn assign(
        &mut self,
        tasks: &[Partition],
        position: impl Fn(Stream) -> Option<i64>,
        now: i64,
    ) -> Result<(), KafkaError> {
        self.next.clear();
        self.parts = (0..self.partitions).map(|_| Part::new(now)).collect();
        self.waiting = 0;
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
        self.consumer.assign(&tpl)?;
        for (b, part) in self.parts.iter_mut().enumerate() {
            part.source = self.consumer.split_partition_queue(&self.topic, b as i32);
        }
        Ok(())
    }

    /// Forgets every task (before an unassign or a new assignment).
    pub fn clear(&mut self) -> Result<(), KafkaError> {
        self.next.clear();
        self.parts.clear();
        self.waiting = 0;
        self.consumer.unassign()
    }

    /// Fetches what the partitions' queues hold (at most `PER_PART` records wait per partition), then hands records
    /// to the tasks' lanes in `input` in timestamp order across the broadcast partitions, while
    /// every task has room; returns how many records it handed.
    pub fn fill(&mut self, input: &mut Input, now: i64) -> usize {
        if self.next.is_empty() {
            return 0;
        }
        for _ in 0..STRAY {
            match self.consumer.poll(Duration::ZERO) {
                Some(Ok(msg)) => {
                    let b = rdkafka::Message::partition(&msg);
                    let rec = input::copy(&msg, self.side, now);
                    drop(msg);
                    let part = &mut self.parts[b as usize];
                    part.queue.push_back((rec, now));
                    part.at_end = false;
                    self.waiting += 1;
                    // Its next records go to its own queue.
                    part.source = self.consumer.split_partition_queue(&self.topic, b);
                }
                Some(Err(KafkaError::PartitionEOF(b))) => {
                    if let Some(part) = self.parts.get_mut(b as usize) {
                        part.at_end = true;
                    }
                }
                Some(Err(e)) => {
                    tracing::warn!("consume error on broadcast topic `{}`: {e}", self.topic);
                    break;
                }
                None => break,
            }
        }
        for part in &mut self.parts {
            let Some(queue) = &part.source else {
                continue;
            };
            while part.queue.len() < PER_PART {
                match queue.poll(Duration::ZERO) {
                    Some(Ok(msg)) => {
                        part.queue
                            .push_back((input::copy(&msg, self.side, now), now));
                        part.at_end = false;
                        self.waiting += 1;
                    }
                    Some(Err(KafkaError::PartitionEOF(_))) => part.at_end = true,
                    Some(Err(e)) => {
                        tracing::warn!("consume error on broadcast topic `{}`: {e}", self.topic);
                        break;
                    }
                    None => break,
                }
            }
        }
        let mut n = 0;
        while !(self.next.keys()).any(|t| input.buffered(self.side, *t) >= PER_QUEUE) {
            let Some(b) = self.next_part(now) else {
                break;
            };
            let part = &mut self.parts[b];
            let (rec, _) = part.queue.pop_front().expect("next_part has a head");
            if part.queue.is_empty() {
                part.empty_since = now;
            }
            self.waiting -= 1;
            for (task, next) in &mut self.next {
                let next = &mut next[b];
                if rec.offset >= *next {
                    *next = rec.offset + 1;
                    let mut r = rec.clone();
                    r.partition = *task;
                    input.push(r, now);
                    n += 1;
                }
            }
        }
        if self.waiting == 0 && self.parts.iter().all(|p| p.at_end) {
            for task in self.next.keys() {
                input.caught_up(self.side, *task, now);
            }
        }
        n
    }

    /// The partition whose head goes next (`merge::next_head`).
    fn next_part(&self, now: i64) -> Option<usize> {
        let heads = self.parts.iter().map(|p| Head {
            head: p.queue.front().map(|(r, at)| (r.timestamp, *at)),
            at_end: p.at_end,
            empty_since: p.empty_since,
        });
        next_head(heads, now, self.max_idle_ms)
    }
}
