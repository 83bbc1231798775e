//! Restoring a task's state when it is assigned (SPEC §6–7), before anything of it is
//! consumed: the local copy is verified against the changelog topics and brought up to date.
//!
//! Per task and side, from the local copy's changelog position `L` and the topic's watermarks
//! `[low, high)`:
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

use rdkafka::consumer::Consumer;
use rdkafka::error::KafkaError;
use sidejoin_store::Checkpointed;
use tokio_util::sync::CancellationToken;

use crate::change::{Partition, Side};
use crate::metrics::Step;
use crate::runtime::processor::Processor;
use crate::runtime::streams::Stream;
use crate::runtime::{RunError, StartupError};

use super::positions::{self, position_name};
use super::Protocol;

const WATERMARKS: Duration = Duration::from_secs(10);

/// The pause before a metadata call the broker could not answer is made again.
const RETRY: Duration = Duration::from_millis(500);

/// How long a changelog partition missing from the metadata is waited for (`unknown`).
const UNKNOWN_GRACE: Duration = Duration::from_secs(120);

/// A restored task and the next offset of each of its streams its state reflects (`None`: it
/// records none).
pub(super) type Position = (Partition, Vec<(Stream, Option<i64>)>);

/// What one restore did.
#[derive(Debug, Default)]
pub(crate) struct Restored {
    pub records: u64,
    pub seconds: f64,
}

/// Where one task's reading of one changelog starts and ends.
pub(super) type Span = (Partition, i64, i64);

impl<S: Checkpointed> Protocol<S> {
    /// Brings the state of `tasks` up to date with the changelog topics; returns the input
    /// positions it reflects (the caller loads the tasks into the processor and assigns the
    /// consumer there).
    pub(crate) fn restore<P: Processor<S> + ?Sized>(
        &mut self,
        processor: &mut P,
        tasks: &[Partition],
        shutdown: &CancellationToken,
    ) -> Result<(Vec<Position>, Restored), RunError> {
        let started = Instant::now();
        let mut done = Restored::default();
        self.check_identity(true, super::identity::DESCRIBE)?;
        if let Some(changelog) = self.changelog.clone() {
            let mut spans: Vec<Vec<Span>> = vec![Vec::new(); changelog.len()];
            for &p in tasks {
                if let Some(each) = self.span(processor, &changelog, p, shutdown)? {
                    for (all, span) in spans.iter_mut().zip(each) {
                        all.push(span);
                    }
                }
            }
            for (side, (topic, spans)) in
                Side::first(changelog.len()).zip(changelog.iter().zip(&spans))
            {
                done.records += self.read(topic, side, spans, shutdown)?;
            }
        }
        self.refuse_foreign(tasks)?;
        let positions = self.positions_of(tasks)?;
        done.seconds = started.elapsed().as_secs_f64();
        self.metrics.set_restore_seconds(done.seconds);
        Ok((positions, done))
    }

    /// Where `task`'s reading of each input's changelog starts and ends; `None` when its local
    /// copy was mirrored into empty changelogs instead (nothing to read).
    fn span<P: Processor<S> + ?Sized>(
        &mut self,
        processor: &mut P,
        changelog: &[String],
        p: Partition,
        shutdown: &CancellationToken,
    ) -> Result<Option<Vec<Span>>, RunError> {
        let mut marks = Vec::with_capacity(changelog.len());
        for topic in changelog {
            marks.push(self.watermarks(topic, p, shutdown)?);
        }
        let mut local = Vec::with_capacity(changelog.len());
        for side in Side::first(changelog.len()) {
            local.push(self.state.local(p, position_name(side))?);
        }
        let items: Vec<String> = (self.inputs.streams(p).iter())
            .map(|s| self.inputs.item(s))
            .collect();
        let has_state = positions::any(&mut self.state, p, &items)?.is_some();
        let prefix = (local.iter().zip(&marks))
            .all(|(l, (low, high))| l.is_some_and(|l| *low <= l && l <= *high));
        if prefix {
            return Ok(Some(
                (local.iter().zip(&marks))
                    .map(|(l, (_, high))| (p, l.expect("checked"), *high))
                    .collect(),
            ));
        }
        let empty = marks.iter().all(|(low, high)| low == high);
        if has_state && empty && local.iter().all(Option::is_none) {
            let n = self.mirror_local(p)?;
            tracing::info!(
                "partition {p}: the changelog topics are empty; mirrored the local state into them ({n} records)"
            );
            return Ok(None);
        }
        if has_state {
            tracing::warn!(
                "partition {p}: the local state is not a prefix of the changelog (local positions {local:?}, changelog {marks:?}): deleting it and restoring from the changelog"
            );
        }
        processor.revoked(&mut self.state, &[p]);
        self.state.delete_partition(p)?;
        Ok(Some(
            marks
                .into_iter()
                .map(|(low, high)| (p, low, high))
                .collect(),
        ))
    }

    /// State recording offsets of input another topology reads was written by another join.
    fn refuse_foreign(&mut self, tasks: &[Partition]) -> Result<(), RunError> {
        let foreign = self.inputs.foreign_items();
        for &p in tasks {
            if let Some(item) = positions::any(&mut self.state, p, &foreign)? {
                return Err(RunError::Startup(StartupError::Refused(format!(
                    "the state of partition {p} was written by a join whose tasks read other input (it records \
                     offsets of `{item}`): SIDEJOIN_BROADCAST changed under the same SIDEJOIN_APPLICATION_ID; a \
                     changed topology needs a new SIDEJOIN_APPLICATION_ID (a new group, new changelog topics, \
                     state rebuilt from the inputs), as in Kafka Streams"
                ))));
            }
        }
        Ok(())
    }

    /// The input positions the local state of `tasks` reflects, after `discard` dropped what
    /// was not committed (a rewind, `worker::poison`): what is persisted is exactly the last
    /// committed checkpoint, so the changelog is not read — right after a commit its
    /// watermarks (`read_committed`: the last stable offset) may not show that commit yet.
    pub(crate) fn rewound(&mut self, tasks: &[Partition]) -> Result<Vec<Position>, RunError> {
        self.positions_of(tasks)
    }

    /// The input positions the restored state of `tasks` reflects.
    fn positions_of(&mut self, tasks: &[Partition]) -> Result<Vec<Position>, RunError> {
        let mut all = Vec::new();
        for &p in tasks {
            let mut offsets = Vec::new();
            for stream in self.inputs.streams(p) {
                let item = self.inputs.item(&stream);
                offsets.push((stream, positions::read(&mut self.state, &item, p)?));
            }
            all.push((p, offsets));
        }
        Ok(all)
    }

    /// The changelog partition's watermarks; while the broker cannot answer (an outage, a
    /// leader moving) the instance is not ready and the call is retried until `shutdown`.
    fn watermarks(
        &self,
        topic: &str,
        p: Partition,
        shutdown: &CancellationToken,
    ) -> Result<(i64, i64), RunError> {
        let mut logged = false;
        let first_try = Instant::now();
        loop {
            match self.restorer.fetch_watermarks(topic, p, WATERMARKS) {
                Ok(marks) => {
                    if logged {
                        tracing::info!("changelog `{topic}` partition {p}: watermarks read");
                    }
                    return Ok(marks);
                }
                Err(e)
                    if (transient(&e) || (unknown(&e) && first_try.elapsed() < UNKNOWN_GRACE))
                        && !shutdown.is_cancelled() =>
                {
                    if !logged {
                        tracing::warn!(
                            "cannot read the watermarks of changelog `{topic}` partition {p} ({e}); not ready; retrying"
                        );
                        self.metrics.set_ready(false);
                        logged = true;
                    }
                    self.metrics.step(Step::WaitingForKafka);
                    if unknown(&e) {
                        // librdkafka keeps an answer of the restarting broker that lacks the
                        // partition (seen for minutes after it was back): asked for afresh.
                        let _ = self.restorer.fetch_metadata(Some(topic), WATERMARKS);
                    }
                    std::thread::sleep(RETRY);
                }
                Err(_) if shutdown.is_cancelled() => return Err(RunError::StoppedRestoring),
                Err(e) if unknown(&e) => {
                    return Err(RunError::Restore(format!(
                        "changelog `{topic}` has no partition {p} ({e}, for {}s): it was deleted or recreated with fewer partitions than the input; delete it (sidejoin creates it again from the local state or the input) or give it the input's partition count",
                        UNKNOWN_GRACE.as_secs()
                    )))
                }
                Err(e) => {
                    return Err(RunError::Restore(format!(
                        "cannot read the watermarks of changelog `{topic}` partition {p}: {e}"
                    )))
                }
            }
        }
    }
}

/// Whether the partition was not in the client's metadata. Transient while a broker restarts
/// (librdkafka's cache can lose the partition during an outage; seen when a rebalance came
/// right before one), permanent when the changelog topic was deleted or shrunk: retried, with
/// the topic's metadata asked for again, for `UNKNOWN_GRACE`.
fn unknown(e: &KafkaError) -> bool {
    use rdkafka::types::RDKafkaErrorCode as C;
    matches!(
        e.rdkafka_error_code(),
        Some(C::UnknownPartition | C::UnknownTopicOrPartition | C::UnknownTopic)
    )
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
