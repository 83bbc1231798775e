//! The processing loop of `sidejoin run` (SPEC §6–8), on one blocking thread that owns the
//! state: poll a record → process → produce what it caused; every commit interval, wait for
//! every output to be acknowledged, then commit the input offsets (at-least-once). Rebalance
//! events arrive from the consumer context over a channel. Undecodable records follow
//! `SIDEJOIN_ON_ERROR`.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::mpsc::{self, Receiver};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::message::{BorrowedMessage, Header, Headers, OwnedHeaders};
use rdkafka::producer::{DeliveryFuture, FutureProducer, FutureRecord};
use rdkafka::types::RDKafkaErrorCode;
use rdkafka::Message;
use tokio_util::sync::CancellationToken;

use crate::changelog::{Partition, Side};
use crate::config::{Config, OnError};
use crate::format::DecodeError;
use crate::kafka::admin::{self, StartupError, Topology};
use crate::kafka::context::{Assignment, JoinContext};
use crate::kafka::partitioner::partition_for;
use crate::kafka::{self as k};
use crate::metrics::Metrics;

use super::batch::{self, Batch};
use super::processor::{InRecord, Processor};
use super::RunError;
use crate::pipeline::ErrorAction;
use crate::sink::Records;

/// Outputs awaiting acknowledgement before a commit is forced early.
const MAX_PENDING: usize = 200_000;

pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Produces one record, waiting while librdkafka's queue is full.
fn send(
    producer: &FutureProducer,
    topic: &str,
    partitions: i32,
    key: Option<&[u8]>,
    value: Option<&[u8]>,
    timestamp: i64,
) -> Result<DeliveryFuture, RunError> {
    let mut fr: FutureRecord<'_, [u8], [u8]> = FutureRecord::to(topic).timestamp(timestamp);
    if let Some(key) = key {
        fr = fr.key(key).partition(partition_for(key, partitions));
    }
    if let Some(value) = value {
        fr = fr.payload(value);
    }
    loop {
        match producer.send_result(fr) {
            Ok(delivery) => return Ok(delivery),
            Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), back)) => {
                fr = back;
                std::thread::sleep(Duration::from_millis(1));
            }
            Err((e, _)) => return Err(e.into()),
        }
    }
}

struct Loop<'a> {
    cfg: &'a Config,
    producer: FutureProducer,
    events: Receiver<Assignment>,
    processor: &'a mut dyn Processor,
    metrics: &'a Metrics,
    shutdown: &'a CancellationToken,
    topology: Topology,
    /// `(topic, partition)` pairs currently assigned.
    assigned: HashSet<(String, i32)>,
    /// Input partitions whose state this process holds.
    owned: BTreeSet<Partition>,
    /// `(topic, partition)` → the next offset the state already reflects: records below it were
    /// applied before a restart and are skipped (the group's committed offset is advisory).
    persisted: HashMap<(String, i32), i64>,
    batch: Batch,
    out: Records,
    skipped_logged: u64,
}

impl Loop<'_> {
    fn left_topic(&self) -> &str {
        self.cfg.join.left.topic.as_deref().unwrap_or_default()
    }

    fn right_topic(&self) -> &str {
        self.cfg.join.right.topic.as_deref().unwrap_or_default()
    }

    fn output_topic(&self) -> &str {
        self.cfg.output.topic.as_deref().unwrap_or_default()
    }

    /// Produces what the processor appended to `self.out`.
    fn flush_outputs(&mut self) -> Result<(), RunError> {
        let topic = self.cfg.output.topic.as_deref().unwrap_or_default();
        for rec in &self.out.records {
            let delivery = send(
                &self.producer,
                topic,
                self.topology.output_partitions,
                self.out.key(rec),
                self.out.value(rec),
                rec.timestamp,
            )?;
            self.batch.delivery(delivery, rec.timestamp);
        }
        self.out.clear();
        Ok(())
    }

    /// The original record, with headers naming the error and where it came from.
    fn dead_letter(
        &mut self,
        msg: &BorrowedMessage<'_>,
        side: Side,
        error: &DecodeError,
    ) -> Result<(), RunError> {
        let mut headers = OwnedHeaders::new();
        if let Some(h) = msg.headers() {
            for hd in h.iter() {
                headers = headers.insert(Header {
                    key: hd.key,
                    value: hd.value,
                });
            }
        }
        let info = [
            ("sidejoin.error", error.to_string()),
            ("sidejoin.source.topic", msg.topic().to_owned()),
            ("sidejoin.source.partition", msg.partition().to_string()),
            ("sidejoin.source.offset", msg.offset().to_string()),
            ("sidejoin.source.side", side.name().to_owned()),
        ];
        for (key, value) in &info {
            headers = headers.insert(Header {
                key,
                value: Some(value.as_bytes()),
            });
        }
        let timestamp = msg.timestamp().to_millis().unwrap_or_else(now_ms);
        let mut fr: FutureRecord<'_, [u8], [u8]> = FutureRecord::to(&self.cfg.kafka.dlq_topic)
            .timestamp(timestamp)
            .headers(headers);
        if let Some(k) = msg.key() {
            fr = fr.key(k);
        }
        if let Some(v) = msg.payload() {
            fr = fr.payload(v);
        }
        let delivery = loop {
            match self.producer.send_result(fr) {
                Ok(d) => break d,
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), back)) => {
                    fr = back;
                    std::thread::sleep(Duration::from_millis(1));
                }
                Err((e, _)) => return Err(e.into()),
            }
        };
        self.batch.delivery(delivery, timestamp);
        Ok(())
    }

    fn handle(&mut self, msg: &BorrowedMessage<'_>) -> Result<(), RunError> {
        let side = if msg.topic() == self.left_topic() {
            Side::Left
        } else if msg.topic() == self.right_topic() {
            Side::Right
        } else {
            return Ok(());
        };
        if self
            .persisted
            .get(&(msg.topic().to_owned(), msg.partition()))
            .is_some_and(|next| msg.offset() < *next)
        {
            self.batch
                .consumed(msg.topic(), msg.partition(), msg.offset());
            return Ok(());
        }
        let now = now_ms();
        let rec = InRecord {
            side,
            partition: msg.partition(),
            timestamp: msg.timestamp().to_millis().unwrap_or(now),
            key: msg.key(),
            value: msg.payload(),
        };
        let result = self.processor.process(&rec, now, &mut self.out);
        self.flush_outputs()?;
        if let Err(e) = result {
            match self.processor.dispatch() {
                ErrorAction::Fail => {
                    return Err(RunError::Failed {
                        topic: msg.topic().to_owned(),
                        partition: msg.partition(),
                        offset: msg.offset(),
                        side,
                        error: e.to_string(),
                    })
                }
                ErrorAction::DeadLetter => {
                    tracing::debug!(
                        topic = msg.topic(),
                        partition = msg.partition(),
                        "dead-lettering: {e}"
                    );
                    self.dead_letter(msg, side, &e)?;
                }
                ErrorAction::Skip => {
                    self.skipped_logged += 1;
                    if self.skipped_logged.is_power_of_two() {
                        tracing::warn!(
                            topic = msg.topic(),
                            partition = msg.partition(),
                            offset = msg.offset(),
                            "skipping undecodable record ({} so far): {e}",
                            self.skipped_logged
                        );
                    }
                }
            }
        }
        self.batch
            .consumed(msg.topic(), msg.partition(), msg.offset());
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
        let topics = [self.left_topic().to_owned(), self.right_topic().to_owned()];
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
            for (t, next) in names.iter().zip(persisted) {
                if let Some(next) = next {
                    self.persisted.insert(((*t).to_owned(), p), next);
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
                Assignment::Revoked(list) => {
                    tracing::info!("partitions revoked: {list:?}");
                    // Flush what was done for them while their offsets can still be committed.
                    self.settle(consumer, CommitMode::Sync)?;
                    for p in &list {
                        self.assigned.remove(p);
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

    /// Waits for every output, makes the state and input offsets durable together, then
    /// commits the offsets to the group (SPEC §7).
    fn settle(
        &mut self,
        consumer: &BaseConsumer<JoinContext>,
        mode: CommitMode,
    ) -> Result<(), RunError> {
        let started = Instant::now();
        let offsets = self.batch.acknowledge(self.metrics)?;
        self.processor
            .checkpoint(&offsets)
            .map_err(RunError::State)?;
        batch::commit(consumer, &offsets, &self.assigned, mode)?;
        self.metrics.observe_commit(started.elapsed().as_secs_f64());
        self.processor.publish(self.metrics);
        Ok(())
    }

    fn run(&mut self, consumer: &BaseConsumer<JoinContext>) -> Result<(), RunError> {
        let interval = Duration::from_millis(self.cfg.kafka.commit_interval_ms.max(1) as u64);
        let mut next_commit = Instant::now() + interval;
        let outcome = loop {
            if self.shutdown.is_cancelled() {
                break Ok(());
            }
            let timeout = next_commit
                .saturating_duration_since(Instant::now())
                .min(Duration::from_millis(100));
            match consumer.poll(timeout) {
                Some(Ok(msg)) => {
                    if let Err(e) = self.handle(&msg) {
                        break Err(e);
                    }
                }
                Some(Err(e)) => tracing::warn!("consume error: {e}"),
                None => {}
            }
            if let Err(e) = self.apply_assignments(consumer) {
                break Err(e);
            }
            if Instant::now() >= next_commit || self.batch.pending() >= MAX_PENDING {
                self.processor.tick(now_ms(), &mut self.out);
                self.flush_outputs()?;
                self.settle(consumer, CommitMode::Async)?;
                next_commit = Instant::now() + interval;
            }
        };
        match outcome {
            // Stopping or failing on a record: commit what came before it.
            Ok(()) | Err(RunError::Failed { .. }) => {
                self.settle(consumer, CommitMode::Sync)?;
                if outcome.is_ok() {
                    tracing::info!(
                        "stopped cleanly after {} input records, all committed",
                        self.processor.records_in()
                    );
                }
                outcome
            }
            // Anything else: commit nothing; the records will be consumed again.
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
    if cfg.process.on_error == OnError::Dlq {
        admin::ensure_topic(cfg, &md, &cfg.kafka.dlq_topic, 1)?;
    }
    let (tx, rx) = mpsc::channel();
    let consumer: BaseConsumer<JoinContext> =
        k::consumer_config(cfg).create_with_context(JoinContext::new(tx, metrics.clone()))?;
    let producer: FutureProducer = k::producer_config(cfg).create()?;
    let mut lp = Loop {
        cfg,
        producer,
        events: rx,
        processor,
        metrics,
        shutdown,
        topology,
        assigned: HashSet::new(),
        owned: BTreeSet::new(),
        persisted: HashMap::new(),
        batch: Batch::default(),
        out: Records::default(),
        skipped_logged: 0,
    };
    let topics = [lp.left_topic().to_owned(), lp.right_topic().to_owned()];
    consumer.subscribe(&[topics[0].as_str(), topics[1].as_str()])?;
    tracing::info!(
        "consuming `{}` and `{}` ({} partitions each) as group `{}`, writing `{}` ({} partitions); Kafka properties passed through: {}",
        topics[0],
        topics[1],
        topology.left_partitions,
        cfg.kafka.application_id,
        lp.output_topic(),
        topology.output_partitions,
        k::describe_properties(cfg)
    );
    let result = lp.run(&consumer);
    consumer.unsubscribe();
    result
}
