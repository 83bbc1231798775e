//! What a router does besides routing: purging the repartition topic below the join group's
//! committed offsets (every `PURGE_EVERY`) and publishing its own lag on the source topic
//! (every `LAG_EVERY`).

use std::time::{Duration, Instant};

use rdkafka::admin::{AdminClient, AdminOptions};
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::{Offset, TopicPartitionList};

use crate::config::KafkaSpec;
use crate::kafka::clients;
use crate::kafka::context::HelperContext;
use crate::metrics::Metrics;
use crate::plan::RouterPlan;

/// How often records the join has committed past are purged.
const PURGE_EVERY: Duration = Duration::from_secs(30);
/// How often the router's lag is published.
const LAG_EVERY: Duration = Duration::from_secs(10);

pub(super) struct Upkeep {
    kafka: KafkaSpec,
    source: String,
    topic: String,
    last_purge: Instant,
    last_lag: Instant,
}

impl Upkeep {
    pub(super) fn new(kafka: &KafkaSpec, plan: &RouterPlan) -> Self {
        Upkeep {
            kafka: kafka.clone(),
            source: plan.source_topic.clone(),
            topic: plan.topic.clone(),
            last_purge: Instant::now(),
            last_lag: Instant::now(),
        }
    }

    /// The router's lag on the source topic, as `sidejoin_consumer_lag` of that topic (the end
    /// offsets are asked of the brokers, so at most every `LAG_EVERY`).
    pub(super) fn publish_lag(
        &mut self,
        consumer: &BaseConsumer<HelperContext>,
        metrics: &Metrics,
    ) {
        if self.last_lag.elapsed() < LAG_EVERY {
            return;
        }
        self.last_lag = Instant::now();
        let Ok(positions) = consumer.position() else {
            return;
        };
        for e in positions.elements() {
            let Offset::Offset(at) = e.offset() else {
                continue;
            };
            let marks =
                consumer.fetch_watermarks(&self.source, e.partition(), Duration::from_secs(1));
            if let Ok((_, high)) = marks {
                metrics.set_consumer_lag(&self.source, e.partition(), high - at);
            }
        }
    }

    /// Deletes the records of the repartition topic that the join group has committed past,
    /// when `PURGE_EVERY` has passed since the last time.
    pub(super) fn purge_when_due(&mut self) {
        if self.last_purge.elapsed() < PURGE_EVERY {
            return;
        }
        self.last_purge = Instant::now();
        match self.purge() {
            Ok(n) if n > 0 => tracing::debug!(
                "purged consumed records of `{}` ({n} partitions)",
                self.topic
            ),
            Ok(_) => {}
            Err(e) => tracing::warn!(
                "cannot purge consumed records of `{}`: {}",
                self.topic,
                crate::kafka::redact(&e)
            ),
        }
    }

    fn purge(&self) -> Result<usize, KafkaError> {
        let join: BaseConsumer<HelperContext> = clients::probe_consumer(&self.kafka)
            .create_with_context(HelperContext("repartition purge"))?;
        let tpl = all_partitions(&join, &self.topic)?;
        let committed = join.committed_offsets(tpl, Duration::from_secs(10))?;
        let mut purge = TopicPartitionList::new();
        for e in committed.elements() {
            if let Offset::Offset(o) = e.offset() {
                if o > 0 {
                    purge.add_partition_offset(&self.topic, e.partition(), Offset::Offset(o))?;
                }
            }
        }
        if purge.count() == 0 {
            return Ok(0);
        }
        let admin: AdminClient<DefaultClientContext> = clients::admin(&self.kafka).create()?;
        let done = futures::executor::block_on(admin.delete_records(&purge, &AdminOptions::new()))?;
        Ok(done.count())
    }
}

/// Every partition of `topic`, as the brokers list them now.
pub(super) fn all_partitions<C: Consumer<HelperContext>>(
    consumer: &C,
    topic: &str,
) -> Result<TopicPartitionList, KafkaError> {
    let md = consumer.fetch_metadata(Some(topic), Duration::from_secs(10))?;
    let mut tpl = TopicPartitionList::new();
    for t in md.topics() {
        for p in t.partitions() {
            tpl.add_partition(topic, p.id());
        }
    }
    Ok(tpl)
}
