//! The repartition step (`SIDEJOIN_<SIDE>_HASH_BY`, SPEC §6): a side whose topic is not keyed
//! the way the join needs is read, decoded, re-keyed by the hashed columns
//! (`crate::routing`) and written to `<app>-<side>-repartition`, which the join then consumes
//! as that side's input (the plan's source), like Kafka Streams' repartition topics.
//!
//! **Invariant.** The repartition topic holds, in committed transactions, exactly the records
//! routed from the source topic's records below the offsets committed for the router group
//! `<app>-<side>-router`, each once and in routing order: the records routed from a stretch of
//! source records and the source offsets past that stretch are committed in one transaction of
//! the producer `<app>-<side>-router` (under either guarantee: a duplicate here would be a
//! duplicate row in the join's state, not only a duplicate output). A crash, a failed commit or
//! a fenced router leaves neither; the next router resumes at the committed offsets. The join
//! reads the repartition topic `read_committed`, as every input.
//!
//! **One router per side for the whole application**, so that it can merge all partitions of
//! the source topic by timestamp (`input::Merge`, `SIDEJOIN_MAX_TASK_IDLE`): the changes of one
//! row keep their order even when the source topic spreads them over partitions. It runs in the
//! instance whose member of the lease group `<app>-<side>-router-lease` is assigned partition 0
//! of the repartition topic (the lease consumer reads nothing); a new holder's
//! `init_transactions` fences the previous one and aborts what it left open. One core routes a
//! side: its throughput bounds the side's.
//!
//! **Purge.** Records of the repartition topic below the join group's committed offsets are
//! deleted (delete-records), as Kafka Streams does; the topic keeps them otherwise
//! (`retention.ms=-1`), so a slow join never loses input to retention.
//!
//! What it does not do: decide what a change becomes (`crate::routing`), create its topic (the
//! plan's internal topics, `kafka::topics`), join, or read the repartition topic (the workers
//! do, as any input).

mod placement;
mod route;
mod upkeep;

use std::sync::Arc;
use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::kafka::clients;
use crate::kafka::transactions::TxnError;
use crate::metrics::Metrics;
use crate::plan::RouterPlan;

use super::{RunError, StartupError};
use route::Router;

/// Why a step stopped.
enum Stop {
    /// The instance must stop (its error says why).
    Fatal(RunError),
    /// The transaction is lost: resume from the last commit.
    Retry(String),
}

impl From<KafkaError> for Stop {
    fn from(e: KafkaError) -> Self {
        Stop::Retry(crate::kafka::redact(&e))
    }
}

impl From<TxnError> for Stop {
    fn from(e: TxnError) -> Self {
        match e.fatal {
            true => Stop::Fatal(e.into()),
            false => Stop::Retry(e.to_string()),
        }
    }
}

/// How often the lease's assignment is looked at.
const LEASE_LOOK: Duration = Duration::from_millis(100);

/// Routes `plan`'s side while this instance holds its lease, until `stop`; returns only on stop
/// or on what must stop the instance (a decode error under `SIDEJOIN_ON_ERROR=fail`, a
/// placement that cannot be mirrored, an Avro side without the hashed columns).
pub(super) fn run_blocking(
    cfg: &Config,
    plan: &RouterPlan,
    metrics: Arc<Metrics>,
    stop: &CancellationToken,
) -> Result<(), RunError> {
    if !avro_fields_hold(cfg, plan, stop)? {
        return Ok(());
    }
    let Some(placement) = placement::placement(cfg, plan, stop)? else {
        return Ok(());
    };
    let side = plan.side;
    tracing::info!(
        "repartitioning the {side} side: `{}` → `{}` by {} ({})",
        plan.source_topic,
        plan.topic,
        plan.by.join(","),
        placement.describe()
    );
    let mut router = Router::new(cfg, plan, placement, metrics)?;
    let lease: BaseConsumer = clients::router_lease(&cfg.kafka, side).create()?;
    lease.subscribe(&[plan.topic.as_str()])?;
    let (mut active, mut looked) = (false, Instant::now() - LEASE_LOOK);
    while !stop.is_cancelled() {
        // Serves the lease's group protocol; its records are never wanted.
        let _ = lease.poll(if active { Duration::ZERO } else { LEASE_LOOK });
        if looked.elapsed() >= LEASE_LOOK {
            looked = Instant::now();
            active = router.follow_lease(holds(&lease, &plan.topic), active);
        }
        if active {
            active = match router.step() {
                Ok(()) => true,
                Err(Stop::Fatal(e)) => {
                    // What was routed before the failing record is committed; a restart
                    // resumes at it.
                    router.finish();
                    return Err(e);
                }
                Err(Stop::Retry(e)) => {
                    tracing::warn!(
                        "repartition of the {side} side: {e}; resuming from its last commit"
                    );
                    router.deactivate();
                    false
                }
            };
        }
    }
    if active {
        router.finish();
    }
    Ok(())
}

/// An Avro side's hashed columns are fields of its writer schema (the subject's latest), else
/// the start is refused naming the missing one; `false` on stop.
fn avro_fields_hold(
    cfg: &Config,
    plan: &RouterPlan,
    stop: &CancellationToken,
) -> Result<bool, RunError> {
    let side = plan.side;
    let spec = cfg.join.side(side);
    let (true, Some(registry)) = (spec.format.is_avro(), &cfg.kafka.registry) else {
        return Ok(true);
    };
    let registry = crate::avro::registry::Registry::new(registry)
        .map_err(|e| RunError::Startup(StartupError::Registry(e)))?;
    let fields = crate::avro::subjects::row_fields(cfg, &registry, side, stop)
        .map_err(|e| RunError::Startup(StartupError::Registry(e)))?;
    let Some(fields) = fields else {
        return Ok(false);
    };
    match plan.by.iter().find(|c| !fields.contains(c)) {
        None => Ok(true),
        Some(c) => Err(RunError::Startup(StartupError::Refused(format!(
            "SIDEJOIN_{}_HASH_BY: `{c}` is not a field of the {side} side's Avro rows (subject `{}-value`, \
             latest version: {}); every record would be unroutable",
            side.var(),
            plan.source_topic,
            fields.join(", ")
        )))),
    }
}

/// Whether `lease` is assigned partition 0 of `topic`; pauses what it is assigned (it reads
/// nothing).
fn holds(lease: &BaseConsumer, topic: &str) -> bool {
    let Ok(assigned) = lease.assignment() else {
        return false;
    };
    if assigned.count() > 0 {
        let _ = lease.pause(&assigned);
    }
    assigned.find_partition(topic, 0).is_some()
}
