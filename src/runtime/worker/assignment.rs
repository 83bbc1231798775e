//! Rebalances and checkpoints of a worker: revoked partitions are committed while their
//! offsets can be (or, lost, dropped), newly assigned ones restored (`durable::restore`) and
//! assigned at the offsets their state reflects; a checkpoint that aborts drops what it held
//! and the partitions are restored from what was committed.

use std::collections::BTreeSet;

use rdkafka::consumer::Consumer;
use rdkafka::error::KafkaError;
use rdkafka::{Offset, TopicPartitionList};

use crate::change::Partition;
use crate::kafka::context::Assignment;

use super::super::broadcast::Broadcast;
use super::super::durable::Close;
use super::super::input::LaneSpec;
use super::super::streams::Stream;
use super::super::RunError;
use super::{now_ms, Worker};
use sidejoin_store::Checkpointed;

/// Where a take-over finds the state of the tasks it loads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Restore {
    /// Verified against the changelog topics and brought up to date (an assignment).
    Changelog,
    /// As persisted locally: the last committed checkpoint (a rewind after `discard`).
    Local,
}

impl<S: Checkpointed> Worker<'_, S> {
    /// Applies rebalance events (see `kafka::context`: the consumer waits for these calls).
    pub(super) fn apply_assignments(&mut self) -> Result<(), RunError> {
        while let Ok(event) = self.events.try_recv() {
            match event {
                Assignment::Revoked { partitions, lost } => {
                    if lost {
                        // The group already gave them away: their offsets can no longer be
                        // committed, nor the open transaction. Drop what is not committed;
                        // partitions assigned again are restored from what was.
                        tracing::warn!(
                            "partitions lost (the group gave them away): {partitions:?}"
                        );
                        match self.protocol.abort("the assignment was lost".into()) {
                            RunError::Aborted(_) => {}
                            fatal => return Err(fatal),
                        }
                        self.discard();
                    } else {
                        tracing::info!("partitions revoked: {partitions:?}");
                        // Commit what was done for them while their offsets can be committed
                        // (if that fails, their next owner redoes it from the last commit).
                        self.commit(Close::Synchronous)?;
                    }
                    self.clear_input()?;
                    self.consumer().unassign()?;
                    self.assigned.clear();
                }
                Assignment::Assigned(list) => {
                    tracing::info!("partitions assigned: {list:?}");
                    self.take_over(list, Restore::Changelog)?;
                }
            }
        }
        Ok(())
    }

    /// Takes over the partitions of `list` (the whole new assignment): releases the state of
    /// partitions no longer in it, restores new ones, and assigns the consumer at the offsets
    /// their state reflects (the group's committed offset, or the reset policy, where the state
    /// records none).
    pub(super) fn take_over(
        &mut self,
        list: Vec<(String, Partition)>,
        from: Restore,
    ) -> Result<(), RunError> {
        // The checkpoint in flight lands first (its commit may still say the instance is
        // ready); if it aborted, every task is restored.
        if let Err(e) = self.protocol.settle() {
            match e {
                RunError::Aborted(why) => self.dropped(&why),
                e => return Err(e),
            }
        }
        self.metrics.set_ready(false);
        let now: BTreeSet<Partition> = list.iter().map(|(_, p)| *p).collect();
        self.require_range_assignment(&list, &now)?;
        let gone: Vec<Partition> = self.owned.difference(&now).copied().collect();
        if !gone.is_empty() {
            self.protocol.forget(self.processor, &gone);
        }
        let new: Vec<Partition> = now.difference(&self.owned).copied().collect();
        if !new.is_empty() {
            self.restore(&new, from)?;
        }
        self.assign(&list)?;
        self.assigned = list.into_iter().collect();
        self.owned = now;
        let parts: Vec<Partition> = self.owned.iter().copied().collect();
        for b in &mut self.broadcast {
            let protocol = &self.protocol;
            b.assign(&parts, |s| protocol.position(s), now_ms())?;
        }
        let state = self.protocol.state();
        self.processor.assigned(state, &parts, &new, now_ms())?;
        self.metrics.set_ready(true);
        Ok(())
    }

    /// Range assignment puts partition i of every grouped topic on one member; anything else
    /// would join a partition's records against another member's state.
    fn require_range_assignment(
        &self,
        list: &[(String, Partition)],
        tasks: &BTreeSet<Partition>,
    ) -> Result<(), RunError> {
        for p in tasks {
            for side in self.inputs.group_sides() {
                let t = self.inputs.topic(side);
                if !list.contains(&(t.to_owned(), *p)) {
                    return Err(RunError::ConsumerFatal(format!(
                        "the group assigned partition {p} of one input topic without the same partition of `{t}`: \
                         sidejoin needs range assignment (co-partitioning); do not override partition.assignment.strategy"
                    )));
                }
            }
        }
        Ok(())
    }

    /// Restores the state of `new` tasks and the input positions it reflects.
    fn restore(&mut self, new: &[Partition], from: Restore) -> Result<(), RunError> {
        let (positions, done) = match from {
            Restore::Changelog => self.protocol.restore(self.processor, new, self.shutdown)?,
            Restore::Local => (self.protocol.rewound(new)?, Default::default()),
        };
        for (p, offsets) in positions {
            let shown: Vec<Option<i64>> = offsets.iter().map(|(_, o)| *o).collect();
            tracing::info!(
                "partition {p}: state restored ({} changelog records, {:.2} s); it reflects input offsets {shown:?}",
                done.records,
                done.seconds
            );
            for (stream, next) in offsets {
                if let Some(next) = next {
                    self.protocol.restored(stream, next);
                }
            }
        }
        Ok(())
    }

    /// Assigns the consumer `list` at the positions the state reflects, and its lanes.
    fn assign(&mut self, list: &[(String, Partition)]) -> Result<(), RunError> {
        let mut tpl = TopicPartitionList::new();
        let mut lanes = Vec::new();
        for (topic, p) in list {
            let side = self.side_of(topic).expect("subscribed topics only");
            let at = match self.protocol.position(Stream::own(side, *p)) {
                Some(o) => Offset::Offset(o),
                None => Offset::Stored,
            };
            let _ = tpl.add_partition_offset(topic, *p, at);
            lanes.push(LaneSpec {
                side,
                topic: topic.clone(),
                partition: *p,
                task: *p,
                stream: side.index(),
            });
        }
        self.consumer().assign(&tpl)?;
        self.merge.clear();
        self.lanes.assigned(lanes, now_ms());
        Ok(())
    }

    /// Drops every change not committed and forgets every partition.
    pub(super) fn discard(&mut self) {
        let parts: Vec<Partition> = self.owned.iter().copied().collect();
        self.protocol.discard(self.processor, &parts);
        self.owned.clear();
        self.out.clear();
        if let Err(e) = self.clear_input() {
            tracing::warn!("cannot unassign the broadcast consumer: {e}");
        }
    }

    /// Drops every buffered record and the broadcast consumer's assignment.
    fn clear_input(&mut self) -> Result<(), KafkaError> {
        self.lanes.clear();
        self.merge.clear();
        self.broadcast.iter_mut().try_for_each(Broadcast::clear)
    }

    /// Closes the open checkpoint (after what processing time releases) as `close` says. An
    /// aborted transaction drops what it held and every partition's state (`Ok(false)`): they
    /// are restored from what was committed when assigned again.
    pub(super) fn commit(&mut self, close: Close) -> Result<bool, RunError> {
        let state = self.protocol.state();
        self.processor.tick(state, now_ms(), &mut self.out)?;
        // The checkpoint in flight lands first: under exactly-once, output held while it
        // committed goes into the next transaction, before that is sealed.
        let consumer = self.lanes.consumer().clone();
        let closed = match self.protocol.settle() {
            Ok(()) => self.send_outputs().and_then(|()| {
                (self.protocol).commit(self.processor, &self.output, &consumer, close)
            }),
            Err(e) => Err(e),
        };
        match closed {
            Ok(()) => {
                let (protocol, owned) = (&self.protocol, &self.owned);
                (self.poisoned).committed(|s| protocol.committed(s), |t| owned.contains(&t));
                Ok(true)
            }
            Err(RunError::Aborted(why)) => {
                self.dropped(&why);
                Ok(false)
            }
            Err(e) => Err(e),
        }
    }

    /// A transaction was aborted (`why`): drops everything not committed.
    pub(super) fn dropped(&mut self, why: &str) {
        self.metrics.transaction(false);
        tracing::warn!("checkpoint aborted ({why}): its work is dropped");
        self.discard();
    }

    /// Waits for the checkpoint in flight to land. If it aborted, everything not committed is
    /// dropped and the assigned partitions restored (`Ok(false)`).
    pub(super) fn settle(&mut self) -> Result<bool, RunError> {
        match self.protocol.settle() {
            Ok(()) => Ok(true),
            Err(RunError::Aborted(why)) => {
                self.dropped(&why);
                self.restore_assigned()?;
                Ok(false)
            }
            Err(e) => Err(e),
        }
    }

    /// Commits the open checkpoint (its commit in flight); if a transaction was aborted,
    /// restores the assigned partitions from the last committed checkpoint and consumes again
    /// from there.
    pub(super) fn commit_or_reset(&mut self, close: Close) -> Result<(), RunError> {
        if !self.commit(close)? {
            self.restore_assigned()?;
        }
        Ok(())
    }

    /// Restores the assigned partitions from the last committed checkpoint.
    pub(super) fn restore_assigned(&mut self) -> Result<(), RunError> {
        let list: Vec<(String, Partition)> = self.assigned.iter().cloned().collect();
        if !list.is_empty() {
            tracing::info!("restoring the assigned partitions from the last committed checkpoint");
            self.take_over(list, Restore::Changelog)?;
        }
        Ok(())
    }
}
