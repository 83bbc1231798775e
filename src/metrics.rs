//! Every Prometheus metric of SPEC §11, declared once and updated through named methods. Labels
//! stay low-cardinality: sides, kinds, reasons, topics and partitions — never keys or offsets.
//!
//! The engine counts in plain numbers (`Stats`); `observe_stats` moves the counters forward by
//! what changed since the last call.
//!
//! Several workers (`SIDEJOIN_WORKERS`) share one `Metrics`, each through its `WorkerMetrics`:
//! counters advance by each worker's own change, `sidejoin_state_rows` is the sum over the
//! workers, `sidejoin_watermark_ms` the lowest watermark any worker reported (the one that holds
//! output back), `sidejoin_brokers_up` the fewest brokers any worker's consumer is connected to,
//! and the instance is ready when every worker is. No metric has a worker label.

use std::sync::{Arc, Mutex, MutexGuard};

use prometheus::{
    Encoder, Histogram, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Registry, TextEncoder,
};

use crate::change::{Kind, Side};
use crate::stats::{DropReason, Stats, UnmatchedReason};

mod catalog;
mod declare;
mod progress;
pub mod reference;
mod worker;

pub use catalog::Described;
pub use progress::Step;
pub use worker::WorkerMetrics;

/// A worker closing one checkpoint for longer than this makes the instance not ready (a
/// checkpoint takes milliseconds while Kafka answers).
const CHECKPOINT_NOT_READY: std::time::Duration = std::time::Duration::from_secs(5);

pub struct Metrics {
    registry: Registry,
    /// What each metric is, in registration order (the metrics reference is rendered from it).
    described: Vec<Described>,
    records_in: IntCounterVec,
    records_out: IntCounterVec,
    generated_retracts_filtered: IntCounter,
    dedup_dropped: IntCounterVec,
    input_dropped: IntCounterVec,
    decode_errors: IntCounterVec,
    dlq_records: IntCounter,
    dlq_trimmed: IntCounter,
    poison_records: IntCounterVec,
    matches: IntCounter,
    unmatched_emitted: IntCounterVec,
    late_records: IntCounterVec,
    late_matches: IntCounter,
    state_rows: IntGaugeVec,
    state_expired: IntCounterVec,
    copartition_violations: IntCounterVec,
    watermark_ms: IntGaugeVec,
    consumer_lag: IntGaugeVec,
    repartitioned: IntCounterVec,
    end_to_end_latency: Histogram,
    commit_duration: Histogram,
    checkpoint_phases: prometheus::HistogramVec,
    rebalances: IntCounter,
    restore_seconds: prometheus::Gauge,
    restore_records: IntCounter,
    changelog_records: IntCounter,
    transactions: IntCounterVec,
    ready: IntGauge,
    brokers_up: IntGauge,
    watchdog_stalls: IntCounterVec,
    /// Each worker's step and last progress; whether `/healthz` passes.
    health: progress::Health,
    /// What each worker last reported, by worker index.
    workers: Mutex<Vec<WorkerSlot>>,
}

/// What one worker last reported.
struct WorkerSlot {
    /// Its partitions are assigned and restored (its run loop says so).
    processing: bool,
    /// Brokers its consumer is connected to (librdkafka's statistics); `None` until they say.
    brokers_up: Option<usize>,
    /// Its engine's counts when last observed: the counters moved forward from these.
    last: Stats,
    watermarks: [Option<i64>; 2],
}

impl WorkerSlot {
    fn ready(&self) -> bool {
        // Reachable until the statistics say no broker is up.
        self.processing && self.brokers_up != Some(0)
    }
}

/// Moves a counter forward to `now` from `before` (counters never go back).
fn advance(c: &IntCounter, before: u64, now: u64) {
    if now > before {
        c.inc_by(now - before);
    }
}

impl Metrics {
    /// The handle worker `index` (below the count given to `new`) updates its metrics through.
    pub fn worker(self: &Arc<Self>, index: usize) -> WorkerMetrics {
        assert!(index < self.slots().len(), "worker {index} has no slot");
        WorkerMetrics {
            shared: self.clone(),
            index,
        }
    }

    fn slots(&self) -> MutexGuard<'_, Vec<WorkerSlot>> {
        self.workers.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Brings every engine-derived metric up to `stats`, worker `w`'s counts.
    fn observe_stats(&self, w: usize, stats: &Stats) {
        let mut slots = self.slots();
        let last = &slots[w].last;
        for side in Side::first(stats.inputs()) {
            self.observe_side(side, last, stats);
        }
        for kind in Kind::ALL {
            let i = kind.index();
            advance(
                &self.records_out.with_label_values(&[kind.short()]),
                last.records_out[i],
                stats.records_out[i],
            );
        }
        advance(
            &self.generated_retracts_filtered,
            last.generated_retracts_filtered,
            stats.generated_retracts_filtered,
        );
        advance(&self.dlq_records, last.dlq_records, stats.dlq_records);
        advance(&self.matches, last.matches, stats.matches);
        advance(&self.late_matches, last.late_matches, stats.late_matches);
        slots[w].last = stats.clone();
        let inputs = slots.iter().map(|s| s.last.inputs()).max().unwrap_or(2);
        for side in Side::first(inputs) {
            let rows = slots.iter().map(|s| s.last.state_rows[side.index()]).sum();
            self.state_rows.with_label_values(&[side.name()]).set(rows);
        }
    }

    /// Advances one side's labelled counters from `last` to `stats`.
    fn observe_side(&self, side: Side, last: &Stats, stats: &Stats) {
        let (i, s) = (side.index(), side.name());
        advance(
            &self.records_in.with_label_values(&[s]),
            last.records_in[i],
            stats.records_in[i],
        );
        advance(
            &self.dedup_dropped.with_label_values(&[s]),
            last.dedup_dropped[i],
            stats.dedup_dropped[i],
        );
        advance(
            &self.decode_errors.with_label_values(&[s]),
            last.decode_errors[i],
            stats.decode_errors[i],
        );
        advance(
            &self.late_records.with_label_values(&[s]),
            last.late_records[i],
            stats.late_records[i],
        );
        advance(
            &self.state_expired.with_label_values(&[s]),
            last.state_expired[i],
            stats.state_expired[i],
        );
        advance(
            &self.copartition_violations.with_label_values(&[s]),
            last.copartition_violations[i],
            stats.copartition_violations[i],
        );
        for (r, reason) in DropReason::ALL.iter().enumerate() {
            advance(
                &self.input_dropped.with_label_values(&[s, reason.name()]),
                last.input_dropped[i][r],
                stats.input_dropped[i][r],
            );
        }
        for (r, reason) in UnmatchedReason::ALL.iter().enumerate() {
            advance(
                &self
                    .unmatched_emitted
                    .with_label_values(&[s, reason.name()]),
                last.unmatched_emitted[i][r],
                stats.unmatched_emitted[i][r],
            );
        }
    }

    fn set_watermark(&self, w: usize, side: Side, ms: i64) {
        let mut slots = self.slots();
        slots[w].watermarks[side.index()] = Some(ms);
        let lowest = slots
            .iter()
            .filter_map(|s| s.watermarks[side.index()])
            .min();
        self.watermark_ms
            .with_label_values(&[side.name()])
            .set(lowest.unwrap_or(ms));
    }

    pub fn set_consumer_lag(&self, topic: &str, partition: i32, lag: i64) {
        self.consumer_lag
            .with_label_values(&[topic, &partition.to_string()])
            .set(lag.max(0));
    }

    /// `n` records of `side` through the repartition step with `result` (`in`, `out`, `error`).
    pub fn repartitioned(&self, side: Side, result: &str, n: u64) {
        self.repartitioned
            .with_label_values(&[side.name(), result])
            .inc_by(n);
    }

    pub fn observe_latency(&self, seconds: f64) {
        self.end_to_end_latency.observe(seconds.max(0.0));
    }

    pub fn observe_commit(&self, seconds: f64) {
        self.commit_duration.observe(seconds);
    }

    /// One phase of closing a checkpoint took `seconds` (`phase`: `seal`, `output`, `offsets`, `wait`,
    /// `commit`, `persist`).
    pub fn observe_checkpoint_phase(&self, phase: &str, seconds: f64) {
        self.checkpoint_phases
            .with_label_values(&[phase])
            .observe(seconds);
    }

    pub fn rebalance(&self) {
        self.rebalances.inc();
    }

    pub fn set_restore_seconds(&self, seconds: f64) {
        self.restore_seconds.set(seconds);
    }

    pub fn restored(&self, records: u64) {
        self.restore_records.inc_by(records);
    }

    pub fn mirrored(&self, records: u64) {
        self.changelog_records.inc_by(records);
    }

    /// A record handled as poison (`reason`: `panic`, `oversized_output`), or an output record
    /// released by processing time dropped for its size (`oversized_release`).
    pub fn poison(&self, reason: &str) {
        self.poison_records.with_label_values(&[reason]).inc();
    }

    /// A dead letter was written without the original value (or key and headers).
    pub fn dlq_trimmed(&self) {
        self.dlq_trimmed.inc();
    }

    pub fn transaction(&self, committed: bool) {
        let result = if committed { "committed" } else { "aborted" };
        self.transactions.with_label_values(&[result]).inc();
    }

    fn set_processing(&self, w: usize, processing: bool) {
        let mut slots = self.slots();
        slots[w].processing = processing;
        self.update_ready(&slots);
    }

    fn set_brokers_up(&self, w: usize, up: usize) {
        let mut slots = self.slots();
        slots[w].brokers_up = Some(up);
        let fewest = slots.iter().filter_map(|s| s.brokers_up).min();
        self.brokers_up.set(fewest.unwrap_or(up) as i64);
        self.update_ready(&slots);
    }

    fn update_ready(&self, slots: &[WorkerSlot]) {
        self.ready.set(i64::from(self.ready_with(slots)));
    }

    fn ready_with(&self, slots: &[WorkerSlot]) -> bool {
        slots.iter().all(WorkerSlot::ready) && !self.checkpoint_waits()
    }

    /// Some worker has been closing one checkpoint for longer than `CHECKPOINT_NOT_READY`: its
    /// Kafka calls get no answer. It cannot serve the statistics that would say no broker is
    /// up meanwhile (librdkafka's `send_offsets_to_transaction` can even outlast its timeout
    /// when the coordinator is gone), so readiness says it from here.
    fn checkpoint_waits(&self) -> bool {
        (0..self.health.workers()).any(|w| {
            let (step, since) = self.health.last(w);
            step == Step::Checkpoint && since > CHECKPOINT_NOT_READY
        })
    }

    /// Brings the `sidejoin_ready` gauge up to the time-based part of readiness (the watchdog
    /// calls it every look); returns whether a checkpoint waits past `CHECKPOINT_NOT_READY`.
    pub fn refresh_ready(&self) -> bool {
        self.update_ready(&self.slots());
        self.checkpoint_waits()
    }

    /// Whether every worker has its assigned partitions restored and is processing them, with a
    /// broker reachable and no checkpoint waiting on Kafka past `CHECKPOINT_NOT_READY`.
    pub fn is_ready(&self) -> bool {
        self.ready_with(&self.slots())
    }

    /// Worker `w`'s step and how long ago it last reported progress.
    pub fn progress(&self, w: usize) -> (Step, std::time::Duration) {
        self.health.last(w)
    }

    /// How many workers report progress.
    pub fn workers(&self) -> usize {
        self.health.workers()
    }

    /// The watchdog found a worker stuck in `step`.
    pub fn stalled(&self, step: Step) {
        self.watchdog_stalls.with_label_values(&[step.name()]).inc();
    }

    /// Whether `/healthz` passes (no worker is stuck).
    pub fn set_healthy(&self, healthy: bool) {
        self.health.set_healthy(healthy);
    }

    pub fn is_healthy(&self) -> bool {
        self.health.is_healthy()
    }

    /// Every metric, as the metrics reference describes it, in registration order.
    pub fn described(&self) -> &[Described] {
        &self.described
    }

    /// The Prometheus text exposition of every metric.
    pub fn render(&self) -> String {
        let mut buf = Vec::new();
        let encoded = TextEncoder::new().encode(&self.registry.gather(), &mut buf);
        debug_assert!(encoded.is_ok());
        String::from_utf8(buf).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests;
