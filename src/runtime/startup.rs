//! Starting `sidejoin run`, once per instance, before any worker joins the group: open every
//! worker's state, wait for Kafka, derive the plan (`plan::derive`: the checks that need only
//! metadata), create or verify the plan's internal topics, get each worker's processor ready
//! (the schema registry of Avro formats), and probe the inputs' keys (the co-partitioning
//! probe). A problem the user must fix stops the start with a named error (exit 2); a stop
//! requested meanwhile ends it quietly.
//!
//! What it does not do: consume or commit anything (the workers do), or route (the routers
//! check what only they need: an Avro side's fields, the placement they mirror).

use tokio_util::sync::CancellationToken;

use crate::config::{Config, OnViolation};
use crate::engine::MemoryState;
use crate::kafka::topics::{self, TopicError};
use crate::plan::{self, Plan, WorkerPlan};
use crate::store::{RocksState, StoreOptions};

use super::probe;
use super::processor::{JoinProcessor, PassthroughProcessor, Processor};
use super::{RunError, RunMode, StartupError};

/// What the workers start with.
pub struct Started {
    pub plan: Plan,
    /// One per worker of the plan, in its order.
    pub processors: Vec<Box<dyn Processor>>,
}

/// State the processors will use, opened before anything else: a state directory that cannot
/// be used stops the start at once.
enum Stores {
    Rocks(Vec<RocksState>),
    Memory(usize),
    None,
}

fn open_stores(cfg: &Config, mode: RunMode) -> Result<Stores, RunError> {
    let workers = plan::worker_plans(cfg);
    Ok(match mode {
        RunMode::Join => Stores::Rocks(
            workers
                .iter()
                .map(|w| RocksState::open(&w.state_dir, &store_options(w)))
                .collect::<Result<_, _>>()
                .map_err(|e| RunError::State(format!("SIDEJOIN_STATE_DIR: {e}")))?,
        ),
        RunMode::JoinInMemory => Stores::Memory(workers.len()),
        RunMode::Passthrough => Stores::None,
    })
}

fn store_options(w: &WorkerPlan) -> StoreOptions {
    StoreOptions {
        block_cache_mb: w.block_cache_mb,
        cache_mb: w.cache_mb,
        write_buffer_mb: w.write_buffer_mb,
    }
}

/// Everything before the workers start (see the module doc); `None` when stopped meanwhile.
pub fn prepare(
    cfg: &Config,
    mode: RunMode,
    stop: &CancellationToken,
) -> Result<Option<Started>, RunError> {
    let stores = open_stores(cfg, mode)?;
    let md = match topics::wait_for_brokers(&cfg.kafka, stop) {
        Ok(md) => md,
        Err(TopicError::Cancelled) => return Ok(None),
        Err(e) => return Err(StartupError::from(e).into()),
    };
    let facts = topics::facts(&md);
    let plan = plan::derive(cfg, &facts, mode == RunMode::Join).map_err(StartupError::from)?;
    for topic in plan.internal_topics() {
        topics::ensure(&cfg.kafka, &facts, &topic).map_err(StartupError::from)?;
    }
    let mut processors = processors(cfg, &plan, stores);
    for p in &mut processors {
        match p.prepare(stop) {
            Ok(true) => {}
            Ok(false) => return Ok(None),
            Err(e) => return Err(StartupError::Registry(e).into()),
        }
    }
    let checked = plan.checks_keys && processors.iter_mut().all(|p| p.check_copartitioning());
    if checked {
        probe_keys(cfg, &plan, processors[0].as_mut(), stop)?;
    }
    Ok(Some(Started { plan, processors }))
}

fn processors(cfg: &Config, plan: &Plan, stores: Stores) -> Vec<Box<dyn Processor>> {
    let readings = plan.readings();
    match stores {
        Stores::Rocks(stores) => stores
            .into_iter()
            .map(|s| Box::new(JoinProcessor::new(cfg, readings, s)) as Box<dyn Processor>)
            .collect(),
        Stores::Memory(n) => (0..n)
            .map(|_| {
                Box::new(JoinProcessor::volatile(cfg, readings, MemoryState::new()))
                    as Box<dyn Processor>
            })
            .collect(),
        Stores::None => (0..plan.workers.len())
            .map(|_| Box::new(PassthroughProcessor::default()) as Box<dyn Processor>)
            .collect(),
    }
}

/// The start-up co-partitioning probe (`probe`): a misfit stops the start under
/// `SIDEJOIN_ON_COPARTITION_VIOLATION=fail`, else it is logged (processing logs each partition's
/// first misfit again as it meets it).
fn probe_keys(
    cfg: &Config,
    plan: &Plan,
    processor: &mut dyn Processor,
    stop: &CancellationToken,
) -> Result<(), RunError> {
    let fail = cfg.process.on_copartition_violation == OnViolation::Fail;
    for m in probe::probe(&cfg.kafka, plan, processor, stop).map_err(StartupError::from)? {
        let side = m.side;
        let other = &plan.source(side.other()).topic;
        let message = format!(
            "the {side} topic `{}` is not co-partitioned with `{other}` by the join key: its record at partition {} offset {}: {}; \
             rows of one join key on different partitions would join against part of the other side only: {}",
            m.topic,
            m.partition,
            m.offset,
            m.why,
            crate::copartition::fix(cfg, side)
        );
        if fail {
            let message = format!("{message} (SIDEJOIN_ON_COPARTITION_VIOLATION=fail)");
            return Err(StartupError::Copartitioning(message).into());
        }
        tracing::warn!("{message}");
    }
    Ok(())
}
