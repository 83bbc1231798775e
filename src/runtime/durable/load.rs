//! Reading changelog records back into the state at restore (`restore`): each task's span of a
//! side's changelog, in committed transactions only, straight into the store (no decoding).

use std::time::{Duration, Instant};

use rdkafka::consumer::Consumer;
use rdkafka::error::KafkaError;
use rdkafka::message::{BorrowedMessage, Message};
use rdkafka::{Offset, TopicPartitionList};
use sidejoin_store::Checkpointed;
use tokio_util::sync::CancellationToken;

use crate::change::{Partition, Side};
use crate::engine::layout;
use crate::metrics::Step;
use crate::runtime::RunError;

use super::positions::position_name;
use super::restore::Span;
use super::Protocol;

/// How often restore progress is logged.
const PROGRESS: Duration = Duration::from_secs(2);

impl<S: Checkpointed> Protocol<S> {
    /// Reads `[from, to)` of `topic`'s partitions in `spans` into the store; records each
    /// partition's position reached.
    pub(super) fn read(
        &mut self,
        topic: &str,
        side: Side,
        spans: &[Span],
        shutdown: &CancellationToken,
    ) -> Result<u64, RunError> {
        let mut tpl = TopicPartitionList::new();
        let mut pending: Vec<Partition> = Vec::new();
        for &(p, from, to) in spans {
            if from < to {
                let _ = tpl.add_partition_offset(topic, p, Offset::Offset(from));
                pending.push(p);
            } else {
                self.state.set_local(p, position_name(side), to)?;
            }
        }
        if pending.is_empty() {
            return Ok(0);
        }
        tracing::info!("restoring partitions {pending:?} from `{topic}`");
        self.restorer.assign(&tpl)?;
        let started = Instant::now();
        let n = self.load_until_ends(topic, pending.clone(), shutdown)?;
        self.state.loaded()?;
        let reached = self.restorer.position()?;
        for &(p, _, to) in spans.iter().filter(|(p, _, _)| pending.contains(p)) {
            let at = match reached.find_partition(topic, p).map(|e| e.offset()) {
                Some(Offset::Offset(o)) => o.min(to),
                _ => to,
            };
            self.state.set_local(p, position_name(side), at)?;
        }
        self.restorer.unassign()?;
        self.metrics.restored(n);
        let secs = started.elapsed().as_secs_f64().max(1e-9);
        tracing::info!(
            "restored {n} records of partitions {pending:?} from `{topic}` in {secs:.2} s ({:.0} records/s)",
            n as f64 / secs
        );
        Ok(n)
    }

    /// Loads records until every partition of `waiting` reports its end.
    fn load_until_ends(
        &mut self,
        topic: &str,
        mut waiting: Vec<Partition>,
        shutdown: &CancellationToken,
    ) -> Result<u64, RunError> {
        let started = Instant::now();
        let mut last_log = Instant::now();
        let mut n = 0u64;
        while !waiting.is_empty() {
            if shutdown.is_cancelled() {
                self.restorer.unassign()?;
                return Err(RunError::StoppedRestoring);
            }
            self.metrics.step(Step::Restoring);
            match self.restorer.poll(Duration::from_millis(100)) {
                Some(Ok(msg)) => {
                    if load(&mut self.state, topic, &msg)? {
                        n += 1;
                    }
                    if n % 8192 == 0 && last_log.elapsed() >= PROGRESS {
                        let rate = n as f64 / started.elapsed().as_secs_f64();
                        tracing::info!(
                            "restoring from `{topic}`: {n} records so far ({rate:.0}/s), partitions left {waiting:?}"
                        );
                        last_log = Instant::now();
                    }
                }
                Some(Err(KafkaError::PartitionEOF(p))) => waiting.retain(|w| *w != p),
                Some(Err(e)) => tracing::warn!("restoring from `{topic}`: {e}"),
                None => {}
            }
        }
        Ok(n)
    }
}

/// What to do about a changelog record that is not a state value (docs/src/operations/hostile-input.md#stored-data).
const FIX_CHANGELOG: &str = "fix: rebuild the state — stop every instance, delete the \
     application's changelog topics and state directories, and reset its consumer group to the \
     earliest offsets, so that the inputs are read again; see the book, Hostile input";

/// Loads one changelog record into `state`; `false` for a record without a key.
fn load<S: Checkpointed>(
    state: &mut S,
    topic: &str,
    msg: &BorrowedMessage<'_>,
) -> Result<bool, RunError> {
    let Some(key) = msg.key() else {
        return Ok(false);
    };
    if layout::partition_of(key) != Some(msg.partition()) {
        return Err(RunError::Restore(format!(
            "changelog `{topic}` partition {} holds a record of another partition (offset {}): the topic is not this application's changelog",
            msg.partition(),
            msg.offset()
        )));
    }
    state.load(key, msg.payload()).map_err(|e| {
        RunError::Restore(format!(
            "changelog `{topic}` partition {} offset {}: {e}; the partition's state cannot be \
             restored past a record sidejoin did not write ({})",
            msg.partition(),
            msg.offset(),
            FIX_CHANGELOG
        ))
    })?;
    Ok(true)
}
