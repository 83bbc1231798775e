//! The start-up co-partitioning probe. Before the group is joined, the first records each input
//! partition will be consumed from (the group's committed offsets, else the reset policy) are
//! read and their Kafka keys checked against their rows' join keys (`copartition`). A topic
//! keyed by something else — typically a Debezium JSON topic keyed by its primary key while the
//! join is on another column — is then refused at start under
//! `SIDEJOIN_ON_COPARTITION_VIOLATION=fail` (exit 2, naming the topic, the record and the fix)
//! instead of stopping at its first record later, and warned about at start under `warn`
//! instead of only once records were joined (`run_loop::probe_keys` logs and refuses).
//!
//! It reads at most `RECORDS` records of each partition (and `BYTES` per topic), both topics at
//! once, for at most `TIME` after the offsets are known; it joins no group and commits nothing.
//! It judges only what the per-record check judges (JSON keys); processing goes on checking
//! every record. It reads `read_uncommitted` (see `kafka::probe_consumer_config`), so it may
//! judge a record of an aborted transaction that processing never sees.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::{Message, TopicPartitionList};
use tokio_util::sync::CancellationToken;

use crate::change::{Partition, Side};
use crate::config::KafkaSpec;
use crate::kafka::clients;
use crate::kafka::context::HelperContext;
use crate::plan::Plan;

use super::processor::Processor;

/// Records read per partition, at most.
const RECORDS: u32 = 64;

/// The longest the probe reads one topic once its offsets are known.
const TIME: Duration = Duration::from_secs(5);

/// The longest the committed offsets may take (a new group's coordinator may be starting).
const OFFSETS: Duration = Duration::from_secs(30);

/// Key and value bytes kept per topic, at most (records are judged once both topics are read).
const BYTES: usize = 64 << 20;

/// A record whose key does not carry its row's join key.
#[derive(Debug)]
pub(super) struct Misfit {
    pub side: Side,
    pub topic: String,
    pub partition: Partition,
    pub offset: i64,
    pub why: String,
}

/// Reads the head of every partition of both input topics (`plan.tasks` each); returns the
/// first misfit of each side, if any.
pub(super) fn probe<S>(
    kafka: &KafkaSpec,
    plan: &Plan,
    processor: &mut dyn Processor<S>,
    shutdown: &CancellationToken,
) -> Result<Vec<Misfit>, KafkaError> {
    let started = Instant::now();
    let partitions = plan.tasks;
    let topic = |side: Side| plan.source(side).topic.as_str();
    // The grouped inputs at once, each with its own consumer (end-of-partition events name no
    // topic).
    let sides: Vec<Side> = (plan.sources.iter())
        .filter(|s| s.grouped())
        .map(|s| s.side)
        .collect();
    let heads: Vec<_> = std::thread::scope(|s| {
        let read: Vec<_> = (sides.iter())
            .map(|&side| s.spawn(move || read_head(kafka, topic(side), partitions, shutdown)))
            .collect();
        read.into_iter()
            .map(|r| r.join().expect("the probe's reader does not panic"))
            .collect()
    });
    let mut found = Vec::new();
    for (side, head) in sides.into_iter().zip(heads) {
        let topic = topic(side);
        let head = head?;
        let misfit = head.iter().find_map(|r| {
            let why = processor.misfit(side, r.key.as_deref(), r.value.as_deref())?;
            Some(Misfit {
                side,
                topic: topic.to_owned(),
                partition: r.partition,
                offset: r.offset,
                why,
            })
        });
        match &misfit {
            None if head.is_empty() => tracing::info!(
                "co-partitioning: nothing to probe in `{topic}` (no records from where the group resumes)"
            ),
            None => tracing::info!(
                "co-partitioning: no key among the first {} records of `{topic}` lacks its join key (probed in {} ms)",
                head.len(),
                started.elapsed().as_millis()
            ),
            Some(m) => tracing::debug!("co-partitioning: {m:?}"),
        }
        found.extend(misfit);
    }
    Ok(found)
}

/// A record of a partition's head.
struct Head {
    partition: Partition,
    offset: i64,
    key: Option<Vec<u8>>,
    value: Option<Vec<u8>>,
}

/// Where the group would consume each partition of `topic`: the committed offsets, known first
/// so that `TIME` is spent reading (where there is none, `Offset::Invalid` starts at the reset
/// policy). A coordinator still starting (a broker just up answers NotCoordinator) leaves them to
/// librdkafka, which fetches the stored offsets on assign.
fn start_positions(
    consumer: &BaseConsumer<HelperContext>,
    topic: &str,
    partitions: i32,
) -> Result<TopicPartitionList, KafkaError> {
    let mut tpl = TopicPartitionList::new();
    for p in 0..partitions {
        tpl.add_partition(topic, p);
    }
    match consumer.committed_offsets(tpl, OFFSETS) {
        Ok(committed) => Ok(committed),
        Err(e) => {
            tracing::debug!("co-partitioning: committed offsets of `{topic}` not fetched ({e}): assigned at the stored ones");
            let mut stored = TopicPartitionList::new();
            for p in 0..partitions {
                stored.add_partition_offset(topic, p, rdkafka::Offset::Stored)?;
            }
            Ok(stored)
        }
    }
}

/// Up to `RECORDS` records of each partition of `topic`, from where the group would consume.
fn read_head(
    kafka: &KafkaSpec,
    topic: &str,
    partitions: i32,
    shutdown: &CancellationToken,
) -> Result<Vec<Head>, KafkaError> {
    let consumer: BaseConsumer<HelperContext> = clients::probe_consumer(kafka)
        .create_with_context(HelperContext("co-partitioning probe"))?;
    consumer.assign(&start_positions(&consumer, topic, partitions)?)?;
    let mut left: HashMap<Partition, u32> = (0..partitions).map(|p| (p, RECORDS)).collect();
    let reading = Instant::now();
    let (mut head, mut bytes) = (Vec::new(), 0);
    while !left.is_empty() && !shutdown.is_cancelled() {
        if reading.elapsed() >= TIME || bytes >= BYTES {
            tracing::warn!(
                "co-partitioning: stopped reading the head of `{topic}` after {} ms and {bytes} bytes ({} partitions not finished): the probe judged part of it",
                reading.elapsed().as_millis(),
                left.len()
            );
            break;
        }
        match consumer.poll(Duration::from_millis(100)) {
            Some(Ok(m)) => {
                let p = m.partition();
                let Some(n) = left.get_mut(&p) else { continue };
                *n -= 1;
                if *n == 0 {
                    left.remove(&p);
                }
                bytes += m.key_len() + m.payload_len();
                head.push(Head {
                    partition: p,
                    offset: m.offset(),
                    key: m.key().map(<[u8]>::to_vec),
                    value: m.payload().map(<[u8]>::to_vec),
                });
            }
            Some(Err(KafkaError::PartitionEOF(p))) => {
                left.remove(&p);
            }
            // Only a fatal client error ends the probe; a broker away for a moment does not.
            Some(Err(e @ KafkaError::MessageConsumptionFatal(_))) => return Err(e),
            Some(Err(e)) => tracing::warn!("co-partitioning probe of `{topic}`: {e}"),
            None => {}
        }
    }
    Ok(head)
}
