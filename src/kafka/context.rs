//! The consumer's librdkafka callbacks. They do no work: rebalances become events on a channel
//! for the processing loop (which owns the state), statistics become consumer-lag gauges, and
//! librdkafka's log lines go to `tracing`.

use std::sync::mpsc::Sender;
use std::sync::Arc;

use rdkafka::client::ClientContext;
use rdkafka::config::RDKafkaLogLevel;
use rdkafka::consumer::{BaseConsumer, ConsumerContext, Rebalance};
use rdkafka::error::KafkaError;
use rdkafka::statistics::Statistics;
use rdkafka::TopicPartitionList;

use crate::metrics::Metrics;

/// A change of the partitions this process owns: `(topic, partition)` pairs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Assignment {
    Assigned(Vec<(String, i32)>),
    Revoked(Vec<(String, i32)>),
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
}

impl JoinContext {
    pub fn new(events: Sender<Assignment>, metrics: Arc<Metrics>) -> Self {
        JoinContext { events, metrics }
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
    fn pre_rebalance(&self, _consumer: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        if let Rebalance::Revoke(tpl) = rebalance {
            // The receiver lives as long as the processing loop; a send error means it ended.
            let _ = self.events.send(Assignment::Revoked(pairs(tpl)));
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
