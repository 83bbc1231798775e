//! Stream time per task (SPEC §3.5) and the TTL floors that go with it, for the joins that keep
//! rows until they expire (the regular and the star join). Stream time lives here in memory, is
//! written into the state at each checkpoint (the state is only durable at checkpoints) and read
//! back when a partition is restored, so replays and restarts expire exactly the same rows.

use rustc_hash::FxHashMap;

use crate::change::{Partition, Side};

use super::layout;
use super::plan::SidePlan;
use super::state::{JoinState, StateError, StateValue};
use super::table::Table;

#[derive(Debug, Default)]
pub struct StreamClock {
    /// Stream time per task (input partition).
    times: FxHashMap<Partition, i64>,
    /// Per partition and input, a stamp no entry of the TTL index is below (`ttl::expire`).
    ttl_floor: FxHashMap<(Partition, Side), i64>,
}

impl StreamClock {
    /// Drops the stream time of a released partition.
    pub fn forget_partition(&mut self, partition: Partition) {
        self.times.remove(&partition);
        self.ttl_floor.retain(|(p, _), _| *p != partition);
    }

    /// Writes each partition's stream time into `state`.
    pub fn checkpoint<S: JoinState + ?Sized>(&self, state: &mut S) {
        let mut group = Vec::new();
        for (partition, time) in &self.times {
            layout::meta_group(&mut group, *partition);
            state.put(
                &group,
                layout::STREAM_TIME,
                StateValue::Bytes(layout::time_bytes(*time).to_vec()),
            );
        }
    }

    /// Reads back the stream time of `partition` (assigned after a restart or a move).
    pub fn restore_partition<S: JoinState + ?Sized>(
        &mut self,
        state: &mut S,
        partition: Partition,
    ) -> Result<(), StateError> {
        let mut group = Vec::new();
        layout::meta_group(&mut group, partition);
        let stored = state.get(&group, layout::STREAM_TIME)?;
        match stored.and_then(|v| v.as_bytes().and_then(layout::time_from_bytes)) {
            Some(t) => self.times.insert(partition, t),
            None => self.times.remove(&partition),
        };
        self.ttl_floor.retain(|(p, _), _| *p != partition);
        Ok(())
    }

    /// Advances the stream time of `partition` to include `timestamp`; returns the new value.
    pub fn advance(&mut self, partition: Partition, timestamp: i64) -> i64 {
        let known = self.times.entry(partition).or_insert(i64::MIN);
        *known = (*known).max(timestamp);
        *known
    }

    /// Removes the rows of every input in `sides` that expired at the table's stream time.
    pub fn expire<'p, S: JoinState + ?Sized>(
        &mut self,
        t: &mut Table<'_, S>,
        sides: impl IntoIterator<Item = &'p SidePlan>,
    ) -> Result<(), StateError> {
        for side in sides {
            let key = (t.partition, side.side);
            let mut floor = self.ttl_floor.get(&key).copied();
            super::ttl::expire(t, side, &mut floor)?;
            if let Some(f) = floor {
                self.ttl_floor.insert(key, f);
            }
        }
        Ok(())
    }
}
