//! Every Prometheus metric of SPEC §11, declared once and updated through named methods. Labels
//! stay low-cardinality: sides, kinds, reasons, topics and partitions — never keys or offsets.
//!
//! The engine counts in plain numbers (`Stats`); `observe_stats` moves the counters forward by
//! what changed since the last call.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use prometheus::{
    Encoder, Histogram, HistogramOpts, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts,
    Registry, TextEncoder,
};

use crate::changelog::{Kind, Side};
use crate::stats::{DropReason, Stats, UnmatchedReason};

pub struct Metrics {
    registry: Registry,
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
    watermark_ms: IntGaugeVec,
    consumer_lag: IntGaugeVec,
    end_to_end_latency: Histogram,
    commit_duration: Histogram,
    rebalances: IntCounter,
    restore_seconds: prometheus::Gauge,
    ready: IntGauge,
    brokers_up: IntGauge,
    /// Partitions assigned and restored (the run loop says so).
    processing: AtomicBool,
    /// At least one broker reachable (librdkafka's statistics say so); true until they say not.
    reachable: AtomicBool,
    last: Mutex<Stats>,
}

fn counter_vec(r: &Registry, name: &str, help: &str, labels: &[&str]) -> IntCounterVec {
    registered(r, IntCounterVec::new(Opts::new(name, help), labels))
}

fn counter(r: &Registry, name: &str, help: &str) -> IntCounter {
    registered(r, IntCounter::new(name, help))
}

fn gauge_vec(r: &Registry, name: &str, help: &str, labels: &[&str]) -> IntGaugeVec {
    registered(r, IntGaugeVec::new(Opts::new(name, help), labels))
}

/// A metric made (its name and help are constants, so valid) and registered in `r`.
fn registered<M: prometheus::core::Collector + Clone + 'static>(
    r: &Registry,
    metric: prometheus::Result<M>,
) -> M {
    let m = metric.expect("valid metric");
    r.register(Box::new(m.clone()))
        .expect("metric registered once");
    m
}

fn histogram(r: &Registry, name: &str, help: &str, buckets: Vec<f64>) -> Histogram {
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

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Self {
        let r = Registry::new();
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
            processing: AtomicBool::new(false),
            reachable: AtomicBool::new(true),
            registry: r,
            last: Mutex::new(Stats::default()),
        }
    }

    /// Brings every engine-derived metric up to `stats`.
    pub fn observe_stats(&self, stats: &Stats) {
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
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
            self.state_rows
                .with_label_values(&[s])
                .set(stats.state_rows[i]);
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
        *last = stats.clone();
    }

    pub fn set_watermark(&self, side: Side, ms: i64) {
        self.watermark_ms.with_label_values(&[side.name()]).set(ms);
    }

    pub fn set_consumer_lag(&self, topic: &str, partition: i32, lag: i64) {
        self.consumer_lag
            .with_label_values(&[topic, &partition.to_string()])
            .set(lag.max(0));
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

    /// Whether the assigned partitions are restored and being processed.
    pub fn set_ready(&self, ready: bool) {
        self.processing.store(ready, Ordering::Relaxed);
        self.update_ready();
    }

    /// How many brokers the consumer is connected to; none makes the instance not ready.
    pub fn set_brokers_up(&self, up: usize) {
        self.brokers_up.set(up as i64);
        self.reachable.store(up > 0, Ordering::Relaxed);
        self.update_ready();
    }

    fn update_ready(&self) {
        self.ready.set(i64::from(self.is_ready()));
    }

    pub fn is_ready(&self) -> bool {
        self.processing.load(Ordering::Relaxed) && self.reachable.load(Ordering::Relaxed)
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
mod tests {
    use super::*;

    #[test]
    fn counters_follow_stats_and_render() {
        let m = Metrics::new();
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
}
