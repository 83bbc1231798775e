//! The consumer's librdkafka callbacks. They do no work: rebalances become events on a channel
//! for the processing loop (which owns the state), statistics become consumer-lag gauges and the
//! brokers' reachability (no broker up: not ready), and librdkafka's log lines go to `tracing`.
//!
//! Rebalances are a rendezvous: the callback does not assign or unassign. librdkafka waits for
//! the application's `unassign`/`assign` (as with confluent-kafka-go's application rebalance
//! events), so the loop finishes and commits the work of revoked partitions while their
//! offsets can still be committed, and restores new ones before it assigns them at the exact
//! offsets their state reflects. Once `closing`, the callback unassigns by itself (the consumer
//! is closing and the loop no longer listens).

use rdkafka::consumer::RebalanceProtocol;
use rdkafka::types::RDKafkaRespErr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;

use rdkafka::client::ClientContext;
use rdkafka::config::RDKafkaLogLevel;
use rdkafka::consumer::{BaseConsumer, Consumer, ConsumerContext};
use rdkafka::error::KafkaError;
use rdkafka::statistics::Statistics;
use rdkafka::TopicPartitionList;

use crate::metrics::WorkerMetrics;

/// A change of the partitions this process owns: `(topic, partition)` pairs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Assignment {
    Assigned(Vec<(String, i32)>),
    /// `lost`: the group already gave them away (e.g. the session timed out while no broker
    /// was reachable), so their offsets can no longer be committed.
    Revoked {
        partitions: Vec<(String, i32)>,
        lost: bool,
    },
}

fn pairs(tpl: &TopicPartitionList) -> Vec<(String, i32)> {
    tpl.elements()
        .iter()
        .map(|e| (e.topic().to_owned(), e.partition()))
        .collect()
}

pub(crate) struct JoinContext {
    events: Sender<Assignment>,
    metrics: WorkerMetrics,
    /// Whether the last statistics saw a broker up (to log changes once).
    reachable: AtomicBool,
    /// The loop no longer handles rebalances: the callback unassigns by itself.
    closing: AtomicBool,
}

impl JoinContext {
    pub(crate) fn new(events: Sender<Assignment>, metrics: WorkerMetrics) -> Self {
        JoinContext {
            events,
            metrics,
            reachable: AtomicBool::new(true),
            closing: AtomicBool::new(false),
        }
    }

    /// From now on rebalances unassign by themselves (the consumer is closing).
    pub(crate) fn close(&self) {
        self.closing.store(true, Ordering::Relaxed);
    }
}

/// librdkafka's log lines, to `tracing` at their level.
pub(crate) fn log(level: RDKafkaLogLevel, fac: &str, message: &str) {
    match level {
        RDKafkaLogLevel::Emerg
        | RDKafkaLogLevel::Alert
        | RDKafkaLogLevel::Critical
        | RDKafkaLogLevel::Error => {
            tracing::error!(target: "librdkafka", "{fac} {message}")
        }
        RDKafkaLogLevel::Warning => tracing::warn!(target: "librdkafka", "{fac} {message}"),
        RDKafkaLogLevel::Notice | RDKafkaLogLevel::Info => {
            tracing::info!(target: "librdkafka", "{fac} {message}")
        }
        RDKafkaLogLevel::Debug => tracing::debug!(target: "librdkafka", "{fac} {message}"),
    }
}

impl ClientContext for JoinContext {
    fn log(&self, level: RDKafkaLogLevel, fac: &str, message: &str) {
        log(level, fac, message)
    }

    fn stats(&self, statistics: Statistics) {
        // Learned brokers only (bootstrap entries have node id -1).
        let up = (statistics.brokers.values())
            .filter(|b| b.nodeid >= 0 && b.state == "UP")
            .count();
        self.metrics.set_brokers_up(up);
        let was = self.reachable.swap(up > 0, Ordering::Relaxed);
        if was && up == 0 {
            tracing::warn!(
                "no broker reachable: not ready; librdkafka keeps reconnecting, processing resumes when one is back"
            );
        } else if !was && up > 0 {
            tracing::info!("brokers reachable again ({up} up)");
        }
        record_lags(&self.metrics, &statistics);
    }

    fn error(&self, error: KafkaError, reason: &str) {
        // End-of-partition events reach the merge through the queues; they are not errors.
        if !is_eof(&error) {
            tracing::warn!(target: "librdkafka", "{error}: {reason}");
        }
    }
}

impl ConsumerContext for JoinContext {
    fn rebalance(
        &self,
        consumer: &BaseConsumer<Self>,
        err: RDKafkaRespErr,
        tpl: &mut TopicPartitionList,
    ) {
        let closing = self.closing.load(Ordering::Relaxed);
        match err {
            RDKafkaRespErr::RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS => {
                self.metrics.rebalance();
                if closing {
                    let _ = consumer.assign(tpl);
                } else {
                    // The receiver lives as long as the processing loop; a send error means it
                    // ended.
                    let _ = self.events.send(Assignment::Assigned(pairs(tpl)));
                }
            }
            RDKafkaRespErr::RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS => {
                if closing {
                    let _ = match consumer.rebalance_protocol() {
                        RebalanceProtocol::Cooperative => consumer.incremental_unassign(tpl),
                        _ => consumer.unassign(),
                    };
                } else {
                    let _ = self.events.send(Assignment::Revoked {
                        partitions: pairs(tpl),
                        lost: consumer.assignment_lost(),
                    });
                }
            }
            other => {
                tracing::warn!("rebalance error: {other:?}");
                let _ = consumer.unassign();
            }
        }
    }
}

/// Per assigned partition, the records behind its end as `sidejoin_consumer_lag`.
fn record_lags(metrics: &WorkerMetrics, statistics: &Statistics) {
    for (topic, t) in &statistics.topics {
        for (partition, p) in &t.partitions {
            // Offsets are committed through the checkpoint transactions (or, for a broadcast
            // side, not at all), which the consumer does not see: its own `consumer_lag` stays
            // unknown, so the lag is measured from what it handed to the application
            // (read_committed: up to the last stable offset).
            let lag = if p.consumer_lag >= 0 {
                p.consumer_lag
            } else if p.app_offset >= 0 && p.ls_offset >= 0 {
                (p.ls_offset - p.app_offset).max(0)
            } else {
                continue;
            };
            if *partition >= 0 {
                metrics.set_consumer_lag(topic, *partition, lag);
            }
        }
    }
}

/// The broadcast consumer's context (`runtime::broadcast`): its lag per partition of the
/// broadcast topic (what the task furthest behind has yet to be handed), librdkafka's log lines.
pub(crate) struct BroadcastContext {
    metrics: WorkerMetrics,
}

impl BroadcastContext {
    pub(crate) fn new(metrics: WorkerMetrics) -> Self {
        BroadcastContext { metrics }
    }
}

impl ClientContext for BroadcastContext {
    fn log(&self, level: RDKafkaLogLevel, fac: &str, message: &str) {
        log(level, fac, message)
    }

    fn stats(&self, statistics: Statistics) {
        record_lags(&self.metrics, &statistics);
    }

    fn error(&self, error: KafkaError, reason: &str) {
        if !is_eof(&error) {
            tracing::warn!(target: "librdkafka", "broadcast consumer: {error}: {reason}");
        }
    }
}

impl ConsumerContext for BroadcastContext {}

fn is_eof(error: &KafkaError) -> bool {
    matches!(error, KafkaError::PartitionEOF(_))
        || error.rdkafka_error_code() == Some(rdkafka::types::RDKafkaErrorCode::PartitionEOF)
}

/// The context of a consumer outside the group (the restore consumer, the co-partitioning
/// probe, the repartition router; its name is the field): librdkafka's log lines to `tracing`;
/// end-of-partition events, which these consumers wait for, are not errors.
pub(crate) struct HelperContext(pub &'static str);

impl ClientContext for HelperContext {
    fn log(&self, level: RDKafkaLogLevel, fac: &str, message: &str) {
        log(level, fac, message)
    }

    fn error(&self, error: KafkaError, reason: &str) {
        if !is_eof(&error) {
            tracing::warn!(target: "librdkafka", "{}: {error}: {reason}", self.0);
        }
    }
}

impl ConsumerContext for HelperContext {}
