//! Sending to Kafka from the run loop: output records (keyed ones partitioned as Java clients
//! would) and dead letters, each under the checkpoint open when it was sent. A full producer
//! queue is waited out by serving delivery reports; sending never allocates per record.

use std::sync::Arc;
use std::time::Duration;

use rdkafka::error::KafkaError;
use rdkafka::message::{Header, OwnedHeaders};
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use rdkafka::types::RDKafkaErrorCode;

use crate::format::DecodeError;
use crate::kafka::deliveries::Deliveries;
use crate::partitioner::partition_for;
use crate::sink::Records;

use super::input::Record;
use super::RunError;

pub(super) struct Output {
    /// Under `exactly_once` the checkpoint protocol's transactional producer.
    producer: Arc<BaseProducer<Deliveries>>,
    topic: String,
    partitions: i32,
    dlq_topic: String,
}

impl Output {
    pub(super) fn new(
        producer: Arc<BaseProducer<Deliveries>>,
        topic: &str,
        partitions: i32,
        dlq_topic: &str,
    ) -> Self {
        Output {
            producer,
            topic: topic.to_owned(),
            partitions,
            dlq_topic: dlq_topic.to_owned(),
        }
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
        send_when_room(&self.producer, record, "output")?;
        self.deliveries().sent(checkpoint);
        Ok(())
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
            self.send(record, checkpoint)?;
        }
        Ok(())
    }

    /// Sends the original record to the dead-letter topic, with headers naming the error and
    /// where it came from.
    pub(super) fn dead_letter(
        &self,
        msg: &Record,
        topic: &str,
        error: &DecodeError,
        checkpoint: u64,
    ) -> Result<(), RunError> {
        let record = dead_letter_record(&self.dlq_topic, msg, topic, error, checkpoint as usize);
        self.send(record, checkpoint)
    }
}

/// The dead letter of `msg` (read from `topic`) for `dlq_topic`: its key, value and timestamp,
/// its headers and ones naming the error and where it came from; `opaque` is the delivery's.
pub(crate) fn dead_letter_record<'a>(
    dlq_topic: &'a str,
    msg: &'a Record,
    topic: &str,
    error: &DecodeError,
    opaque: usize,
) -> BaseRecord<'a, [u8], [u8], usize> {
    let mut record = BaseRecord::with_opaque_to(dlq_topic, opaque)
        .timestamp(msg.timestamp)
        .headers(dead_letter_headers(msg, topic, error));
    if let Some(k) = &msg.key {
        record = record.key(k.as_slice());
    }
    if let Some(v) = &msg.value {
        record = record.payload(v.as_slice());
    }
    record
}

/// A dead letter's headers: the original record's, then ones naming the error and where the
/// record came from (its topic, partition, offset and side).
fn dead_letter_headers(msg: &Record, topic: &str, error: &DecodeError) -> OwnedHeaders {
    let mut headers = OwnedHeaders::new();
    for (key, value) in &msg.headers {
        headers = headers.insert(Header {
            key,
            value: value.as_deref(),
        });
    }
    let info = [
        ("sidejoin.error", error.to_string()),
        ("sidejoin.source.topic", topic.to_owned()),
        ("sidejoin.source.partition", msg.source.to_string()),
        ("sidejoin.source.offset", msg.offset.to_string()),
        ("sidejoin.source.side", msg.side.name().to_owned()),
    ];
    for (key, value) in &info {
        headers = headers.insert(Header {
            key,
            value: Some(value.as_bytes()),
        });
    }
    headers
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
                producer.poll(Duration::from_millis(5));
            }
            Err((e, _)) => return Err(e),
        }
    }
}
