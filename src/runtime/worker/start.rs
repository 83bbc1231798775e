//! A worker's start: its clients (the group consumer, the output and transactional producers,
//! the restore and broadcast consumers), its checkpoint protocol, then the wait for the other
//! workers and the subscription.

use std::collections::{BTreeSet, HashSet};
use std::sync::mpsc;
use std::sync::Arc;

use rdkafka::consumer::Consumer;
use rdkafka::producer::BaseProducer;
use tokio_util::sync::CancellationToken;

use crate::config::{Config, Guarantee};
use crate::kafka::clients;
use crate::kafka::context::{BroadcastContext, HelperContext, JoinContext};
use crate::kafka::deliveries::Deliveries;
use crate::kafka::transactions::Transactions;
use crate::metrics::{Step, WorkerMetrics};
use crate::plan::{Plan, WorkerPlan};
use crate::sink::Records;
use sidejoin_store::Checkpointed;

use super::super::broadcast::Broadcast;
use super::super::durable::{identity, Parts, Protocol};
use super::super::faults::fault;
use super::super::input::{Lanes, Merge};
use super::super::output::Output;
use super::super::processor::Processor;
use super::super::streams::Inputs;
use super::super::workers::StartGate;
use super::super::RunError;
use super::Worker;

/// Records buffered per task stream before its partition's queue is left alone for a while.
const PER_QUEUE: usize = 2_048;

/// The id of the state directory (made once, kept in `transactional.id` inside it).
fn volume_id(dir: &std::path::Path) -> Result<String, RunError> {
    let file = dir.join("transactional.id");
    match std::fs::read_to_string(&file) {
        Ok(id) if !id.trim().is_empty() => Ok(id.trim().to_owned()),
        _ => {
            let id = crate::kafka::unique_id();
            std::fs::write(&file, &id)
                .map_err(|e| RunError::StateDir(format!("cannot write {}: {e}", file.display())))?;
            Ok(id)
        }
    }
}

/// A worker's producers and the transactional id of the first.
struct Producers {
    txn_id: String,
    /// The checkpoint producer (transactional).
    txn: Arc<BaseProducer<Deliveries>>,
    /// The output's: the checkpoint producer under `exactly_once`, a separate idempotent one
    /// under `at_least_once`.
    output: Arc<BaseProducer<Deliveries>>,
}

/// The checkpoint producer and, under `at_least_once`, the separate output producer.
fn producers(
    cfg: &Config,
    me: &WorkerPlan,
    durable: bool,
    metrics: &WorkerMetrics,
) -> Result<Producers, RunError> {
    let volume = match durable {
        true => Some(volume_id(&me.state_dir)?),
        false => None,
    };
    let id = clients::transactional_id(&cfg.kafka, me.instance_id.as_deref(), volume.as_deref());
    let deliveries = || Deliveries::new(metrics.shared().clone());
    let txn: Arc<BaseProducer<Deliveries>> =
        Arc::new(clients::transactional(&cfg.kafka, &id).create_with_context(deliveries())?);
    let output = match cfg.kafka.guarantee {
        Guarantee::ExactlyOnce => txn.clone(),
        Guarantee::AtLeastOnce => {
            Arc::new(clients::producer(&cfg.kafka).create_with_context(deliveries())?)
        }
    };
    Ok(Producers {
        txn_id: id,
        txn,
        output,
    })
}

/// The worker's state and its checkpoint protocol, started (its transactional producer
/// registered with the brokers).
fn protocol<S: Checkpointed>(
    cfg: &Config,
    plan: &Plan,
    me: &WorkerPlan,
    state: S,
    txn: Arc<BaseProducer<Deliveries>>,
    metrics: &WorkerMetrics,
    shutdown: &CancellationToken,
) -> Result<Protocol<S>, RunError> {
    // Called with `true` on every retry round: a retried call is progress (`watchdog`).
    let stall = {
        let m = metrics.clone();
        Arc::new(move |stalled: bool| {
            if stalled {
                m.step(Step::WaitingForKafka);
            }
            m.set_ready(!stalled)
        })
    };
    let parts = Parts {
        state,
        guarantee: cfg.kafka.guarantee,
        txn: Transactions::new(txn, "checkpoint", stall, shutdown),
        changelog: plan.changelogs.clone(),
        inputs: Inputs::of(plan),
        fault: fault(),
        restorer: clients::restore_consumer(&cfg.kafka)
            .create_with_context(HelperContext("restore consumer"))?,
        identity: identity::recorded_changelogs(&me.state_dir),
    };
    let mut protocol = Protocol::new(parts, metrics);
    protocol.start()?;
    Ok(protocol)
}

/// What a worker runs with.
pub(crate) struct Job<'a, S> {
    pub cfg: &'a Config,
    pub plan: &'a Plan,
    pub me: &'a WorkerPlan,
    pub state: S,
    pub processor: &'a mut dyn Processor<S>,
    pub metrics: &'a WorkerMetrics,
    pub gate: &'a StartGate,
    pub shutdown: &'a CancellationToken,
}

/// Connects the worker's clients, waits at `gate` for the other workers, then processes until
/// `shutdown` is cancelled or a fatal error.
pub(crate) fn run_blocking<S: Checkpointed>(job: Job<'_, S>) -> Result<(), RunError> {
    let Job {
        cfg,
        plan,
        me,
        metrics,
        shutdown,
        ..
    } = job;
    let (tx, rx) = mpsc::channel();
    let consumer = clients::group_consumer(&cfg.kafka, me.instance_id.as_deref())
        .create_with_context(JoinContext::new(tx, metrics.clone()))?;
    let producers = producers(cfg, me, plan.changelogs.is_some(), metrics)?;
    let output = Output::new(
        producers.output,
        &plan.output.topic,
        plan.output.partitions,
        &cfg.kafka.dlq_topic,
        clients::max_message_bytes(&cfg.kafka),
    );
    let mut worker = Worker {
        cfg,
        output,
        events: rx,
        processor: job.processor,
        metrics,
        shutdown,
        broadcast: broadcast(cfg, plan, metrics)?,
        inputs: Inputs::of(plan),
        assigned: HashSet::new(),
        owned: BTreeSet::new(),
        protocol: protocol(cfg, plan, me, job.state, producers.txn, metrics, shutdown)?,
        lanes: Lanes::new(consumer, PER_QUEUE),
        merge: Merge::new(plan.sources.len(), cfg.kafka.max_task_idle_ms),
        out: Records::default(),
        skipped_logged: 0,
        violations_logged: HashSet::new(),
        poisoned: super::Poisoned::default(),
        fault: fault(),
    };
    // Cancelled while waiting: the loop stops at once, with nothing to commit.
    job.gate.arrive(shutdown);
    if shutdown.is_cancelled() {
        // Before joining the group: a stop during start-up must not rebalance the live group.
        return Ok(());
    }
    worker.subscribe(plan, &producers.txn_id)?;
    let result = worker.run();
    metrics.step(Step::Off);
    worker.consumer().context().close();
    worker.consumer().unsubscribe();
    result
}

fn broadcast(
    cfg: &Config,
    plan: &Plan,
    metrics: &WorkerMetrics,
) -> Result<Vec<Broadcast>, RunError> {
    plan.broadcasts()
        .map(|b| {
            let consumer = clients::broadcast_consumer(&cfg.kafka)
                .create_with_context(BroadcastContext::new(metrics.clone()))?;
            Ok(Broadcast::new(
                consumer,
                b.side,
                &b.topic,
                b.partitions,
                cfg.kafka.max_task_idle_ms,
            ))
        })
        .collect()
}

impl<S> Worker<'_, S> {
    /// Joins the group: subscribes to the grouped inputs.
    fn subscribe(&mut self, plan: &Plan, txn_id: &str) -> Result<(), RunError> {
        let grouped: Vec<&str> = (plan.sources.iter())
            .filter(|s| s.grouped())
            .map(|s| s.topic.as_str())
            .collect();
        self.consumer().subscribe(&grouped)?;
        tracing::info!(
            "consuming `{}` and `{}` ({}) as group `{}`, writing `{}` ({} partitions), {:?} (transactional id `{txn_id}`); Kafka properties passed through: {}",
            self.inputs.topics[0],
            self.inputs.topics[1],
            plan.topology(),
            self.cfg.kafka.application_id,
            plan.output.topic,
            plan.output.partitions,
            self.cfg.kafka.guarantee,
            crate::kafka::describe_properties(&self.cfg.kafka)
        );
        Ok(())
    }
}
