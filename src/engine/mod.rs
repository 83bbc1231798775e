//! The join engine: PURE. It takes one input record at a time and a `JoinState`, and appends the
//! join changes that record causes. No tokio, rdkafka, RocksDB, clock or randomness here: time is
//! the records' own timestamps (and, for the interval join, processing time passed in by the
//! caller), and state is whatever store the caller hands in.

pub mod canonical;
pub mod column;
pub mod filter;
pub mod layout;
pub mod memory;
pub mod normalize;
pub mod plan;
pub mod project;
pub mod regular;
pub mod state;
pub mod table;
pub mod ttl;

use rustc_hash::FxHashMap;

use crate::changelog::{Input, JoinedChange};
use crate::config::JoinSpec;
use crate::stats::Stats;

use normalize::Step;
use plan::JoinPlan;
use regular::Scratch;
use state::StateValue;
use table::Table;

pub use memory::MemoryState;
pub use state::JoinState;

/// A regular join (SPEC §3) over any `JoinState`.
#[derive(Debug)]
pub struct Engine {
    plan: JoinPlan,
    allow_generated_retracts: bool,
    /// Stream time per task (input partition), mirrored in state so restarts see the same value.
    stream_time: FxHashMap<u32, i64>,
    scratch: Scratch,
    steps: Vec<Step>,
    pub stats: Stats,
}

impl Engine {
    pub fn new(spec: &JoinSpec) -> Self {
        Engine {
            plan: JoinPlan::new(spec),
            allow_generated_retracts: spec.allow_generated_retracts,
            stream_time: FxHashMap::default(),
            scratch: Scratch::default(),
            steps: Vec::new(),
            stats: Stats::default(),
        }
    }

    pub fn plan(&self) -> &JoinPlan {
        &self.plan
    }

    /// Advances the stream time of `partition` to include `timestamp`; returns the new value.
    fn advance<S: JoinState + ?Sized>(
        &mut self,
        state: &mut S,
        partition: u32,
        timestamp: i64,
    ) -> i64 {
        let mut group = Vec::new();
        layout::meta_group(&mut group, partition);
        let known = *self.stream_time.entry(partition).or_insert_with(|| {
            state
                .get(&group, layout::STREAM_TIME)
                .and_then(|v| v.as_bytes().and_then(layout::time_from_bytes))
                .unwrap_or(i64::MIN)
        });
        if timestamp > known {
            self.stream_time.insert(partition, timestamp);
            state.put(
                &group,
                layout::STREAM_TIME,
                StateValue::Bytes(layout::time_bytes(timestamp).to_vec()),
            );
            timestamp
        } else {
            known
        }
    }

    /// Processes one arriving record and appends the changes it causes to `out`.
    ///
    /// Every record advances its task's stream time first (tombstones and undecodable records,
    /// passed with `event: None`, included), then expired rows are removed, then the event is
    /// normalised and joined.
    pub fn process<S: JoinState + ?Sized>(
        &mut self,
        state: &mut S,
        input: Input,
        out: &mut Vec<JoinedChange>,
    ) {
        let now = self.advance(state, input.partition, input.timestamp);
        let mut t = Table::new(state, input.partition, now, &mut self.stats);
        for side in &self.plan.sides {
            ttl::expire(&mut t, side);
        }
        let Some(event) = input.event else {
            return;
        };
        let from = out.len();
        let sp = self.plan.side(input.side);
        self.steps.clear();
        normalize::normalize(&mut t, sp, event, &mut self.steps);
        for step in self.steps.drain(..) {
            regular::apply(&mut t, &self.plan, input.side, step, &mut self.scratch, out);
        }
        if !self.allow_generated_retracts {
            filter::drop_generated(out, from, &mut self.stats);
        }
    }
}
