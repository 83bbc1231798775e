//! Every metric, declared once: its name, help, labels and buckets (a declarative table: one
//! registration per field of `Metrics`).

use std::cell::RefCell;
use std::sync::Mutex;

use prometheus::{IntGauge, Registry};

use super::catalog::{
    counter, counter_vec, gauge_vec, histogram, histogram_vec, registered, Catalog,
};
use super::{Metrics, WorkerSlot};
use crate::stats::Stats;

impl Metrics {
    /// The metrics of an instance of `workers` workers (at least one).
    #[expect(
        clippy::too_many_lines,
        reason = "a declarative table: one registration per metric, read top to bottom"
    )]
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
            dlq_trimmed: counter(
                &r,
                "sidejoin_dlq_trimmed_total",
                "Dead letters written without the original value (or key and headers too): over the producer's message.max.bytes",
            ),
            poison_records: counter_vec(
                &r,
                "sidejoin_poison_records_total",
                "Input records whose processing panicked or produced an output record over the producer's message.max.bytes, \
                 handled under SIDEJOIN_ON_ERROR with no effect; and output records released by processing time dropped \
                 for their size (alert on any increase)",
                &["reason"],
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
                latency_buckets.clone(),
            ),
            checkpoint_phases: histogram_vec(
                &r,
                "sidejoin_checkpoint_phase_seconds",
                "Closing a checkpoint, by phase: `seal` (the state's net change sealed and sent to the changelog), \
                 `output` (output acknowledged, at least once), `offsets` (input offsets into the transaction), \
                 `commit` (the transaction committed) — these three while the next checkpoint is processed —, \
                 `wait` (the worker waited for them to end), `persist` (the checkpoint written to RocksDB)",
                &["phase"],
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
                    "1 when assigned partitions are restored and processing, a broker is reachable and no checkpoint has waited on Kafka for over 5 s",
                ),
            ),
            brokers_up: registered(
                &r,
                IntGauge::new(
                    "sidejoin_brokers_up",
                    "Brokers the consumer is connected to (librdkafka state UP)",
                ),
            ),
            watchdog_stalls: counter_vec(
                &r,
                "sidejoin_watchdog_stalls_total",
                "Workers found with no progress for SIDEJOIN_WATCHDOG_TIMEOUT, by the step they were in",
                &["step"],
            ),
            health: super::progress::Health::new(workers),
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
}
