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

use rdkafka::consumer::{BaseConsumer, Consumer};

use crate::config::{Config, OnViolation};
use crate::engine::keyhash::KeyHasher;
use crate::engine::MemoryState;
use crate::kafka::clients;
use crate::kafka::topics::{self, TopicError};
use crate::plan::{self, Plan, WorkerPlan};
use crate::store::{RocksState, StoreOptions};

use super::durable::identity::{self, Identity, Verdict};
use super::probe;
use super::processor::{JoinProcessor, PassthroughProcessor, Processor};
use super::{RunError, RunMode, StartupError};

/// What the workers start with: the plan and, per worker in its order, its processor and the
/// state it joins against (RocksDB under `run`, memory otherwise).
pub(super) enum Started {
    Durable(Workers<RocksState>),
    Volatile(Workers<MemoryState>),
}

/// The plan and every worker's processor with its state.
pub(super) struct Workers<S> {
    pub plan: Plan,
    pub each: Vec<(Box<dyn Processor<S>>, S)>,
}

/// Every worker's state, opened before anything else: a state directory that cannot be used
/// stops the start at once.
/// Each is paired with whether its directory held state before (`identity::holds_state`).
fn open_stores(cfg: &Config, mode: RunMode) -> Result<Option<Vec<(RocksState, bool)>>, RunError> {
    if mode != RunMode::Join {
        return Ok(None);
    }
    let stores = (plan::worker_plans(cfg).iter())
        .map(|w| {
            let held = identity::holds_state(&w.state_dir);
            RocksState::open(&w.state_dir, &store_options(w))
                .map(|s| (s.with_key_hasher(random_key_hasher()), held))
        })
        .collect::<Result<_, _>>()
        .map_err(|e| RunError::StateDir(e.to_string()))?;
    Ok(Some(stores))
}

/// Checks each worker's state directory against the state's current identity (`identity`):
/// one that records another is emptied (its partitions are then restored from the changelog).
fn identify(
    cfg: &Config,
    plan: &Plan,
    stores: Vec<(RocksState, bool)>,
) -> Result<Vec<RocksState>, RunError> {
    let client: BaseConsumer = clients::admin(&cfg.kafka).create()?;
    let Some(now) = Identity::current(client.client(), &cfg.kafka.application_id, plan)? else {
        return Ok(stores.into_iter().map(|(s, _)| s).collect());
    };
    let mut kept = Vec::with_capacity(stores.len());
    for (w, (store, held)) in plan.workers.iter().zip(stores) {
        let dir = &w.state_dir;
        let store = match identity::verdict(dir, &now, held) {
            Verdict::Keep | Verdict::Record => store,
            Verdict::Discard(why) => {
                tracing::warn!(
                    "state directory {}: {why}; discarding the local state (it is restored from the changelog)",
                    dir.display()
                );
                drop(store);
                identity::empty(dir)?;
                RocksState::open(dir, &store_options(w))
                    .map(|s| s.with_key_hasher(random_key_hasher()))
                    .map_err(|e| RunError::StateDir(e.to_string()))?
            }
        };
        identity::record(dir, &now)?;
        kept.push(store);
    }
    Ok(kept)
}

/// The hasher of a store's join keys, keyed at random against hash flooding (the engine takes
/// it from here: it draws no randomness itself; `engine::keyhash`).
fn random_key_hasher() -> KeyHasher {
    KeyHasher::random(std::hash::RandomState::new())
}

fn store_options(w: &WorkerPlan) -> StoreOptions {
    StoreOptions {
        block_cache_mb: w.block_cache_mb,
        cache_mb: w.cache_mb,
        write_buffer_mb: w.write_buffer_mb,
    }
}

/// Everything before the workers start (see the module doc); `None` when stopped meanwhile.
pub(super) fn prepare(
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
    let stores = match stores {
        Some(stores) => Some(identify(cfg, &plan, stores)?),
        None => None,
    };
    let readings = plan.readings();
    let join = || Box::new(JoinProcessor::new(cfg, readings.clone()));
    let started = match (mode, stores) {
        (_, Some(stores)) => {
            let each = (stores.into_iter())
                .map(|s| (join() as Box<dyn Processor<RocksState>>, s))
                .collect();
            Started::Durable(Workers { plan, each })
        }
        (RunMode::Passthrough, None) => {
            let each = (0..plan.workers.len())
                .map(|_| {
                    let p = Box::new(PassthroughProcessor::default());
                    let state = MemoryState::with_hasher(random_key_hasher());
                    (p as Box<dyn Processor<MemoryState>>, state)
                })
                .collect();
            Started::Volatile(Workers { plan, each })
        }
        (_, None) => {
            let each = (0..plan.workers.len())
                .map(|_| {
                    (
                        join() as Box<dyn Processor<MemoryState>>,
                        MemoryState::with_hasher(random_key_hasher()),
                    )
                })
                .collect();
            Started::Volatile(Workers { plan, each })
        }
    };
    let ready = match started {
        Started::Durable(w) => ready(cfg, w, stop)?.map(Started::Durable),
        Started::Volatile(w) => ready(cfg, w, stop)?.map(Started::Volatile),
    };
    Ok(ready)
}

/// Gets every processor ready (`Processor::prepare`) and probes the inputs' keys when the plan
/// says so; `None` when stopped meanwhile.
fn ready<S>(
    cfg: &Config,
    mut workers: Workers<S>,
    stop: &CancellationToken,
) -> Result<Option<Workers<S>>, RunError> {
    for (p, _) in &mut workers.each {
        if !p.prepare(stop)? {
            return Ok(None);
        }
    }
    let checked = workers.plan.checks_keys
        && workers
            .each
            .iter_mut()
            .all(|(p, _)| p.check_copartitioning());
    if checked {
        probe_keys(cfg, &workers.plan, workers.each[0].0.as_mut(), stop)?;
    }
    Ok(Some(workers))
}

/// The start-up co-partitioning probe (`probe`): a misfit stops the start under
/// `SIDEJOIN_ON_COPARTITION_VIOLATION=fail`, else it is logged (processing logs each partition's
/// first misfit again as it meets it).
fn probe_keys<S>(
    cfg: &Config,
    plan: &Plan,
    processor: &mut dyn Processor<S>,
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
