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

use std::cell::RefCell;
use std::ops::Deref;
use std::sync::{Arc, Mutex, MutexGuard};

use prometheus::{
    Encoder, Histogram, HistogramOpts, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts,
    Registry, TextEncoder,
};

use crate::change::{Kind, Side};
use crate::stats::{DropReason, Stats, UnmatchedReason};

pub mod reference;

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
    rebalances: IntCounter,
    restore_seconds: prometheus::Gauge,
    restore_records: IntCounter,
    changelog_records: IntCounter,
    transactions: IntCounterVec,
    ready: IntGauge,
    brokers_up: IntGauge,
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

/// One metric as the reference describes it: its name, type, labels and help text.
#[derive(Debug, Clone)]
pub struct Described {
    pub name: String,
    /// `counter`, `gauge` or `histogram`.
    pub kind: &'static str,
    pub labels: Vec<String>,
    pub help: String,
}

/// The registry being filled, and what was registered in it.
struct Catalog {
    registry: Registry,
    described: RefCell<Vec<Described>>,
}

fn counter_vec(r: &Catalog, name: &str, help: &str, labels: &[&str]) -> IntCounterVec {
    registered(r, IntCounterVec::new(Opts::new(name, help), labels))
}

fn counter(r: &Catalog, name: &str, help: &str) -> IntCounter {
    registered(r, IntCounter::new(name, help))
}

fn gauge_vec(r: &Catalog, name: &str, help: &str, labels: &[&str]) -> IntGaugeVec {
    registered(r, IntGaugeVec::new(Opts::new(name, help), labels))
}

/// A metric made (its name and help are constants, so valid), registered in `r` and described.
fn registered<M: prometheus::core::Collector + Clone + 'static>(
    r: &Catalog,
    metric: prometheus::Result<M>,
) -> M {
    use prometheus::proto::MetricType;
    let m = metric.expect("valid metric");
    let kind = match m.collect().first().map(|f| f.get_field_type()) {
        Some(MetricType::COUNTER) => "counter",
        Some(MetricType::GAUGE) => "gauge",
        Some(MetricType::HISTOGRAM) => "histogram",
        _ => "untyped",
    };
    for d in m.desc() {
        r.described.borrow_mut().push(Described {
            name: d.fq_name.clone(),
            kind,
            labels: d.variable_labels.clone(),
            help: d.help.clone(),
        });
    }
    r.registry
        .register(Box::new(m.clone()))
        .expect("metric registered once");
    m
}

fn histogram(r: &Catalog, name: &str, help: &str, buckets: Vec<f64>) -> Histogram {
    registered(
        r,
        Histogram::with_opts(HistogramOpts::new(name, help).buckets(buckets)),
    )
}

/// Moves a counter forward to `now` from `before` (counters never go back).
fn advance(c: &IntCounter, before: u64, now: u64) {
    if now > before {
        c.inc_by(now - before);
    }
}

impl Metrics {
    /// The metrics of an instance of `workers` workers (at least one).
    pub fn new(workers: usize) -> Self {
        let r = Catalog {
            registry: Registry::new(),
            described: RefCell::new(Vec::new()),
        };
        let latency_buckets = vec![
            0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
        ];
        Metrics {
            records_in: counter_vec(
                &r,
                "sidejoin_records_in_total",
                "Input records consumed",
                &["side"],
            ),
            records_out: counter_vec(
                &r,
                "sidejoin_records_out_total",
                "Join changes emitted, by kind",
                &["op"],
            ),
            generated_retracts_filtered: counter(
                &r,
                "sidejoin_generated_retracts_filtered_total",
                "Generated retractions dropped by SIDEJOIN_ALLOW_GENERATED_RETRACTS=false",
            ),
            dedup_dropped: counter_vec(
                &r,
                "sidejoin_dedup_dropped_total",
                "Changes dropped by dedup",
                &["side"],
            ),
            input_dropped: counter_vec(
                &r,
                "sidejoin_input_dropped_total",
                "Input changes dropped before the join",
                &["side", "reason"],
            ),
            decode_errors: counter_vec(
                &r,
                "sidejoin_decode_errors_total",
                "Records that could not be decoded",
                &["side"],
            ),
            dlq_records: counter(
                &r,
                "sidejoin_dlq_records_total",
                "Records written to the dead-letter topic",
            ),
            matches: counter(
                &r,
                "sidejoin_matches_total",
                "Joined (matched) rows emitted",
            ),
            unmatched_emitted: counter_vec(
                &r,
                "sidejoin_unmatched_emitted_total",
                "Interval join: unmatched outer rows emitted null-padded",
                &["side", "reason"],
            ),
            late_records: counter_vec(
                &r,
                "sidejoin_late_records_total",
                "Interval join: records that arrived already final",
                &["side"],
            ),
            late_matches: counter(
                &r,
                "sidejoin_late_matches_total",
                "Interval join: matches of rows already padded by max wait",
            ),
            state_rows: gauge_vec(
                &r,
                "sidejoin_state_rows",
                "Rows held in join state",
                &["side"],
            ),
            state_expired: counter_vec(
                &r,
                "sidejoin_state_expired_total",
                "Rows expired by state TTL",
                &["side"],
            ),
            copartition_violations: counter_vec(
                &r,
                "sidejoin_copartition_violations_total",
                "Records whose Kafka key does not carry their join key (the topics are not co-partitioned by it)",
                &["side"],
            ),
            watermark_ms: gauge_vec(
                &r,
                "sidejoin_watermark_ms",
                "Interval join: watermark per side (epoch ms)",
                &["side"],
            ),
            consumer_lag: gauge_vec(
                &r,
                "sidejoin_consumer_lag",
                "Records behind the end of each input partition",
                &["topic", "partition"],
            ),
            repartitioned: counter_vec(
                &r,
                "sidejoin_repartition_records_total",
                "Records of a SIDEJOIN_<SIDE>_HASH_BY side through the repartition step: `in` read from its topic, \
                 `out` written to its repartition topic, `error` undecodable or unroutable (SIDEJOIN_ON_ERROR)",
                &["side", "result"],
            ),
            end_to_end_latency: histogram(
                &r,
                "sidejoin_end_to_end_latency_seconds",
                "Input record timestamp to output acknowledged",
                latency_buckets.clone(),
            ),
            commit_duration: histogram(
                &r,
                "sidejoin_commit_duration_seconds",
                "Waiting for output acknowledgements and committing input offsets",
                latency_buckets,
            ),
            rebalances: counter(&r, "sidejoin_rebalances_total", "Consumer group rebalances"),
            restore_seconds: registered(
                &r,
                prometheus::Gauge::new(
                    "sidejoin_restore_seconds",
                    "Time the last state restore took",
                ),
            ),
            restore_records: counter(
                &r,
                "sidejoin_restore_records_total",
                "Changelog records read to restore partitions' state",
            ),
            changelog_records: counter(
                &r,
                "sidejoin_changelog_records_total",
                "State changes mirrored to the changelog topics (net per checkpoint)",
            ),
            transactions: counter_vec(
                &r,
                "sidejoin_transactions_total",
                "Checkpoint transactions by result (committed, aborted)",
                &["result"],
            ),
            ready: registered(
                &r,
                IntGauge::new(
                    "sidejoin_ready",
                    "1 when assigned partitions are restored and processing and a broker is reachable",
                ),
            ),
            brokers_up: registered(
                &r,
                IntGauge::new(
                    "sidejoin_brokers_up",
                    "Brokers the consumer is connected to (librdkafka state UP)",
                ),
            ),
            registry: r.registry,
            described: r.described.into_inner(),
            workers: Mutex::new(
                (0..workers.max(1))
                    .map(|_| WorkerSlot {
                        processing: false,
                        brokers_up: None,
                        last: Stats::default(),
                        watermarks: [None; 2],
                    })
                    .collect(),
            ),
        }
    }

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
        for side in Side::BOTH {
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
        for side in Side::BOTH {
            let rows = slots.iter().map(|s| s.last.state_rows[side.index()]).sum();
            self.state_rows.with_label_values(&[side.name()]).set(rows);
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
        self.ready
            .set(i64::from(slots.iter().all(WorkerSlot::ready)));
    }

    /// Whether every worker has its assigned partitions restored and is processing them, with a
    /// broker reachable.
    pub fn is_ready(&self) -> bool {
        self.slots().iter().all(WorkerSlot::ready)
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

/// One worker's view of the shared `Metrics`: what it reports about itself goes to its slot;
/// everything else (`Deref`) is shared as is.
#[derive(Clone)]
pub struct WorkerMetrics {
    shared: Arc<Metrics>,
    index: usize,
}

impl WorkerMetrics {
    /// Brings every engine-derived metric up to `stats`, this worker's engine's counts.
    pub fn observe_stats(&self, stats: &Stats) {
        self.shared.observe_stats(self.index, stats);
    }

    pub fn set_watermark(&self, side: Side, ms: i64) {
        self.shared.set_watermark(self.index, side, ms);
    }

    /// Whether this worker's assigned partitions are restored and being processed.
    pub fn set_ready(&self, ready: bool) {
        self.shared.set_processing(self.index, ready);
    }

    /// How many brokers this worker's consumer is connected to; none makes the instance not
    /// ready.
    pub fn set_brokers_up(&self, up: usize) {
        self.shared.set_brokers_up(self.index, up);
    }

    pub fn shared(&self) -> &Arc<Metrics> {
        &self.shared
    }
}

impl Deref for WorkerMetrics {
    type Target = Metrics;

    fn deref(&self) -> &Metrics {
        &self.shared
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_follow_stats_and_render() {
        let m = Arc::new(Metrics::new(1)).worker(0);
        let mut s = Stats {
            records_in: [3, 1],
            state_rows: [2, 0],
            ..Default::default()
        };
        s.input_dropped(Side::Right, DropReason::Tombstone);
        m.observe_stats(&s);
        s.records_in[0] = 5;
        m.observe_stats(&s);
        let text = m.render();
        assert!(
            text.contains("sidejoin_records_in_total{side=\"left\"} 5"),
            "{text}"
        );
        assert!(text.contains("sidejoin_state_rows{side=\"left\"} 2"));
        assert!(
            text.contains("sidejoin_input_dropped_total{reason=\"tombstone\",side=\"right\"} 1")
        );
        assert!(text.contains("sidejoin_end_to_end_latency_seconds_bucket"));
    }

    #[test]
    fn workers_add_up() {
        let shared = Arc::new(Metrics::new(2));
        let (a, b) = (shared.worker(0), shared.worker(1));
        let stats = |records_in, rows| Stats {
            records_in: [records_in, 0],
            state_rows: [rows, 0],
            ..Default::default()
        };
        a.observe_stats(&stats(3, 2));
        b.observe_stats(&stats(4, 5));
        a.observe_stats(&stats(6, 1));
        a.set_watermark(Side::Left, 20);
        b.set_watermark(Side::Left, 10);
        let text = shared.render();
        assert!(
            text.contains("sidejoin_records_in_total{side=\"left\"} 10"),
            "{text}"
        );
        assert!(
            text.contains("sidejoin_state_rows{side=\"left\"} 6"),
            "{text}"
        );
        assert!(
            text.contains("sidejoin_watermark_ms{side=\"left\"} 10"),
            "{text}"
        );
        a.set_ready(true);
        assert!(!shared.is_ready(), "one worker is not ready yet");
        b.set_ready(true);
        assert!(shared.is_ready());
        b.set_brokers_up(0);
        assert!(!shared.is_ready(), "a worker reaches no broker");
    }
}
