//! Restoring a partition's state when it is assigned (SPEC §6–7), before anything of it is
//! consumed: the local copy is verified against the changelog topics and brought up to date.
//!
//! Per partition and side, from the local copy's changelog position `L` and the topic's
//! watermarks `[low, high)`:
//! - `low ≤ L ≤ high`: the local copy is a prefix of the changelog (this instance or another
//!   owner wrote since): read `[L, high)` on top of it — often nothing (a restart);
//! - no local position but local state, and an empty changelog (a directory older than the
//!   changelog, or a deleted topic): mirror the local copy into the changelog;
//! - otherwise (no or foreign local copy, a recreated topic): delete the local copy and read the
//!   changelog from `low`.
//!
//! Changelog records are whole values (puts and tombstones) of committed checkpoints only
//! (`read_committed`), so reading from an older position than necessary is harmless, and
//! RocksDB takes them as they are, without decoding or re-encoding. The position reached is
//! recorded after the records are flushed.

use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::message::Message;
use rdkafka::{Offset, TopicPartitionList};
use tokio_util::sync::CancellationToken;

use crate::change::{Partition, Side};
use crate::engine::layout;
use crate::kafka::context::HelperContext;
use crate::metrics::WorkerMetrics;
use crate::runtime::StartupError;

use super::{position_name, Protocol};
use crate::runtime::processor::Processor;
use crate::runtime::streams::{Inputs, Stream};
use crate::runtime::RunError;

const WATERMARKS: Duration = Duration::from_secs(10);

/// The pause before a metadata call the broker could not answer is made again.
const RETRY: Duration = Duration::from_millis(500);

/// How often restore progress is logged.
const PROGRESS: Duration = Duration::from_secs(2);

pub struct Restorer {
    consumer: BaseConsumer<HelperContext>,
}

/// A restored task and the next offset of each of its streams its state reflects (`None`: it
/// records none).
pub type Position = (Partition, Vec<(Stream, Option<i64>)>);

/// What one restore did.
#[derive(Debug, Default)]
pub struct Restored {
    pub records: u64,
    pub seconds: f64,
}

impl Restorer {
    pub fn new(consumer: BaseConsumer<HelperContext>) -> Self {
        Restorer { consumer }
    }

    /// Brings the state of `partitions` up to date with the changelog topics, then loads it
    /// into the engine. Returns the input positions the restored state reflects.
    pub fn restore(
        &mut self,
        processor: &mut dyn Processor,
        protocol: &mut Protocol,
        partitions: &[Partition],
        inputs: &Inputs,
        metrics: &WorkerMetrics,
        shutdown: &CancellationToken,
    ) -> Result<(Vec<Position>, Restored), RunError> {
        let started = Instant::now();
        let mut done = Restored::default();
        if let (Some(changelog), true) =
            (protocol.changelog().cloned(), processor.store().is_some())
        {
            // Per side: where each partition's reading starts and ends.
            let mut plan: [Vec<(Partition, i64, i64)>; 2] = [Vec::new(), Vec::new()];
            for &p in partitions {
                let marks = [
                    self.watermarks(&changelog[0], p, metrics, shutdown)?,
                    self.watermarks(&changelog[1], p, metrics, shutdown)?,
                ];
                let store = processor.store().expect("checked");
                let local = Side::BOTH.map(|s| store.local(p, position_name(s)));
                let mut meta = Vec::new();
                layout::meta_group(&mut meta, p);
                let has_state = inputs.streams(p).iter().any(|s| {
                    store
                        .get(&meta, &layout::offset_item(&inputs.item(s)))
                        .is_some()
                });
                let prefix = local
                    .iter()
                    .zip(&marks)
                    .all(|(l, (low, high))| l.is_some_and(|l| *low <= l && l <= *high));
                if prefix {
                    for side in Side::BOTH {
                        let from = local[side.index()].expect("checked");
                        plan[side.index()].push((p, from, marks[side.index()].1));
                    }
                    continue;
                }
                let empty = marks.iter().all(|(low, high)| low == high);
                if has_state && empty && local.iter().all(Option::is_none) {
                    let n = protocol.mirror_local(processor, p)?;
                    tracing::info!(
                        "partition {p}: the changelog topics are empty; mirrored the local state into them ({n} records)"
                    );
                    continue;
                }
                if has_state {
                    tracing::warn!(
                        "partition {p}: the local state is not a prefix of the changelog (local positions {local:?}, changelog {marks:?}): deleting it and restoring from the changelog"
                    );
                }
                processor.delete(p).map_err(RunError::State)?;
                for side in Side::BOTH {
                    let (low, high) = marks[side.index()];
                    plan[side.index()].push((p, low, high));
                }
            }
            for side in Side::BOTH {
                done.records += self.read(
                    processor,
                    &changelog[side.index()],
                    side,
                    &plan[side.index()],
                    metrics,
                    shutdown,
                )?;
            }
        }
        if let Some(store) = processor.store() {
            for &p in partitions {
                let mut meta = Vec::new();
                layout::meta_group(&mut meta, p);
                if let Some(item) = (inputs.foreign_items().into_iter())
                    .find(|i| store.get(&meta, &layout::offset_item(i)).is_some())
                {
                    return Err(RunError::Startup(StartupError::Refused(format!(
                        "the state of partition {p} was written by a join whose tasks read other input (it records \
                         offsets of `{item}`): SIDEJOIN_BROADCAST changed under the same SIDEJOIN_APPLICATION_ID; a \
                         changed topology needs a new SIDEJOIN_APPLICATION_ID (a new group, new changelog topics, \
                         state rebuilt from the inputs), as in Kafka Streams"
                    ))));
                }
            }
        }
        let now = crate::runtime::now_ms();
        let positions = partitions
            .iter()
            .map(|&p| {
                let streams = inputs.streams(p);
                let items: Vec<String> = streams.iter().map(|s| inputs.item(s)).collect();
                let names: Vec<&str> = items.iter().map(String::as_str).collect();
                let offsets = processor.restore(p, &names, now);
                (p, streams.into_iter().zip(offsets).collect())
            })
            .collect();
        done.seconds = started.elapsed().as_secs_f64();
        metrics.set_restore_seconds(done.seconds);
        Ok((positions, done))
    }

    /// The changelog partition's watermarks; while the broker cannot answer (an outage, a
    /// leader moving) the instance is not ready and the call is retried until `shutdown`.
    fn watermarks(
        &self,
        topic: &str,
        p: Partition,
        metrics: &WorkerMetrics,
        shutdown: &CancellationToken,
    ) -> Result<(i64, i64), RunError> {
        let mut logged = false;
        loop {
            match self.consumer.fetch_watermarks(topic, p, WATERMARKS) {
                Ok(marks) => {
                    if logged {
                        tracing::info!("changelog `{topic}` partition {p}: watermarks read");
                    }
                    return Ok(marks);
                }
                Err(e) if transient(&e) && !shutdown.is_cancelled() => {
                    if !logged {
                        tracing::warn!(
                            "cannot read the watermarks of changelog `{topic}` partition {p} ({e}); not ready; retrying"
                        );
                        metrics.set_ready(false);
                        logged = true;
                    }
                    std::thread::sleep(RETRY);
                }
                Err(_) if shutdown.is_cancelled() => return Err(RunError::StoppedRestoring),
                Err(e) => {
                    return Err(RunError::State(format!(
                        "cannot read the watermarks of changelog `{topic}` partition {p}: {e}"
                    )))
                }
            }
        }
    }

    /// Reads `[from, to)` of `topic`'s partitions in `plan` into the store; records each
    /// partition's position reached.
    fn read(
        &mut self,
        processor: &mut dyn Processor,
        topic: &str,
        side: Side,
        plan: &[(Partition, i64, i64)],
        metrics: &WorkerMetrics,
        shutdown: &CancellationToken,
    ) -> Result<u64, RunError> {
        let mut tpl = TopicPartitionList::new();
        let mut pending: Vec<Partition> = Vec::new();
        for &(p, from, to) in plan {
            if from < to {
                let _ = tpl.add_partition_offset(topic, p, Offset::Offset(from));
                pending.push(p);
            } else if let Some(store) = processor.store() {
                store.set_local(p, position_name(side), to)?;
            }
        }
        if pending.is_empty() {
            return Ok(0);
        }
        tracing::info!("restoring partitions {pending:?} from `{topic}`");
        self.consumer.assign(&tpl)?;
        let started = Instant::now();
        let mut last_log = Instant::now();
        let mut n = 0u64;
        let store = processor.store().expect("restores only durable state");
        let mut waiting = pending.clone();
        while !waiting.is_empty() {
            if shutdown.is_cancelled() {
                self.consumer.unassign()?;
                return Err(RunError::StoppedRestoring);
            }
            match self.consumer.poll(Duration::from_millis(100)) {
                Some(Ok(msg)) => {
                    let Some(key) = msg.key() else { continue };
                    if layout::partition_of(key) != Some(msg.partition()) {
                        return Err(RunError::State(format!(
                            "changelog `{topic}` partition {} holds a record of another partition (offset {}): the topic is not this application's changelog",
                            msg.partition(),
                            msg.offset()
                        )));
                    }
                    store.load(key, msg.payload()).map_err(|e| {
                        RunError::State(format!(
                            "changelog `{topic}` partition {} offset {}: {e}",
                            msg.partition(),
                            msg.offset()
                        ))
                    })?;
                    n += 1;
                    if n % 8192 == 0 && last_log.elapsed() >= PROGRESS {
                        let secs = started.elapsed().as_secs_f64();
                        tracing::info!(
                            "restoring from `{topic}`: {n} records so far ({:.0}/s), partitions left {waiting:?}",
                            n as f64 / secs
                        );
                        last_log = Instant::now();
                    }
                }
                Some(Err(KafkaError::PartitionEOF(p))) => waiting.retain(|w| *w != p),
                Some(Err(e)) => tracing::warn!("restoring from `{topic}`: {e}"),
                None => {}
            }
        }
        store.loaded()?;
        let reached = self.consumer.position()?;
        for &(p, _, to) in plan.iter().filter(|(p, _, _)| pending.contains(p)) {
            let at = match reached.find_partition(topic, p).map(|e| e.offset()) {
                Some(Offset::Offset(o)) => o.min(to),
                _ => to,
            };
            store.set_local(p, position_name(side), at)?;
        }
        self.consumer.unassign()?;
        metrics.restored(n);
        let secs = started.elapsed().as_secs_f64().max(1e-9);
        tracing::info!(
            "restored {n} records of partitions {pending:?} from `{topic}` in {secs:.2} s ({:.0} records/s)",
            n as f64 / secs
        );
        Ok(n)
    }
}

/// Whether a metadata call failed because no broker (or no leader) could answer for now.
fn transient(e: &KafkaError) -> bool {
    use rdkafka::types::RDKafkaErrorCode as C;
    matches!(
        e.rdkafka_error_code(),
        Some(
            C::OperationTimedOut
                | C::RequestTimedOut
                | C::AllBrokersDown
                | C::BrokerTransportFailure
                | C::NotLeaderForPartition
                | C::LeaderNotAvailable
                | C::NetworkException
                | C::BrokerNotAvailable
                | C::NotCoordinator
                | C::CoordinatorLoadInProgress
                | C::CoordinatorNotAvailable
        )
    )
}
