//! The repartition step (`SIDEJOIN_<SIDE>_HASH_BY`, SPEC §6): a side whose topic is not keyed
//! the way the join needs is read, decoded, re-keyed by the hashed columns (`crate::routing`)
//! and written to `<app>-<side>-repartition`, which the join then consumes as that side's input
//! (`join_config`), like Kafka Streams' repartition topics.
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
//! the source topic by timestamp (the n-ary merge of `merge::next_head`, `SIDEJOIN_MAX_TASK_IDLE`):
//! the changes of one row keep their order even when the source topic spreads them over
//! partitions. It runs in the instance whose member of the lease group `<app>-<side>-router-lease`
//! is assigned partition 0 of the repartition topic (the lease consumer reads nothing); a new
//! holder's `init_transactions` fences the previous one and aborts what it left open. One core
//! routes a side: its throughput bounds the side's.
//!
//! **Purge.** Records of the repartition topic below the join group's committed offsets are
//! deleted (delete-records), as Kafka Streams does; the topic keeps them otherwise
//! (`retention.ms=-1`), so a slow join never loses input to retention.
//!
//! What it does not do: decide what a change becomes (`crate::routing`), join, or read the
//! repartition topic (the workers do, as any input).

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::base_consumer::PartitionQueue;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use rdkafka::types::RDKafkaErrorCode;
use rdkafka::{Message, Offset, TopicPartitionList};
use tokio_util::sync::CancellationToken;

use crate::avro::AvroInput;
use crate::change::{Event, Side};
use crate::config::{Config, Format, OnError};
use crate::format::{DecodeError, Decoder};
use crate::kafka::admin::{self, StartupError};
use crate::kafka::context::HelperContext;
use crate::kafka::{self as k};
use crate::metrics::Metrics;
use crate::routing::{learn, Learnt, Placement, Route, Routed, Sample};

use super::input;
use super::merge::{next_head, Buffered, Head};
use super::{now_ms, RunError};

/// Most records fetched from one source partition and not yet routed.
const PER_PART: usize = 4_096;
/// Most records routed per step, between looks at the lease and the commit clock.
const PER_STEP: usize = 8_192;
/// Bound on each transaction call (librdkafka waits for the broker's answer).
const TXN_CALL: Duration = Duration::from_secs(30);
/// How often records the join has committed past are purged.
const PURGE_EVERY: Duration = Duration::from_secs(30);
/// How often the router's lag is published.
const LAG_EVERY: Duration = Duration::from_secs(10);

/// The sides with `SIDEJOIN_<SIDE>_HASH_BY`.
pub fn sides(cfg: &Config) -> Vec<Side> {
    Side::BOTH
        .into_iter()
        .filter(|s| cfg.join.side(*s).hash_by.is_some())
        .collect()
}

/// The configuration the join runs with: each repartitioned side reads its repartition topic,
/// whose records are decoded changes (`Format::Repartitioned`).
pub fn join_config(cfg: &Config) -> Config {
    let mut c = cfg.clone();
    for side in sides(cfg) {
        let topic = k::repartition_topic(cfg, side);
        let s = match side {
            Side::Left => &mut c.join.left,
            Side::Right => &mut c.join.right,
        };
        s.topic = Some(topic);
        s.format = Format::Repartitioned;
        s.csv = None;
    }
    c
}

/// Where a side's keys go: sidejoin's own placement, or the other side's, learnt from it.
#[derive(Debug, Clone)]
pub enum Target {
    Own(i32),
    Mirror { topic: String, partitions: i32 },
}

impl Target {
    fn partitions(&self) -> i32 {
        match self {
            Target::Own(n) | Target::Mirror { partitions: n, .. } => *n,
        }
    }
}

/// Before the workers start: every repartition topic exists with the partition count the join
/// needs (the other side's; its own when the other side is broadcast; the larger of the two when
/// both are repartitioned). `cfg` is the user's configuration (the sides' own topics).
pub fn prepare(
    cfg: &Config,
    shutdown: &CancellationToken,
) -> Result<Vec<(Side, Target)>, RunError> {
    let sides = sides(cfg);
    if sides.is_empty() {
        return Ok(Vec::new());
    }
    let md = match admin::wait_for_brokers(cfg, shutdown) {
        Ok(md) => md,
        Err(StartupError::Cancelled) => return Ok(Vec::new()),
        Err(e) => return Err(e.into()),
    };
    let count = |side: Side| -> Result<i32, RunError> {
        let topic = cfg.join.topic(side);
        md.topics()
            .iter()
            .find(|t| t.name() == topic && t.error().is_none() && !t.partitions().is_empty())
            .map(|t| t.partitions().len() as i32)
            .ok_or_else(|| {
                RunError::Startup(StartupError::Topics(format!(
                    "SIDEJOIN_{}_TOPIC: topic `{topic}` does not exist (create it first; sidejoin creates only its \
                     dead-letter and internal topics)",
                    side.var()
                )))
            })
    };
    let mut planned = Vec::new();
    for &side in &sides {
        let other = side.other();
        let target = if cfg.join.broadcast == Some(other) {
            Target::Own(count(side)?)
        } else if sides.contains(&other) {
            Target::Own(count(side)?.max(count(other)?))
        } else {
            Target::Mirror {
                topic: cfg.join.topic(other).to_owned(),
                partitions: count(other)?,
            }
        };
        if cfg.process.on_error == OnError::Dlq {
            admin::ensure_topic(cfg, &md, &cfg.kafka.dlq_topic, 1)?;
        }
        ensure_repartition_topic(
            cfg,
            &md,
            &k::repartition_topic(cfg, side),
            target.partitions(),
        )?;
        planned.push((side, target));
    }
    Ok(planned)
}

/// Creates the repartition `topic` with `partitions` partitions (no retention: it is purged)
/// unless it exists; refuses one with another partition count.
fn ensure_repartition_topic(
    cfg: &Config,
    md: &rdkafka::metadata::Metadata,
    topic: &str,
    partitions: i32,
) -> Result<(), StartupError> {
    if let Some(t) = md
        .topics()
        .iter()
        .find(|t| t.name() == topic && t.error().is_none())
    {
        let n = t.partitions().len() as i32;
        if n != partitions {
            return Err(StartupError::Topics(format!(
                "repartition topic `{topic}` has {n} partitions but the join needs {partitions} (the partition \
                 count of the side it meets): stop sidejoin, delete the topic and its router group's offsets \
                 (it is rebuilt from the side's topic), or use another SIDEJOIN_APPLICATION_ID"
            )));
        }
        return Ok(());
    }
    let admin: AdminClient<DefaultClientContext> = k::admin_config(cfg).create()?;
    let replication = md.brokers().len().clamp(1, 3) as i32;
    let new = NewTopic::new(topic, partitions, TopicReplication::Fixed(replication))
        .set("cleanup.policy", "delete")
        .set("retention.ms", "-1");
    let results = futures::executor::block_on(admin.create_topics([&new], &AdminOptions::new()))?;
    for r in results {
        match r {
            Ok(_) => {
                tracing::info!("created repartition topic `{topic}` ({partitions} partitions)")
            }
            Err((_, RDKafkaErrorCode::TopicAlreadyExists)) => {}
            Err((t, e)) => {
                return Err(StartupError::Topics(format!(
                    "cannot create repartition topic `{t}`: {e}"
                )))
            }
        }
    }
    Ok(())
}

/// Routes `side` (of the user's configuration `cfg`) while this instance holds its lease, until
/// `stop`; returns only on stop or on what must stop the instance (a decode error under
/// `SIDEJOIN_ON_ERROR=fail`, a placement that cannot be mirrored).
pub fn run_blocking(
    cfg: &Config,
    side: Side,
    target: Target,
    metrics: Arc<Metrics>,
    stop: &CancellationToken,
) -> Result<(), RunError> {
    if !avro_fields_hold(cfg, side, stop)? {
        return Ok(());
    }
    let Some(placement) = placement(cfg, side, &target, stop)? else {
        return Ok(());
    };
    tracing::info!(
        "repartitioning the {side} side: `{}` → `{}` by {} ({})",
        cfg.join.topic(side),
        k::repartition_topic(cfg, side),
        cfg.join
            .side(side)
            .hash_by
            .as_deref()
            .unwrap_or_default()
            .join(","),
        placement.describe()
    );
    let mut router = Router::new(cfg, side, placement, metrics)?;
    let lease: BaseConsumer = k::router_lease_config(cfg, side).create()?;
    lease.subscribe(&[router.topic.as_str()])?;
    let mut active = false;
    let mut looked = Instant::now() - Duration::from_secs(1);
    while !stop.is_cancelled() {
        // Serves the lease's group protocol; its records are never wanted.
        let _ = lease.poll(if active {
            Duration::ZERO
        } else {
            Duration::from_millis(100)
        });
        if looked.elapsed() >= Duration::from_millis(100) {
            looked = Instant::now();
            let held = holds(&lease, &router.topic);
            if held && !active {
                match router.activate() {
                    Ok(()) => active = true,
                    Err(e) => {
                        tracing::warn!(
                            "repartition of the {side} side cannot start yet: {e}; retrying"
                        );
                        router.deactivate();
                        std::thread::sleep(Duration::from_secs(1));
                    }
                }
            } else if !held && active {
                tracing::info!("repartition of the {side} side: another instance holds it now");
                router.finish();
                active = false;
            }
        }
        if !active {
            continue;
        }
        match router.step() {
            Ok(()) => {}
            Err(Stop::Fatal(e)) => {
                // What was routed before the failing record is committed; a restart resumes at it.
                router.finish();
                return Err(e);
            }
            Err(Stop::Retry(e)) => {
                tracing::warn!(
                    "repartition of the {side} side: {e}; resuming from its last commit"
                );
                router.deactivate();
                active = false;
            }
        }
    }
    if active {
        router.finish();
    }
    Ok(())
}

/// An Avro side's hashed columns are fields of its writer schema (the subject's latest), else
/// the start is refused naming the missing one; `false` on stop.
fn avro_fields_hold(cfg: &Config, side: Side, stop: &CancellationToken) -> Result<bool, RunError> {
    let spec = cfg.join.side(side);
    let (true, Some(registry)) = (spec.format.is_avro(), &cfg.kafka.registry) else {
        return Ok(true);
    };
    let registry = crate::avro::registry::Registry::new(registry)
        .map_err(|e| RunError::Startup(StartupError::Registry(e)))?;
    let fields = crate::avro::output::row_fields(cfg, &registry, side, stop)
        .map_err(|e| RunError::Startup(StartupError::Registry(e)))?;
    let Some(fields) = fields else {
        return Ok(false);
    };
    let hashed = spec.hash_by.as_deref().unwrap_or_default();
    match hashed.iter().find(|c| !fields.contains(c)) {
        None => Ok(true),
        Some(c) => Err(RunError::Startup(StartupError::Topics(format!(
            "SIDEJOIN_{}_HASH_BY: `{c}` is not a field of the {side} side's Avro rows (subject `{}-value`, \
             latest version: {}); every record would be unroutable",
            side.var(),
            cfg.join.topic(side),
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

/// The placement of `side`'s keys: for a mirrored target, learnt from the other side's records
/// (waiting for some, logged); `None` on stop.
fn placement(
    cfg: &Config,
    side: Side,
    target: &Target,
    stop: &CancellationToken,
) -> Result<Option<Placement>, RunError> {
    let (topic, partitions) = match target {
        Target::Own(n) => return Ok(Some(Placement::own(*n))),
        Target::Mirror { topic, partitions } => (topic, *partitions),
    };
    let other = side.other();
    let columns = &cfg.join.side(other).key;
    let started = Instant::now();
    let mut logged = None::<Instant>;
    while !stop.is_cancelled() {
        let samples = sample(cfg, topic, partitions)?;
        let samples: Vec<Sample<'_>> = samples
            .iter()
            .map(|(partition, offset, key)| Sample {
                partition: *partition,
                offset: *offset,
                key,
            })
            .collect();
        match learn(topic, partitions, columns, &samples) {
            Ok(Learnt::Placement(p)) => {
                tracing::info!(
                    "the {other} topic `{topic}` keys its records as {} ({} records looked at)",
                    p.describe(),
                    samples.len()
                );
                return Ok(Some(p));
            }
            Ok(Learnt::NotYet(why)) => {
                if logged.is_none_or(|at| at.elapsed() >= Duration::from_secs(30)) {
                    logged = Some(Instant::now());
                    tracing::info!(
                        "repartition of the {side} side waits ({} s): {why}; SIDEJOIN_{}_HASH_BY places the {side} \
                         side's records where the {other} topic's producer puts their join keys, learnt from its \
                         newest records (repartition the {other} side too, SIDEJOIN_{}_HASH_BY=$join_key, to let \
                         sidejoin place both)",
                        started.elapsed().as_secs(),
                        side.var(),
                        other.var()
                    );
                }
                std::thread::sleep(Duration::from_secs(2));
            }
            Err(why) => {
                return Err(RunError::Startup(StartupError::Topics(format!(
                    "SIDEJOIN_{}_HASH_BY cannot place the {side} side's records where the {other} side's are: {why}; \
                     repartition the {other} side too (SIDEJOIN_{}_HASH_BY=$join_key: sidejoin then places both)",
                    side.var(),
                    other.var()
                ))))
            }
        }
    }
    Ok(None)
}

/// Up to 16 of the newest keyed records of each partition of `topic`: `(partition, offset, key)`.
fn sample(
    cfg: &Config,
    topic: &str,
    partitions: i32,
) -> Result<Vec<(i32, i64, Vec<u8>)>, RunError> {
    let consumer: BaseConsumer<HelperContext> =
        k::probe_consumer_config(cfg).create_with_context(HelperContext("repartition sampler"))?;
    let mut tpl = TopicPartitionList::new();
    let mut ends = Vec::new();
    for p in 0..partitions {
        let (low, high) = consumer.fetch_watermarks(topic, p, Duration::from_secs(10))?;
        if high > low {
            tpl.add_partition_offset(topic, p, Offset::Offset(low.max(high - 16)))?;
            ends.push((p, high));
        }
    }
    let mut out = Vec::new();
    if ends.is_empty() {
        return Ok(out);
    }
    consumer.assign(&tpl)?;
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut open = ends.len();
    while open > 0 && Instant::now() < deadline {
        match consumer.poll(Duration::from_millis(100)) {
            Some(Ok(m)) => {
                if let Some(key) = m.key() {
                    out.push((m.partition(), m.offset(), key.to_vec()));
                }
                if ends
                    .iter()
                    .any(|(p, high)| *p == m.partition() && m.offset() + 1 >= *high)
                {
                    open -= 1;
                }
            }
            Some(Err(KafkaError::PartitionEOF(_))) => {}
            Some(Err(e)) => tracing::debug!("sampling `{topic}`: {e}"),
            None => {}
        }
    }
    Ok(out)
}

/// Why a step stopped.
enum Stop {
    /// The instance must stop (its error says why).
    Fatal(RunError),
    /// The transaction is lost: resume from the last commit.
    Retry(String),
}

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Stop::Fatal(e) => write!(f, "{e}"),
            Stop::Retry(why) => f.write_str(why),
        }
    }
}

impl From<KafkaError> for Stop {
    fn from(e: KafkaError) -> Self {
        Stop::Retry(k::redact(&e))
    }
}

/// One partition of the source topic.
struct Part {
    source: Option<PartitionQueue<HelperContext>>,
    queue: VecDeque<(Buffered, i64)>,
    at_end: bool,
    empty_since: i64,
}

/// The routing of one side while this instance holds its lease.
struct Router<'a> {
    cfg: &'a Config,
    side: Side,
    source: String,
    topic: String,
    decoder: Decoder,
    avro: Option<AvroInput>,
    route: Route,
    consumer: Arc<BaseConsumer<HelperContext>>,
    producer: Option<BaseProducer>,
    parts: Vec<Part>,
    /// Per source partition, the next offset to route (`-1`: none routed in this transaction).
    next: Vec<i64>,
    routed: Vec<Routed>,
    /// Records routed (or dead-lettered) since the last commit.
    uncommitted: u64,
    last_commit: Instant,
    last_purge: Instant,
    last_lag: Instant,
    metrics: Arc<Metrics>,
}

impl<'a> Router<'a> {
    fn new(
        cfg: &'a Config,
        side: Side,
        placement: Placement,
        metrics: Arc<Metrics>,
    ) -> Result<Self, RunError> {
        let spec = cfg.join.side(side);
        let hashed = spec.hash_by.clone().unwrap_or_default();
        // A mirrored placement matches the other side's join key by position.
        let columns = match placement.form {
            crate::routing::KeyForm::Canonical => hashed,
            _ => spec.key.clone(),
        };
        let avro = match AvroInput::new(cfg) {
            Ok(a) => a.filter(|a| a.is_avro(side)),
            Err(e) => return Err(RunError::Startup(StartupError::Registry(e))),
        };
        Ok(Router {
            cfg,
            side,
            source: cfg.join.topic(side).to_owned(),
            topic: k::repartition_topic(cfg, side),
            decoder: Decoder::new(spec),
            avro,
            route: Route::new(side, &columns, spec.primary_key.as_deref(), placement),
            consumer: Arc::new(
                k::router_consumer_config(cfg, side)
                    .create_with_context(HelperContext("repartition router"))?,
            ),
            producer: None,
            parts: Vec::new(),
            next: Vec::new(),
            routed: Vec::new(),
            uncommitted: 0,
            last_commit: Instant::now(),
            last_purge: Instant::now(),
            last_lag: Instant::now(),
            metrics,
        })
    }

    /// Takes over: fences any earlier router, assigns every source partition at the router
    /// group's committed offsets (else `SIDEJOIN_AUTO_OFFSET_RESET`), opens a transaction.
    fn activate(&mut self) -> Result<(), String> {
        if let Some(avro) = &self.avro {
            let never = CancellationToken::new();
            avro.wait_for_registry(&never)?;
        }
        let producer: BaseProducer = k::router_producer_config(self.cfg, self.side)
            .create()
            .map_err(|e| k::redact(&e))?;
        producer
            .init_transactions(TXN_CALL)
            .map_err(|e| format!("initialising its transactions: {}", k::redact(&e)))?;
        // A fresh consumer each time: nothing of an earlier assignment (positions, offsets)
        // carries over.
        let consumer: BaseConsumer<HelperContext> = k::router_consumer_config(self.cfg, self.side)
            .create_with_context(HelperContext("repartition router"))
            .map_err(|e| k::redact(&e))?;
        self.consumer = Arc::new(consumer);
        let tpl =
            all_partitions(self.consumer.as_ref(), &self.source).map_err(|e| k::redact(&e))?;
        let n = tpl.count() as i32;
        // The router group's committed offsets, asked now that any earlier router's open
        // transaction is resolved (read_committed: stable offsets only).
        let committed = self
            .consumer
            .committed_offsets(tpl, TXN_CALL)
            .map_err(|e| format!("fetching its committed offsets: {}", k::redact(&e)))?;
        let mut at = TopicPartitionList::new();
        let mut resumed = Vec::new();
        for e in committed.elements() {
            let offset = match e.offset() {
                Offset::Offset(o) => {
                    resumed.push(format!("{}@{o}", e.partition()));
                    Offset::Offset(o)
                }
                _ => {
                    resumed.push(format!("{}@reset", e.partition()));
                    match self.cfg.kafka.auto_offset_reset {
                        crate::config::OffsetReset::Earliest => Offset::Beginning,
                        crate::config::OffsetReset::Latest => Offset::End,
                    }
                }
            };
            at.add_partition_offset(&self.source, e.partition(), offset)
                .map_err(|e| k::redact(&e))?;
        }
        self.consumer.assign(&at).map_err(|e| k::redact(&e))?;
        let now = now_ms();
        self.parts = (0..n)
            .map(|p| Part {
                source: self.consumer.split_partition_queue(&self.source, p),
                queue: VecDeque::new(),
                at_end: false,
                empty_since: now,
            })
            .collect();
        self.next = vec![-1; n as usize];
        producer.begin_transaction().map_err(|e| k::redact(&e))?;
        self.producer = Some(producer);
        self.uncommitted = 0;
        self.last_commit = Instant::now();
        tracing::info!(
            "repartition of the {} side: routing `{}` ({n} partitions) from its last commit ({})",
            self.side,
            self.source,
            resumed.join(", ")
        );
        Ok(())
    }

    /// Gives up: aborts the open transaction (what it held is routed again by the next
    /// router), unassigns.
    fn deactivate(&mut self) {
        if let Some(p) = self.producer.take() {
            let _ = p.abort_transaction(TXN_CALL);
        }
        self.parts.clear();
        self.next.clear();
        // What was routed since the last commit is gone with the transaction.
        self.uncommitted = 0;
        let _ = self.consumer.unassign();
    }

    /// Stops routing cleanly: commits what was routed, then gives up.
    fn finish(&mut self) {
        if self.uncommitted > 0 {
            if let Err(e) = self.commit() {
                tracing::warn!(
                    "repartition of the {} side: the last commit failed: {e}",
                    self.side
                );
            }
        }
        self.deactivate();
    }

    /// Fetches, routes up to `PER_STEP` records in timestamp order, commits when due.
    fn step(&mut self) -> Result<(), Stop> {
        let now = now_ms();
        let fetched = self.fetch(now);
        let mut routed = 0;
        while routed < PER_STEP {
            let heads = self.parts.iter().map(|p| Head {
                head: p.queue.front().map(|(r, at)| (r.timestamp, *at)),
                at_end: p.at_end,
                empty_since: p.empty_since,
            });
            let Some(b) = next_head(heads, now, self.cfg.kafka.max_task_idle_ms) else {
                break;
            };
            let part = &mut self.parts[b];
            let (rec, _) = part.queue.pop_front().expect("next_head has a head");
            if part.queue.is_empty() {
                part.empty_since = now;
            }
            self.route_one(&rec)?;
            self.next[b] = rec.offset + 1;
            self.uncommitted += 1;
            routed += 1;
        }
        let producer = self.producer.as_ref().expect("active");
        producer.poll(Duration::ZERO);
        let interval = Duration::from_millis(self.cfg.kafka.commit_interval_ms.max(0) as u64);
        if self.uncommitted > 0 && self.last_commit.elapsed() >= interval {
            self.commit()?;
        }
        if self.last_purge.elapsed() >= PURGE_EVERY {
            self.last_purge = Instant::now();
            self.purge();
        }
        if fetched == 0 && routed == 0 {
            std::thread::sleep(Duration::from_millis(5));
        }
        Ok(())
    }

    /// Moves what the partitions' queues hold into `parts`; returns how many records.
    fn fetch(&mut self, now: i64) -> usize {
        let mut n = 0;
        // Events, errors, and records fetched before a queue was split.
        while let Some(r) = self.consumer.poll(Duration::ZERO) {
            match r {
                Ok(m) => {
                    let b = m.partition() as usize;
                    let rec = input::copy(&m, self.side, now);
                    drop(m);
                    if let Some(part) = self.parts.get_mut(b) {
                        part.queue.push_back((rec, now));
                        part.at_end = false;
                        n += 1;
                    }
                }
                Err(KafkaError::PartitionEOF(b)) => {
                    if let Some(part) = self.parts.get_mut(b as usize) {
                        part.at_end = true;
                    }
                }
                Err(e) => {
                    tracing::warn!("repartition of the {} side: consume error: {e}", self.side);
                    break;
                }
            }
        }
        for part in &mut self.parts {
            let Some(queue) = &part.source else { continue };
            while part.queue.len() < PER_PART {
                match queue.poll(Duration::ZERO) {
                    Some(Ok(m)) => {
                        part.queue.push_back((input::copy(&m, self.side, now), now));
                        part.at_end = false;
                        n += 1;
                    }
                    Some(Err(KafkaError::PartitionEOF(_))) => part.at_end = true,
                    Some(Err(e)) => {
                        tracing::warn!("repartition of the {} side: consume error: {e}", self.side);
                        break;
                    }
                    None => break,
                }
            }
        }
        if n > 0 {
            self.metrics.repartitioned(self.side, "in", n as u64);
        }
        n
    }

    /// Decodes `rec` and writes what it becomes into the open transaction; an undecodable or
    /// unroutable record is handled as `SIDEJOIN_ON_ERROR` says.
    fn route_one(&mut self, rec: &Buffered) -> Result<(), Stop> {
        let (key, value) = (rec.key.as_deref(), rec.value.as_deref());
        let decoded = match &mut self.avro {
            Some(avro) => avro
                .decode(self.side, key, value)
                .and_then(|(k, v)| self.decoder.decode(k, v)),
            None => self.decoder.decode(key, value),
        };
        let routed = decoded.and_then(|event: Option<Event>| match event {
            Some(e) => self.route.route(e, &mut self.routed),
            None => Ok(()),
        });
        if let Err(e) = routed {
            self.routed.clear();
            return self.failed(rec, e);
        }
        let producer = self.producer.as_ref().expect("active");
        let n = self.routed.len() as u64;
        for r in self.routed.drain(..) {
            let record: BaseRecord<'_, [u8], [u8]> = BaseRecord::to(&self.topic)
                .partition(r.partition)
                .key(r.key.as_slice())
                .payload(r.value.as_slice())
                .timestamp(rec.timestamp);
            send(producer, record)?;
        }
        self.metrics.repartitioned(self.side, "out", n);
        Ok(())
    }

    /// `SIDEJOIN_ON_ERROR` for a record that could not be decoded or routed.
    fn failed(&mut self, rec: &Buffered, e: DecodeError) -> Result<(), Stop> {
        self.metrics.repartitioned(self.side, "error", 1);
        if self.decoder.skips_parse_errors() {
            return Ok(());
        }
        match self.cfg.process.on_error {
            OnError::Fail => {
                let err = RunError::Failed {
                    topic: self.source.clone(),
                    partition: rec.source,
                    offset: rec.offset,
                    side: self.side,
                    error: e.to_string(),
                };
                Err(Stop::Fatal(err))
            }
            OnError::Skip => {
                tracing::warn!(
                    "skipped the {} record at `{}` partition {} offset {}: {e}",
                    self.side,
                    self.source,
                    rec.source,
                    rec.offset
                );
                Ok(())
            }
            OnError::Dlq => {
                let headers = super::output::dead_letter_headers(rec, &self.source, &e);
                let mut record: BaseRecord<'_, [u8], [u8]> =
                    BaseRecord::to(&self.cfg.kafka.dlq_topic)
                        .timestamp(rec.timestamp)
                        .headers(headers);
                if let Some(k) = &rec.key {
                    record = record.key(k);
                }
                if let Some(v) = &rec.value {
                    record = record.payload(v);
                }
                send(self.producer.as_ref().expect("active"), record)
            }
        }
    }

    /// Commits the open transaction with the source offsets past what it routed; opens the next.
    fn commit(&mut self) -> Result<(), Stop> {
        let producer = self.producer.as_ref().expect("active");
        let mut tpl = TopicPartitionList::new();
        for (p, &o) in self.next.iter().enumerate() {
            if o >= 0 {
                tpl.add_partition_offset(&self.source, p as i32, Offset::Offset(o))?;
            }
        }
        if tpl.count() > 0 {
            let group = self
                .consumer
                .group_metadata()
                .ok_or_else(|| Stop::Retry("the router consumer has no group metadata".into()))?;
            producer.send_offsets_to_transaction(&tpl, &group, TXN_CALL)?;
        }
        producer.commit_transaction(TXN_CALL)?;
        producer.begin_transaction()?;
        self.next.iter_mut().for_each(|o| *o = -1);
        self.uncommitted = 0;
        self.last_commit = Instant::now();
        self.publish_lag();
        Ok(())
    }

    /// The router's lag on the source topic, as `sidejoin_consumer_lag` of that topic (at most
    /// every `LAG_EVERY`: the end offsets are asked of the brokers).
    fn publish_lag(&mut self) {
        if self.last_lag.elapsed() < LAG_EVERY {
            return;
        }
        self.last_lag = Instant::now();
        let Ok(positions) = self.consumer.position() else {
            return;
        };
        for e in positions.elements() {
            let Offset::Offset(at) = e.offset() else {
                continue;
            };
            if let Ok((_, high)) =
                self.consumer
                    .fetch_watermarks(&self.source, e.partition(), Duration::from_secs(1))
            {
                self.metrics
                    .set_consumer_lag(&self.source, e.partition(), high - at);
            }
        }
    }

    /// Deletes the records of the repartition topic that the join group has committed past.
    fn purge(&self) {
        let result = (|| -> Result<usize, KafkaError> {
            let join: BaseConsumer<HelperContext> = k::probe_consumer_config(self.cfg)
                .create_with_context(HelperContext("repartition purge"))?;
            let tpl = all_partitions(&join, &self.topic)?;
            let committed = join.committed_offsets(tpl, Duration::from_secs(10))?;
            let mut purge = TopicPartitionList::new();
            for e in committed.elements() {
                if let Offset::Offset(o) = e.offset() {
                    if o > 0 {
                        purge.add_partition_offset(
                            &self.topic,
                            e.partition(),
                            Offset::Offset(o),
                        )?;
                    }
                }
            }
            if purge.count() == 0 {
                return Ok(0);
            }
            let admin: AdminClient<DefaultClientContext> = k::admin_config(self.cfg).create()?;
            let done =
                futures::executor::block_on(admin.delete_records(&purge, &AdminOptions::new()))?;
            Ok(done.count())
        })();
        match result {
            Ok(n) if n > 0 => tracing::debug!(
                "purged consumed records of `{}` ({n} partitions)",
                self.topic
            ),
            Ok(_) => {}
            Err(e) => tracing::warn!(
                "cannot purge consumed records of `{}`: {}",
                self.topic,
                k::redact(&e)
            ),
        }
    }
}

/// Every partition of `topic`, as the brokers list them now.
fn all_partitions<C: Consumer<HelperContext>>(
    consumer: &C,
    topic: &str,
) -> Result<TopicPartitionList, KafkaError> {
    let md = consumer.fetch_metadata(Some(topic), Duration::from_secs(10))?;
    let mut tpl = TopicPartitionList::new();
    for t in md.topics() {
        for p in t.partitions() {
            tpl.add_partition(topic, p.id());
        }
    }
    Ok(tpl)
}

/// Hands `record` to the transaction's producer, serving it while its queue is full.
fn send(producer: &BaseProducer, mut record: BaseRecord<'_, [u8], [u8]>) -> Result<(), Stop> {
    loop {
        match producer.send(record) {
            Ok(()) => return Ok(()),
            Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), r)) => {
                record = r;
                producer.poll(Duration::from_millis(10));
            }
            Err((e, _)) => return Err(e.into()),
        }
    }
}
