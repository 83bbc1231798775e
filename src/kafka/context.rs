//! The consumer's librdkafka callbacks. They do no work: rebalances become events on a channel
//! for the processing loop (which owns the state), statistics become consumer-lag gauges and the
//! brokers' reachability (no broker up: not ready), and librdkafka's log lines go to `tracing`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::sync::Arc;

use rdkafka::client::ClientContext;
use rdkafka::config::RDKafkaLogLevel;
use rdkafka::consumer::{BaseConsumer, Consumer, ConsumerContext, Rebalance};
use rdkafka::error::KafkaError;
use rdkafka::statistics::Statistics;
use rdkafka::TopicPartitionList;

use crate::metrics::Metrics;

/// A change of the partitions this process owns: `(topic, partition)` pairs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Assignment {
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

pub struct JoinContext {
    events: Sender<Assignment>,
    metrics: Arc<Metrics>,
    /// Whether the last statistics saw a broker up (to log changes once).
    reachable: AtomicBool,
}

impl JoinContext {
    pub fn new(events: Sender<Assignment>, metrics: Arc<Metrics>) -> Self {
        JoinContext {
            events,
            metrics,
            reachable: AtomicBool::new(true),
        }
    }
}

/// librdkafka's log lines, to `tracing` at their level.
pub fn log(level: RDKafkaLogLevel, fac: &str, message: &str) {
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
        for (topic, t) in &statistics.topics {
            for (partition, p) in &t.partitions {
                if *partition >= 0 && p.consumer_lag >= 0 {
                    self.metrics
                        .set_consumer_lag(topic, *partition, p.consumer_lag);
                }
            }
        }
    }

    fn error(&self, error: KafkaError, reason: &str) {
        tracing::warn!(target: "librdkafka", "{error}: {reason}");
    }
}

impl ConsumerContext for JoinContext {
    fn pre_rebalance(&self, consumer: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        if let Rebalance::Revoke(tpl) = rebalance {
            // The receiver lives as long as the processing loop; a send error means it ended.
            let _ = self.events.send(Assignment::Revoked {
                partitions: pairs(tpl),
                lost: consumer.assignment_lost(),
            });
        }
    }

    fn post_rebalance(&self, _consumer: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        match rebalance {
            Rebalance::Assign(tpl) => {
                self.metrics.rebalance();
                let _ = self.events.send(Assignment::Assigned(pairs(tpl)));
            }
            Rebalance::Revoke(_) => {}
            Rebalance::Error(e) => tracing::warn!("rebalance error: {e}"),
        }
    }
}
