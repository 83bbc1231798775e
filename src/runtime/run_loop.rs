//! The processing loop of `sidejoin run` (SPEC §6–8), on one blocking thread that owns the
//! state: poll a batch of records (up to `POLL_BATCH`, or `POLL_TIME`) → process each → send
//! what the batch caused; every commit interval seal a checkpoint, and persist and commit sealed
//! checkpoints as their outputs are acknowledged (`checkpoints`: at-least-once, pipelined).
//! Rebalance events arrive from the consumer context over a channel. Undecodable records follow
//! `SIDEJOIN_ON_ERROR`.

use std::collections::{BTreeSet, HashSet};
use std::sync::mpsc::{self, Receiver};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::error::RDKafkaErrorCode;
use rdkafka::message::BorrowedMessage;
use rdkafka::producer::BaseProducer;
use rdkafka::Message;
use rustc_hash::FxHashMap;
use tokio_util::sync::CancellationToken;

use crate::changelog::{Partition, Side};
use crate::config::{Config, OnError};
use crate::kafka::admin::{self, StartupError};
use crate::kafka::context::{Assignment, JoinContext};
use crate::kafka::deliveries::Deliveries;
use crate::kafka::{self as k};
use crate::metrics::Metrics;
use crate::pipeline::ErrorAction;
use crate::sink::Records;

use super::checkpoints::{Checkpoints, MAX_SEALED};
use super::output::Output;
use super::processor::{InRecord, Processor};
use super::RunError;

/// Records processed before their outputs are sent.
const POLL_BATCH: usize = 2_000;

/// The longest a poll batch gathers records.
const POLL_TIME: Duration = Duration::from_millis(10);

/// How long one wait for acknowledgements blocks before the loop looks around again.
const ACK_WAIT: Duration = Duration::from_millis(10);

pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

struct Loop<'a> {
    cfg: &'a Config,
    output: Output,
    events: Receiver<Assignment>,
    processor: &'a mut dyn Processor,
    metrics: &'a Metrics,
    shutdown: &'a CancellationToken,
    topics: [String; 2],
    /// `(topic, partition)` pairs currently assigned.
    assigned: HashSet<(String, Partition)>,
    /// Input partitions whose state this process holds.
    owned: BTreeSet<Partition>,
    /// `(side, partition)` → the next offset the state already reflects: records below it were
    /// applied before a restart and are skipped (the group's committed offset is advisory).
    persisted: FxHashMap<(Side, Partition), i64>,
    checkpoints: Checkpoints,
    out: Records,
    skipped_logged: u64,
}

impl Loop<'_> {
    fn side_of(&self, topic: &str) -> Option<Side> {
        if topic == self.topics[0] {
            Some(Side::Left)
        } else if topic == self.topics[1] {
            Some(Side::Right)
        } else {
            None
        }
    }

    /// Sends what the processor appended to `self.out`.
    fn send_outputs(&mut self) -> Result<(), RunError> {
        self.output.send_all(&self.out, self.checkpoints.epoch())?;
        self.out.clear();
        Ok(())
    }

    /// Handles one record at processing time `now` (epoch ms).
    fn handle(&mut self, msg: &BorrowedMessage<'_>, now: i64) -> Result<(), RunError> {
        let Some(side) = self.side_of(msg.topic()) else {
            return Ok(());
        };
        let (partition, offset) = (msg.partition(), msg.offset());
        if self
            .persisted
            .get(&(side, partition))
            .is_some_and(|next| offset < *next)
        {
            self.checkpoints.consumed(side, partition, offset);
            return Ok(());
        }
        let timestamp = msg.timestamp().to_millis().unwrap_or(now);
        let rec = InRecord {
            side,
            partition,
            timestamp,
            key: msg.key(),
            value: msg.payload(),
        };
        if let Err(e) = self.processor.process(&rec, now, &mut self.out) {
            match self.processor.dispatch() {
                ErrorAction::Fail => {
                    return Err(RunError::Failed {
                        topic: msg.topic().to_owned(),
                        partition,
                        offset,
                        side,
                        error: e.to_string(),
                    })
                }
                ErrorAction::DeadLetter => {
                    tracing::debug!(topic = msg.topic(), partition, "dead-lettering: {e}");
                    self.output
                        .dead_letter(msg, side, &e, timestamp, self.checkpoints.epoch())?;
                }
                ErrorAction::Skip => {
                    self.skipped_logged += 1;
                    if self.skipped_logged.is_power_of_two() {
                        tracing::warn!(
                            topic = msg.topic(),
                            partition,
                            offset,
                            "skipping undecodable record ({} so far): {e}",
                            self.skipped_logged
                        );
                    }
                }
            }
        }
        self.checkpoints.consumed(side, partition, offset);
        Ok(())
    }

    /// Loads the state of newly assigned partitions. Local state behind the group's committed
    /// offset is stale (another instance moved on) and is deleted.
    fn restore(
        &mut self,
        consumer: &BaseConsumer<JoinContext>,
        partitions: &[Partition],
    ) -> Result<(), RunError> {
        let started = Instant::now();
        let topics = self.topics.clone();
        let names = [topics[0].as_str(), topics[1].as_str()];
        for &p in partitions {
            let persisted = self.processor.restore(p, &names, now_ms());
            let mut tpl = rdkafka::TopicPartitionList::new();
            for t in &names {
                tpl.add_partition(t, p);
            }
            let committed: Vec<Option<i64>> =
                match consumer.committed_offsets(tpl, Duration::from_secs(10)) {
                    Ok(list) => names
                        .iter()
                        .map(|t| match list.find_partition(t, p).map(|e| e.offset()) {
                            Some(rdkafka::Offset::Offset(o)) => Some(o),
                            _ => None,
                        })
                        .collect(),
                    Err(e) => {
                        tracing::warn!("cannot read committed offsets of partition {p}: {e}");
                        vec![None, None]
                    }
                };
            tracing::info!(
                "partition {p}: state holds input offsets {persisted:?}, the group committed {committed:?}"
            );
            let stale = persisted
                .iter()
                .zip(&committed)
                .any(|(mine, group)| matches!((mine, group), (Some(m), Some(g)) if g > m));
            if stale {
                tracing::warn!(
                    "local state of partition {p} is behind the group's committed offsets ({persisted:?} < {committed:?}): deleting it and starting empty"
                );
                self.processor.delete(p).map_err(RunError::State)?;
                self.processor.restore(p, &names, now_ms());
                continue;
            }
            if persisted.iter().all(Option::is_none) && committed.iter().any(Option::is_some) {
                tracing::warn!(
                    "no local state for partition {p}: starting empty from the committed offsets"
                );
            }
            for (side, next) in Side::BOTH.into_iter().zip(persisted) {
                if let Some(next) = next {
                    self.persisted.insert((side, p), next);
                }
            }
        }
        self.metrics
            .set_restore_seconds(started.elapsed().as_secs_f64());
        Ok(())
    }

    /// Applies rebalance events: state of partitions no longer assigned is released.
    fn apply_assignments(&mut self, consumer: &BaseConsumer<JoinContext>) -> Result<(), RunError> {
        while let Ok(event) = self.events.try_recv() {
            match event {
                Assignment::Revoked { partitions, lost } => {
                    if lost {
                        // Committing would only wait for a coordinator that no longer counts
                        // this member: persist locally (the state carries its offsets, so a
                        // later owner of this volume resumes exactly), commit nothing.
                        tracing::warn!(
                            "partitions lost (the group gave them away): {partitions:?}"
                        );
                        for p in &partitions {
                            self.assigned.remove(p);
                        }
                        self.drain(consumer, CommitMode::Async)?;
                    } else {
                        tracing::info!("partitions revoked: {partitions:?}");
                        // Persist what was done for them while their offsets can be committed.
                        self.drain(consumer, CommitMode::Sync)?;
                        for p in &partitions {
                            self.assigned.remove(p);
                        }
                    }
                }
                Assignment::Assigned(list) => {
                    tracing::info!("partitions assigned: {list:?}");
                    self.assigned.extend(list);
                    let now: BTreeSet<Partition> = self.assigned.iter().map(|(_, p)| *p).collect();
                    let gone: Vec<Partition> = self.owned.difference(&now).copied().collect();
                    if !gone.is_empty() {
                        self.processor.revoked(&gone);
                        self.persisted.retain(|(_, p), _| !gone.contains(p));
                        self.checkpoints.forget(&gone);
                    }
                    let new: Vec<Partition> = now.difference(&self.owned).copied().collect();
                    self.restore(consumer, &new)?;
                    self.owned = now;
                    let parts: Vec<Partition> = self.owned.iter().copied().collect();
                    self.processor.assigned(&parts, now_ms());
                    self.metrics.set_ready(true);
                }
            }
        }
        Ok(())
    }

    /// Persists and commits every sealed checkpoint whose outputs are acknowledged.
    fn complete(
        &mut self,
        consumer: &BaseConsumer<JoinContext>,
        mode: CommitMode,
    ) -> Result<(), RunError> {
        self.checkpoints.complete(
            self.processor,
            self.output.deliveries(),
            consumer,
            &self.assigned,
            self.metrics,
            mode,
        )
    }

    /// Closes the open checkpoint (after what processing time releases).
    fn seal(&mut self) -> Result<(), RunError> {
        self.processor.tick(now_ms(), &mut self.out);
        self.send_outputs()?;
        self.checkpoints.seal(self.processor)
    }

    /// Seals the open checkpoint and waits until every sealed one is persisted and committed
    /// (rebalances, shutdown, a failing record).
    fn drain(
        &mut self,
        consumer: &BaseConsumer<JoinContext>,
        mode: CommitMode,
    ) -> Result<(), RunError> {
        self.seal()?;
        while !self.checkpoints.is_drained() {
            self.output.poll(ACK_WAIT);
            self.complete(consumer, mode)?;
        }
        Ok(())
    }

    /// Polls up to a batch of records and processes them; returns how many arrived.
    fn poll_batch(
        &mut self,
        consumer: &BaseConsumer<JoinContext>,
        wait: Duration,
    ) -> Result<usize, RunError> {
        let started = Instant::now();
        // Processing time, read once per batch: it only drives max-wait and idle timeouts.
        let mut now = now_ms();
        let mut n = 0;
        while n < POLL_BATCH {
            let timeout = if n == 0 { wait } else { Duration::ZERO };
            match consumer.poll(timeout) {
                Some(Ok(msg)) => {
                    if n == 0 {
                        now = now_ms();
                    }
                    self.handle(&msg, now)?;
                    n += 1;
                    if n % 64 == 0 && started.elapsed() >= POLL_TIME {
                        break;
                    }
                }
                Some(Err(e)) => {
                    if let Some((code, reason)) = consumer.client().fatal_error() {
                        let hint = if code == RDKafkaErrorCode::FencedInstanceId {
                            " (another running instance has the same SIDEJOIN_INSTANCE_ID)"
                        } else {
                            ""
                        };
                        return Err(RunError::ConsumerFatal(format!("{code:?}: {reason}{hint}")));
                    }
                    tracing::warn!("consume error: {e}");
                    break;
                }
                None => break,
            }
        }
        Ok(n)
    }

    fn run(&mut self, consumer: &BaseConsumer<JoinContext>) -> Result<(), RunError> {
        let interval = Duration::from_millis(self.cfg.kafka.commit_interval_ms.max(1) as u64);
        let mut next_seal = Instant::now() + interval;
        let outcome: Result<(), RunError> = loop {
            if self.shutdown.is_cancelled() {
                break Ok(());
            }
            let wait = next_seal
                .saturating_duration_since(Instant::now())
                .min(Duration::from_millis(100));
            let polled = self.poll_batch(consumer, wait);
            // Whatever the batch produced goes out, also before a failing record stops us.
            self.send_outputs()?;
            if let Err(e) = polled {
                break Err(e);
            }
            self.output.poll(Duration::ZERO);
            if let Err(e) = self.apply_assignments(consumer) {
                break Err(e);
            }
            if Instant::now() >= next_seal {
                self.seal()?;
                next_seal = Instant::now() + interval;
            }
            self.complete(consumer, CommitMode::Async)?;
            // Bounded pipelining: wait for the oldest checkpoint's outputs.
            while self.checkpoints.sealed() >= MAX_SEALED && !self.shutdown.is_cancelled() {
                self.output.poll(ACK_WAIT);
                self.complete(consumer, CommitMode::Async)?;
            }
        };
        match outcome {
            // Stopping or failing on a record: persist and commit what came before it.
            Ok(()) | Err(RunError::Failed { .. }) => {
                self.drain(consumer, CommitMode::Sync)?;
                if outcome.is_ok() {
                    tracing::info!(
                        "stopped cleanly after {} input records, all committed",
                        self.processor.records_in()
                    );
                }
                outcome
            }
            // Anything else: persist and commit nothing more; the records will be consumed again.
            Err(e) => Err(e),
        }
    }
}

/// Connects, checks the topics, then processes until `shutdown` is cancelled or a fatal error.
pub fn run_blocking(
    cfg: &Config,
    processor: &mut dyn Processor,
    metrics: &Arc<Metrics>,
    shutdown: &CancellationToken,
) -> Result<(), RunError> {
    let md = match admin::wait_for_brokers(cfg, shutdown) {
        Ok(md) => md,
        Err(StartupError::Cancelled) => return Ok(()),
        Err(e) => return Err(e.into()),
    };
    let topology = admin::check_topics(cfg, &md)?;
    match processor.prepare(shutdown) {
        Ok(true) => {}
        Ok(false) => return Ok(()),
        Err(e) => return Err(RunError::Startup(StartupError::Registry(e))),
    }
    if cfg.process.on_error == OnError::Dlq {
        admin::ensure_topic(cfg, &md, &cfg.kafka.dlq_topic, 1)?;
    }
    let (tx, rx) = mpsc::channel();
    let consumer: BaseConsumer<JoinContext> =
        k::consumer_config(cfg).create_with_context(JoinContext::new(tx, metrics.clone()))?;
    let producer: BaseProducer<Deliveries> =
        k::producer_config(cfg).create_with_context(Deliveries::new(metrics.clone()))?;
    let topics = [
        cfg.join.left.topic.clone().unwrap_or_default(),
        cfg.join.right.topic.clone().unwrap_or_default(),
    ];
    let output_topic = cfg.output.topic.as_deref().unwrap_or_default();
    let mut lp = Loop {
        cfg,
        output: Output::new(
            producer,
            output_topic,
            topology.output_partitions,
            &cfg.kafka.dlq_topic,
        ),
        events: rx,
        processor,
        metrics,
        shutdown,
        checkpoints: Checkpoints::new(&topics[0], &topics[1]),
        topics,
        assigned: HashSet::new(),
        owned: BTreeSet::new(),
        persisted: FxHashMap::default(),
        out: Records::default(),
        skipped_logged: 0,
    };
    consumer.subscribe(&[lp.topics[0].as_str(), lp.topics[1].as_str()])?;
    tracing::info!(
        "consuming `{}` and `{}` ({} partitions each) as group `{}`, writing `{}` ({} partitions); Kafka properties passed through: {}",
        lp.topics[0],
        lp.topics[1],
        topology.left_partitions,
        cfg.kafka.application_id,
        output_topic,
        topology.output_partitions,
        k::describe_properties(cfg)
    );
    let result = lp.run(&consumer);
    consumer.unsubscribe();
    result
}
