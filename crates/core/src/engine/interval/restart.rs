//! What the interval join keeps in memory between checkpoints (each partition's largest times
//! seen and last arrival number), written into the state and read back after a restart or a move.

use crate::change::{Partition, Side};

use super::super::layout;
use super::super::state::{JoinState, StateError, StateValue};
use super::IntervalJoin;

impl IntervalJoin {
    /// Writes what restarting needs beyond the rows: each partition's largest times seen and
    /// last arrival sequence number (kept in memory between checkpoints).
    pub fn checkpoint<S: JoinState + ?Sized>(&self, state: &mut S) {
        let mut group = Vec::new();
        for ((side, partition), time) in self.marks.max_times() {
            layout::meta_group(&mut group, partition);
            state.put(
                &group,
                layout::max_time_item(side),
                StateValue::Bytes(time.to_be_bytes().to_vec()),
            );
        }
        for (partition, seq) in &self.seq {
            layout::meta_group(&mut group, *partition);
            state.put(
                &group,
                layout::INTERVAL_SEQ,
                StateValue::Bytes(seq.to_be_bytes().to_vec()),
            );
        }
    }

    /// Reads back a partition's largest times seen (after a restart or a move).
    pub fn restore_partition<S: JoinState + ?Sized>(
        &mut self,
        state: &mut S,
        partition: Partition,
        now: i64,
    ) -> Result<(), StateError> {
        let mut group = Vec::new();
        layout::meta_group(&mut group, partition);
        for side in Side::BOTH {
            let time = state.get(&group, layout::max_time_item(side))?;
            if let Some(t) = time.and_then(|v| v.as_i64()) {
                self.marks.observe(side, partition, Some(t), now);
            }
        }
        self.seq.remove(&partition);
        self.evicted_to.retain(|(_, p), _| *p != partition);
        self.due_from.retain(|(_, p), _| *p != partition);
        Ok(())
    }
}
