//! At-least-once with local durable state (SPEC §7), pipelined.
//!
//! Invariant: the state and input offsets of a checkpoint become durable only once every output
//! produced before the checkpoint was sealed is acknowledged, and input offsets are committed to
//! the group only after they are durable. So what is on disk always corresponds to an input
//! position whose every output is in Kafka: a crash at any moment resumes there and re-emits at
//! most the outputs of what followed.
//!
//! Processing does not wait for acknowledgements: a checkpoint is sealed (its state captured
//! as it is, `JoinState::seal`) every commit interval and the next one opens at once; sealed
//! checkpoints are persisted in order as their outputs are acknowledged. At most `MAX_SEALED`
//! wait; beyond that the loop waits for the oldest.

use std::collections::{HashSet, VecDeque};
use std::time::Instant;

use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer, ConsumerContext};
use rdkafka::{Offset, TopicPartitionList};
use rustc_hash::FxHashMap;

use crate::changelog::{Partition, Side};
use crate::engine::state::Checkpoint;
use crate::kafka::deliveries::Deliveries;
use crate::metrics::Metrics;
use crate::pipeline::Offsets;

use super::processor::Processor;
use super::RunError;

/// Sealed checkpoints waiting for their outputs before the loop stops to wait.
pub const MAX_SEALED: usize = 4;

struct Sealed {
    /// The number outputs were sent under while it was open.
    epoch: u64,
    state: Checkpoint,
    offsets: Offsets,
    sealed_at: Instant,
}

pub struct Checkpoints {
    /// The number of the open checkpoint (outputs are sent under it).
    open: u64,
    sealed: VecDeque<Sealed>,
    /// `(side, partition)` → the next offset to consume, over everything processed.
    positions: FxHashMap<(Side, Partition), i64>,
    topics: [String; 2],
}

impl Checkpoints {
    pub fn new(left_topic: &str, right_topic: &str) -> Self {
        Checkpoints {
            open: 1,
            sealed: VecDeque::new(),
            positions: FxHashMap::default(),
            topics: [left_topic.to_owned(), right_topic.to_owned()],
        }
    }

    /// The number outputs are sent under now.
    pub fn epoch(&self) -> u64 {
        self.open
    }

    pub fn sealed(&self) -> usize {
        self.sealed.len()
    }

    /// The record at `offset` is fully handled: the open checkpoint covers it.
    #[inline]
    pub fn consumed(&mut self, side: Side, partition: Partition, offset: i64) {
        self.positions.insert((side, partition), offset + 1);
    }

    /// Forgets the positions of partitions no longer owned.
    pub fn forget(&mut self, gone: &[Partition]) {
        self.positions.retain(|(_, p), _| !gone.contains(p));
    }

    /// Closes the open checkpoint: the processor captures its state with the input positions,
    /// and a new checkpoint opens.
    pub fn seal(&mut self, processor: &mut dyn Processor) -> Result<(), RunError> {
        let offsets: Offsets = self
            .positions
            .iter()
            .map(|((side, p), o)| ((self.topics[side.index()].clone(), *p), *o))
            .collect();
        let state = processor.seal(&offsets).map_err(RunError::State)?;
        self.sealed.push_back(Sealed {
            epoch: self.open,
            state,
            offsets,
            sealed_at: Instant::now(),
        });
        self.open += 1;
        Ok(())
    }

    /// Persists, in order, every sealed checkpoint whose outputs are all acknowledged, then
    /// commits its offsets to the group (for the partitions still `assigned`). A failed delivery
    /// is fatal: nothing after the last persisted checkpoint is persisted or committed.
    pub fn complete<C: ConsumerContext>(
        &mut self,
        processor: &mut dyn Processor,
        deliveries: &Deliveries,
        consumer: &BaseConsumer<C>,
        assigned: &HashSet<(String, Partition)>,
        metrics: &Metrics,
        mode: CommitMode,
    ) -> Result<(), RunError> {
        if let Some(e) = deliveries.failure() {
            return Err(RunError::Delivery(e));
        }
        let mut last: Option<Sealed> = None;
        while let Some(front) = self.sealed.front() {
            if deliveries.outstanding_through(front.epoch) > 0 {
                break;
            }
            let done = self.sealed.pop_front().expect("front exists");
            processor.persist(done.state).map_err(RunError::State)?;
            metrics.observe_commit(done.sealed_at.elapsed().as_secs_f64());
            last = Some(done);
        }
        if let Some(done) = last {
            commit(consumer, &done.offsets, assigned, mode);
            processor.publish(metrics);
        }
        Ok(())
    }

    /// Whether every sealed checkpoint is persisted.
    pub fn is_drained(&self) -> bool {
        self.sealed.is_empty()
    }
}

/// Commits `offsets` of the partitions still `assigned` to the consumer group. A failed commit
/// only means those records may be consumed again (at-least-once holds).
pub fn commit<C: ConsumerContext>(
    consumer: &BaseConsumer<C>,
    offsets: &Offsets,
    assigned: &HashSet<(String, Partition)>,
    mode: CommitMode,
) {
    let mut tpl = TopicPartitionList::new();
    for ((topic, partition), offset) in offsets {
        if assigned.contains(&(topic.clone(), *partition)) {
            let _ = tpl.add_partition_offset(topic, *partition, Offset::Offset(*offset));
        }
    }
    if tpl.count() > 0 {
        if let Err(e) = consumer.commit(&tpl, mode) {
            tracing::warn!("offset commit failed: {e}");
        }
    }
}
