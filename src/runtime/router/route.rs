//! The routing of one side while this instance holds its lease: source partitions merged by
//! timestamp (`input`), each record decoded and re-keyed (`crate::routing`), the routed records
//! and the source offsets committed in one transaction (`kafka::transactions`).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rdkafka::consumer::Consumer;
use rdkafka::error::KafkaError;
use rdkafka::producer::{BaseProducer, BaseRecord};
use rdkafka::{Offset, TopicPartitionList};
use tokio_util::sync::CancellationToken;

use crate::avro::AvroInput;
use crate::change::{Event, Side};
use crate::config::{Config, OffsetReset, OnError};
use crate::format::{DecodeError, Decoder};
use crate::kafka::clients;
use crate::kafka::context::HelperContext;
use crate::kafka::deliveries::{Deliveries, ROUTED};
use crate::kafka::transactions::Transactions;
use crate::metrics::Metrics;
use crate::plan::RouterPlan;
use crate::routing::{Placement, Route, Routed};
use crate::runtime::dead_letter::{self, Dead};
use crate::runtime::faults::{fault, Fault};
use crate::runtime::input::{LaneSpec, Lanes, Merge, Record, Served};
use crate::runtime::output::send_when_room;
use crate::runtime::{now_ms, RunError, StartupError};

use super::upkeep::Upkeep;
use super::Stop;

/// Most records fetched from one source partition and not yet routed.
const PER_PART: usize = 4_096;
/// Most records routed per step, between looks at the lease and the commit clock.
const PER_STEP: usize = 8_192;

/// What an active router holds: its source partitions and its open transaction.
struct Active {
    lanes: Lanes<HelperContext>,
    merge: Merge,
    txn: Transactions,
    /// Per source partition, the next offset to route (`-1`: none routed in this transaction).
    next: Vec<i64>,
}

pub(super) struct Router<'a> {
    cfg: &'a Config,
    plan: &'a RouterPlan,
    decoder: Decoder,
    avro: Option<AvroInput>,
    route: Route,
    routed: Vec<Routed>,
    active: Option<Active>,
    /// Records routed (or dead-lettered) since the last commit.
    uncommitted: u64,
    last_commit: Instant,
    upkeep: Upkeep,
    metrics: Arc<Metrics>,
    fault: Fault,
}

impl<'a> Router<'a> {
    pub(super) fn new(
        cfg: &'a Config,
        plan: &'a RouterPlan,
        placement: Placement,
        metrics: Arc<Metrics>,
    ) -> Result<Self, RunError> {
        let spec = cfg.join.side(plan.side);
        // A mirrored placement matches the other side's join key by position.
        let columns = match placement.form {
            crate::routing::KeyForm::Canonical => plan.by.clone(),
            _ => spec.key.clone(),
        };
        let avro = match AvroInput::new(cfg) {
            Ok(a) => a.filter(|a| a.is_avro(plan.side)),
            Err(e) => return Err(RunError::Startup(StartupError::Registry(e))),
        };
        Ok(Router {
            cfg,
            plan,
            decoder: Decoder::new(spec),
            avro,
            route: Route::new(plan.side, &columns, spec.primary_key.as_deref(), placement),
            routed: Vec::new(),
            active: None,
            uncommitted: 0,
            last_commit: Instant::now(),
            upkeep: Upkeep::new(&cfg.kafka, plan),
            metrics,
            fault: fault(),
        })
    }

    fn side(&self) -> Side {
        self.plan.side
    }

    /// Follows the lease: starts routing when it is `held`, stops when it is not; returns
    /// whether routing is on.
    pub(super) fn follow_lease(&mut self, held: bool, active: bool) -> bool {
        let side = self.side();
        match (held, active) {
            (true, false) => match self.activate() {
                Ok(()) => true,
                Err(e) => {
                    tracing::warn!(
                        "repartition of the {side} side cannot start yet: {e}; retrying"
                    );
                    self.deactivate();
                    std::thread::sleep(Duration::from_secs(1));
                    false
                }
            },
            (false, true) => {
                tracing::info!("repartition of the {side} side: another instance holds it now");
                self.finish();
                false
            }
            (_, active) => active,
        }
    }

    /// Takes over: fences any earlier router, assigns every source partition at the router
    /// group's committed offsets (else `SIDEJOIN_AUTO_OFFSET_RESET`), opens a transaction.
    fn activate(&mut self) -> Result<(), String> {
        if let Some(avro) = &self.avro {
            avro.wait_for_registry(&CancellationToken::new())
                .map_err(|e| e.to_string())?;
        }
        let kafka = &self.cfg.kafka;
        let producer: BaseProducer<Deliveries> = clients::router_producer(kafka, self.side())
            .create_with_context(Deliveries::new(self.metrics.clone()))
            .map_err(|e| crate::kafka::redact(&e))?;
        let never = CancellationToken::new();
        let mut txn = Transactions::new(
            Arc::new(producer),
            format!("repartition of the {} side", self.side()),
            Arc::new(|_| {}),
            &never,
        );
        txn.start()
            .map_err(|e| format!("initialising its transactions: {e}"))?;
        // A fresh consumer each time: nothing of an earlier assignment (positions, offsets)
        // carries over.
        let lanes = Lanes::new(
            clients::router_consumer(kafka, self.side())
                .create_with_context(HelperContext("repartition router"))
                .map_err(|e| crate::kafka::redact(&e))?,
            PER_PART,
        );
        let n = self.assign(&lanes).map_err(|e| crate::kafka::redact(&e))?;
        let mut lanes = lanes;
        let specs = (0..n)
            .map(|p| LaneSpec {
                side: self.side(),
                topic: self.plan.source_topic.clone(),
                partition: p,
                task: 0,
                stream: p as usize,
            })
            .collect();
        lanes.assigned(specs, now_ms());
        self.active = Some(Active {
            lanes,
            merge: Merge::new(n as usize, self.cfg.kafka.max_task_idle_ms),
            txn,
            next: vec![-1; n as usize],
        });
        self.uncommitted = 0;
        self.last_commit = Instant::now();
        Ok(())
    }

    /// Assigns every source partition at the router group's committed offsets, asked now that
    /// any earlier router's open transaction is resolved (read_committed: stable offsets only).
    /// Returns the partition count.
    fn assign(&self, lanes: &Lanes<HelperContext>) -> Result<i32, KafkaError> {
        let consumer = lanes.consumer();
        let source = &self.plan.source_topic;
        let tpl = super::upkeep::all_partitions(consumer.as_ref(), source)?;
        let n = tpl.count() as i32;
        let committed = consumer.committed_offsets(tpl, Duration::from_secs(30))?;
        let mut at = TopicPartitionList::new();
        let mut resumed = Vec::new();
        for e in committed.elements() {
            let offset = match e.offset() {
                Offset::Offset(o) => Offset::Offset(o),
                _ => match self.cfg.kafka.auto_offset_reset {
                    OffsetReset::Earliest => Offset::Beginning,
                    OffsetReset::Latest => Offset::End,
                },
            };
            resumed.push(match offset {
                Offset::Offset(o) => format!("{}@{o}", e.partition()),
                _ => format!("{}@reset", e.partition()),
            });
            at.add_partition_offset(source, e.partition(), offset)?;
        }
        consumer.assign(&at)?;
        tracing::info!(
            "repartition of the {} side: routing `{source}` ({n} partitions) from its last commit ({})",
            self.side(),
            resumed.join(", ")
        );
        Ok(n)
    }

    /// Gives up: aborts the open transaction (what it held is routed again by the next
    /// router), unassigns.
    pub(super) fn deactivate(&mut self) {
        if let Some(mut a) = self.active.take() {
            a.txn.abandon();
            let _ = a.lanes.consumer().unassign();
        }
        // What was routed since the last commit is gone with the transaction.
        self.uncommitted = 0;
    }

    /// Stops routing cleanly: commits what was routed, then gives up.
    pub(super) fn finish(&mut self) {
        if self.uncommitted > 0 {
            if let Err(e) = self.commit() {
                let why = match e {
                    Stop::Fatal(e) => e.to_string(),
                    Stop::Retry(why) => why,
                };
                tracing::warn!(
                    "repartition of the {} side: the last commit failed: {why}",
                    self.side()
                );
            }
        }
        self.deactivate();
    }

    /// Fetches, routes up to `PER_STEP` records in timestamp order, commits when due.
    pub(super) fn step(&mut self) -> Result<(), Stop> {
        let now = now_ms();
        let fetched = self.fetch(now);
        let mut routed = 0;
        while routed < PER_STEP {
            let a = self.active.as_mut().expect("active");
            let Some((_, b, rec)) = a.merge.pop(now) else {
                break;
            };
            self.route_one(&rec)?;
            self.active.as_mut().expect("active").next[b] = rec.offset + 1;
            self.uncommitted += 1;
            routed += 1;
        }
        let a = self.active.as_ref().expect("active");
        a.txn.producer().poll(Duration::ZERO);
        let interval = Duration::from_millis(self.cfg.kafka.commit_interval_ms.max(0) as u64);
        if self.uncommitted > 0 && self.last_commit.elapsed() >= interval {
            self.commit()?;
        }
        self.upkeep.purge_when_due();
        if fetched == 0 && routed == 0 {
            std::thread::sleep(Duration::from_millis(5));
        }
        Ok(())
    }

    /// Moves what the partitions' queues hold into the merge; returns how many records.
    fn fetch(&mut self, now: i64) -> usize {
        let side = self.side();
        let a = self.active.as_mut().expect("active");
        if let Served::Error(e) = a.lanes.serve(&mut a.merge, Duration::ZERO, now) {
            tracing::warn!("repartition of the {side} side: consume error: {e}");
        }
        let n = a.lanes.fill(&mut a.merge, now);
        if n > 0 {
            self.metrics.repartitioned(side, "in", n as u64);
        }
        n
    }

    /// Decodes `rec` and writes what it becomes into the open transaction; an undecodable or
    /// unroutable record is handled as `SIDEJOIN_ON_ERROR` says.
    fn route_one(&mut self, rec: &Record) -> Result<(), Stop> {
        let (key, value) = (rec.key.as_deref(), rec.value.as_deref());
        let (side, fault) = (self.plan.side, self.fault);
        // A panic is the record's error: nothing of it is routed (`routed` is cleared), and the
        // decoders keep no state of a record.
        let routed = catch_unwind(AssertUnwindSafe(|| {
            let decoded = match &mut self.avro {
                Some(avro) => {
                    (avro.decode(side, key, value)).and_then(|(k, v)| self.decoder.decode(k, v))
                }
                None => self.decoder.decode(key, value),
            };
            let routed = decoded.and_then(|event: Option<Event>| match event {
                Some(e) => self.route.route(e, &mut self.routed),
                None => Ok(()),
            });
            fault.panic_on_marker(value);
            routed
        }))
        .unwrap_or_else(|p| {
            let message = dead_letter::panic_message(p.as_ref());
            Err(DecodeError::new(format!(
                "processing the record panicked: {message}"
            )))
        });
        if let Err(e) = routed {
            self.routed.clear();
            return self.failed(rec, e);
        }
        let producer = self.active.as_ref().expect("active").txn.producer().clone();
        let n = self.routed.len() as u64;
        for r in self.routed.drain(..) {
            let record: BaseRecord<'_, [u8], [u8], usize> =
                BaseRecord::with_opaque_to(&self.plan.topic, ROUTED)
                    .partition(r.partition)
                    .key(r.key.as_slice())
                    .payload(r.value.as_slice())
                    .timestamp(rec.timestamp);
            send_when_room(&producer, record, "repartition")?;
        }
        self.metrics.repartitioned(self.plan.side, "out", n);
        Ok(())
    }

    /// `SIDEJOIN_ON_ERROR` for a record that could not be decoded or routed.
    fn failed(&mut self, rec: &Record, e: DecodeError) -> Result<(), Stop> {
        let (side, source) = (self.plan.side, &self.plan.source_topic);
        self.metrics.repartitioned(side, "error", 1);
        if self.decoder.skips_parse_errors() {
            return Ok(());
        }
        match self.cfg.process.on_error {
            OnError::Fail => Err(Stop::Fatal(RunError::Failed {
                topic: source.clone(),
                partition: rec.source,
                offset: rec.offset,
                side,
                error: dead_letter::abbreviate(&e.to_string()).into_owned(),
            })),
            OnError::Skip => {
                tracing::warn!(
                    "skipped the {side} record at `{source}` partition {} offset {}: {e}",
                    rec.source,
                    rec.offset
                );
                Ok(())
            }
            OnError::Dlq => {
                let reason = e.to_string();
                let dead = Dead {
                    msg: rec,
                    topic: source,
                    reason: &reason,
                };
                let producer = self.active.as_ref().expect("active").txn.producer();
                dead_letter::send(producer, &self.cfg.kafka.dlq_topic, &dead, ROUTED)?;
                Ok(())
            }
        }
    }

    /// Commits the open transaction with the source offsets past what it routed; opens the next.
    fn commit(&mut self) -> Result<(), Stop> {
        let a = self.active.as_mut().expect("active");
        let mut tpl = TopicPartitionList::new();
        for (p, &o) in a.next.iter().enumerate() {
            if o >= 0 {
                tpl.add_partition_offset(&self.plan.source_topic, p as i32, Offset::Offset(o))?;
            }
        }
        if tpl.count() > 0 {
            let group = (a.lanes.consumer().group_metadata())
                .ok_or_else(|| Stop::Retry("the router consumer has no group metadata".into()))?;
            a.txn.send_offsets(&tpl, group)?;
        }
        a.txn.commit()?;
        a.txn.begin()?;
        a.next.iter_mut().for_each(|o| *o = -1);
        self.uncommitted = 0;
        self.last_commit = Instant::now();
        self.upkeep
            .publish_lag(a.lanes.consumer().as_ref(), &self.metrics);
        Ok(())
    }
}
