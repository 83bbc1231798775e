//! One record through sidejoin: decode → engine → generated-retraction filter → projection →
//! output encoding. Replay and the Kafka runtime both drive this, so they cannot disagree.
//!
//! The pipeline does not decide what happens to an undecodable record (`SIDEJOIN_ON_ERROR`): it
//! counts it, lets it advance stream time, and returns the error to its caller.

use serde_json::Value;

use crate::changelog::{Input, JoinedChange, Side};
use crate::config::{Config, OutputSpec, SideSpec};
use crate::engine::project::Projection;
use crate::engine::{Engine, JoinState};
use crate::format::{self, DecodeError};
use crate::sink::{self, OutChange, OutRecord};
use crate::stats::{DropReason, Stats};

/// Where a record came from: its side, input partition and Kafka timestamp (epoch ms).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Origin {
    pub side: Side,
    pub partition: u32,
    pub timestamp: i64,
}

/// The join of one configuration over one state store.
pub struct Pipeline<S: JoinState> {
    sides: [SideSpec; 2],
    output: OutputSpec,
    engine: Engine,
    projection: Projection,
    state: S,
    joined: Vec<JoinedChange>,
}

impl<S: JoinState> Pipeline<S> {
    pub fn new(config: &Config, state: S) -> Self {
        let engine = Engine::new(&config.join);
        Pipeline {
            sides: [config.join.left.clone(), config.join.right.clone()],
            output: config.output.clone(),
            projection: engine.plan().projection.clone(),
            engine,
            state,
            joined: Vec::new(),
        }
    }

    pub fn stats(&self) -> &Stats {
        &self.engine.stats
    }

    pub fn stats_mut(&mut self) -> &mut Stats {
        &mut self.engine.stats
    }

    pub fn state(&mut self) -> &mut S {
        &mut self.state
    }

    /// Processes one record whose key and value are already parsed (`None` = absent/null).
    pub fn process(
        &mut self,
        origin: Origin,
        key: Option<Value>,
        value: Option<Value>,
    ) -> Result<Vec<OutChange>, DecodeError> {
        let decoded = format::decode(&self.sides[origin.side.index()], key, value);
        self.process_decoded(origin, decoded)
    }

    /// Processes one record given the outcome of decoding it.
    pub fn process_decoded(
        &mut self,
        origin: Origin,
        decoded: Result<Option<crate::changelog::Event>, DecodeError>,
    ) -> Result<Vec<OutChange>, DecodeError> {
        let side = origin.side.index();
        self.engine.stats.records_in[side] += 1;
        let (event, result) = match decoded {
            Ok(Some(event)) => (Some(event), Ok(())),
            Ok(None) => {
                self.engine
                    .stats
                    .input_dropped(origin.side, DropReason::Tombstone);
                (None, Ok(()))
            }
            Err(e) => {
                self.engine.stats.decode_errors[side] += 1;
                (None, Err(e))
            }
        };
        let input = Input {
            side: origin.side,
            partition: origin.partition,
            timestamp: origin.timestamp,
            event,
        };
        self.joined.clear();
        self.engine
            .process(&mut self.state, input, &mut self.joined);
        let produced = self.encode();
        result.map(|()| produced)
    }

    /// The output records for the changes of one input record, in the configured output mode.
    pub fn records(&self, changes: Vec<OutChange>) -> Vec<OutRecord> {
        let mut records = Vec::with_capacity(changes.len());
        sink::encode(self.output.mode, changes, &mut records);
        records
    }

    /// Projects what the engine emitted for the current record.
    fn encode(&mut self) -> Vec<OutChange> {
        let mut changes = Vec::with_capacity(self.joined.len());
        for c in self.joined.drain(..) {
            let (l, r) = (c.left.as_deref(), c.right.as_deref());
            let row = self.projection.project(l, r);
            let key = sink::output_key(&self.output.key, &row, l, r);
            self.engine.stats.record_out(c.kind);
            changes.push(OutChange {
                kind: c.kind,
                key,
                row,
            });
        }
        changes
    }
}
