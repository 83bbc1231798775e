//! The join engine: PURE. It takes one input record at a time and a `JoinState`, and appends the
//! join changes that record causes. No tokio, rdkafka, RocksDB, clock or randomness here: time is
//! the records' own timestamps (and, for the interval join, processing time passed in by the
//! caller), and state is whatever store the caller hands in.

pub mod canonical;
pub mod clock;
pub mod column;
pub mod filter;
pub mod groups;
pub mod interval;
pub mod keyhash;
pub mod layout;
pub mod memory;
pub mod normalize;
pub mod output_key;
pub mod plan;
pub mod project;
pub mod regular;
pub mod star;
pub mod state;
pub mod table;
pub mod ttl;
pub mod watermark;

use crate::change::{Input, JoinedChange, Partition, Side};
use crate::config::JoinSpec;
use crate::stats::Stats;

use interval::IntervalJoin;
use project::Projection;
use regular::RegularJoin;
use star::StarJoin;
use state::{StateError, StateValue};

pub use memory::MemoryState;
pub use state::JoinState;

/// The join a configuration asks for: regular (SPEC §3), interval (SPEC §4) or star (SPEC §14).
#[derive(Debug)]
pub enum Engine {
    Regular(RegularJoin),
    Interval(IntervalJoin),
    Star(StarJoin),
}

impl Engine {
    pub fn new(spec: &JoinSpec) -> Self {
        match spec.interval {
            Some(interval) => Engine::Interval(IntervalJoin::new(spec, interval)),
            None if spec.is_star() => Engine::Star(StarJoin::new(spec)),
            None => Engine::Regular(RegularJoin::new(spec)),
        }
    }

    /// The SELECT list, compiled.
    pub fn projection(&self) -> &Projection {
        match self {
            Engine::Regular(j) => &j.plan().projection,
            Engine::Interval(j) => &j.plan().projection,
            Engine::Star(j) => &j.plan().projection,
        }
    }

    /// How many inputs the join reads: two, or a star join's fact and dimensions.
    pub fn inputs(&self) -> usize {
        match self {
            Engine::Star(j) => j.plan().sources.len(),
            _ => 2,
        }
    }

    pub fn stats(&self) -> &Stats {
        match self {
            Engine::Regular(j) => &j.stats,
            Engine::Interval(j) => &j.stats,
            Engine::Star(j) => &j.stats,
        }
    }

    pub fn stats_mut(&mut self) -> &mut Stats {
        match self {
            Engine::Regular(j) => &mut j.stats,
            Engine::Interval(j) => &mut j.stats,
            Engine::Star(j) => &mut j.stats,
        }
    }

    /// The input partitions this instance processes (both sides), known at processing time
    /// `now`; the interval join's watermark waits for each of them.
    pub fn set_partitions(&mut self, partitions: &[Partition], now: i64) {
        if let Engine::Interval(j) = self {
            j.set_partitions(partitions, now);
        }
    }

    /// Forgets the state and caches of `partition` (revoked: another instance owns it now).
    pub fn release_partition<S: JoinState + ?Sized>(
        &mut self,
        state: &mut S,
        partition: Partition,
    ) {
        state.release_partition(partition);
        self.stats_mut().release_partition(partition);
        match self {
            Engine::Regular(j) => j.forget_partition(partition),
            Engine::Star(j) => j.forget_partition(partition),
            Engine::Interval(_) => {}
        }
    }

    /// Writes what a restart needs besides the rows (row counts, stream times, interval
    /// watermarks and sequence numbers) into `state`; the caller then flushes it with the input
    /// offsets.
    pub fn checkpoint<S: JoinState + ?Sized>(&mut self, state: &mut S) {
        let mut group = Vec::new();
        let inputs = self.inputs();
        for (partition, rows) in &self.stats().state_rows_by_partition {
            layout::meta_group(&mut group, *partition);
            let bytes: Vec<u8> = rows[..inputs]
                .iter()
                .flat_map(|r| r.to_be_bytes())
                .collect();
            state.put(&group, layout::ROW_COUNTS, StateValue::Bytes(bytes));
        }
        match self {
            Engine::Interval(j) => j.checkpoint(state),
            Engine::Regular(j) => j.checkpoint(state),
            Engine::Star(j) => j.checkpoint(state),
        }
    }

    /// Reads back what `checkpoint` wrote for `partition` (assigned after a restart or a move).
    pub fn restore_partition<S: JoinState + ?Sized>(
        &mut self,
        state: &mut S,
        partition: Partition,
        now: i64,
    ) -> Result<(), StateError> {
        let mut group = Vec::new();
        layout::meta_group(&mut group, partition);
        // One count per input, 8 bytes each (two-way joins: left, right).
        let counts: Vec<i64> = state
            .get(&group, layout::ROW_COUNTS)?
            .and_then(|v| {
                let b = v.as_bytes()?;
                Some(
                    b.chunks_exact(8)
                        .filter_map(|c| c.try_into().ok().map(i64::from_be_bytes))
                        .collect(),
                )
            })
            .unwrap_or_default();
        let stats = self.stats_mut();
        stats.release_partition(partition);
        for (side, rows) in Side::first(counts.len()).zip(counts) {
            stats.rows(partition, side, rows);
        }
        match self {
            Engine::Interval(j) => j.restore_partition(state, partition, now),
            Engine::Regular(j) => j.restore_partition(state, partition),
            Engine::Star(j) => j.restore_partition(state, partition),
        }
    }

    /// The interval join's watermark per side, for metrics.
    pub fn watermark(&self, side: Side) -> Option<i64> {
        match self {
            Engine::Regular(_) | Engine::Star(_) => None,
            Engine::Interval(j) => j.side_watermark(side),
        }
    }

    /// Processes one arriving record and appends the changes it causes to `out`.
    pub fn process<S: JoinState + ?Sized>(
        &mut self,
        state: &mut S,
        input: Input,
        out: &mut Vec<JoinedChange>,
    ) -> Result<(), StateError> {
        match self {
            Engine::Regular(j) => j.process(state, input, out),
            Engine::Interval(j) => j.process(state, input, out),
            Engine::Star(j) => j.process(state, input, out),
        }
    }

    /// Processing time moved to `now` (run mode): `SIDEJOIN_MAX_WAIT` and idle partitions.
    pub fn tick<S: JoinState + ?Sized>(
        &mut self,
        state: &mut S,
        now: i64,
        out: &mut Vec<JoinedChange>,
    ) -> Result<(), StateError> {
        match self {
            Engine::Interval(j) => j.tick(state, now, out),
            Engine::Regular(_) | Engine::Star(_) => Ok(()),
        }
    }

    /// End of a finite input (replay): the interval join emits what is still waiting.
    pub fn flush<S: JoinState + ?Sized>(
        &mut self,
        state: &mut S,
        out: &mut Vec<JoinedChange>,
    ) -> Result<(), StateError> {
        match self {
            Engine::Interval(j) => j.flush(state, out),
            Engine::Regular(_) | Engine::Star(_) => Ok(()),
        }
    }
}
