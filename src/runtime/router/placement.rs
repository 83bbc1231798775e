//! Where a router puts its side's keys (`crate::routing::Placement`): sidejoin's own, or,
//! when the other side is co-partitioned as its producer keyed it, the other side's key form
//! and partitioner, learnt from that topic's newest records (`crate::routing::learn`).

use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::{Message, Offset, TopicPartitionList};
use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::kafka::clients;
use crate::kafka::context::HelperContext;
use crate::plan::{RouterPlan, Target};
use crate::routing::{learn, Learnt, Placement, Sample};
use crate::runtime::{RunError, StartupError};

/// The placement of `side`'s keys: for a mirrored target, learnt from the other side's records
/// (waiting for some, logged); `None` on stop.
pub(super) fn placement(
    cfg: &Config,
    router: &RouterPlan,
    stop: &CancellationToken,
) -> Result<Option<Placement>, RunError> {
    let side = router.side;
    let (topic, partitions) = match &router.target {
        Target::Own => return Ok(Some(Placement::own(router.partitions))),
        Target::Mirror { topic, partitions } => (topic, *partitions),
    };
    let other = side.other();
    let columns = &cfg.join.side(other).key;
    let started = Instant::now();
    let mut logged = None::<Instant>;
    while !stop.is_cancelled() {
        let samples = sample(cfg, topic, partitions)?;
        let samples: Vec<Sample<'_>> = samples
            .iter()
            .map(|(partition, offset, key)| Sample {
                partition: *partition,
                offset: *offset,
                key,
            })
            .collect();
        match learn(topic, partitions, columns, &samples) {
            Ok(Learnt::Placement(p)) => {
                tracing::info!(
                    "the {other} topic `{topic}` keys its records as {} ({} records looked at)",
                    p.describe(),
                    samples.len()
                );
                return Ok(Some(p));
            }
            Ok(Learnt::NotYet(why)) => {
                if logged.is_none_or(|at| at.elapsed() >= Duration::from_secs(30)) {
                    logged = Some(Instant::now());
                    tracing::info!(
                        "repartition of the {side} side waits ({} s): {why}; SIDEJOIN_{}_HASH_BY places the {side} \
                         side's records where the {other} topic's producer puts their join keys, learnt from its \
                         newest records (repartition the {other} side too, SIDEJOIN_{}_HASH_BY=$join_key, to let \
                         sidejoin place both)",
                        started.elapsed().as_secs(),
                        side.var(),
                        other.var()
                    );
                }
                std::thread::sleep(Duration::from_secs(2));
            }
            Err(why) => {
                return Err(RunError::Startup(StartupError::Refused(format!(
                    "SIDEJOIN_{}_HASH_BY cannot place the {side} side's records where the {other} side's are: {why}; \
                     repartition the {other} side too (SIDEJOIN_{}_HASH_BY=$join_key: sidejoin then places both)",
                    side.var(),
                    other.var()
                ))))
            }
        }
    }
    Ok(None)
}

/// Up to 16 of the newest keyed records of each partition of `topic`: `(partition, offset, key)`.
fn sample(
    cfg: &Config,
    topic: &str,
    partitions: i32,
) -> Result<Vec<(i32, i64, Vec<u8>)>, RunError> {
    let consumer: BaseConsumer<HelperContext> = clients::probe_consumer(&cfg.kafka)
        .create_with_context(HelperContext("repartition sampler"))?;
    let mut tpl = TopicPartitionList::new();
    let mut ends = Vec::new();
    for p in 0..partitions {
        let (low, high) = consumer.fetch_watermarks(topic, p, Duration::from_secs(10))?;
        if high > low {
            tpl.add_partition_offset(topic, p, Offset::Offset(low.max(high - 16)))?;
            ends.push((p, high));
        }
    }
    let mut out = Vec::new();
    if ends.is_empty() {
        return Ok(out);
    }
    consumer.assign(&tpl)?;
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut open = ends.len();
    while open > 0 && Instant::now() < deadline {
        match consumer.poll(Duration::from_millis(100)) {
            Some(Ok(m)) => {
                if let Some(key) = m.key() {
                    out.push((m.partition(), m.offset(), key.to_vec()));
                }
                if ends
                    .iter()
                    .any(|(p, high)| *p == m.partition() && m.offset() + 1 >= *high)
                {
                    open -= 1;
                }
            }
            Some(Err(KafkaError::PartitionEOF(_))) => {}
            Some(Err(e)) => tracing::debug!("sampling `{topic}`: {e}"),
            None => {}
        }
    }
    Ok(out)
}
