//! A worker's loop: batches of records in merge order, their outputs sent after each batch,
//! rebalance events applied between batches, a checkpoint every commit interval; on stop the
//! last checkpoint.

use std::time::{Duration, Instant};

use rdkafka::consumer::Consumer;
use rdkafka::error::KafkaError;
use rdkafka::error::RDKafkaErrorCode;

use crate::metrics::Step;

use super::super::durable::Close;
use super::super::input::Served;
use super::super::RunError;
use super::{now_ms, Worker};
use sidejoin_store::Checkpointed;

/// Records processed before their outputs are sent.
const POLL_BATCH: usize = 2_000;

/// How long an idle loop waits on the consumer before it looks at the partition queues again.
const IDLE_POLL: Duration = Duration::from_millis(5);

/// The longest a poll batch gathers records.
const POLL_TIME: Duration = Duration::from_millis(10);

/// Most error events taken from the consumer's own queue per look at it.
const ERRORS_PER_SERVE: usize = 64;

impl<S: Checkpointed> Worker<'_, S> {
    /// Serves the consumer's callbacks (waiting up to `wait` for the first); records that
    /// arrive there join the merge (`input::Lanes::serve`).
    fn serve(&mut self, wait: Duration, now: i64) -> Result<(), RunError> {
        let mut wait = wait;
        for _ in 0..ERRORS_PER_SERVE {
            match self.lanes.serve(&mut self.merge, wait, now) {
                Served::Idle => return Ok(()),
                Served::Error(e) => self.consume_error(e)?,
            }
            wait = Duration::ZERO;
        }
        Ok(())
    }

    /// An error from the consumer's queue: fatal when the client says so, else logged.
    fn consume_error(&mut self, e: KafkaError) -> Result<(), RunError> {
        if let Some((code, reason)) = self.consumer().client().fatal_error() {
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

    /// Fetches what the partition queues (and the broadcast consumer) hold, bounded per queue.
    fn fill(&mut self, now: i64) -> usize {
        let mut fetched = self.lanes.fill(&mut self.merge, now);
        for b in &mut self.broadcast {
            fetched += b.fill(&mut self.merge, now);
        }
        fetched
    }

    /// Processes up to a batch of records in merge order, fetching what the partition queues
    /// hold as needed; waits up to `wait` when nothing may go. Returns how many were processed.
    fn poll_batch(&mut self, wait: Duration) -> Result<usize, RunError> {
        let started = Instant::now();
        // Processing time, read once per batch: it only drives max-wait and idle timeouts.
        let mut now = now_ms();
        self.serve(Duration::ZERO, now)?;
        let (mut n, mut waited) = (0, false);
        while n < POLL_BATCH {
            if let Some((_, _, rec)) = self.merge.pop(now) {
                if n % 64 == 0 {
                    self.metrics.step(Step::Processing);
                }
                self.handle(&rec, now)?;
                n += 1;
                if n % 64 == 0 && started.elapsed() >= POLL_TIME {
                    break;
                }
                continue;
            }
            // Nothing may go: fetch what the queues hold (bounded per queue, so this ends).
            if self.fill(now) > 0 {
                continue;
            }
            if n > 0 || waited {
                break;
            }
            // Nothing arrived: wait a little on the consumer (callbacks, and the records its
            // queues fetch meanwhile), then look once more.
            self.serve(wait.min(IDLE_POLL), now)?;
            now = now_ms();
            waited = true;
        }
        Ok(n)
    }

    /// Processes until stopped or failed, then closes the last checkpoint.
    pub(super) fn run(&mut self) -> Result<(), RunError> {
        let interval = Duration::from_millis(self.cfg.kafka.commit_interval_ms.max(1) as u64);
        let mut next_commit = Instant::now() + interval;
        let outcome: Result<(), RunError> = loop {
            if self.shutdown.is_cancelled() {
                break Ok(());
            }
            // Explicit idle when nothing comes: polling is progress.
            self.metrics.step(Step::Polling);
            let wait = next_commit
                .saturating_duration_since(Instant::now())
                .min(Duration::from_millis(100));
            let polled = self.poll_batch(wait);
            if let Err(RunError::Aborted(why)) = polled {
                // A checkpoint in flight aborted while a record waited for it (a dead letter
                // under exactly-once): what followed it is dropped and consumed again.
                self.dropped(&why);
                self.restore_assigned()?;
                continue;
            }
            // Whatever the batch produced goes out, also before a failing record stops us
            // (`finish` commits what came before it); after any other error nothing does.
            match &polled {
                Ok(_) | Err(RunError::Failed { .. }) | Err(RunError::Copartition { .. }) => {
                    self.send_outputs()?
                }
                Err(_) => {}
            }
            if let Err(e) = polled {
                break Err(e);
            }
            self.output.poll(Duration::ZERO);
            self.metrics.step(Step::Rebalancing);
            if let Err(e) = self.apply_assignments() {
                break Err(e);
            }
            if Instant::now() >= next_commit {
                self.metrics.step(Step::Checkpoint);
                self.commit_or_reset(Close::Pipelined)?;
                next_commit = Instant::now() + interval;
            }
        };
        self.finish(outcome)
    }

    /// What the end of the loop commits: what came before a stop or a failing record; nothing
    /// after another error (the records are consumed again).
    fn finish(&mut self, outcome: Result<(), RunError>) -> Result<(), RunError> {
        match outcome {
            Ok(()) | Err(RunError::Failed { .. }) | Err(RunError::Copartition { .. }) => {
                self.commit_or_reset(Close::Synchronous)?;
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
            Err(e) => {
                // Nothing goes on behind the worker's back: the checkpoint in flight lands.
                if let Err(landed) = self.protocol.settle() {
                    tracing::debug!("the checkpoint in flight did not commit: {landed}");
                }
                Err(e)
            }
        }
    }
}
