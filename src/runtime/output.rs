//! Sending to Kafka from the run loop: output records (keyed ones partitioned as Java clients
//! would) and dead letters (`dead_letter`), each under the checkpoint open when it was sent. A
//! full producer queue is waited out by serving delivery reports; sending never allocates per
//! record. An output record over the producer's `message.max.bytes` is never handed to it:
//! `oversized` finds those an input record caused (the worker treats that record as poison);
//! one released by processing time is dropped and counted.

use std::sync::Arc;
use std::time::Duration;

use rdkafka::error::KafkaError;
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use rdkafka::types::RDKafkaErrorCode;

use crate::kafka::deliveries::Deliveries;
use crate::metrics::Metrics;
use crate::partitioner::partition_for;
use crate::sink::{OutRecord, Records};

use super::dead_letter::{self, Dead, Kept};
use super::RunError;

pub(super) struct Output {
    /// Under `exactly_once` the checkpoint protocol's transactional producer.
    producer: Arc<BaseProducer<Deliveries>>,
    topic: String,
    partitions: i32,
    dlq_topic: String,
    /// The producer's `message.max.bytes`.
    max_bytes: usize,
    metrics: Arc<Metrics>,
}

impl Output {
    pub(super) fn new(
        producer: Arc<BaseProducer<Deliveries>>,
        topic: &str,
        partitions: i32,
        dlq_topic: &str,
        max_bytes: usize,
    ) -> Self {
        let metrics = producer.context().metrics().clone();
        Output {
            producer,
            topic: topic.to_owned(),
            partitions,
            dlq_topic: dlq_topic.to_owned(),
            max_bytes,
            metrics,
        }
    }

    /// The producer (the commit of a checkpoint in flight awaits its acknowledgements).
    pub(super) fn producer(&self) -> &Arc<BaseProducer<Deliveries>> {
        &self.producer
    }

    pub(super) fn deliveries(&self) -> &Deliveries {
        self.producer.context()
    }

    /// Serves delivery reports for up to `timeout`.
    pub(super) fn poll(&self, timeout: Duration) {
        self.producer.poll(timeout);
    }

    /// Hands `record` to the producer, serving delivery reports while its queue is full.
    fn send(
        &self,
        record: BaseRecord<'_, [u8], [u8], usize>,
        checkpoint: u64,
    ) -> Result<(), RunError> {
        self.counted(checkpoint, || {
            send_when_room(&self.producer, record, "output")
        })
    }

    /// Runs `send` counted under `checkpoint`: counted before it is handed over, as another
    /// thread (a checkpoint's commit, `durable::in_flight`) may serve its delivery report
    /// before `send` returns; uncounted if it fails.
    fn counted<T>(
        &self,
        checkpoint: u64,
        send: impl FnOnce() -> Result<T, KafkaError>,
    ) -> Result<T, RunError> {
        self.deliveries().sent(checkpoint);
        send().map_err(|e| {
            self.deliveries().unsent(checkpoint);
            e.into()
        })
    }

    /// Sends every record of `out` under `checkpoint`.
    pub(super) fn send_all(&self, out: &Records, checkpoint: u64) -> Result<(), RunError> {
        for r in &out.records {
            let mut record: BaseRecord<'_, [u8], [u8], usize> =
                BaseRecord::with_opaque_to(&self.topic, checkpoint as usize).timestamp(r.timestamp);
            if let Some(key) = out.key(r) {
                record = record
                    .key(key)
                    .partition(partition_for(key, self.partitions));
            }
            if let Some(value) = out.value(r) {
                record = record.payload(value);
            }
            let size = wire_size(out, r);
            if size > self.max_bytes {
                // Only records released by processing time get here (`oversized` caught those of
                // input records before): there is no input record to dead-letter.
                tracing::error!(
                    "an output record of {size} bytes released by processing time is over the producer's message.max.bytes ({}): dropped",
                    self.max_bytes
                );
                self.metrics.poison("oversized_release");
                continue;
            }
            self.send(record, checkpoint)?;
        }
        Ok(())
    }

    /// Sends `dead`'s record to the dead-letter topic, with headers naming the reason and
    /// where it came from (`dead_letter`: without the original value, or key, if too large).
    pub(super) fn dead_letter(&self, dead: &Dead<'_>, checkpoint: u64) -> Result<(), RunError> {
        let kept = self.counted(checkpoint, || {
            dead_letter::send(&self.producer, &self.dlq_topic, dead, checkpoint as usize)
        })?;
        if kept != Kept::All {
            self.metrics.dlq_trimmed();
        }
        Ok(())
    }

    /// The size of the first record of `out` from index `from` on that is over the producer's
    /// `message.max.bytes` as librdkafka counts it, if any.
    pub(super) fn oversized(&self, out: &Records, from: usize) -> Option<usize> {
        (out.records[from..].iter())
            .map(|r| wire_size(out, r))
            .find(|size| *size > self.max_bytes)
    }

    /// The producer's `message.max.bytes`.
    pub(super) fn max_bytes(&self) -> usize {
        self.max_bytes
    }
}

/// librdkafka's most a record without headers takes (`rd_kafka_msg_max_wire_size`): its key,
/// value and `RD_KAFKAP_MESSAGE_V2_MAX_OVERHEAD` (36 bytes of varints and attributes); a larger
/// one than `message.max.bytes` is refused when handed to the producer.
fn wire_size(out: &Records, r: &OutRecord) -> usize {
    36 + out.key(r).map_or(0, <[u8]>::len) + out.value(r).map_or(0, <[u8]>::len)
}

/// How long a full producer queue is waited on before it is logged.
const QUEUE_FULL_LOGGED: Duration = Duration::from_secs(5);

/// Hands `record` to `producer`, serving its delivery reports while its queue is full (the
/// brokers acknowledge nothing: away, or slower than we produce); a wait longer than
/// `QUEUE_FULL_LOGGED` is logged, once, and when it ends.
pub(super) fn send_when_room(
    producer: &BaseProducer<Deliveries>,
    mut record: BaseRecord<'_, [u8], [u8], usize>,
    what: &str,
) -> Result<(), KafkaError> {
    let mut waiting: Option<std::time::Instant> = None;
    let mut logged = false;
    loop {
        match producer.send(record) {
            Ok(()) => {
                if logged {
                    tracing::info!("the producer's queue ({what}) has room again");
                }
                return Ok(());
            }
            Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), back)) => {
                record = back;
                let since = *waiting.get_or_insert_with(std::time::Instant::now);
                if !logged && since.elapsed() >= QUEUE_FULL_LOGGED {
                    tracing::warn!(
                        "the producer's queue ({what}) has been full for {QUEUE_FULL_LOGGED:?}: nothing is acknowledged; waiting"
                    );
                    logged = true;
                }
                crate::kafka::flush::serve(producer);
            }
            Err((e, _)) => return Err(e),
        }
    }
}
