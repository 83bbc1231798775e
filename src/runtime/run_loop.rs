//! The processing loop of `sidejoin run` (SPEC §6–8), on one blocking thread that owns the
//! state: poll a batch of records (up to `POLL_BATCH`, or `POLL_TIME`) → process each → send
//! what the batch caused; every commit interval close a checkpoint (`durable`: state, offsets
//! and changelog in one transaction). Rebalance events arrive from the consumer context over a
//! channel and are handled here, before librdkafka moves on (a rendezvous: revoked partitions
//! are committed, new ones restored and assigned at the offsets their state reflects).
//! Undecodable records follow `SIDEJOIN_ON_ERROR`.

use std::collections::{BTreeSet, HashSet};
use std::sync::mpsc::{self, Receiver};
use std::sync::Arc as StdArc;
use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::error::RDKafkaErrorCode;
use rdkafka::producer::BaseProducer;
use rdkafka::Message;
use tokio_util::sync::CancellationToken;

use crate::change::{Partition, Side};
use crate::config::{Config, Guarantee, OnError, OnViolation};
use crate::copartition;
use crate::kafka::admin::{self, StartupError};
use crate::kafka::context::{Assignment, BroadcastContext, JoinContext};
use crate::kafka::deliveries::Deliveries;
use crate::kafka::{self as k};
use crate::metrics::WorkerMetrics;
use crate::pipeline::ErrorAction;
use crate::sink::Records;

use super::broadcast::Broadcast;
use super::durable::restore::Restorer;
use super::durable::{Fault, Protocol};
use super::input::{self, Input};
use super::merge::Buffered;
use super::output::Output;
use super::probe;
use super::processor::{InRecord, Processor};
use super::streams::{Inputs, Stream};
use super::workers::StartGate;
use super::RunError;

/// The group consumer of both input topics (shared with its partition queues).
type Group = StdArc<BaseConsumer<JoinContext>>;

/// Records processed before their outputs are sent.
const POLL_BATCH: usize = 2_000;

/// How long an idle loop waits on the consumer before it looks at the partition queues again.
const IDLE_POLL: Duration = Duration::from_millis(5);

/// The longest a poll batch gathers records.
const POLL_TIME: Duration = Duration::from_millis(10);

/// Most records taken from the consumer's own queue per look at it (see `serve`).
const STRAY_DRAIN: usize = 4_096;

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
    metrics: &'a WorkerMetrics,
    shutdown: &'a CancellationToken,
    inputs: Inputs,
    /// The broadcast side's consumer (`SIDEJOIN_BROADCAST`).
    broadcast: Option<Broadcast>,
    /// `(topic, partition)` pairs currently assigned by the group.
    assigned: HashSet<(String, Partition)>,
    /// The tasks whose state this worker holds.
    owned: BTreeSet<Partition>,
    protocol: Protocol,
    restorer: Restorer,
    /// The assigned partitions' records, merged by timestamp.
    input: Input,
    out: Records,
    skipped_logged: u64,
    /// The (side, partition)s whose co-partitioning violation was logged.
    violations_logged: HashSet<(Side, Partition)>,
}

impl Loop<'_> {
    fn side_of(&self, topic: &str) -> Option<Side> {
        self.inputs.side_of(topic)
    }

    /// Sends what the processor appended to `self.out`.
    fn send_outputs(&mut self) -> Result<(), RunError> {
        self.output.send_all(&self.out, self.protocol.epoch())?;
        self.out.clear();
        Ok(())
    }

    /// A record whose key does not carry its join key: logged once per partition, or the end
    /// of the run (`SIDEJOIN_ON_COPARTITION_VIOLATION=fail`, the record not applied).
    fn copartition_violation(&mut self, msg: &Buffered, why: String) -> Result<(), RunError> {
        let side = msg.side;
        let warn = self.cfg.process.on_copartition_violation == OnViolation::Warn;
        if warn && !self.violations_logged.insert((side, msg.partition)) {
            // Counted already (the pipeline did); logged once per partition.
            return Ok(());
        }
        let topic = self.inputs.topic(side);
        let other = self.inputs.topic(side.other());
        let fix = copartition::fix(self.cfg, side);
        if !warn {
            return Err(RunError::Copartition {
                topic: topic.to_owned(),
                partition: msg.partition,
                offset: msg.offset,
                side,
                why,
                fix,
            });
        }
        tracing::warn!(
            topic,
            partition = msg.partition,
            offset = msg.offset,
            "the {side} topic `{topic}` is not co-partitioned with `{other}` by the join key: {why}; rows of one join key \
             on different partitions join against part of the other side only (counted in \
             sidejoin_copartition_violations_total, logged once per partition): {fix}"
        );
        Ok(())
    }

    /// Handles one record at processing time `now` (epoch ms).
    fn handle(&mut self, msg: &Buffered, now: i64) -> Result<(), RunError> {
        let (side, partition, offset, timestamp) =
            (msg.side, msg.partition, msg.offset, msg.timestamp);
        let rec = InRecord {
            side,
            partition,
            timestamp,
            key: msg.key.as_deref(),
            value: msg.value.as_deref(),
        };
        let processed = self.processor.process(&rec, now, &mut self.out);
        if let Some(why) = self.processor.take_violation() {
            self.copartition_violation(msg, why)?;
        }
        let topic = self.inputs.topic(side);
        if let Err(e) = processed {
            match self.processor.dispatch() {
                ErrorAction::Fail => {
                    return Err(RunError::Failed {
                        topic: topic.to_owned(),
                        partition,
                        offset,
                        side,
                        error: e.to_string(),
                    })
                }
                ErrorAction::DeadLetter => {
                    tracing::debug!(topic, partition, "dead-lettering: {e}");
                    self.output
                        .dead_letter(msg, topic, &e, self.protocol.epoch())?;
                }
                ErrorAction::Skip => {
                    self.skipped_logged += 1;
                    if self.skipped_logged.is_power_of_two() {
                        tracing::warn!(
                            topic,
                            partition,
                            offset,
                            "skipping undecodable record ({} so far): {e}",
                            self.skipped_logged
                        );
                    }
                }
            }
        }
        let stream = Stream {
            side,
            task: partition,
            source: msg.source,
        };
        self.protocol.consumed(stream, offset);
        Ok(())
    }

    /// Takes over the partitions of `list` (the whole new assignment): releases the state of
    /// partitions no longer in it, restores new ones, and assigns the consumer at the offsets
    /// their state reflects (the group's committed offset, or the reset policy, where the state
    /// records none).
    fn take_over(
        &mut self,
        consumer: &Group,
        list: Vec<(String, Partition)>,
    ) -> Result<(), RunError> {
        self.metrics.set_ready(false);
        let now: BTreeSet<Partition> = list.iter().map(|(_, p)| *p).collect();
        // Range assignment puts partition i of both topics on one member; anything else would
        // join a partition's records against another member's state.
        for p in &now {
            for side in self.inputs.group_sides() {
                let t = self.inputs.topic(side);
                if !list.contains(&(t.to_owned(), *p)) {
                    return Err(RunError::ConsumerFatal(format!(
                        "the group assigned partition {p} of one input topic without the same partition of `{t}`: \
                         sidejoin needs range assignment (co-partitioning); do not override partition.assignment.strategy"
                    )));
                }
            }
        }
        let gone: Vec<Partition> = self.owned.difference(&now).copied().collect();
        if !gone.is_empty() {
            self.processor.revoked(&gone);
            self.protocol.forget(&gone);
        }
        let new: Vec<Partition> = now.difference(&self.owned).copied().collect();
        if !new.is_empty() {
            let (positions, done) = self.restorer.restore(
                self.processor,
                &mut self.protocol,
                &new,
                &self.inputs,
                self.metrics,
                self.shutdown,
            )?;
            for (p, offsets) in positions {
                let shown: Vec<Option<i64>> = offsets.iter().map(|(_, o)| *o).collect();
                tracing::info!(
                    "partition {p}: state restored ({} changelog records, {:.2} s); it reflects input offsets {shown:?}",
                    done.records,
                    done.seconds
                );
                for (stream, next) in offsets {
                    if let Some(next) = next {
                        self.protocol.restored(stream, next);
                    }
                }
            }
        }
        let mut tpl = rdkafka::TopicPartitionList::new();
        for (topic, p) in &list {
            let side = self.side_of(topic).expect("subscribed topics only");
            let at = match self.protocol.position(Stream::own(side, *p)) {
                Some(o) => rdkafka::Offset::Offset(o),
                None => rdkafka::Offset::Stored,
            };
            let _ = tpl.add_partition_offset(topic, *p, at);
        }
        consumer.assign(&tpl)?;
        let queues: Vec<(Side, String, Partition)> = list
            .iter()
            .map(|(t, p)| {
                (
                    self.side_of(t).expect("subscribed topics only"),
                    t.clone(),
                    *p,
                )
            })
            .collect();
        self.input.assigned(consumer, &queues, now_ms());
        self.assigned = list.into_iter().collect();
        self.owned = now;
        let parts: Vec<Partition> = self.owned.iter().copied().collect();
        if let Some(b) = &mut self.broadcast {
            let protocol = &self.protocol;
            b.assign(&parts, |s| protocol.position(s), now_ms())?;
        }
        self.processor.assigned(&parts, now_ms());
        self.metrics.set_ready(true);
        Ok(())
    }

    /// Applies rebalance events (see `kafka::context`: the consumer waits for these calls).
    fn apply_assignments(&mut self, consumer: &Group) -> Result<(), RunError> {
        while let Ok(event) = self.events.try_recv() {
            match event {
                Assignment::Revoked { partitions, lost } => {
                    if lost {
                        // The group already gave them away: their offsets can no longer be
                        // committed, nor the open transaction. Drop what is not committed;
                        // partitions assigned again are restored from what was.
                        tracing::warn!(
                            "partitions lost (the group gave them away): {partitions:?}"
                        );
                        let _ = self.protocol.abort("the assignment was lost".into());
                        self.discard();
                    } else {
                        tracing::info!("partitions revoked: {partitions:?}");
                        // Commit what was done for them while their offsets can be committed
                        // (if that fails, their next owner redoes it from the last commit).
                        self.commit(consumer)?;
                    }
                    self.clear_input()?;
                    consumer.unassign()?;
                    self.assigned.clear();
                }
                Assignment::Assigned(list) => {
                    tracing::info!("partitions assigned: {list:?}");
                    self.take_over(consumer, list)?;
                }
            }
        }
        Ok(())
    }

    /// Drops every change not committed and forgets every partition.
    fn discard(&mut self) {
        let parts: Vec<Partition> = self.owned.iter().copied().collect();
        self.processor.discard(&parts);
        self.protocol.forget(&parts);
        self.owned.clear();
        self.out.clear();
        if let Err(e) = self.clear_input() {
            tracing::warn!("cannot unassign the broadcast consumer: {e}");
        }
    }

    /// Drops every buffered record and the broadcast consumer's assignment.
    fn clear_input(&mut self) -> Result<(), KafkaError> {
        self.input.clear();
        match &mut self.broadcast {
            Some(b) => b.clear(),
            None => Ok(()),
        }
    }

    /// Closes the open checkpoint (after what processing time releases). An aborted
    /// transaction drops what it held and every partition's state (`Ok(false)`): they are
    /// restored from what was committed when assigned again.
    fn commit(&mut self, consumer: &Group) -> Result<bool, RunError> {
        self.processor.tick(now_ms(), &mut self.out);
        self.send_outputs()?;
        match self.protocol.commit(self.processor, &self.output, consumer) {
            Ok(()) => Ok(true),
            Err(RunError::Aborted(why)) => {
                self.metrics.transaction(false);
                tracing::warn!("checkpoint aborted ({why}): its work is dropped");
                self.discard();
                Ok(false)
            }
            Err(e) => Err(e),
        }
    }

    /// Commits the open checkpoint; if it was aborted, restores the assigned partitions from
    /// the last committed checkpoint and consumes again from there.
    fn commit_or_reset(&mut self, consumer: &Group) -> Result<(), RunError> {
        if !self.commit(consumer)? {
            let list: Vec<(String, Partition)> = self.assigned.iter().cloned().collect();
            if !list.is_empty() {
                tracing::info!(
                    "restoring the assigned partitions from the last committed checkpoint"
                );
                self.take_over(consumer, list)?;
            }
        }
        Ok(())
    }

    /// Serves the consumer's callbacks (waiting up to `wait` for the first); records that
    /// arrive there join the merge, all of them (see `input`: their partition's queue is split
    /// again).
    fn serve(&mut self, consumer: &Group, wait: Duration, now: i64) -> Result<(), RunError> {
        let mut wait = wait;
        for _ in 0..STRAY_DRAIN {
            match consumer.poll(wait) {
                Some(Ok(msg)) => {
                    let Some(side) = self.side_of(msg.topic()) else {
                        continue;
                    };
                    let (topic, partition) = (msg.topic().to_owned(), msg.partition());
                    self.input.push(input::copy(&msg, side, now), now);
                    drop(msg);
                    if self.input.resplit(consumer, side, &topic, partition) {
                        tracing::info!(
                            topic,
                            partition,
                            "a record came on the consumer's queue (its fetch started after the split): the partition's queue is split again"
                        );
                    }
                    wait = Duration::ZERO;
                }
                Some(Err(KafkaError::PartitionEOF(_))) => wait = Duration::ZERO,
                None => return Ok(()),
                Some(Err(e)) => {
                    self.consume_error(consumer, e)?;
                    wait = Duration::ZERO;
                }
            }
        }
        Ok(())
    }

    /// An error from the consumer's queue: fatal when the client says so, else logged.
    fn consume_error(&mut self, consumer: &Group, e: KafkaError) -> Result<(), RunError> {
        if let Some((code, reason)) = consumer.client().fatal_error() {
            let hint = if code == RDKafkaErrorCode::FencedInstanceId {
                " (another running instance has the same SIDEJOIN_INSTANCE_ID)"
            } else {
                ""
            };
            return Err(RunError::ConsumerFatal(format!("{code:?}: {reason}{hint}")));
        }
        tracing::warn!("consume error: {e}");
        Ok(())
    }

    /// Processes up to a batch of records in merge order, fetching what the partition queues
    /// hold as needed; waits up to `wait` when nothing may go. Returns how many were processed.
    fn poll_batch(&mut self, consumer: &Group, wait: Duration) -> Result<usize, RunError> {
        let started = Instant::now();
        // Processing time, read once per batch: it only drives max-wait and idle timeouts.
        let mut now = now_ms();
        self.serve(consumer, Duration::ZERO, now)?;
        let mut n = 0;
        let mut waited = false;
        while n < POLL_BATCH {
            if let Some(rec) = self.input.next(now) {
                self.handle(&rec, now)?;
                n += 1;
                if n % 64 == 0 && started.elapsed() >= POLL_TIME {
                    break;
                }
                continue;
            }
            // Nothing may go: fetch what the queues hold (bounded per queue, so this ends).
            let mut fetched = self.input.fill(consumer, now);
            if let Some(b) = &mut self.broadcast {
                fetched += b.fill(&mut self.input, now);
            }
            if fetched > 0 {
                continue;
            }
            if n > 0 || waited {
                break;
            }
            // Nothing arrived: wait a little on the consumer (callbacks, and the records its
            // queues fetch meanwhile), then look once more.
            self.serve(consumer, wait.min(IDLE_POLL), now)?;
            now = now_ms();
            waited = true;
        }
        Ok(n)
    }

    fn run(&mut self, consumer: &Group) -> Result<(), RunError> {
        let interval = Duration::from_millis(self.cfg.kafka.commit_interval_ms.max(1) as u64);
        let mut next_commit = Instant::now() + interval;
        let outcome: Result<(), RunError> = loop {
            if self.shutdown.is_cancelled() {
                break Ok(());
            }
            let wait = next_commit
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
            if Instant::now() >= next_commit {
                self.commit_or_reset(consumer)?;
                next_commit = Instant::now() + interval;
            }
        };
        match outcome {
            // Stopping or failing on a record: commit what came before it.
            Ok(()) | Err(RunError::Failed { .. }) | Err(RunError::Copartition { .. }) => {
                self.commit_or_reset(consumer)?;
                if outcome.is_ok() {
                    tracing::info!(
                        "stopped cleanly after {} input records, all committed",
                        self.processor.records_in()
                    );
                }
                outcome
            }
            // Between a revoke (which committed) and the new partitions' first records: nothing
            // to commit, and the partly restored ones are restored again by their next owner.
            Err(RunError::StoppedRestoring) => {
                tracing::info!("stopped cleanly while restoring partitions, all committed");
                Ok(())
            }
            // Anything else: commit nothing more; the records will be consumed again.
            Err(e) => Err(e),
        }
    }
}

/// The id of the state directory (made once, kept in `transactional.id` inside it).
fn volume_id(dir: &std::path::Path) -> Result<String, RunError> {
    let file = dir.join("transactional.id");
    match std::fs::read_to_string(&file) {
        Ok(id) if !id.trim().is_empty() => Ok(id.trim().to_owned()),
        _ => {
            let id = k::unique_id();
            std::fs::write(&file, &id)
                .map_err(|e| RunError::State(format!("cannot write {}: {e}", file.display())))?;
            Ok(id)
        }
    }
}

/// The start-up co-partitioning probe (`probe`): a misfit stops the start under
/// `SIDEJOIN_ON_COPARTITION_VIOLATION=fail`, else it is logged (processing logs each partition's
/// first misfit again as it meets it).
fn probe_keys(
    cfg: &Config,
    processor: &mut dyn Processor,
    partitions: i32,
    shutdown: &CancellationToken,
) -> Result<(), RunError> {
    let fail = cfg.process.on_copartition_violation == OnViolation::Fail;
    for m in probe::probe(cfg, processor, partitions, shutdown)? {
        let side = m.side;
        let other = cfg.join.topic(side.other());
        let message = format!(
            "the {side} topic `{}` is not co-partitioned with `{other}` by the join key: its record at partition {} offset {}: {}; \
             rows of one join key on different partitions would join against part of the other side only: {}",
            m.topic,
            m.partition,
            m.offset,
            m.why,
            copartition::fix(cfg, side)
        );
        if fail {
            return Err(RunError::Startup(StartupError::Copartitioning(format!(
                "{message} (SIDEJOIN_ON_COPARTITION_VIOLATION=fail)"
            ))));
        }
        tracing::warn!("{message}");
    }
    Ok(())
}

/// Connects, checks the topics (worker 0 also probes the keys, `probe_keys`), waits at `gate` for the other workers, then processes until
/// `shutdown` is cancelled or a fatal error.
pub fn run_blocking(
    cfg: &Config,
    processor: &mut dyn Processor,
    metrics: &WorkerMetrics,
    gate: &StartGate,
    shutdown: &CancellationToken,
) -> Result<(), RunError> {
    let md = match admin::wait_for_brokers(cfg, shutdown) {
        Ok(md) => md,
        Err(StartupError::Cancelled) => return Ok(()),
        Err(e) => return Err(e.into()),
    };
    let topology = admin::check_topics(cfg, &md)?;
    // Broadcast: a task's other side is whole, so nothing needs co-partitioning.
    let checked =
        cfg.join.broadcast.is_none() && topology.tasks > 1 && processor.check_copartitioning();
    match processor.prepare(shutdown) {
        Ok(true) => {}
        Ok(false) => return Ok(()),
        Err(e) => return Err(RunError::Startup(StartupError::Registry(e))),
    }
    // One worker probes for the instance: they read the same topics.
    if checked && cfg.process.worker == 0 {
        probe_keys(cfg, processor, topology.tasks, shutdown)?;
    }
    if cfg.process.on_error == OnError::Dlq {
        admin::ensure_topic(cfg, &md, &cfg.kafka.dlq_topic, 1)?;
    }
    let durable = processor.store().is_some();
    let changelog = durable.then(|| Side::BOTH.map(|s| k::changelog_topic(cfg, s)));
    if let Some(topics) = &changelog {
        for t in topics {
            admin::ensure_changelog(cfg, &md, t, topology.tasks)?;
        }
    }
    let (tx, rx) = mpsc::channel();
    let consumer: Group = StdArc::new(
        k::consumer_config(cfg).create_with_context(JoinContext::new(tx, metrics.clone()))?,
    );
    let volume = match durable {
        true => Some(volume_id(&cfg.process.state_dir)?),
        false => None,
    };
    let txn_id = k::transactional_id(cfg, volume.as_deref());
    let txn: StdArc<BaseProducer<Deliveries>> = StdArc::new(
        k::transactional_config(cfg, &txn_id)
            .create_with_context(Deliveries::new(metrics.shared().clone()))?,
    );
    let producer = match cfg.kafka.guarantee {
        Guarantee::ExactlyOnce => txn.clone(),
        Guarantee::AtLeastOnce => StdArc::new(
            k::producer_config(cfg)
                .create_with_context(Deliveries::new(metrics.shared().clone()))?,
        ),
    };
    let restorer = Restorer::new(
        k::restore_consumer_config(cfg)
            .create_with_context(crate::kafka::context::HelperContext("restore consumer"))?,
    );
    let inputs = Inputs {
        topics: Side::BOTH.map(|s| cfg.join.topic(s).to_owned()),
        broadcast: cfg.join.broadcast.map(|b| {
            let n = match b {
                Side::Left => topology.left_partitions,
                Side::Right => topology.right_partitions,
            };
            (b, n)
        }),
    };
    let broadcast = match inputs.broadcast {
        Some((side, n)) => Some(Broadcast::new(
            k::broadcast_consumer_config(cfg)
                .create_with_context(BroadcastContext::new(metrics.clone()))?,
            side,
            inputs.topic(side),
            n,
            cfg.kafka.max_task_idle_ms,
        )),
        None => None,
    };
    // A test hook, outside the configuration: the kill tests show they catch this fault.
    let fault = match std::env::var("SJ_TEST_FAULT").as_deref() {
        Ok("offsets_late") => Fault::OffsetsLate,
        _ => Fault::None,
    };
    let mut protocol = Protocol::new(
        cfg.kafka.guarantee,
        txn,
        changelog,
        inputs.clone(),
        fault,
        metrics,
        shutdown,
    );
    protocol.start()?;
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
        inputs,
        broadcast,
        assigned: HashSet::new(),
        owned: BTreeSet::new(),
        protocol,
        restorer,
        input: Input::new(cfg.kafka.max_task_idle_ms),
        out: Records::default(),
        skipped_logged: 0,
        violations_logged: HashSet::new(),
    };
    // Cancelled while waiting: the loop stops at once, with nothing to commit.
    gate.arrive(shutdown);
    if shutdown.is_cancelled() {
        // Before joining the group: a start refused by another worker (the co-partitioning
        // probe) or a stop during start-up must not rebalance the live group.
        return Ok(());
    }
    let grouped: Vec<&str> = (lp.inputs.group_sides().into_iter())
        .map(|s| lp.inputs.topic(s))
        .collect();
    consumer.subscribe(&grouped)?;
    tracing::info!(
        "consuming `{}` and `{}` ({}) as group `{}`, writing `{}` ({} partitions), {:?} (transactional id `{txn_id}`); Kafka properties passed through: {}",
        lp.inputs.topics[0],
        lp.inputs.topics[1],
        topology.describe(cfg),
        cfg.kafka.application_id,
        output_topic,
        topology.output_partitions,
        cfg.kafka.guarantee,
        k::describe_properties(cfg)
    );
    let result = lp.run(&consumer);
    consumer.context().close();
    consumer.unsubscribe();
    result
}
